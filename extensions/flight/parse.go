package flight

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// parseFast decodes a line written by appendEvent (or anything of the
// same simple shape) without reflection. It reports false for whatever it
// does not handle exactly as encoding/json would — unknown or differently
// cased keys, nulls, non-integer numbers, malformed input — and the
// caller then falls back to encoding/json, so both give the same result.
func parseFast(line []byte, e *Event) bool {
	p := parser{b: line}
	p.ws()
	if !p.lit('{') {
		return false
	}
	p.ws()
	if p.lit('}') {
		return p.end()
	}
	for {
		p.ws()
		key, ok := p.key()
		if !ok {
			return false
		}
		p.ws()
		if !p.lit(':') {
			return false
		}
		p.ws()
		if !p.field(key, e) {
			return false
		}
		p.ws()
		if p.lit(',') {
			continue
		}
		if p.lit('}') {
			return p.end()
		}
		return false
	}
}

type parser struct {
	b []byte
	i int
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) lit(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) end() bool {
	p.ws()
	return p.i == len(p.b)
}

// key returns an object key without escapes.
func (p *parser) key() ([]byte, bool) {
	if !p.lit('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			k := p.b[start:p.i]
			p.i++
			return k, true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// str returns a string value. Strings with escapes are decoded by
// encoding/json; invalid UTF-8 makes the caller fall back.
func (p *parser) str() (string, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	start := p.i
	p.i++
	escaped := false
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			if escaped {
				var s string
				if json.Unmarshal(p.b[start:p.i], &s) != nil {
					return "", false
				}
				return s, true
			}
			raw := p.b[start+1 : p.i-1]
			if !utf8.Valid(raw) {
				return "", false
			}
			return string(raw), true
		case c == '\\':
			escaped = true
			p.i += 2
			continue
		case c < 0x20:
			return "", false
		}
		p.i++
	}
	return "", false
}

// digits returns an integer token: an optional minus (when signed) and
// digits without a leading zero.
func (p *parser) digits(signed bool) ([]byte, bool) {
	start := p.i
	if signed {
		p.lit('-')
	}
	d := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	n := p.i - d
	if n == 0 || (n > 1 && p.b[d] == '0') {
		return nil, false
	}
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case '.', 'e', 'E':
			return nil, false
		}
	}
	return p.b[start:p.i], true
}

func (p *parser) uint64() (uint64, bool) {
	tok, ok := p.digits(false)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(string(tok), 10, 64)
	return n, err == nil
}

func (p *parser) int64() (int64, bool) {
	tok, ok := p.digits(true)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(tok), 10, 64)
	return n, err == nil
}

func (p *parser) int() (int, bool) {
	tok, ok := p.digits(true)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(tok), 10, strconv.IntSize)
	return int(n), err == nil
}

func (p *parser) field(key []byte, e *Event) bool {
	var ok bool
	setStr := func(dst *string) bool {
		*dst, ok = p.str()
		return ok
	}
	setInt64 := func(dst *int64) bool {
		*dst, ok = p.int64()
		return ok
	}
	setInt := func(dst *int) bool {
		*dst, ok = p.int()
		return ok
	}
	switch string(key) {
	case "seq":
		e.Seq, ok = p.uint64()
		return ok
	case "time":
		start := p.i
		if _, ok := p.str(); !ok {
			return false
		}
		return e.Time.UnmarshalJSON(p.b[start:p.i]) == nil
	case "kind":
		var s string
		if !setStr(&s) {
			return false
		}
		e.Kind = Kind(s)
		return true
	case "agent":
		return setStr(&e.Agent)
	case "session_id":
		return setStr(&e.SessionID)
	case "run_id":
		return setStr(&e.RunID)
	case "ref":
		e.Ref, ok = p.uint64()
		return ok
	case "step":
		return setInt(&e.Step)
	case "attempt":
		return setInt(&e.Attempt)
	case "trace_id":
		return setStr(&e.TraceID)
	case "span_id":
		return setStr(&e.SpanID)
	case "status":
		return setStr(&e.Status)
	case "duration_ns":
		var d int64
		if !setInt64(&d) {
			return false
		}
		e.Duration = durationOf(d)
		return true
	case "model":
		return setStr(&e.Model)
	case "provider":
		return setStr(&e.Provider)
	case "response_id":
		return setStr(&e.ResponseID)
	case "stop_reason":
		return setStr(&e.StopReason)
	case "messages":
		return setInt(&e.Messages)
	case "prefix":
		return setStr(&e.Prefix)
	case "input_tokens":
		return setInt64(&e.InputTokens)
	case "output_tokens":
		return setInt64(&e.OutputTokens)
	case "cache_read_tokens":
		return setInt64(&e.CacheReadTokens)
	case "cache_creation_tokens":
		return setInt64(&e.CacheCreationTokens)
	case "reasoning_tokens":
		return setInt64(&e.ReasoningTokens)
	case "tool":
		return setStr(&e.Tool)
	case "call_id":
		return setStr(&e.CallID)
	case "text":
		return setStr(&e.Text)
	case "size":
		return setInt(&e.Size)
	case "truncated":
		switch {
		case p.word("true"):
			e.Truncated = true
		case p.word("false"):
			e.Truncated = false
		default:
			return false
		}
		return true
	case "error":
		return setStr(&e.Error)
	case "error_type":
		return setStr(&e.ErrorType)
	case "extension":
		return setStr(&e.Extension)
	case "op":
		return setStr(&e.Op)
	case "failed_event":
		return setStr(&e.FailedEvent)
	case "reason":
		return setStr(&e.Reason)
	case "path":
		return setStr(&e.Path)
	}
	return false
}

func (p *parser) word(w string) bool {
	if len(p.b)-p.i >= len(w) && string(p.b[p.i:p.i+len(w)]) == w {
		p.i += len(w)
		return true
	}
	return false
}
