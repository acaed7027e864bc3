package flight

import (
	"bytes"
	"hash/maphash"
	"slices"
	"unicode/utf8"

	"github.com/harnessx/harnessx/internal/jsonenc"
)

// sessionCache makes a session snapshot cost what changed since the last
// one rather than the whole session: a session whose saved JSON did not
// change is not redacted or written again, and of one that changed only
// the members of the top-level object (messages, extensions, …) whose
// bytes changed are redacted again. The result is the same as
// [Redactor.JSON] of the whole document. It belongs to the session
// snapshots (guarded by Extension.sessMu).
//
// It knows the saved bytes by their length and hash (see sessionSum), not
// by a copy: what it keeps of a session is its redaction alone, about the
// session's size, not three times that (the saved document, its members
// and their redactions). A large session (a spill extension's thousands
// of results) then holds megabytes fewer for as long as the recorder
// runs, which also spares the agent the garbage collector's slower pace
// over a larger heap (see docs/benchmarking.md).
type sessionCache struct {
	seed    maphash.Seed // for sum; set at the first use
	seeded  bool
	last    sessionSum // of the data of the last snapshot written; zero: unknown
	members map[string]sessionMember
}

// sessionSum identifies saved bytes: their length + 1 (0 for none) and
// their hash (hash/maphash, seeded at random per cache, so that no saved
// content can be made to collide on purpose; an accidental collision of
// two different documents of the same length, one in 2^64, would leave
// the snapshot of the earlier one until the next change).
type sessionSum struct {
	n1 int
	h  uint64
}

// sum returns b's sessionSum.
func (c *sessionCache) sum(b []byte) sessionSum {
	if !c.seeded {
		c.seed, c.seeded = maphash.MakeSeed(), true
	}
	return sessionSum{n1: len(b) + 1, h: maphash.Bytes(c.seed, b)}
}

// sessionMember is a member of the top-level object: the sum of its value
// as saved, and that value redacted.
type sessionMember struct {
	sum sessionSum
	red []byte
}

// unchanged returns data's sum, for written, and reports whether data is
// what the last snapshot wrote.
func (c *sessionCache) unchanged(data []byte) (sessionSum, bool) {
	s := c.sum(data)
	return s, c.last.n1 != 0 && s == c.last
}

// written records the sum of what the last snapshot wrote (the zero
// sessionSum: unknown, after a failed write).
func (c *sessionCache) written(s sessionSum) { c.last = s }

// redact returns red.JSON(data), redacting again only the members of the
// top-level object that changed since the last call. A document it cannot
// split (not an object, escaped or duplicate keys) is redacted whole.
func (c *sessionCache) redact(red *Redactor, data []byte) ([]byte, error) {
	keys, vals, ok := splitObject(data)
	if !ok {
		c.members = nil
		return red.JSON(data)
	}
	if c.members == nil {
		c.members = map[string]sessionMember{}
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	out := make([]byte, 0, len(data)+len(data)/8)
	out = append(out, '{')
	seen := make(map[string]bool, len(keys))
	for n, i := range order {
		k := string(keys[i])
		seen[k] = true
		enc := jsonenc.AppendString(nil, k)
		m, ok := c.members[k]
		if sum := c.sum(vals[i]); !ok || m.sum != sum {
			// The member alone, under its own key: its strings are
			// redacted as in the whole document, whose objects' keys
			// come out sorted the same way.
			one := make([]byte, 0, len(enc)+len(vals[i])+3)
			one = append(append(append(append(one, '{'), enc...), ':'), vals[i]...)
			r, err := red.JSON(append(one, '}'))
			if err != nil {
				c.members = nil
				return nil, err
			}
			if len(r) < len(enc)+3 || r[0] != '{' || !bytes.Equal(r[1:1+len(enc)], enc) || r[1+len(enc)] != ':' || r[len(r)-1] != '}' {
				c.members = nil
				return red.JSON(data)
			}
			// A copy, not a slice of r: a member that stays the same over
			// later snapshots must not keep the whole redaction it first
			// came in alive (a session that was once large, its messages
			// since reset, would keep it for as long as, say, an
			// extension's state stays).
			m = sessionMember{sum: sum, red: bytes.Clone(r[2+len(enc) : len(r)-1])}
			c.members[k] = m
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(append(append(out, enc...), ':'), m.red...)
	}
	for k := range c.members {
		if !seen[k] {
			delete(c.members, k)
		}
	}
	return append(out, '}'), nil
}

// splitObject splits a JSON object into its members' keys (without the
// quotes) and values (as they are), without decoding the values. It
// reports false for anything else, and for keys it would have to decode
// (escapes, invalid UTF-8) or that repeat; malformed JSON inside a value
// is left to the redactor to reject.
func splitObject(data []byte) (keys, vals [][]byte, ok bool) {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, nil, false
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil, nil, skipWS(data, i+1) == len(data)
	}
	seen := map[string]bool{}
	for {
		if i >= len(data) || data[i] != '"' {
			return nil, nil, false
		}
		end := scanString(data, i)
		if end < 0 {
			return nil, nil, false
		}
		key := data[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) || seen[string(key)] {
			return nil, nil, false
		}
		seen[string(key)] = true
		i = skipWS(data, end)
		if i >= len(data) || data[i] != ':' {
			return nil, nil, false
		}
		i = skipWS(data, i+1)
		vend := scanValue(data, i)
		if vend < 0 {
			return nil, nil, false
		}
		keys, vals = append(keys, key), append(vals, data[i:vend])
		i = skipWS(data, vend)
		if i >= len(data) {
			return nil, nil, false
		}
		switch data[i] {
		case ',':
			i = skipWS(data, i+1)
		case '}':
			return keys, vals, skipWS(data, i+1) == len(data)
		default:
			return nil, nil, false
		}
	}
}

func skipWS(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\t' || data[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index after the string that starts at data[i]
// (a quote), or -1.
func scanString(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// scanValue returns the index after the value that starts at data[i], or
// -1. Objects and arrays are matched by their brackets, outside strings.
func scanValue(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return scanString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				e := scanString(data, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(data) && data[j] != ',' && data[j] != '}' && data[j] != ']' && data[j] != ' ' && data[j] != '\n' && data[j] != '\t' && data[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
