package traceview

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// ValueType is the type of an attribute [Value].
type ValueType string

// The attribute value types of OpenTelemetry.
const (
	TypeString ValueType = "string"
	TypeInt    ValueType = "int"
	TypeDouble ValueType = "double"
	TypeBool   ValueType = "bool"
	TypeBytes  ValueType = "bytes"
	TypeArray  ValueType = "array"
	TypeMap    ValueType = "map"
	TypeEmpty  ValueType = "empty"
)

// Value is a typed attribute value. Only the field of its Type is set.
type Value struct {
	Type   ValueType
	Str    string
	Int    int64
	Double float64
	Bool   bool
	Bytes  []byte
	Array  []Value
	Map    []Attr
}

// String returns the value as text: a string as is, numbers and booleans
// in Go syntax, bytes in base64, arrays and maps as JSON.
func (v Value) String() string {
	switch v.Type {
	case TypeString:
		return v.Str
	case TypeInt:
		return strconv.FormatInt(v.Int, 10)
	case TypeDouble:
		return strconv.FormatFloat(v.Double, 'g', -1, 64)
	case TypeBool:
		return strconv.FormatBool(v.Bool)
	case TypeBytes:
		return base64.StdEncoding.EncodeToString(v.Bytes)
	case TypeArray, TypeMap:
		b, err := json.Marshal(v.plain())
		if err != nil {
			return ""
		}
		return string(b)
	}
	return ""
}

// Strings returns a string array's elements, or a string value alone.
func (v Value) Strings() []string {
	switch v.Type {
	case TypeString:
		return []string{v.Str}
	case TypeArray:
		out := make([]string, 0, len(v.Array))
		for _, e := range v.Array {
			out = append(out, e.String())
		}
		return out
	}
	return nil
}

// AsInt returns an integer value, or a string holding one, and whether it
// was one.
func (v Value) AsInt() (int64, bool) {
	switch v.Type {
	case TypeInt:
		return v.Int, true
	case TypeDouble:
		return int64(v.Double), true
	case TypeString:
		n, err := strconv.ParseInt(v.Str, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// plain returns the value as a Go value encoding/json encodes naturally.
func (v Value) plain() any {
	switch v.Type {
	case TypeString:
		return v.Str
	case TypeInt:
		return v.Int
	case TypeDouble:
		return v.Double
	case TypeBool:
		return v.Bool
	case TypeBytes:
		return v.Bytes
	case TypeArray:
		out := make([]any, len(v.Array))
		for i, e := range v.Array {
			out[i] = e.plain()
		}
		return out
	case TypeMap:
		out := make(map[string]any, len(v.Map))
		for _, a := range v.Map {
			out[a.Key] = a.Value.plain()
		}
		return out
	}
	return nil
}

// Attr is one attribute: a key and its value.
type Attr struct {
	Key   string
	Value Value
}

// Attrs is a list of attributes in their recorded order.
type Attrs []Attr

// Get returns the value of the first attribute named key.
func (as Attrs) Get(key string) (Value, bool) {
	for _, a := range as {
		if a.Key == key {
			return a.Value, true
		}
	}
	return Value{}, false
}

// Str returns the text of attribute key, or "".
func (as Attrs) Str(key string) string {
	v, ok := as.Get(key)
	if !ok {
		return ""
	}
	return v.String()
}

// Int returns the integer of attribute key, or 0.
func (as Attrs) Int(key string) int64 {
	v, _ := as.Get(key)
	n, _ := v.AsInt()
	return n
}

// Event is a span event.
type Event struct {
	Name  string
	Time  time.Time
	Attrs Attrs
}

// StatusCode is a span's status code.
type StatusCode string

// The span status codes of OpenTelemetry.
const (
	StatusUnset StatusCode = "unset"
	StatusOK    StatusCode = "ok"
	StatusError StatusCode = "error"
)

// Span is one span.
type Span struct {
	TraceID  string // hex, 32 digits
	SpanID   string // hex, 16 digits
	ParentID string // hex, empty for a root span
	Name     string
	Kind     string // internal, server, client, producer, consumer or unspecified
	Start    time.Time
	End      time.Time
	Status   StatusCode
	// StatusMessage is the status description (set with StatusError).
	StatusMessage string
	Attrs         Attrs
	Events        []Event
	// Service is the service.name of the span's resource.
	Service string
	// Children are the span's children, by start time; set by BuildRuns.
	Children []*Span
}

// Duration returns End - Start, or 0 when either is unknown.
func (s *Span) Duration() time.Duration {
	if s.Start.IsZero() || s.End.IsZero() || s.End.Before(s.Start) {
		return 0
	}
	return s.End.Sub(s.Start)
}

// Operation returns the gen_ai.operation.name of the span, or else the
// first word of its name when that is a GenAI operation harnessx uses
// (invoke_agent, chat, execute_tool).
func (s *Span) Operation() string {
	if op := s.Attrs.Str("gen_ai.operation.name"); op != "" {
		return op
	}
	first, _, _ := strings.Cut(s.Name, " ")
	switch first {
	case opInvokeAgent, opChat, opExecuteTool:
		return first
	}
	return ""
}

// The GenAI operation names of harnessx spans.
const (
	opInvokeAgent = "invoke_agent"
	opChat        = "chat"
	opExecuteTool = "execute_tool"
)

// Failed reports whether the span records an error: status error or an
// error.type attribute.
func (s *Span) Failed() bool {
	return s.Status == StatusError || s.Attrs.Str("error.type") != ""
}

// Usage counts tokens. Input includes the cached tokens.
type Usage struct {
	Input         int64 `json:"input"`
	Output        int64 `json:"output"`
	CacheRead     int64 `json:"cache_read"`
	CacheCreation int64 `json:"cache_creation"`
	Reasoning     int64 `json:"reasoning"`
}

func (u *Usage) add(o Usage) {
	u.Input += o.Input
	u.Output += o.Output
	u.CacheRead += o.CacheRead
	u.CacheCreation += o.CacheCreation
	u.Reasoning += o.Reasoning
}

// IsZero reports whether no token is counted.
func (u Usage) IsZero() bool { return u == Usage{} }

// spanUsage reads the gen_ai.usage.* attributes of s.
func spanUsage(s *Span) (Usage, bool) {
	u := Usage{
		Input:         s.Attrs.Int("gen_ai.usage.input_tokens"),
		Output:        s.Attrs.Int("gen_ai.usage.output_tokens"),
		CacheRead:     s.Attrs.Int("gen_ai.usage.cache_read.input_tokens"),
		CacheCreation: s.Attrs.Int("gen_ai.usage.cache_creation.input_tokens"),
		Reasoning:     s.Attrs.Int("gen_ai.usage.reasoning.output_tokens"),
	}
	_, has := s.Attrs.Get("gen_ai.usage.input_tokens")
	if !has {
		_, has = s.Attrs.Get("gen_ai.usage.output_tokens")
	}
	return u, has
}
