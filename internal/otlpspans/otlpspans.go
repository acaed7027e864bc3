package otlpspans

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/harnessx/harnessx/internal/otlpjson"
	"github.com/harnessx/harnessx/internal/recording"
	"github.com/harnessx/harnessx/internal/redact"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// captureClient is an otlptrace.Client that keeps what it is given
// instead of sending it: the OTLP exporter does the conversion.
type captureClient struct {
	mu sync.Mutex
	rs []*tracepb.ResourceSpans
}

func (c *captureClient) Start(context.Context) error { return nil }
func (c *captureClient) Stop(context.Context) error  { return nil }
func (c *captureClient) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	c.mu.Lock()
	c.rs = append(c.rs, rs...)
	c.mu.Unlock()
	return nil
}

// FromSDK converts spans to an OTLP export request with the OTLP
// exporter's own conversion (otlptrace.New with a capturing client).
func FromSDK(ctx context.Context, spans []sdktrace.ReadOnlySpan) (*coltracepb.ExportTraceServiceRequest, error) {
	c := &captureClient{}
	req := &coltracepb.ExportTraceServiceRequest{}
	if len(spans) == 0 {
		return req, nil
	}
	exp, err := otlptrace.New(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("flight: spans: %w", err)
	}
	err = exp.ExportSpans(ctx, spans)
	if serr := exp.Shutdown(ctx); err == nil {
		err = serr
	}
	if err != nil {
		return nil, fmt.Errorf("flight: spans: %w", err)
	}
	req.ResourceSpans = c.rs
	return req, nil
}

// Count returns the number of spans in req.
func Count(req *coltracepb.ExportTraceServiceRequest) int {
	n := 0
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	return n
}

// Filter keeps the spans of req whose trace ID (hex) keep accepts and
// drops emptied scopes and resources.
func Filter(req *coltracepb.ExportTraceServiceRequest, keep func(traceID string) bool) {
	retain(req, func(s *tracepb.Span) bool { return keep(hex.EncodeToString(s.TraceId)) })
}

// retain keeps the spans of req that keep accepts, in order, and drops the
// scope and resource entries left empty.
func retain(req *coltracepb.ExportTraceServiceRequest, keep func(*tracepb.Span) bool) {
	rss := req.ResourceSpans[:0]
	for _, rs := range req.ResourceSpans {
		sss := rs.ScopeSpans[:0]
		for _, ss := range rs.ScopeSpans {
			spans := ss.Spans[:0]
			for _, s := range ss.Spans {
				if keep(s) {
					spans = append(spans, s)
				}
			}
			if ss.Spans = spans; len(spans) > 0 {
				sss = append(sss, ss)
			}
		}
		if rs.ScopeSpans = sss; len(sss) > 0 {
			rss = append(rss, rs)
		}
	}
	req.ResourceSpans = rss
}

// ServiceName returns the first service.name of req's resources that names
// a service: not empty and not the SDK's "unknown_service" default.
func ServiceName(req *coltracepb.ExportTraceServiceRequest) string {
	for _, rs := range req.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() != "service.name" {
				continue
			}
			if v := kv.GetValue().GetStringValue(); v != "" && !strings.HasPrefix(v, "unknown_service") {
				return v
			}
		}
	}
	return ""
}

// Redact redacts every string of req in place: span and event names,
// status messages, and attribute values (resource, scope, span, event and
// link attributes). A string attribute under a sensitive key
// (redact.SensitiveName) is replaced whole.
func Redact(req *coltracepb.ExportTraceServiceRequest, red *redact.Redactor) {
	for _, rs := range req.GetResourceSpans() {
		if rs.Resource != nil {
			redactAttrs(rs.Resource.Attributes, red)
		}
		for _, ss := range rs.GetScopeSpans() {
			if ss.Scope != nil {
				redactAttrs(ss.Scope.Attributes, red)
			}
			for _, s := range ss.GetSpans() {
				s.Name = red.String(s.Name)
				redactAttrs(s.Attributes, red)
				for _, ev := range s.Events {
					ev.Name = red.String(ev.Name)
					redactAttrs(ev.Attributes, red)
				}
				for _, l := range s.Links {
					redactAttrs(l.Attributes, red)
				}
				if s.Status != nil {
					s.Status.Message = red.String(s.Status.Message)
				}
			}
		}
	}
}

func redactAttrs(kvs []*commonpb.KeyValue, red *redact.Redactor) {
	for _, kv := range kvs {
		redactAny(kv.Key, kv.Value, red)
	}
}

func redactAny(key string, v *commonpb.AnyValue, red *redact.Redactor) {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		x.StringValue = red.Field(key, x.StringValue)
	case *commonpb.AnyValue_ArrayValue:
		for _, e := range x.ArrayValue.GetValues() {
			redactAny(key, e, red)
		}
	case *commonpb.AnyValue_KvlistValue:
		redactAttrs(x.KvlistValue.GetValues(), red)
	}
}

// ReadRecording reads the spans of the flight recording in dir: the
// compacted snapshot (recording.SpansSnapshot) and the lines appended
// since (recording.SpansLog), a span given twice kept once. A line that
// does not decode (the torn last line of a killed process) is skipped.
// It returns an error wrapping fs.ErrNotExist when the recording has
// neither file.
func ReadRecording(dir string) (*coltracepb.ExportTraceServiceRequest, error) {
	out := &coltracepb.ExportTraceServiceRequest{}
	found := false
	data, err := os.ReadFile(filepath.Join(dir, recording.SpansSnapshot))
	switch {
	case err == nil:
		found = true
		req, err := otlpjson.Unmarshal(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", recording.SpansSnapshot, err)
		}
		out.ResourceSpans = append(out.ResourceSpans, req.ResourceSpans...)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	data, err = os.ReadFile(filepath.Join(dir, recording.SpansLog))
	switch {
	case err == nil:
		found = true
		for line := range bytes.Lines(data) {
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			if req, err := otlpjson.Unmarshal(line); err == nil {
				out.ResourceSpans = append(out.ResourceSpans, req.ResourceSpans...)
			}
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("no span snapshot in %s: %w", dir, fs.ErrNotExist)
	}
	Dedupe(out)
	return out, nil
}

// Dedupe removes the spans of req whose trace and span IDs an earlier
// span of req has, and the scope and resource entries left empty.
func Dedupe(req *coltracepb.ExportTraceServiceRequest) {
	type id struct{ trace, span string }
	seen := map[id]bool{}
	retain(req, func(s *tracepb.Span) bool {
		k := id{string(s.TraceId), string(s.SpanId)}
		if seen[k] {
			return false
		}
		seen[k] = true
		return true
	})
}
