package jaegertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Query selects traces for GET /api/v3/traces.
type Query struct {
	// Service is the service.name of the traces; required.
	Service string
	// Operation optionally restricts to traces with a span of that name.
	Operation string
	// StartMin and StartMax bound the traces' start times; required.
	StartMin, StartMax time.Time
	// NumTraces caps the traces returned; Jaeger requires one, so 0
	// means DefaultNumTraces.
	NumTraces int
}

// Span is one span as the API v3 returns it, with its resource and scope.
type Span struct {
	TraceID      string // hex
	SpanID       string // hex
	ParentSpanID string // hex; empty for a root span
	Name         string
	// Kind is the OTLP span kind: 1 internal, 2 server, 3 client,
	// 4 producer, 5 consumer.
	Kind       int
	Start, End time.Time
	// Attributes holds string, int64, float64, bool and []any values.
	Attributes map[string]any
	Events     []string // event names
	StatusCode int      // OTLP status code: 0 unset, 1 ok, 2 error
	Resource   map[string]any
	Scope      string
}

// DefaultNumTraces is the trace count asked for when Query.NumTraces is 0.
const DefaultNumTraces = 20

// StatusError is a query answered with an HTTP error other than 404 (which
// means no traces yet).
type StatusError struct {
	Status string
	Body   string
}

// Error gives the status and the body Jaeger answered with.
func (e *StatusError) Error() string {
	return "jaegertest: GET /api/v3/traces: " + e.Status + ": " + e.Body
}

// OTLP span kinds, as Span.Kind holds them.
const (
	KindInternal = 1
	KindServer   = 2
	KindClient   = 3
)

// FindTraces runs q against GET /api/v3/traces and returns the spans of
// the traces found, none when Jaeger has none yet. It blocks for one HTTP
// request; it is safe for concurrent use.
func (j *Jaeger) FindTraces(ctx context.Context, q Query) ([]Span, error) {
	return findTraces(ctx, j.client, j.QueryURL, q)
}

// WaitForSpans polls FindTraces until at least n spans are found or ctx is
// done, and returns the last spans found with ctx's error in that case.
// Jaeger stores spans a moment after it receives them. A [*StatusError]
// (a bad query) ends the wait at once.
func (j *Jaeger) WaitForSpans(ctx context.Context, q Query, n int) ([]Span, error) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var spans []Span
	var lastErr error
	for {
		got, err := j.FindTraces(ctx, q)
		var se *StatusError
		if errors.As(err, &se) {
			return spans, err
		}
		if err == nil {
			spans = got
			if len(spans) >= n {
				return spans, nil
			}
		}
		lastErr = err
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return spans, fmt.Errorf("jaegertest: %d of %d spans: %w (last query error: %v)", len(spans), n, ctx.Err(), lastErr)
			}
			return spans, fmt.Errorf("jaegertest: %d of %d spans: %w", len(spans), n, ctx.Err())
		case <-tick.C:
		}
	}
}

func findTraces(ctx context.Context, hc *http.Client, base string, q Query) ([]Span, error) {
	v := url.Values{}
	v.Set("query.service_name", q.Service)
	if q.Operation != "" {
		v.Set("query.operation_name", q.Operation)
	}
	v.Set("query.start_time_min", q.StartMin.UTC().Format(time.RFC3339Nano))
	v.Set("query.start_time_max", q.StartMax.UTC().Format(time.RFC3339Nano))
	n := q.NumTraces
	if n <= 0 {
		n = DefaultNumTraces
	}
	v.Set("query.num_traces", strconv.Itoa(n))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v3/traces?"+v.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("jaegertest: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("jaegertest: %w", err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil // "No traces found"
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{Status: resp.Status, Body: string(bytes.TrimSpace(body))}
	}
	return DecodeTraces(body)
}

// DecodeTraces decodes an API v3 traces response: {"result": TracesData}
// in OTLP JSON, with hex IDs and enums as numbers or names.
func DecodeTraces(body []byte) ([]Span, error) {
	var doc struct {
		Result struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []kv `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Scope struct {
						Name string `json:"name"`
					} `json:"scope"`
					Spans []struct {
						TraceID           string   `json:"traceId"`
						SpanID            string   `json:"spanId"`
						ParentSpanID      string   `json:"parentSpanId"`
						Name              string   `json:"name"`
						Kind              enum     `json:"kind"`
						StartTimeUnixNano unixNano `json:"startTimeUnixNano"`
						EndTimeUnixNano   unixNano `json:"endTimeUnixNano"`
						Attributes        []kv     `json:"attributes"`
						Events            []struct {
							Name string `json:"name"`
						} `json:"events"`
						Status struct {
							Code enum `json:"code"`
						} `json:"status"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("jaegertest: decoding traces: %w", err)
	}
	var out []Span
	for _, rs := range doc.Result.ResourceSpans {
		res := attrMap(rs.Resource.Attributes)
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := Span{
					TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID,
					Name: s.Name, Kind: int(s.Kind),
					Start: time.Time(s.StartTimeUnixNano), End: time.Time(s.EndTimeUnixNano),
					Attributes: attrMap(s.Attributes), StatusCode: int(s.Status.Code),
					Resource: res, Scope: ss.Scope.Name,
				}
				for _, e := range s.Events {
					sp.Events = append(sp.Events, e.Name)
				}
				out = append(out, sp)
			}
		}
	}
	return out, nil
}

// kv is an OTLP KeyValue.
type kv struct {
	Key   string   `json:"key"`
	Value anyValue `json:"value"`
}

// anyValue is an OTLP AnyValue.
type anyValue struct {
	StringValue *string          `json:"stringValue"`
	IntValue    *json.RawMessage `json:"intValue"` // a string or a number
	DoubleValue *float64         `json:"doubleValue"`
	BoolValue   *bool            `json:"boolValue"`
	ArrayValue  *struct {
		Values []anyValue `json:"values"`
	} `json:"arrayValue"`
}

func (v anyValue) value() any {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.IntValue != nil:
		s := string(bytes.Trim(*v.IntValue, `"`))
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return s
		}
		return n
	case v.DoubleValue != nil:
		return *v.DoubleValue
	case v.BoolValue != nil:
		return *v.BoolValue
	case v.ArrayValue != nil:
		out := make([]any, len(v.ArrayValue.Values))
		for i, e := range v.ArrayValue.Values {
			out[i] = e.value()
		}
		return out
	}
	return nil
}

func attrMap(kvs []kv) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, a := range kvs {
		m[a.Key] = a.Value.value()
	}
	return m
}

// enum decodes an OTLP enum given as a number or as its name.
type enum int

var enumNames = map[string]int{
	"SPAN_KIND_UNSPECIFIED": 0, "SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2,
	"SPAN_KIND_CLIENT": 3, "SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5,
	"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2,
}

func (e *enum) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		n, ok := enumNames[s]
		if !ok {
			return fmt.Errorf("unknown enum value %q", s)
		}
		*e = enum(n)
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*e = enum(n)
	return nil
}

// unixNano decodes nanoseconds since the epoch given as a string or a number.
type unixNano time.Time

func (u *unixNano) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	if s == "" || s == "null" {
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return err
	}
	*u = unixNano(time.Unix(0, n))
	return nil
}
