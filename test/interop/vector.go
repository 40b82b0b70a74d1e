package main

// Loading one golden vector directory (params.json, input.bin, expected[.<i>].shard).

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
)

type vector struct {
	name   string
	dir    string
	p      *params
	input  []byte
	shard  []byte         // expected.shard
	shards map[int][]byte // expected.<i>.shard, when present (G8)
}

var perShardName = regexp.MustCompile(`^expected\.(\d+)\.shard$`)

func loadVector(dir string) (*vector, error) {
	v := &vector{name: filepath.Base(dir), dir: dir, shards: map[int][]byte{}}
	var err error
	if v.p, err = loadParams(filepath.Join(dir, "params.json")); err != nil {
		return nil, err
	}
	if v.p.Vector != v.name {
		return nil, fmt.Errorf("params vector %q in directory %s", v.p.Vector, v.name)
	}
	if v.input, err = os.ReadFile(filepath.Join(dir, "input.bin")); err != nil {
		return nil, err
	}
	if v.shard, err = os.ReadFile(filepath.Join(dir, "expected.shard")); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		m := perShardName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		i, _ := strconv.Atoi(m[1])
		if v.shards[i], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// vectorDirs lists dir/G*/ sorted by number (G1, G2, ..., G10).
func vectorDirs(root string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(root, "G*"))
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && st.IsDir() {
			dirs = append(dirs, m)
		}
	}
	num := func(d string) int {
		n, err := strconv.Atoi(filepath.Base(d)[1:])
		if err != nil {
			return 1 << 30
		}
		return n
	}
	sort.Slice(dirs, func(a, b int) bool { return num(dirs[a]) < num(dirs[b]) })
	return dirs, nil
}
