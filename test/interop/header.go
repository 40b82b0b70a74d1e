package main

// Shard header (spec §3, §3.1, §12), decoded field by field at the spec's offsets.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

const headerSizeBytes = 4096

// Flag bits, spec §3.1.
const (
	flagModeEC         = 1 << 0
	flagCompressed     = 1 << 1
	flagEncrypted      = 1 << 2
	flagLastBlockShort = 1 << 3
	flagParityShard    = 1 << 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type header struct {
	Magic            []byte
	FormatVersion    uint16
	Flags            uint16
	HeaderCRC32C     uint32
	FileID           uint64
	ChunkIndex       uint64
	Version          uint64
	ShardIndex       uint16
	EcK              uint16
	EcM              uint16
	EcAlgo           uint8
	CsumAlgo         uint8
	BitrotBlock      uint32
	ShardDataLen     uint64
	ChunkLogicalLen  uint64
	BlockCount       uint32
	CreatedUnixNanos uint64
	EcBlockSize      uint64
	PlacementSeed    uint64
	ClusterMapEpoch  uint64
	ChunkSize        uint64
	ContentLen       uint64
}

// parseHeader checks magic, header_crc32c and format_version, then decodes every field.
func parseHeader(file []byte) (*header, error) {
	if len(file) < headerSizeBytes {
		return nil, fmt.Errorf("file is %d bytes, shorter than the 4096-byte header", len(file))
	}
	b := file[:headerSizeBytes]
	le := binary.LittleEndian
	h := &header{
		Magic: b[0:8], FormatVersion: le.Uint16(b[8:]), Flags: le.Uint16(b[10:]),
		HeaderCRC32C: le.Uint32(b[12:]), FileID: le.Uint64(b[16:]), ChunkIndex: le.Uint64(b[24:]),
		Version: le.Uint64(b[32:]), ShardIndex: le.Uint16(b[40:]), EcK: le.Uint16(b[42:]),
		EcM: le.Uint16(b[44:]), EcAlgo: b[46], CsumAlgo: b[47], BitrotBlock: le.Uint32(b[48:]),
		ShardDataLen: le.Uint64(b[52:]), ChunkLogicalLen: le.Uint64(b[60:]),
		BlockCount: le.Uint32(b[68:]), CreatedUnixNanos: le.Uint64(b[72:]),
		EcBlockSize: le.Uint64(b[80:]), PlacementSeed: le.Uint64(b[88:]),
		ClusterMapEpoch: le.Uint64(b[96:]), ChunkSize: le.Uint64(b[104:]), ContentLen: le.Uint64(b[112:]),
	}
	if !bytes.Equal(h.Magic, []byte("RFSHARD1")) {
		return nil, fmt.Errorf("magic at [0,8) is %q, want \"RFSHARD1\"", h.Magic)
	}
	// spec §3: CRC32C over [16, 4096), reserved bytes included (DESIGN §3).
	if got := crc32.Checksum(b[16:], castagnoli); got != h.HeaderCRC32C {
		return nil, fmt.Errorf("header_crc32c at offset 12 is 0x%08x, CRC32C of [16,4096) is 0x%08x", h.HeaderCRC32C, got)
	}
	// spec §12: the version gates all further parsing.
	if h.FormatVersion != 1 {
		return nil, fmt.Errorf("format_version at offset 8 is %d, only 1 is understood", h.FormatVersion)
	}
	// spec §3: reserved MUST be zero on write; golden vectors are writes.
	if i := firstNonZero(b[120:]); i >= 0 {
		return nil, fmt.Errorf("reserved header byte at offset %d is 0x%02x, must be zero", 120+i, b[120+i])
	}
	return h, nil
}

// fieldCheck names one header field, its offset, and both values for the report.
type fieldCheck struct {
	name      string
	offset    int
	got, want uint64
}

// compareWithParams checks every header field against params.json, with the shard index
// and flags the caller expects for this file (G8 holds several shards of one chunk).
func compareWithParams(h *header, p *params, shardIndex uint16, flags uint16) error {
	checks := []fieldCheck{
		{"flags", 10, uint64(h.Flags), uint64(flags)},
		{"file_id", 16, h.FileID, uint64(p.FileID)},
		{"chunk_index", 24, h.ChunkIndex, uint64(p.ChunkIndex)},
		{"version", 32, h.Version, uint64(p.Version)},
		{"shard_index", 40, uint64(h.ShardIndex), uint64(shardIndex)},
		{"ec_k", 42, uint64(h.EcK), uint64(p.EcK)},
		{"ec_m", 44, uint64(h.EcM), uint64(p.EcM)},
		{"ec_algo", 46, uint64(h.EcAlgo), uint64(p.EcAlgo)},
		{"csum_algo", 47, uint64(h.CsumAlgo), uint64(p.CsumAlgo)},
		{"bitrot_block", 48, uint64(h.BitrotBlock), uint64(p.BitrotBlock)},
		{"shard_data_len", 52, h.ShardDataLen, uint64(p.ShardDataLen)},
		{"chunk_logical_len", 60, h.ChunkLogicalLen, uint64(p.ChunkLogicalLen)},
		{"block_count", 68, uint64(h.BlockCount), uint64(p.BlockCount)},
		{"created_unix_nanos", 72, h.CreatedUnixNanos, uint64(p.CreatedUnixNanos)},
		{"ec_block_size", 80, h.EcBlockSize, uint64(p.EcBlockSize)},
		{"placement_seed", 88, h.PlacementSeed, uint64(p.PlacementSeed)},
		{"cluster_map_epoch", 96, h.ClusterMapEpoch, uint64(p.ClusterMapEpoch)},
		{"chunk_size", 104, h.ChunkSize, uint64(p.ChunkSize)},
		{"content_len", 112, h.ContentLen, uint64(p.ContentLen)},
	}
	for _, c := range checks {
		// Each shard file records when it was written: a live store's stripe shards differ;
		// params name the time of the vector's own shard (expected.shard).
		if c.name == "created_unix_nanos" && shardIndex != p.ShardIndex {
			continue
		}
		if c.got != c.want {
			return fmt.Errorf("header field %s (offset %d) is %d, params say %d", c.name, c.offset, c.got, c.want)
		}
	}
	return nil
}

// checkHeaderRules checks the header against the spec's own rules (independent of params).
func checkHeaderRules(h *header, p *params) error {
	ec := p.Mode == "ec"
	if h.CsumAlgo != 1 {
		return fmt.Errorf("csum_algo is %d, only 1 (HighwayHash256) is defined", h.CsumAlgo)
	}
	if h.BitrotBlock == 0 || h.BitrotBlock%4096 != 0 {
		return fmt.Errorf("bitrot_block %d is not a positive multiple of 4096 (spec §10)", h.BitrotBlock)
	}
	want := ceilDiv(h.ShardDataLen, uint64(h.BitrotBlock))
	if uint64(h.BlockCount) != want {
		return fmt.Errorf("block_count %d != ceil(shard_data_len %d / bitrot_block %d) = %d", h.BlockCount, h.ShardDataLen, h.BitrotBlock, want)
	}
	if h.Flags>>5 != 0 {
		return fmt.Errorf("flags 0x%04x set reserved bits 5..15", h.Flags)
	}
	short := h.ShardDataLen%uint64(h.BitrotBlock) != 0
	if err := flagIs(h.Flags, flagLastBlockShort, short, "last_block_short"); err != nil {
		return err
	}
	if err := flagIs(h.Flags, flagModeEC, ec, "mode_ec"); err != nil {
		return err
	}
	if err := flagIs(h.Flags, flagParityShard, ec && h.ShardIndex >= h.EcK, "parity_shard"); err != nil {
		return err
	}
	hasComp := p.transform != nil && p.transform.Compression != nil
	hasEnc := p.transform != nil && p.transform.Encryption != nil
	if err := flagIs(h.Flags, flagCompressed, hasComp, "compressed"); err != nil {
		return err
	}
	if err := flagIs(h.Flags, flagEncrypted, hasEnc, "encrypted"); err != nil {
		return err
	}
	if !ec {
		return checkReplicaRules(h)
	}
	return checkECRules(h)
}

// checkReplicaRules: DESIGN §3 "Replica shards".
func checkReplicaRules(h *header) error {
	if h.EcK != 1 || h.EcM != 0 || h.EcAlgo != 0 || h.EcBlockSize != 0 {
		return fmt.Errorf("replica header must have ec_k=1 ec_m=0 ec_algo=0 ec_block_size=0, has %d %d %d %d", h.EcK, h.EcM, h.EcAlgo, h.EcBlockSize)
	}
	if h.ShardDataLen != h.ChunkLogicalLen {
		return fmt.Errorf("replica shard_data_len %d != chunk_logical_len %d", h.ShardDataLen, h.ChunkLogicalLen)
	}
	return nil
}

// checkECRules: spec §6 with DESIGN §3's short last erasure block.
func checkECRules(h *header) error {
	if h.EcAlgo != 1 || h.EcK == 0 || h.EcM == 0 || h.ShardIndex >= h.EcK+h.EcM || h.EcBlockSize == 0 {
		return fmt.Errorf("ec header: ec_algo %d k %d m %d shard_index %d ec_block_size %d out of range", h.EcAlgo, h.EcK, h.EcM, h.ShardIndex, h.EcBlockSize)
	}
	want := ecShardDataLen(h.ChunkLogicalLen, h.EcBlockSize, uint64(h.EcK))
	if h.ShardDataLen != want {
		return fmt.Errorf("ec shard_data_len %d != (n_eb-1)*ceil(EB/k)+ceil(L/k) = %d (DESIGN §3)", h.ShardDataLen, want)
	}
	return nil
}

func flagIs(flags uint16, bit uint16, want bool, name string) error {
	if (flags&bit != 0) != want {
		return fmt.Errorf("flag %s (0x%02x) in flags 0x%04x should be %v", name, bit, flags, want)
	}
	return nil
}

func firstNonZero(b []byte) int {
	for i, c := range b {
		if c != 0 {
			return i
		}
	}
	return -1
}

func ceilDiv(a, b uint64) uint64 { return (a + b - 1) / b }

func alignUp(a, b uint64) uint64 { return ceilDiv(a, b) * b }
