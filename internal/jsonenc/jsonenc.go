package jsonenc

import (
	"encoding/binary"
	"unicode/utf8"
	"unsafe"
)

const hexDigits = "0123456789abcdef"

// safe marks the ASCII bytes that are copied as they are. It is never
// modified.
var safe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendString appends s to dst as a JSON string. Invalid UTF-8 becomes
// U+FFFD and U+2028 and U+2029 are escaped, as encoding/json does; <, >
// and & are not escaped.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	b := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	for i := 0; i < len(s); {
		// Eight plain ASCII bytes at a time: no control byte, quote,
		// backslash or non-ASCII byte among them.
		for i+8 <= len(b) && plain8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// plain8 reports whether the 8 bytes of w are ASCII bytes
// that AppendString copies as they are: none below 0x20, none 0x80 or
// above, no quote and no backslash. The tests for a zero byte and for a
// byte below n are the classic word-at-a-time ones (exact as to whether
// such a byte exists, for bytes below 0x80).
func plain8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	if w&highs != 0 {
		return false
	}
	below := (w - 0x20*ones) &^ w
	q := w ^ '"'*ones
	quote := (q - ones) &^ q
	b := w ^ '\\'*ones
	bslash := (b - ones) &^ b
	return (below|quote|bslash)&highs == 0
}
