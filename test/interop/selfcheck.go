package main

// Self-checks of the libraries this decoder trusts, against values stated in
// DESIGN §3, so a library change cannot silently change the verdict.

import (
	"bytes"
	"fmt"
	"hash/crc32"
)

func selfCheck() error {
	// DESIGN §3: CRC32C check value of "123456789".
	if got := crc32.Checksum([]byte("123456789"), castagnoli); got != 0xE3069283 {
		return fmt.Errorf("crc32c(\"123456789\") = 0x%08x, want 0xE3069283", got)
	}
	// DESIGN §3: for k=4, m=2 the parity rows are 1b 1c 12 14 and 1c 1b 14 12.
	data := make([][]byte, 4)
	for j := range data {
		data[j] = make([]byte, 4)
		data[j][j] = 1 // unit vectors: parity byte j of row r = matrix[4+r][j]
	}
	all, err := encodeShards(data, 2)
	if err != nil {
		return err
	}
	want := [][]byte{{0x1b, 0x1c, 0x12, 0x14}, {0x1c, 0x1b, 0x14, 0x12}}
	for r := 0; r < 2; r++ {
		if !bytes.Equal(all[4+r], want[r]) {
			return fmt.Errorf("klauspost 4+2 parity row %d = % x, want % x", r, all[4+r], want[r])
		}
	}
	return nil
}
