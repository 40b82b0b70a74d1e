// Known-answer fixture for chunkfs's Reed-Solomon "rs-vandermonde" codec
// (DESIGN.md §3), produced by klauspost/reedsolomon (Debian
// golang-github-klauspost-reedsolomon-dev), which shares no code with ours.
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go run scripts/tools/rs-kat/main.go > testdata/rs/kat.json
//
// For each (k, m): the parity rows of the coding matrix (read off by encoding
// unit vectors), and the parity of deterministic data shards of a few sizes.
package main

import (
	"encoding/hex"
	"encoding/json"
	"os"

	"github.com/klauspost/reedsolomon"
)

type vector struct {
	K          int        `json:"k"`
	M          int        `json:"m"`
	ParityRows [][]int    `json:"parity_rows"`
	Cases      []kataCase `json:"cases"`
}

type kataCase struct {
	ShardBytes int      `json:"shard_bytes"`
	Seed       uint32   `json:"seed"`
	Data       []string `json:"data"`
	Parity     []string `json:"parity"`
}

// xorshift32: a PRNG the TypeScript test does not need to reproduce (data is in the fixture).
func fill(seed uint32, b []byte) uint32 {
	x := seed
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x >> 24)
	}
	return x
}

func encode(k, m int, data [][]byte) [][]byte {
	enc, err := reedsolomon.New(k, m)
	if err != nil {
		panic(err)
	}
	size := len(data[0])
	shards := make([][]byte, k+m)
	copy(shards, data)
	for i := k; i < k+m; i++ {
		shards[i] = make([]byte, size)
	}
	if err := enc.Encode(shards); err != nil {
		panic(err)
	}
	return shards[k:]
}

func parityRows(k, m int) [][]int {
	rows := make([][]int, m)
	for p := range rows {
		rows[p] = make([]int, k)
	}
	for c := 0; c < k; c++ {
		data := make([][]byte, k)
		for i := range data {
			data[i] = []byte{0}
		}
		data[c][0] = 1
		parity := encode(k, m, data)
		for p := 0; p < m; p++ {
			rows[p][c] = int(parity[p][0])
		}
	}
	return rows
}

func main() {
	configs := [][2]int{{1, 1}, {2, 1}, {2, 2}, {3, 2}, {4, 2}, {6, 3}, {8, 4}, {10, 4}, {12, 4}, {17, 3}}
	sizes := []int{1, 7, 64, 333}
	seed := uint32(0x9E3779B9)
	out := []vector{}
	for _, cfg := range configs {
		k, m := cfg[0], cfg[1]
		v := vector{K: k, M: m, ParityRows: parityRows(k, m)}
		for _, size := range sizes {
			c := kataCase{ShardBytes: size, Seed: seed}
			data := make([][]byte, k)
			for i := range data {
				data[i] = make([]byte, size)
				seed = fill(seed, data[i])
				c.Data = append(c.Data, hex.EncodeToString(data[i]))
			}
			for _, p := range encode(k, m, data) {
				c.Parity = append(c.Parity, hex.EncodeToString(p))
			}
			v.Cases = append(v.Cases, c)
		}
		out = append(out, v)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
}
