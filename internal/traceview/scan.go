package traceview

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

// This file reads the few fields of a trace-file line that the index
// needs (IDs, name, times, status and the attributes a run summary reads),
// without decoding the rest: prompts, messages and tool results, most of a
// trace file's bytes, are skipped as strings. It walks OTLP/JSON as
// protojson writes and reads it (camelCase or proto field names, numbers
// as strings or numbers, enums as numbers or names, IDs hex or base64).

// errSyntax is the error of a line that is not JSON, or not OTLP JSON.
var errSyntax = errors.New("not OTLP JSON")

// maxNesting bounds the nesting of the JSON values skipped.
const maxNesting = 10000

// jscan walks one JSON document.
type jscan struct {
	b []byte
	i int
}

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jscan) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// null consumes a null and reports whether there was one.
func (s *jscan) null() bool {
	if s.peek() == 'n' && bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// object calls fn with each key of an object; fn consumes the value. A
// null is an empty object.
func (s *jscan) object(fn func(key []byte) error) error {
	if s.null() {
		return nil
	}
	if s.peek() != '{' {
		return errSyntax
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		if s.peek() != '"' {
			return errSyntax
		}
		key, err := s.str()
		if err != nil {
			return err
		}
		if s.peek() != ':' {
			return errSyntax
		}
		s.i++
		if err := fn(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// array calls fn for each element of an array; fn consumes it. A null is
// an empty array.
func (s *jscan) array(fn func() error) error {
	if s.null() {
		return nil
	}
	if s.peek() != '[' {
		return errSyntax
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := fn(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// strEnd returns the index just past the closing quote of the string
// whose opening quote is at s.i.
func (s *jscan) strEnd() (int, error) {
	i := s.i + 1
	for {
		j := bytes.IndexByte(s.b[i:], '"')
		if j < 0 {
			return 0, errSyntax
		}
		j += i
		n := 0
		for k := j - 1; k > s.i && s.b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, nil
		}
		i = j + 1
	}
}

// str reads a string. The result aliases the line unless the string has
// escapes.
func (s *jscan) str() ([]byte, error) {
	if s.peek() != '"' {
		return nil, errSyntax
	}
	end, err := s.strEnd()
	if err != nil {
		return nil, err
	}
	raw := s.b[s.i:end]
	s.i = end
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return body, nil
	}
	u, err := strconv.Unquote(string(raw))
	if err != nil {
		return unescapeJSON(body)
	}
	return []byte(u), nil
}

// unescapeJSON decodes the escapes of a JSON string body that
// strconv.Unquote refuses (\/ and surrogate pairs).
func unescapeJSON(body []byte) ([]byte, error) {
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(body) {
			return nil, errSyntax
		}
		switch body[i] {
		case '"', '\\', '/':
			out = append(out, body[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := hex4(body[i+1:])
			if n == 0 {
				return nil, errSyntax
			}
			i += n
			if r >= 0xd800 && r < 0xdc00 && i+2 < len(body) && body[i+1] == '\\' && body[i+2] == 'u' {
				if r2, n2 := hex4(body[i+3:]); n2 > 0 && r2 >= 0xdc00 && r2 < 0xe000 {
					r = (r-0xd800)<<10 + (r2 - 0xdc00) + 0x10000
					i += 2 + n2
				}
			}
			out = utf8.AppendRune(out, rune(r))
		default:
			return nil, errSyntax
		}
	}
	return out, nil
}

func hex4(b []byte) (int, int) {
	if len(b) < 4 {
		return 0, 0
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 32)
	if err != nil {
		return 0, 0
	}
	return int(n), 4
}

// skip consumes any value.
func (s *jscan) skip(depth int) error {
	if depth > maxNesting {
		return errSyntax
	}
	switch c := s.peek(); {
	case c == '"':
		end, err := s.strEnd()
		if err != nil {
			return err
		}
		s.i = end
		return nil
	case c == '{':
		return s.object(func([]byte) error { return s.skip(depth + 1) })
	case c == '[':
		return s.array(func() error { return s.skip(depth + 1) })
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := s.number()
		return err
	}
	return errSyntax
}

func (s *jscan) literal(lit string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return errSyntax
	}
	s.i += len(lit)
	return nil
}

// number consumes a JSON number and returns its text.
func (s *jscan) number() ([]byte, error) {
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			s.i++
			continue
		}
		break
	}
	if s.i == start {
		return nil, errSyntax
	}
	return s.b[start:s.i], nil
}

// scalar reads a string or number value as text (protojson writes 64-bit
// integers as strings), or true/false.
func (s *jscan) scalar() ([]byte, error) {
	switch c := s.peek(); {
	case c == '"':
		return s.str()
	case c == 't':
		return []byte("true"), s.literal("true")
	case c == 'f':
		return []byte("false"), s.literal("false")
	}
	return s.number()
}

// skel is what the index keeps of one span: enough to group spans into
// runs and to sum a run up, and the line that holds the whole span.
type skel struct {
	span, parent [8]byte
	hasParent    bool
	status       StatusCode
	line         int32 // index of the line in its file's index
	start, end   int64 // Unix nanoseconds; 0 when unknown
	name         string
	op           string // gen_ai.operation.name, "" when absent
	x            *skelExtra
}

// skelExtra holds the attributes a run summary reads, for the spans that
// have any.
type skelExtra struct {
	runID, agent, runStatus string
	errType, statusMsg      string
	usage                   Usage
	usageKeys               uint8 // bit i: usage key i was present
	cost                    float64
	hasCost                 bool
	unpriced                int64
	hasUnpriced             bool
	breaks                  []string
}

// The attribute keys the index keeps.
const (
	keyOp         = "gen_ai.operation.name"
	keyRunID      = "harnessx.run.id"
	keyAgent      = "gen_ai.agent.name"
	keyRunStatus  = "harnessx.run.status"
	keyErrorType  = "error.type"
	keyCost       = "harnessx.cost.usd"
	keyUnpriced   = "harnessx.cost.unpriced_requests"
	keyPrefixDiff = "harnessx.prefix_key.changed"
)

// usageKeys are the gen_ai.usage.* keys, in the order of the Usage fields.
var usageKeys = [5]string{
	"gen_ai.usage.input_tokens",
	"gen_ai.usage.output_tokens",
	"gen_ai.usage.cache_read.input_tokens",
	"gen_ai.usage.cache_creation.input_tokens",
	"gen_ai.usage.reasoning.output_tokens",
}

// keptKey reports whether the index keeps attribute key.
func keptKey(key []byte) bool {
	switch string(key) {
	case keyOp, keyRunID, keyAgent, keyRunStatus, keyErrorType, keyCost, keyUnpriced, keyPrefixDiff:
		return true
	}
	for _, k := range usageKeys {
		if string(key) == k {
			return true
		}
	}
	return false
}

// maxStatusMsg caps the status message the index keeps of a span.
const maxStatusMsg = 300

// interner shares the strings that repeat from span to span (names,
// operations, agents, error types), up to a bound.
type interner map[string]string

func (in interner) get(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(in) < 20000 && len(s) <= 256 {
		in[s] = s
	}
	return s
}

// spanSink receives the spans of a line.
type spanSink func(trace [16]byte, sk skel)

// scanLine reads the spans of one trace-file line (an OTLP/JSON
// ExportTraceServiceRequest) and passes each to sink with line as its
// line index. It fails on a line that is not JSON or whose spans have IDs
// of the wrong size; then sink may have seen some of its spans.
func scanLine(data []byte, line int32, in interner, sink spanSink) error {
	s := &jscan{b: data}
	var err error
	if s.peek() != '{' {
		return errSyntax
	}
	err = s.object(func(k []byte) error {
		switch string(k) {
		case "resourceSpans", "resource_spans":
			return s.array(func() error {
				return s.object(func(k []byte) error {
					switch string(k) {
					case "scopeSpans", "scope_spans":
						return s.array(func() error {
							return s.object(func(k []byte) error {
								if string(k) != "spans" {
									return s.skip(0)
								}
								return s.array(func() error { return scanSpan(s, line, in, sink) })
							})
						})
					}
					return s.skip(0)
				})
			})
		}
		return s.skip(0)
	})
	if err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return errSyntax
	}
	return nil
}

// scanSpan reads one span object.
func scanSpan(s *jscan, line int32, in interner, sink spanSink) error {
	var (
		trace                [16]byte
		sk                   = skel{line: line, status: StatusUnset}
		haveTrace, haveS     bool
		changed, eventBreaks []string
		hasChanged           bool
	)
	err := s.object(func(k []byte) error {
		switch string(k) {
		case "traceId", "trace_id":
			b, err := s.str()
			if err != nil {
				return err
			}
			haveTrace = decodeID(trace[:], b)
			if !haveTrace {
				return errSyntax
			}
		case "spanId", "span_id":
			b, err := s.str()
			if err != nil {
				return err
			}
			haveS = decodeID(sk.span[:], b)
			if !haveS {
				return errSyntax
			}
		case "parentSpanId", "parent_span_id":
			b, err := s.str()
			if err != nil {
				return err
			}
			if len(b) > 0 {
				if !decodeID(sk.parent[:], b) {
					return errSyntax
				}
				sk.hasParent = true
			}
		case "name":
			b, err := s.str()
			if err != nil {
				return err
			}
			sk.name = in.get(b)
		case "startTimeUnixNano", "start_time_unix_nano":
			return s.nanos(&sk.start)
		case "endTimeUnixNano", "end_time_unix_nano":
			return s.nanos(&sk.end)
		case "status":
			return s.object(func(k []byte) error {
				switch string(k) {
				case "code":
					b, err := s.scalar()
					if err != nil {
						return err
					}
					switch string(b) {
					case "1", "STATUS_CODE_OK":
						sk.status = StatusOK
					case "2", "STATUS_CODE_ERROR":
						sk.status = StatusError
					}
				case "message":
					b, err := s.str()
					if err != nil {
						return err
					}
					if len(b) > 0 {
						sk.extra().statusMsg = cutBytes(b, maxStatusMsg)
					}
				default:
					return s.skip(0)
				}
				return nil
			})
		case "attributes":
			return scanAttrs(s, func(key []byte, v Value) {
				switch string(key) {
				case keyOp:
					sk.op = in.get([]byte(v.String()))
				case keyRunID:
					sk.extra().runID = v.String()
				case keyAgent:
					sk.extra().agent = in.get([]byte(v.String()))
				case keyRunStatus:
					sk.extra().runStatus = in.get([]byte(v.String()))
				case keyErrorType:
					sk.extra().errType = in.get([]byte(v.String()))
				case keyCost:
					x := sk.extra()
					x.cost, x.hasCost = valueFloat(v), true
				case keyUnpriced:
					x := sk.extra()
					x.unpriced, _ = v.AsInt()
					x.hasUnpriced = true
				case keyPrefixDiff:
					changed, hasChanged = v.Strings(), true
				default:
					for i, uk := range usageKeys {
						if string(key) == uk {
							x := sk.extra()
							n, _ := v.AsInt()
							*x.usageField(i) = n
							x.usageKeys |= 1 << i
						}
					}
				}
			})
		case "events":
			b, err := scanBreakEvents(s)
			if err != nil {
				return err
			}
			eventBreaks = b
		default:
			return s.skip(0)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !haveTrace || !haveS {
		return errSyntax
	}
	// As cacheBreaks: the attribute, when present, is the answer; else
	// the first prompt_cache_break event's.
	breaks := eventBreaks
	if hasChanged {
		breaks = changed
	}
	if len(breaks) > 0 {
		sk.extra().breaks = breaks
	}
	sink(trace, sk)
	return nil
}

func (sk *skel) extra() *skelExtra {
	if sk.x == nil {
		sk.x = &skelExtra{}
	}
	return sk.x
}

func (x *skelExtra) usageField(i int) *int64 {
	switch i {
	case 0:
		return &x.usage.Input
	case 1:
		return &x.usage.Output
	case 2:
		return &x.usage.CacheRead
	case 3:
		return &x.usage.CacheCreation
	}
	return &x.usage.Reasoning
}

// nanos reads a time in Unix nanoseconds, as unixNano converts it.
func (s *jscan) nanos(dst *int64) error {
	b, err := s.scalar()
	if err != nil {
		return err
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return errSyntax
	}
	if n > 1<<63-1 {
		n = 0
	}
	*dst = int64(n)
	return nil
}

// scanAttrs reads an attributes array, calling fn with each kept key and
// its value.
func scanAttrs(s *jscan, fn func(key []byte, v Value)) error {
	return s.array(func() error {
		var key []byte
		var val [2]int
		err := s.object(func(k []byte) error {
			switch string(k) {
			case "key":
				b, err := s.str()
				if err != nil {
					return err
				}
				key = b
			case "value":
				val[0] = s.i
				if err := s.skip(0); err != nil {
					return err
				}
				val[1] = s.i
			default:
				return s.skip(0)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if val[1] == 0 || !keptKey(key) {
			return nil
		}
		v, err := scanValue(&jscan{b: s.b[:val[1]], i: val[0]}, 0)
		if err != nil {
			return err
		}
		fn(key, v)
		return nil
	})
}

// scanValue reads an AnyValue as [FromOTLP] converts it.
func scanValue(s *jscan, depth int) (Value, error) {
	out := Value{Type: TypeEmpty}
	if depth > maxDepth {
		return out, s.skip(0)
	}
	err := s.object(func(k []byte) error {
		switch string(k) {
		case "stringValue", "string_value":
			b, err := s.str()
			if err != nil {
				return err
			}
			out = Value{Type: TypeString, Str: string(b)}
		case "intValue", "int_value":
			b, err := s.scalar()
			if err != nil {
				return err
			}
			n, err := strconv.ParseInt(string(b), 10, 64)
			if err != nil {
				return errSyntax
			}
			out = Value{Type: TypeInt, Int: n}
		case "doubleValue", "double_value":
			b, err := s.scalar()
			if err != nil {
				return err
			}
			f, err := parseDouble(b)
			if err != nil {
				return err
			}
			out = Value{Type: TypeDouble, Double: f}
		case "boolValue", "bool_value":
			b, err := s.scalar()
			if err != nil {
				return err
			}
			out = Value{Type: TypeBool, Bool: string(b) == "true"}
		case "arrayValue", "array_value":
			out = Value{Type: TypeArray, Array: []Value{}}
			return s.object(func(k []byte) error {
				if string(k) != "values" {
					return s.skip(0)
				}
				return s.array(func() error {
					v, err := scanValue(s, depth+1)
					out.Array = append(out.Array, v)
					return err
				})
			})
		default:
			// bytes and key-value lists: the index keeps none.
			return s.skip(0)
		}
		return nil
	})
	return out, err
}

func parseDouble(b []byte) (float64, error) {
	switch string(b) {
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, errSyntax
	}
	return f, nil
}

// scanBreakEvents returns the harnessx.prefix_key.changed attribute of
// the first prompt_cache_break event that has one.
func scanBreakEvents(s *jscan) ([]string, error) {
	var out []string
	found := false
	err := s.array(func() error {
		var name []byte
		var attrs [2]int
		err := s.object(func(k []byte) error {
			switch string(k) {
			case "name":
				b, err := s.str()
				if err != nil {
					return err
				}
				name = b
			case "attributes":
				attrs[0] = s.i
				if err := s.skip(0); err != nil {
					return err
				}
				attrs[1] = s.i
			default:
				return s.skip(0)
			}
			return nil
		})
		if err != nil || found || string(name) != "prompt_cache_break" || attrs[1] == 0 {
			return err
		}
		return scanAttrs(&jscan{b: s.b[:attrs[1]], i: attrs[0]}, func(key []byte, v Value) {
			if string(key) == keyPrefixDiff && !found {
				out, found = v.Strings(), true
			}
		})
	})
	return out, err
}

// decodeID decodes a hex or base64 ID into dst, as otlpjson does, and
// reports whether it has dst's size.
func decodeID(dst []byte, b []byte) bool {
	if len(b) == 2*len(dst) {
		if _, err := hex.Decode(dst, b); err == nil {
			return true
		}
	}
	var buf [24]byte
	if base64.StdEncoding.DecodedLen(len(b)) > len(buf) {
		return false
	}
	n, err := base64.StdEncoding.Decode(buf[:], b)
	if err != nil || n != len(dst) {
		return false
	}
	copy(dst, buf[:n])
	return true
}

func valueFloat(v Value) float64 {
	switch v.Type {
	case TypeDouble:
		return v.Double
	case TypeInt:
		return float64(v.Int)
	case TypeString:
		f, _ := strconv.ParseFloat(v.Str, 64)
		return f
	}
	return 0
}

// cutBytes returns b as a string of at most n bytes, cut at a character
// boundary.
func cutBytes(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n]) + "…"
}
