package spill

import (
	"crypto/rand"
	"encoding/hex"
)

const (
	idPrefix = "res_"
	idHexLen = 24
	idLen    = len(idPrefix) + idHexLen
)

// newID returns a fresh result id: "res_" and 24 lowercase hex digits.
func newID() string {
	var b [idHexLen / 2]byte
	_, _ = rand.Read(b[:])
	return idPrefix + hex.EncodeToString(b[:])
}

// ValidID reports whether id has the form of a generated result id:
// "res_" followed by exactly 24 lowercase hex digits. Only such ids are
// ever turned into file names, so no id can name a path outside a store:
// separators, "..", NUL and absolute paths are all rejected.
func ValidID(id string) bool {
	if len(id) != idLen || id[:len(idPrefix)] != idPrefix {
		return false
	}
	for i := len(idPrefix); i < len(id); i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
