package harness

import (
	"bytes"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
)

// flatCheck is a fast path of schema validation for the most common tool
// schema: an object of scalar properties (string, boolean, integer,
// number) with a required list and, optionally, no additional properties,
// and no other keyword. It is derived from the schema itself at
// registration. check answers true only when the input certainly
// satisfies the schema; on any doubt the engine runs the full validator,
// which also words the error. It allocates nothing.
type flatCheck struct {
	names    []string
	types    []string
	required uint64 // bit i set: names[i] is required
	closed   bool   // additionalProperties: false
}

// newFlatCheck returns nil when s is not of the flat shape.
func newFlatCheck(s *jsonschema.Schema) *flatCheck {
	if s.Type != "object" {
		return nil
	}
	shape := &jsonschema.Schema{Type: "object", Properties: s.Properties, Required: s.Required,
		AdditionalProperties: s.AdditionalProperties, Description: s.Description, Title: s.Title,
		Schema: s.Schema, ID: s.ID, PropertyOrder: s.PropertyOrder}
	if !sameJSON(shape, s) {
		return nil
	}
	f := &flatCheck{}
	switch ap := s.AdditionalProperties; {
	case ap == nil:
	case sameJSON(ap, &jsonschema.Schema{Not: &jsonschema.Schema{}}):
		f.closed = true
	default:
		return nil
	}
	for name, ps := range s.Properties {
		if ps == nil {
			return nil
		}
		switch ps.Type {
		case "string", "boolean", "integer", "number":
		default:
			return nil
		}
		if !sameJSON(ps, &jsonschema.Schema{Type: ps.Type, Description: ps.Description, Title: ps.Title}) {
			return nil
		}
		f.names = append(f.names, name)
		f.types = append(f.types, ps.Type)
	}
	if len(f.names) > 64 {
		return nil
	}
	for _, r := range s.Required {
		i := indexOf(f.names, r)
		if i < 0 {
			return nil // required but undefined: let the validator judge
		}
		f.required |= 1 << i
	}
	return f
}

func indexOf(names []string, s string) int {
	for i, n := range names {
		if n == s {
			return i
		}
	}
	return -1
}

func sameJSON(a, b *jsonschema.Schema) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// check reports whether input is an object that satisfies the schema.
func (f *flatCheck) check(in []byte) bool {
	i := skipWS(in, 0)
	if i >= len(in) || in[i] != '{' {
		return false
	}
	i = skipWS(in, i+1)
	var seen uint64
	if i < len(in) && in[i] == '}' {
		return skipWS(in, i+1) == len(in) && f.required == 0
	}
	for {
		if i >= len(in) || in[i] != '"' {
			return false
		}
		end := i + 1
		for end < len(in) && in[end] != '"' {
			if in[end] == '\\' || in[end] < 0x20 {
				return false // escaped keys: leave them to the validator
			}
			end++
		}
		if end >= len(in) {
			return false
		}
		key := in[i+1 : end]
		k := -1
		for j, n := range f.names {
			if string(key) == n {
				k = j
				break
			}
		}
		if k < 0 && f.closed {
			return false
		}
		i = skipWS(in, end+1)
		if i >= len(in) || in[i] != ':' {
			return false
		}
		i = skipWS(in, i+1)
		vEnd, kind := scanScalar(in, i)
		if vEnd < 0 {
			return false
		}
		if k >= 0 {
			if !kindFits(kind, f.types[k]) {
				return false
			}
			seen |= 1 << k
		}
		i = skipWS(in, vEnd)
		if i >= len(in) {
			return false
		}
		if in[i] == '}' {
			return skipWS(in, i+1) == len(in) && seen&f.required == f.required
		}
		if in[i] != ',' {
			return false
		}
		i = skipWS(in, i+1)
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanScalar returns the end of the scalar value at i and its kind:
// 's' string, 'b' boolean, 'i' integer, 'n' other number. Objects, arrays,
// null and anything malformed give -1.
func scanScalar(b []byte, i int) (int, byte) {
	if i >= len(b) {
		return -1, 0
	}
	switch c := b[i]; {
	case c == '"':
		for j := i + 1; j < len(b); j++ {
			switch {
			case b[j] == '\\':
				n := escapeLen(b[j+1:])
				if n == 0 {
					return -1, 0
				}
				j += n
			case b[j] == '"':
				return j + 1, 's'
			case b[j] < 0x20:
				return -1, 0
			}
		}
		return -1, 0
	case c == 't' && bytes.HasPrefix(b[i:], []byte("true")):
		return i + 4, 'b'
	case c == 'f' && bytes.HasPrefix(b[i:], []byte("false")):
		return i + 5, 'b'
	case c == '-' || (c >= '0' && c <= '9'):
		j := i
		if b[j] == '-' {
			j++
		}
		digits := 0
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
			digits++
		}
		if digits == 0 || (digits > 1 && b[i+boolInt(b[i] == '-')] == '0') {
			return -1, 0
		}
		if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
			return -1, 0 // fractions and exponents: leave them to the validator
		}
		if digits > 15 {
			return -1, 0 // past float64's exact integers, and out of its range: the validator decides
		}
		return j, 'i'
	}
	return -1, 0
}

// escapeLen returns the length of the valid escape sequence at the start
// of b (after the backslash), or 0.
func escapeLen(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	switch b[0] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 1
	case 'u':
		if len(b) < 5 {
			return 0
		}
		for _, c := range b[1:5] {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return 0
			}
		}
		return 5
	}
	return 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func kindFits(kind byte, typ string) bool {
	switch typ {
	case "string":
		return kind == 's'
	case "boolean":
		return kind == 'b'
	case "integer", "number":
		return kind == 'i'
	}
	return false
}
