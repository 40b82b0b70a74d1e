package main

// params.json of one golden vector (/work/notes/vectors.md contract): snake_case keys,
// every u64 a decimal string, smaller integers JSON numbers.

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
)

// u64 decodes a u64 that the contract writes as a decimal string; a JSON number is refused
// because it would lose precision above 2^53 in the TypeScript writer.
type u64 uint64

func (v *u64) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("u64 must be a decimal string, got %s", string(b))
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("u64 %q: %v", s, err)
	}
	*v = u64(n)
	return nil
}

type slice struct {
	FileID             u64    `json:"file_id"`
	Offset             u64    `json:"offset"`
	Length             uint32 `json:"length"`
	Cookie             uint32 `json:"cookie"`
	ExpectedDataShards []int  `json:"expected_data_shards"`
	Reason             string `json:"reason"`
}

type expectError struct {
	Kind       string `json:"kind"`
	BlockIndex uint32 `json:"block_index"`
}

type transformSpec struct {
	Compression *struct {
		Algo  string `json:"algo"`
		Level int    `json:"level"`
	} `json:"compression"`
	Encryption *struct {
		Algo string `json:"algo"`
		Key  string `json:"key"` // aes-256-ctr (G5): the key itself
		IV   string `json:"iv"`
		// aes-256-gcm (chunkfs layouts, docs/transforms.md): the store key; each chunk
		// version's data key is derived from it and the chunk's identity.
		StoreKey string `json:"store_key"`
	} `json:"encryption"`
}

type params struct {
	Vector           string          `json:"vector"`
	Description      string          `json:"description"`
	Mode             string          `json:"mode"`
	FileID           u64             `json:"file_id"`
	ChunkIndex       u64             `json:"chunk_index"`
	Version          u64             `json:"version"`
	ShardIndex       uint16          `json:"shard_index"`
	EcK              uint16          `json:"ec_k"`
	EcM              uint16          `json:"ec_m"`
	EcAlgo           uint8           `json:"ec_algo"`
	CsumAlgo         uint8           `json:"csum_algo"`
	BitrotBlock      uint32          `json:"bitrot_block"`
	EcBlockSize      u64             `json:"ec_block_size"`
	ChunkSize        u64             `json:"chunk_size"`
	CreatedUnixNanos u64             `json:"created_unix_nanos"`
	PlacementSeed    u64             `json:"placement_seed"`
	ClusterMapEpoch  u64             `json:"cluster_map_epoch"`
	Flags            uint16          `json:"flags"`
	ShardDataLen     u64             `json:"shard_data_len"`
	ChunkLogicalLen  u64             `json:"chunk_logical_len"`
	ContentLen       u64             `json:"content_len"`
	BlockCount       uint32          `json:"block_count"`
	BitrotKey        string          `json:"bitrot_key"`
	TransformRaw     json.RawMessage `json:"transform"`
	Expect           string          `json:"expect"`
	ExpectError      *expectError    `json:"expect_error"`
	DerivedFrom      string          `json:"derived_from"`
	SwappedBlocks    []uint32        `json:"swapped_blocks"`
	ParityOf         string          `json:"parity_of"`
	NeedleAlign      uint64          `json:"needle_align"`
	Needles          []slice         `json:"needles"`
	BadSlices        []slice         `json:"bad_slices"`

	key       [4]uint64      // K0..K3 from bitrot_key, each 8 little-endian bytes (DESIGN §3)
	transform *transformSpec // nil when "none"
}

func loadParams(path string) (*params, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p := &params{}
	if err := json.Unmarshal(raw, p); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if err := p.decodeKey(); err != nil {
		return nil, err
	}
	if err := p.decodeTransform(); err != nil {
		return nil, err
	}
	if p.Mode != "replica" && p.Mode != "ec" {
		return nil, fmt.Errorf("params mode %q is neither replica nor ec", p.Mode)
	}
	if p.Expect != "valid" && p.Expect != "invalid" {
		return nil, fmt.Errorf("params expect %q is neither valid nor invalid", p.Expect)
	}
	return p, nil
}

func (p *params) decodeKey() error {
	b, err := hex.DecodeString(p.BitrotKey)
	if err != nil || len(b) != 32 {
		return fmt.Errorf("params bitrot_key must be 64 hex chars, got %q", p.BitrotKey)
	}
	for w := 0; w < 4; w++ {
		p.key[w] = binary.LittleEndian.Uint64(b[w*8:])
	}
	return nil
}

func (p *params) decodeTransform() error {
	var s string
	if json.Unmarshal(p.TransformRaw, &s) == nil {
		if s != "none" {
			return fmt.Errorf("params transform string %q: only \"none\" is defined", s)
		}
		return nil
	}
	t := &transformSpec{}
	if err := json.Unmarshal(p.TransformRaw, t); err != nil {
		return fmt.Errorf("params transform: %v", err)
	}
	p.transform = t
	return nil
}
