package main

// G7/G8: every listed slice reads back bit-exact through §11.4 from the verified shard
// files; every bad slice is rejected for the listed reason.

import (
	"bytes"
	"errors"
	"fmt"
)

func checkNeedles(v *vector, s *shardFile) (string, error) {
	c, err := openContainer(v, s)
	if err != nil {
		return "", err
	}
	var touchedCounts []int
	for _, sl := range v.p.Needles {
		n, err := checkGoodSlice(v, c, sl)
		if err != nil {
			return "", fmt.Errorf("needle at offset %d (file_id %d): %v", sl.Offset, sl.FileID, err)
		}
		touchedCounts = append(touchedCounts, n)
	}
	if err := checkShardCoverage(v, touchedCounts); err != nil {
		return "", err
	}
	var reasons []string
	for _, sl := range v.p.BadSlices {
		_, _, err := c.readSlice(sl)
		var rej *sliceRejection
		if !errors.As(err, &rej) || rej.reason != sl.Reason {
			return "", fmt.Errorf("bad slice at offset %d (reason %q) was not rejected for that reason: %v", sl.Offset, sl.Reason, err)
		}
		reasons = append(reasons, rej.reason)
	}
	return fmt.Sprintf("%d needles read back (data shards touched %v), bad slices rejected: %v",
		len(v.p.Needles), touchedCounts, reasons), nil
}

// openContainer: a replica container reads its one shard; an EC container reads the
// data shards expected.0..k-1.shard.
func openContainer(v *vector, s *shardFile) (*container, error) {
	c := &container{p: v.p}
	if v.p.Mode == "replica" {
		c.replica = s
		return c, nil
	}
	for i := 0; i < int(v.p.EcK); i++ {
		ds, err := openStripeShard(v, i)
		if err != nil {
			return nil, err
		}
		c.dataShards = append(c.dataShards, ds)
	}
	return c, nil
}

// checkGoodSlice reads one slice and returns how many data shards the read touched.
func checkGoodSlice(v *vector, c *container, sl slice) (int, error) {
	data, shards, err := c.readSlice(sl)
	if err != nil {
		return 0, err
	}
	start := sl.Offset % v.p.ChunkSize
	want := v.input[uint64(start)+needleHeaderBytes : uint64(start)+needleHeaderBytes+uint64(sl.Length)]
	if !bytes.Equal(data, want) {
		return 0, sameBytes("slice data vs input.bin", data, want)
	}
	if err := checkNeedlePad(v.input, slice{Offset: start, Length: sl.Length}, v.p.NeedleAlign); err != nil {
		return 0, err
	}
	if v.p.Mode == "ec" && !equalInts(shards, sl.ExpectedDataShards) {
		return 0, fmt.Errorf("§6 read touched data shards %v, params expected_data_shards %v", shards, sl.ExpectedDataShards)
	}
	return len(shards), nil
}

// checkShardCoverage (G8 contract, spec §13): an EC container vector has a needle read
// from exactly one data shard and one straddling into exactly two adjacent shards.
func checkShardCoverage(v *vector, counts []int) error {
	if v.p.Mode != "ec" {
		return nil
	}
	one, two := false, false
	for i, n := range counts {
		one = one || n == 1
		ds := v.p.Needles[i].ExpectedDataShards
		two = two || (n == 2 && ds[1] == ds[0]+1)
	}
	if !one || !two {
		return fmt.Errorf("EC container needles touch %v data shards: need one needle in 1 shard and one straddling 2 adjacent shards (spec §13 G8)", counts)
	}
	return nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
