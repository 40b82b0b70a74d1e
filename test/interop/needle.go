package main

// Needle header (spec §11.2, DESIGN §3) and the slice read (§11.4) over verified shards.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sort"
)

const needleHeaderBytes = 32

// sliceRejection says why a slice was refused; reason matches params' bad_slices reason.
type sliceRejection struct {
	reason string
	msg    string
}

func (e *sliceRejection) Error() string { return e.reason + ": " + e.msg }

// container reads verified byte ranges of one container chunk: a replica shard, or the
// k data shards of an EC chunk (no parity, no reconstruction: §11.4 step 3).
type container struct {
	p          *params
	replica    *shardFile
	dataShards []*shardFile
}

// readRange returns chunk bytes [o, o+l) and the data shards the §9 reads touched.
func (c *container) readRange(o, l uint64) ([]byte, []int, error) {
	if c.replica != nil {
		b, err := c.replica.readVerified(o, l) // replica: shard_offset = chunk_offset (§6)
		return b, []int{0}, err
	}
	n := uint64(c.p.ChunkLogicalLen)
	eb, k := uint64(c.p.EcBlockSize), uint64(c.p.EcK)
	out := make([]byte, 0, l)
	touched := map[int]bool{}
	for pos := o; pos < o+l; { // each pass consumes >= 1 byte, so at most l passes
		loc := ecMap(pos, n, eb, k)
		run := uint64(1)
		for pos+run < o+l { // extend while the next byte maps to the next slot of the same shard
			next := ecMap(pos+run, n, eb, k)
			if next.dataShard != loc.dataShard || next.shardOffset != loc.shardOffset+run {
				break
			}
			run++
		}
		b, err := c.dataShards[loc.dataShard].readVerified(loc.shardOffset, run)
		if err != nil {
			return nil, nil, fmt.Errorf("data shard %d: %v", loc.dataShard, err)
		}
		out = append(out, b...)
		touched[int(loc.dataShard)] = true
		pos += run
	}
	shards := make([]int, 0, len(touched))
	for s := range touched {
		shards = append(shards, s)
	}
	sort.Ints(shards)
	return out, shards, nil
}

// readSlice is §11.4: map the slice to the container chunk, read header + data verified,
// then validate the NeedleHeader against the slice. Returns the data and shards touched.
func (c *container) readSlice(sl slice) ([]byte, []int, error) {
	p := c.p
	chunkSize := uint64(p.ChunkSize)
	off := uint64(sl.Offset)
	if off/chunkSize != uint64(p.ChunkIndex) {
		return nil, nil, fmt.Errorf("slice offset %d is in container chunk %d, vector holds chunk %d", off, off/chunkSize, p.ChunkIndex)
	}
	offInChunk := off % chunkSize
	total := needleHeaderBytes + uint64(sl.Length)
	if offInChunk+total > uint64(p.ChunkLogicalLen) {
		return nil, nil, fmt.Errorf("slice [%d,+%d) runs past the chunk's %d bytes", offInChunk, total, p.ChunkLogicalLen)
	}
	raw, shards, err := c.readRange(offInChunk, total)
	if err != nil {
		return nil, nil, err
	}
	data, err := checkNeedle(raw, sl, p.NeedleAlign)
	return data, shards, err
}

// checkNeedle validates a NeedleHeader + Data against its slice pointer (§11.2-§11.4).
func checkNeedle(raw []byte, sl slice, align uint64) ([]byte, error) {
	le := binary.LittleEndian
	if align == 0 || uint64(sl.Offset)%align != 0 {
		return nil, &sliceRejection{"align", fmt.Sprintf("offset %d is not a multiple of needle_align %d", sl.Offset, align)}
	}
	if !bytes.Equal(raw[0:4], []byte("RFND")) {
		return nil, &sliceRejection{"magic", fmt.Sprintf("needle magic is % x, want 52 46 4e 44", raw[0:4])}
	}
	if f := le.Uint32(raw[4:]); f != 0 {
		return nil, &sliceRejection{"flags", fmt.Sprintf("needle flags 0x%x: this version writes none (DESIGN §3)", f)}
	}
	if id := le.Uint64(raw[8:]); id != uint64(sl.FileID) {
		return nil, &sliceRejection{"file_id", fmt.Sprintf("needle file_id %d, slice says %d", id, sl.FileID)}
	}
	if n := le.Uint32(raw[16:]); n != sl.Length {
		return nil, &sliceRejection{"length", fmt.Sprintf("needle data_len %d, slice length %d", n, sl.Length)}
	}
	if ck := le.Uint32(raw[20:]); ck != sl.Cookie {
		return nil, &sliceRejection{"cookie", fmt.Sprintf("needle cookie 0x%08x, slice cookie 0x%08x", ck, sl.Cookie)}
	}
	if r := le.Uint32(raw[28:]); r != 0 {
		return nil, &sliceRejection{"reserved", fmt.Sprintf("needle reserved word is 0x%x, must be 0", r)}
	}
	data := raw[needleHeaderBytes:]
	if want, got := le.Uint32(raw[24:]), crc32.Checksum(data, castagnoli); want != got {
		return nil, &sliceRejection{"crc", fmt.Sprintf("needle data_crc32c 0x%08x, CRC32C of data 0x%08x", want, got)}
	}
	return data, nil
}

// checkNeedlePad: pad bytes after a needle up to needle_align are zero (DESIGN §3).
func checkNeedlePad(stream []byte, sl slice, align uint64) error {
	end := uint64(sl.Offset) + needleHeaderBytes + uint64(sl.Length)
	padEnd := alignUp(end, align)
	if padEnd > uint64(len(stream)) {
		padEnd = uint64(len(stream))
	}
	if i := firstNonZero(stream[end:padEnd]); i >= 0 {
		return fmt.Errorf("needle at %d: pad byte at stream offset %d is non-zero", sl.Offset, end+uint64(i))
	}
	return nil
}
