package main

// The stored payload of a transformed vector (spec §3.1: the bytes that were split into
// shards and hashed, chunk_logical_len long; DESIGN §3): a replica's data region, or an EC
// chunk joined back from its data shards by §6, with every shard of the stripe verified and
// the parity checked against klauspost's encoding of the data shards.

import "fmt"

func storedPayload(v *vector, s *shardFile) ([]byte, string, error) {
	p := v.p
	if p.Mode == "replica" {
		return s.data(), "data region", nil
	}
	k, m := int(p.EcK), int(p.EcM)
	if len(v.shards) != k+m {
		return nil, "", fmt.Errorf("a transformed ec vector needs all %d shards (expected.<i>.shard), found %d", k+m, len(v.shards))
	}
	all := make([][]byte, k+m)
	for i := 0; i < k+m; i++ {
		sh, err := openStripeShard(v, i)
		if err != nil {
			return nil, "", err
		}
		if err := sh.verifyAll(); err != nil {
			return nil, "", fmt.Errorf("expected.%d.shard: %v", i, err)
		}
		all[i] = sh.data()
	}
	enc, err := encodeShards(all[:k], m)
	if err != nil {
		return nil, "", err
	}
	for i := k; i < k+m; i++ {
		if err := sameBytes(fmt.Sprintf("expected.%d.shard parity vs klauspost", i), all[i], enc[i]); err != nil {
			return nil, "", err
		}
	}
	payload, err := joinDataShards(all[:k], uint64(p.ChunkLogicalLen), uint64(p.EcBlockSize), uint64(k))
	if err != nil {
		return nil, "", err
	}
	return payload, fmt.Sprintf("§6 join of %d data shards, parity == klauspost", k), nil
}

// joinDataShards inverts §6 byte by byte: chunk byte c is at ecMap(c).
func joinDataShards(data [][]byte, chunkLen, eb, k uint64) ([]byte, error) {
	out := make([]byte, chunkLen)
	for c := uint64(0); c < chunkLen; c++ {
		loc := ecMap(c, chunkLen, eb, k)
		if loc.dataShard >= k || loc.shardOffset >= uint64(len(data[loc.dataShard])) {
			return nil, fmt.Errorf("§6 maps payload byte %d to shard %d offset %d, outside the shards", c, loc.dataShard, loc.shardOffset)
		}
		out[c] = data[loc.dataShard][loc.shardOffset]
	}
	return out, nil
}
