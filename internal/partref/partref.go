// Package partref names the bytes of a media part by their SHA-256, so
// that the packages which meet only through harness types agree on one
// reference: the tracing extension records it in place of the bytes, the
// flight recorder keeps the bytes as an artifact under it, and the trace
// viewer resolves it to a thumbnail.
//
// A reference reads "artifact:sha256:<64 lowercase hex digits>". It says
// what the bytes are, not where they are: whoever holds an artifact with
// that digest can serve it, and the digest checks what they serve.
package partref

import (
	"encoding/hex"
	"strings"
)

// Scheme is the URI scheme of a part reference.
const Scheme = "artifact"

const prefix = Scheme + ":sha256:"

// URI returns the reference for bytes whose SHA-256 is sum.
func URI(sum [32]byte) string {
	return prefix + hex.EncodeToString(sum[:])
}

// Parse returns the digest a reference names; ok is false when uri is not
// a well-formed part reference.
func Parse(uri string) (sum [32]byte, ok bool) {
	h, found := strings.CutPrefix(uri, prefix)
	if !found || len(h) != 64 {
		return sum, false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return sum, false
		}
	}
	if _, err := hex.Decode(sum[:], []byte(h)); err != nil {
		return sum, false
	}
	return sum, true
}

// FileName is the name under which a recording or bundle keeps the
// bytes of sum: "sha256-<hex>", with no extension, so that no reader
// guesses a type from it.
func FileName(sum [32]byte) string {
	return "sha256-" + hex.EncodeToString(sum[:])
}
