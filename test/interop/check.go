package main

// Per-vector verdicts. Every check is derived from params.json and the spec; nothing is
// trusted from the shard file except what the header check has already tied to params.

import (
	"bytes"
	"errors"
	"fmt"
)

type verdict struct {
	summary  string
	warnings []string
}

func checkVector(v *vector, all map[string]*vector) (*verdict, error) {
	p := v.p
	s, err := openShard(v.shard, p, p.ShardIndex, p.Flags)
	if err != nil {
		return nil, fmt.Errorf("expected.shard: %v", err)
	}
	out := &verdict{}
	if at := s.eofPadNonZero(); at >= 0 {
		out.warnings = append(out.warnings, fmt.Sprintf("expected.shard: EOF pad byte at file offset %d is non-zero (ignored on read, spec §5)", at))
	}
	if p.Expect == "invalid" {
		return checkInvalid(v, s, all, out)
	}
	if err := s.verifyAll(); err != nil {
		return nil, fmt.Errorf("expected.shard shard %d: %v (valid vector)", p.ShardIndex, err)
	}
	what, err := checkPayload(v, s, all)
	if err != nil {
		return nil, err
	}
	out.summary = fmt.Sprintf("%s shard %d: %d blocks verified, %s", p.Mode, p.ShardIndex, s.h.BlockCount, what)
	if len(v.shards) > 0 && p.transform == nil { // a transformed stripe was checked with its payload
		if err := checkStripe(v); err != nil {
			return nil, err
		}
		out.summary += fmt.Sprintf("; all %d shard files verified", len(v.shards))
	}
	if len(p.Needles) > 0 || len(p.BadSlices) > 0 {
		what, err := checkNeedles(v, s)
		if err != nil {
			return nil, err
		}
		out.summary += "; " + what
	}
	return out, nil
}

// checkPayload compares the verified data region with input.bin through §6 / §3.1.
func checkPayload(v *vector, s *shardFile, all map[string]*vector) (string, error) {
	p := v.p
	in := v.input
	if p.transform != nil {
		if uint64(p.ContentLen) != uint64(len(in)) {
			return "", fmt.Errorf("content_len %d != input.bin length %d", p.ContentLen, len(in))
		}
		stored, from, err := storedPayload(v, s)
		if err != nil {
			return "", err
		}
		raw, err := undoTransform(p.transform, stored, p)
		if err != nil {
			return "", err
		}
		what := fmt.Sprintf("%s (%d stored bytes) %s == input.bin (%d bytes)", from, len(stored), p.transform.steps(), len(in))
		return what, sameBytes("transforms undone vs input.bin", raw, in)
	}
	if uint64(p.ChunkLogicalLen) != uint64(len(in)) || p.ContentLen != p.ChunkLogicalLen {
		return "", fmt.Errorf("chunk_logical_len %d / content_len %d != input.bin length %d", p.ChunkLogicalLen, p.ContentLen, len(in))
	}
	if p.Mode == "replica" {
		return "data == input.bin", sameBytes("data region vs input.bin", s.data(), in)
	}
	shards, err := expectedECShards(v)
	if err != nil {
		return "", err
	}
	i := int(p.ShardIndex)
	if err := sameBytes(fmt.Sprintf("data region vs §6 shard %d of input.bin", i), s.data(), shards[i]); err != nil {
		return "", err
	}
	if i < int(p.EcK) {
		return fmt.Sprintf("data == §6 data shard %d of input.bin", i), nil
	}
	if p.ParityOf == "" {
		return fmt.Sprintf("parity == klauspost %d+%d of input.bin", p.EcK, p.EcM), nil
	}
	return checkParityOf(v, s, all)
}

// expectedECShards: data shards by §6 from input.bin, parity by klauspost.
func expectedECShards(v *vector) ([][]byte, error) {
	p := v.p
	data, err := splitDataShards(v.input, uint64(p.EcBlockSize), uint64(p.EcK))
	if err != nil {
		return nil, err
	}
	return encodeShards(data, int(p.EcM))
}

// checkParityOf (G4): parity equals klauspost's encoding of the base vector's data shards.
func checkParityOf(v *vector, s *shardFile, all map[string]*vector) (string, error) {
	p := v.p
	base := all[p.ParityOf]
	if base == nil {
		return "", fmt.Errorf("parity_of %q: no such vector", p.ParityOf)
	}
	b := base.p
	if b.FileID != p.FileID || b.Version != p.Version || b.ChunkIndex != p.ChunkIndex || b.key != p.key ||
		b.EcK != p.EcK || b.EcM != p.EcM || b.EcBlockSize != p.EcBlockSize || !bytes.Equal(base.input, v.input) {
		return "", fmt.Errorf("parity_of %s: not the same chunk (file_id/version/chunk_index/key/k/m/EB/input.bin differ)", p.ParityOf)
	}
	baseShard, err := openShard(base.shard, b, b.ShardIndex, b.Flags)
	if err != nil {
		return "", fmt.Errorf("%s expected.shard: %v", p.ParityOf, err)
	}
	data, err := splitDataShards(base.input, uint64(b.EcBlockSize), uint64(b.EcK))
	if err != nil {
		return "", err
	}
	if err := sameBytes(fmt.Sprintf("%s data region vs its §6 shard", p.ParityOf), baseShard.data(), data[b.ShardIndex]); err != nil {
		return "", err
	}
	enc, err := encodeShards(data, int(b.EcM))
	if err != nil {
		return "", err
	}
	what := fmt.Sprintf("parity vs klauspost New(%d,%d) of %s's data shards", b.EcK, b.EcM, p.ParityOf)
	return "parity == klauspost encoding of " + p.ParityOf + "'s data shards", sameBytes(what, s.data(), enc[p.ShardIndex])
}

