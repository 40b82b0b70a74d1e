package main

// Region layout (spec §2, §4, §5), position-bound keys (§4.1) and the verified read (§9).

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/minio/highwayhash"
)

// shardFile is one parsed shard file whose layout has been checked.
type shardFile struct {
	raw        []byte
	h          *header
	hashStart  uint64 // always 4096
	dataStart  uint64 // 4096 + align_up(block_count*32, 4096)
	key        [4]uint64
	shardIndex uint16
}

// bitrotError is a hash mismatch at one block: what §9 returns as BitrotError(i).
type bitrotError struct{ block uint32 }

func (e *bitrotError) Error() string { return fmt.Sprintf("bitrot at block %d", e.block) }

// openShard parses the header, checks it against params and the spec rules, then the
// region layout. It does not verify block hashes (see verifyAll / readVerified).
func openShard(raw []byte, p *params, shardIndex uint16, flags uint16) (*shardFile, error) {
	h, err := parseHeader(raw)
	if err != nil {
		return nil, err
	}
	if err := compareWithParams(h, p, shardIndex, flags); err != nil {
		return nil, err
	}
	if err := checkHeaderRules(h, p); err != nil {
		return nil, err
	}
	s := &shardFile{raw: raw, h: h, hashStart: headerSizeBytes, key: p.key, shardIndex: shardIndex}
	hashTableBytes := alignUp(uint64(h.BlockCount)*32, 4096)
	s.dataStart = headerSizeBytes + hashTableBytes
	fileEnd := s.dataStart + h.ShardDataLen
	// spec §2/§13.1: the file is padded to the next 4 KiB boundary.
	if want := alignUp(fileEnd, 4096); uint64(len(raw)) != want {
		return nil, fmt.Errorf("file is %d bytes, want align_up(data_start %d + shard_data_len %d, 4096) = %d", len(raw), s.dataStart, h.ShardDataLen, want)
	}
	// spec §4: the hash table region is zero padded to the 4096 boundary.
	pad := raw[s.hashStart+uint64(h.BlockCount)*32 : s.dataStart]
	if i := firstNonZero(pad); i >= 0 {
		return nil, fmt.Errorf("hash table pad byte at file offset %d is 0x%02x, must be zero", s.hashStart+uint64(h.BlockCount)*32+uint64(i), pad[i])
	}
	return s, nil
}

// eofPadNonZero reports the first non-zero EOF pad byte (the spec ignores pad on read, so
// this is a warning, not a failure), or -1.
func (s *shardFile) eofPadNonZero() int64 {
	end := s.dataStart + s.h.ShardDataLen
	if i := firstNonZero(s.raw[end:]); i >= 0 {
		return int64(end) + int64(i)
	}
	return -1
}

// data is the shard's logical data region [0, shard_data_len), unverified.
func (s *shardFile) data() []byte {
	return s.raw[s.dataStart : s.dataStart+s.h.ShardDataLen]
}

// blockKey builds the §4.1 key for one block: four u64 words, each little-endian.
func (s *shardFile) blockKey(block uint32) []byte {
	h := s.h
	words := [4]uint64{
		s.key[0] ^ h.FileID,
		s.key[1] ^ h.ChunkIndex,
		s.key[2] ^ (uint64(s.shardIndex)<<32 | uint64(block)),
		s.key[3] ^ h.Version,
	}
	k := make([]byte, 32)
	for w := 0; w < 4; w++ {
		binary.LittleEndian.PutUint64(k[w*8:], words[w])
	}
	return k
}

func (s *shardFile) blockRange(block uint32) (uint64, uint64) {
	bb := uint64(s.h.BitrotBlock)
	start := uint64(block) * bb
	end := start + bb
	if end > s.h.ShardDataLen {
		end = s.h.ShardDataLen
	}
	return start, end
}

// verifyBlock recomputes one block's HighwayHash-256 (minio Sum = four u64 LE words)
// and compares it with hash table entry i.
func (s *shardFile) verifyBlock(block uint32) bool {
	start, end := s.blockRange(block)
	digest := highwayhash.Sum(s.data()[start:end], s.blockKey(block))
	entry := s.raw[s.hashStart+uint64(block)*32 : s.hashStart+uint64(block)*32+32]
	return bytes.Equal(digest[:], entry)
}

// failingBlocks lists every block whose hash does not verify.
func (s *shardFile) failingBlocks() []uint32 {
	var bad []uint32
	for i := uint32(0); i < s.h.BlockCount; i++ {
		if !s.verifyBlock(i) {
			bad = append(bad, i)
		}
	}
	return bad
}

// verifyAll verifies every block in order and returns the first mismatch as a bitrotError.
func (s *shardFile) verifyAll() error {
	if bad := s.failingBlocks(); len(bad) > 0 {
		return &bitrotError{bad[0]}
	}
	return nil
}

// readVerified is the §9 byte-range read: it verifies only the blocks covering [o, o+l).
func (s *shardFile) readVerified(o, l uint64) ([]byte, error) {
	if l == 0 || o+l > s.h.ShardDataLen {
		return nil, fmt.Errorf("read [%d,+%d) outside shard data of %d bytes", o, l, s.h.ShardDataLen)
	}
	bb := uint64(s.h.BitrotBlock)
	for i := o / bb; i <= (o+l-1)/bb; i++ {
		if !s.verifyBlock(uint32(i)) {
			return nil, &bitrotError{uint32(i)}
		}
	}
	return s.data()[o : o+l], nil
}
