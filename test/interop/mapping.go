package main

// Chunk <-> shard byte mapping (spec §6) with DESIGN §3's short last erasure block, and
// Reed-Solomon parity from klauspost/reedsolomon (Backblaze Vandermonde, DESIGN §3).

import (
	"fmt"

	"github.com/klauspost/reedsolomon"
)

// ecLocation is where chunk byte C lives: spec §6.
type ecLocation struct {
	ebIndex, dataShard, shardOffset uint64
}

// ecMap applies §6 to chunk offset c of a chunk of chunkLen bytes. Inside a short last
// erasure block of length L < EB the fragment is ceil(L/k) (DESIGN §3).
func ecMap(c, chunkLen, eb, k uint64) ecLocation {
	fragFull := ceilDiv(eb, k)
	ebIndex := c / eb
	offInEB := c % eb
	frag := fragFull
	if ebLen := chunkLen - ebIndex*eb; ebLen < eb {
		frag = ceilDiv(ebLen, k)
	}
	return ecLocation{
		ebIndex:     ebIndex,
		dataShard:   offInEB / frag,
		shardOffset: ebIndex*fragFull + offInEB%frag,
	}
}

// ecShardDataLen = (n_eb-1)*ceil(EB/k) + ceil(L_last/k), the same for all k+m shards.
func ecShardDataLen(chunkLen, eb, k uint64) uint64 {
	if chunkLen == 0 {
		return 0
	}
	nEB := ceilDiv(chunkLen, eb)
	last := chunkLen - (nEB-1)*eb
	return (nEB-1)*ceilDiv(eb, k) + ceilDiv(last, k)
}

// splitDataShards places every chunk byte with ecMap, byte by byte (the spec's formula
// literally), into k zero-initialised shards, and fails if two bytes land on one slot.
func splitDataShards(chunk []byte, eb, k uint64) ([][]byte, error) {
	n := uint64(len(chunk))
	shardLen := ecShardDataLen(n, eb, k)
	shards := make([][]byte, k)
	used := make([][]bool, k)
	for i := range shards {
		shards[i] = make([]byte, shardLen)
		used[i] = make([]bool, shardLen)
	}
	for c := uint64(0); c < n; c++ {
		loc := ecMap(c, n, eb, k)
		if loc.dataShard >= k || loc.shardOffset >= shardLen {
			return nil, fmt.Errorf("§6 maps chunk byte %d to shard %d offset %d, outside k=%d x %d bytes", c, loc.dataShard, loc.shardOffset, k, shardLen)
		}
		if used[loc.dataShard][loc.shardOffset] {
			return nil, fmt.Errorf("§6 maps two chunk bytes to shard %d offset %d", loc.dataShard, loc.shardOffset)
		}
		used[loc.dataShard][loc.shardOffset] = true
		shards[loc.dataShard][loc.shardOffset] = chunk[c]
	}
	return shards, nil
}

// encodeShards returns all k+m shards: the data shards and klauspost's parity.
func encodeShards(data [][]byte, m int) ([][]byte, error) {
	enc, err := reedsolomon.New(len(data), m)
	if err != nil {
		return nil, err
	}
	all := make([][]byte, len(data)+m)
	copy(all, data)
	for i := len(data); i < len(all); i++ {
		all[i] = make([]byte, len(data[0]))
	}
	if err := enc.Encode(all); err != nil {
		return nil, err
	}
	return all, nil
}

// firstDiff returns the first index where a and b differ, or -1 if equal (lengths too).
func firstDiff(a, b []byte) int {
	n := len(a)
	if len(b) < n {
		n = len(b)
	}
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return n
	}
	return -1
}

// sameBytes reports a precise mismatch: what, offset, both byte values.
func sameBytes(what string, got, want []byte) error {
	i := firstDiff(got, want)
	if i < 0 {
		return nil
	}
	if len(got) != len(want) && i == min(len(got), len(want)) {
		return fmt.Errorf("%s: length %d, want %d", what, len(got), len(want))
	}
	return fmt.Errorf("%s: first difference at byte %d: 0x%02x, want 0x%02x", what, i, got[i], want[i])
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}
