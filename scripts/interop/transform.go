package main

// Undo the G5 transforms: stored = encrypt(compress(raw)) (spec §3.1), so
// raw = inflate(decrypt(stored)). Algorithms are named in params (DESIGN §3).

import (
	"bytes"
	"compress/flate"
	"crypto/aes"
	"crypto/cipher"
	"encoding/hex"
	"fmt"
	"io"
)

const inflateLimitBytes = 1 << 30 // bound on decompressed size

func undoTransform(t *transformSpec, stored []byte) ([]byte, error) {
	out := stored
	if e := t.Encryption; e != nil {
		if e.Algo != "aes-256-ctr" {
			return nil, fmt.Errorf("encryption algo %q unknown (want aes-256-ctr)", e.Algo)
		}
		key, err1 := hex.DecodeString(e.Key)
		iv, err2 := hex.DecodeString(e.IV)
		if err1 != nil || err2 != nil || len(key) != 32 || len(iv) != aes.BlockSize {
			return nil, fmt.Errorf("aes-256-ctr needs a 64-hex key and a 32-hex iv, got %q / %q", e.Key, e.IV)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		// CTR: the iv is the initial 128-bit counter block, incremented big-endian.
		plain := make([]byte, len(out))
		cipher.NewCTR(block, iv).XORKeyStream(plain, out)
		out = plain
	}
	if c := t.Compression; c != nil {
		if c.Algo != "deflate-raw" {
			return nil, fmt.Errorf("compression algo %q unknown (want deflate-raw)", c.Algo)
		}
		src := bytes.NewReader(out) // an io.ByteReader, so flate reads no byte past the stream
		raw, err := io.ReadAll(io.LimitReader(flate.NewReader(src), inflateLimitBytes))
		if err != nil {
			return nil, fmt.Errorf("raw inflate: %v", err)
		}
		if src.Len() != 0 {
			return nil, fmt.Errorf("raw inflate: %d stored bytes follow the end of the deflate stream", src.Len())
		}
		out = raw
	}
	return out, nil
}
