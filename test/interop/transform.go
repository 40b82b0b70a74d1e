package main

// Undo a payload's transforms: stored = encrypt(compress(raw)) (spec §3.1), so
// raw = decompress(decrypt(stored)). Algorithms are named in params (DESIGN §3):
//   G5: deflate-raw, aes-256-ctr with the key and iv in params;
//   chunkfs layouts (docs/transforms.md): zstd (one frame), lz4 (one block of content_len
//   raw bytes), aes-256-gcm with a data key per chunk version, HKDF-SHA256 from the store key,
//   in cipher format v1 (one GCM message) or v2 (segments sealed on their own, told by a magic).

import (
	"bytes"
	"compress/flate"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4"
)

const inflateLimitBytes = 1 << 30 // bound on decompressed size

const (
	gcmNonceBytes = 12
	gcmTagBytes   = 16
	hkdfSalt      = "chunkfs data key v1"
	segMagic      = "CFSGCMv2"
	segHeaderLen  = len(segMagic) + 4 + gcmNonceBytes
)

func undoTransform(t *transformSpec, stored []byte, p *params) ([]byte, error) {
	out := stored
	if e := t.Encryption; e != nil {
		var err error
		switch e.Algo {
		case "aes-256-ctr":
			out, err = undoCTR(e.Key, e.IV, out)
		case "aes-256-gcm":
			out, err = undoGCM(e.StoreKey, out, p)
		default:
			err = fmt.Errorf("encryption algo %q unknown (want aes-256-ctr or aes-256-gcm)", e.Algo)
		}
		if err != nil {
			return nil, err
		}
	}
	if c := t.Compression; c != nil {
		var err error
		switch c.Algo {
		case "deflate-raw":
			out, err = inflateRaw(out)
		case "zstd":
			out, err = unzstd(out)
		case "lz4":
			out, err = unlz4(out, uint64(p.ContentLen))
		default:
			err = fmt.Errorf("compression algo %q unknown (want deflate-raw, zstd or lz4)", c.Algo)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// steps names what was undone, in order, e.g. "aes-256-gcm then zstd undone".
func (t *transformSpec) steps() string {
	var names []string
	if t.Encryption != nil {
		names = append(names, t.Encryption.Algo)
	}
	if t.Compression != nil {
		names = append(names, t.Compression.Algo)
	}
	return strings.Join(names, " then ") + " undone"
}

func undoCTR(keyHex, ivHex string, in []byte) ([]byte, error) {
	key, err1 := hex.DecodeString(keyHex)
	iv, err2 := hex.DecodeString(ivHex)
	if err1 != nil || err2 != nil || len(key) != 32 || len(iv) != aes.BlockSize {
		return nil, fmt.Errorf("aes-256-ctr needs a 64-hex key and a 32-hex iv, got %q / %q", keyHex, ivHex)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	// CTR: the iv is the initial 128-bit counter block, incremented big-endian.
	plain := make([]byte, len(in))
	cipher.NewCTR(block, iv).XORKeyStream(plain, in)
	return plain, nil
}

// dataKey = HKDF-SHA256(ikm = store key, salt = "chunkfs data key v1",
// info = file_id || chunk_index || version, each u64 little-endian; 32 bytes: one block).
func dataKey(storeKey []byte, p *params) []byte {
	ext := hmac.New(sha256.New, []byte(hkdfSalt))
	ext.Write(storeKey)
	prk := ext.Sum(nil)
	info := make([]byte, 25)
	binary.LittleEndian.PutUint64(info[0:], uint64(p.FileID))
	binary.LittleEndian.PutUint64(info[8:], uint64(p.ChunkIndex))
	binary.LittleEndian.PutUint64(info[16:], uint64(p.Version))
	info[24] = 1 // T(1) = HMAC(PRK, info || 0x01)
	exp := hmac.New(sha256.New, prk)
	exp.Write(info)
	return exp.Sum(nil)
}

// undoGCM: cipher format v2 when the payload starts with its magic (openSegmented), else v1:
// stored = nonce (12) || ciphertext || tag (16), no additional data.
func undoGCM(storeKeyHex string, in []byte, p *params) ([]byte, error) {
	storeKey, err := hex.DecodeString(storeKeyHex)
	if err != nil || len(storeKey) != 32 {
		return nil, fmt.Errorf("aes-256-gcm needs a 64-hex store_key, got %q", storeKeyHex)
	}
	if len(in) < gcmNonceBytes+gcmTagBytes {
		return nil, fmt.Errorf("aes-256-gcm payload of %d bytes is shorter than nonce + tag", len(in))
	}
	block, err := aes.NewCipher(dataKey(storeKey, p))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if len(in) >= segHeaderLen && string(in[:len(segMagic)]) == segMagic {
		return openSegmented(aead, in)
	}
	plain, err := aead.Open(nil, in[:gcmNonceBytes], in[gcmNonceBytes:], nil)
	if err != nil {
		return nil, fmt.Errorf("aes-256-gcm: %v (wrong key, or altered bytes)", err)
	}
	return plain, nil
}

// openSegmented: cipher format v2 (docs/transforms.md).
//   stored = magic "CFSGCMv2" || segment_bytes u32 LE || nonce_base (12) || segments,
//   segment i = ciphertext of plaintext [i*S, min((i+1)*S, plain_len)) || tag (16),
//   nonce i = nonce_base with bytes [4, 12) XOR i (u64 LE),
//   AAD i = plain_len u64 LE || i u64 LE || last u8 (1 on the last segment).
// The segment count and plain_len follow from the stored length.
func openSegmented(aead cipher.AEAD, in []byte) ([]byte, error) {
	segBytes := int(binary.LittleEndian.Uint32(in[len(segMagic):]))
	if segBytes < 4096 || segBytes > 1<<20 || segBytes%4096 != 0 {
		return nil, fmt.Errorf("aes-256-gcm v2: segment_bytes %d is not a multiple of 4096 in [4096, 1 MiB]", segBytes)
	}
	base := in[len(segMagic)+4 : segHeaderLen]
	body := in[segHeaderLen:]
	count := (len(body) + segBytes + gcmTagBytes - 1) / (segBytes + gcmTagBytes)
	if count == 0 {
		count = 1
	}
	plainLen := len(body) - count*gcmTagBytes
	if len(body) < gcmTagBytes || (plainLen != 0 && plainLen-(count-1)*segBytes < 1) {
		return nil, fmt.Errorf("aes-256-gcm v2: payload of %d bytes does not end in a whole segment", len(in))
	}
	plain := make([]byte, 0, plainLen)
	nonce := make([]byte, gcmNonceBytes)
	aad := make([]byte, 17)
	binary.LittleEndian.PutUint64(aad[0:], uint64(plainLen))
	for i := 0; i < count; i++ {
		n := segBytes
		if i == count-1 {
			n = plainLen - i*segBytes
		}
		seg := body[i*(segBytes+gcmTagBytes) : i*(segBytes+gcmTagBytes)+n+gcmTagBytes]
		copy(nonce, base)
		binary.LittleEndian.PutUint64(nonce[4:], binary.LittleEndian.Uint64(base[4:])^uint64(i))
		binary.LittleEndian.PutUint64(aad[8:], uint64(i))
		aad[16] = 0
		if i == count-1 {
			aad[16] = 1
		}
		var err error
		plain, err = aead.Open(plain, nonce, seg, aad)
		if err != nil {
			return nil, fmt.Errorf("aes-256-gcm v2 segment %d of %d: %v (wrong key, or altered bytes)", i, count, err)
		}
	}
	return plain, nil
}

func inflateRaw(in []byte) ([]byte, error) {
	src := bytes.NewReader(in) // an io.ByteReader, so flate reads no byte past the stream
	raw, err := io.ReadAll(io.LimitReader(flate.NewReader(src), inflateLimitBytes))
	if err != nil {
		return nil, fmt.Errorf("raw inflate: %v", err)
	}
	if src.Len() != 0 {
		return nil, fmt.Errorf("raw inflate: %d stored bytes follow the end of the deflate stream", src.Len())
	}
	return raw, nil
}

func unzstd(in []byte) ([]byte, error) {
	d, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(inflateLimitBytes))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	raw, err := d.DecodeAll(in, nil)
	if err != nil {
		return nil, fmt.Errorf("zstd: %v", err)
	}
	return raw, nil
}

// unlz4: one LZ4 block; its raw length is the header's content_len.
func unlz4(in []byte, contentLen uint64) ([]byte, error) {
	if contentLen > inflateLimitBytes {
		return nil, fmt.Errorf("lz4: content_len %d over the bound", contentLen)
	}
	dst := make([]byte, contentLen)
	n, err := lz4.UncompressBlock(in, dst)
	if err != nil {
		return nil, fmt.Errorf("lz4 block: %v", err)
	}
	if uint64(n) != contentLen {
		return nil, fmt.Errorf("lz4 block: %d bytes, content_len %d", n, contentLen)
	}
	return dst, nil
}