// checkStripe (G8): every expected.<i>.shard of the chunk is valid for shard i.
func checkStripe(v *vector) error {
	p := v.p
	n := int(p.EcK) + int(p.EcM)
	if p.Mode != "ec" || len(v.shards) != n {
		return fmt.Errorf("%d per-shard files for a %s %d+%d vector, want k+m = %d", len(v.shards), p.Mode, p.EcK, p.EcM, n)
	}
	if !bytes.Equal(v.shards[int(p.ShardIndex)], v.shard) {
		return fmt.Errorf("expected.shard differs from expected.%d.shard", p.ShardIndex)
	}
	want, err := expectedECShards(v)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		s, err := openStripeShard(v, i)
		if err != nil {
			return err
		}
		if err := s.verifyAll(); err != nil {
			return fmt.Errorf("expected.%d.shard: %v", i, err)
		}
		if err := sameBytes(fmt.Sprintf("expected.%d.shard data vs §6/klauspost shard %d", i, i), s.data(), want[i]); err != nil {
			return err
		}
	}
	return nil
}

// openStripeShard opens expected.<i>.shard: params with shard_index i and its parity flag.
func openStripeShard(v *vector, i int) (*shardFile, error) {
	flags := v.p.Flags &^ flagParityShard
	if i >= int(v.p.EcK) {
		flags |= flagParityShard
	}
	raw, ok := v.shards[i]
	if !ok {
		return nil, fmt.Errorf("expected.%d.shard missing", i)
	}
	s, err := openShard(raw, v.p, uint16(i), flags)
	if err != nil {
		return nil, fmt.Errorf("expected.%d.shard: %v", i, err)
	}
	return s, nil
}

// checkInvalid (G6): the file is well formed but must fail hash verification exactly at
// expect_error.block_index, and be the base vector's shard with the listed blocks swapped.
func checkInvalid(v *vector, s *shardFile, all map[string]*vector, out *verdict) (*verdict, error) {
	p := v.p
	if p.ExpectError == nil || p.ExpectError.Kind != "bitrot" {
		return nil, fmt.Errorf("invalid vector without expect_error kind \"bitrot\"")
	}
	failing := s.failingBlocks()
	err := s.verifyAll()
	var be *bitrotError
	if !errors.As(err, &be) {
		return nil, fmt.Errorf("invalid vector verified cleanly; expected bitrot at block %d", p.ExpectError.BlockIndex)
	}
	if be.block != p.ExpectError.BlockIndex {
		return nil, fmt.Errorf("first bitrot at block %d, params expect block %d", be.block, p.ExpectError.BlockIndex)
	}
	if p.DerivedFrom != "" {
		if err := checkDerived(v, s, all, failing); err != nil {
			return nil, err
		}
	}
	out.summary = fmt.Sprintf("rejected: bitrot at block %d as expected; failing blocks %v", be.block, failing)
	return out, nil
}

// checkDerived: expected.shard == base's shard with data blocks a, b swapped, hash table
// untouched, and exactly those two blocks fail (position binding, spec §4.1).
func checkDerived(v *vector, s *shardFile, all map[string]*vector, failing []uint32) error {
	p := v.p
	base := all[p.DerivedFrom]
	if base == nil || len(p.SwappedBlocks) != 2 {
		return fmt.Errorf("derived_from %q / swapped_blocks %v unusable", p.DerivedFrom, p.SwappedBlocks)
	}
	a, b := p.SwappedBlocks[0], p.SwappedBlocks[1]
	if a == b || a >= s.h.BlockCount || b >= s.h.BlockCount || len(base.shard) != len(v.shard) {
		return fmt.Errorf("swapped_blocks %v do not fit the %d-block shard", p.SwappedBlocks, s.h.BlockCount)
	}
	want := append([]byte(nil), base.shard...)
	as, ae := s.blockRange(a)
	bs, be := s.blockRange(b)
	if ae-as != be-bs {
		return fmt.Errorf("swapped blocks %d and %d differ in length", a, b)
	}
	d := s.dataStart
	copy(want[d+as:d+ae], base.shard[d+bs:d+be])
	copy(want[d+bs:d+be], base.shard[d+as:d+ae])
	if err := sameBytes(fmt.Sprintf("expected.shard vs %s with blocks %d,%d swapped", p.DerivedFrom, a, b), v.shard, want); err != nil {
		return err
	}
	lo, hi := a, b
	if lo > hi {
		lo, hi = hi, lo
	}
	if len(failing) != 2 || failing[0] != lo || failing[1] != hi {
		return fmt.Errorf("failing blocks %v, want exactly the swapped blocks [%d %d]", failing, lo, hi)
	}
	return nil
}
