package exporters_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/internal/otlpjson"
)

// seqIDs is an IDGenerator that hands out sequential IDs.
type seqIDs struct {
	mu sync.Mutex
	n  uint64
}

func (g *seqIDs) next() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	return g.n
}

func (g *seqIDs) NewIDs(context.Context) (trace.TraceID, trace.SpanID) {
	var tid trace.TraceID
	binary.BigEndian.PutUint64(tid[8:], 0xabcdef0000+g.next())
	tid[0] = 0x4b
	return tid, g.NewSpanID(context.Background(), tid)
}

func (g *seqIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	var sid trace.SpanID
	binary.BigEndian.PutUint64(sid[:], 0xf00d0000+g.next())
	return sid
}

// goldenSpans writes a fixed set of spans (every attribute type, an event,
// a link, an error status, a client kind) through tp.
func goldenSpans(tp trace.TracerProvider) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	tr := tp.Tracer("golden", trace.WithInstrumentationVersion("1.0.0"))
	ctx, root := tr.Start(context.Background(), "invoke_agent planner", trace.WithTimestamp(t0),
		trace.WithAttributes(attribute.String("langsmith.span.kind", "chain"), attribute.String("note", "<b>&</b> \"quoted\" ünïcode")))
	_, other := tr.Start(context.Background(), "unrelated", trace.WithTimestamp(t0))
	_, chat := tr.Start(ctx, "chat m", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(t0.Add(time.Millisecond)),
		trace.WithLinks(trace.LinkFromContext(trace.ContextWithSpan(context.Background(), other), attribute.Bool("follows", true))),
		trace.WithAttributes(
			attribute.Int64("gen_ai.usage.input_tokens", 1<<40),
			attribute.Float64("gen_ai.request.temperature", 0.25),
			attribute.Bool("gen_ai.request.stream", false),
			attribute.StringSlice("gen_ai.response.finish_reasons", []string{"stop", "tool_use"}),
		))
	chat.AddEvent("new_token", trace.WithTimestamp(t0.Add(2*time.Millisecond)), trace.WithAttributes(attribute.Int("n", 1)))
	chat.SetStatus(codes.Error, "rate limited")
	chat.End(trace.WithTimestamp(t0.Add(3 * time.Millisecond)))
	other.End(trace.WithTimestamp(t0.Add(4 * time.Millisecond)))
	root.End(trace.WithTimestamp(t0.Add(5 * time.Millisecond)))
}

func TestFileGolden(t *testing.T) {
	clearEnv(t)
	ctx := context.Background()
	var buf bytes.Buffer
	tp, err := exporters.NewFile(ctx,
		exporters.WithFileWriter(&buf),
		exporters.WithResource(sdkresource.NewSchemaless(attribute.String("service.name", "golden"))),
		exporters.WithTracerProviderOptions(sdktrace.WithIDGenerator(&seqIDs{})),
	)
	if err != nil {
		t.Fatal(err)
	}
	goldenSpans(tp)
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	path := filepath.Join("testdata", "file_line.golden.jsonl")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("file line differs from %s (run with -update if intended)\ngot:  %s\nwant: %s", path, got, want)
	}

	// The line is one compact OTLP/JSON object that reads back exactly.
	if n := bytes.Count(got, []byte("\n")); n != 1 {
		t.Fatalf("%d lines, want 1", n)
	}
	req, err := otlpjson.Unmarshal(got)
	if err != nil {
		t.Fatal(err)
	}
	again, err := otlpjson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if again = append(again, '\n'); !bytes.Equal(again, got) {
		t.Errorf("re-encoding differs:\n%s\n%s", again, got)
	}
	spans := allSpans(req)
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	for _, s := range spans {
		if len(s.GetTraceId()) != 16 || len(s.GetSpanId()) != 8 {
			t.Errorf("span %q: IDs of %d and %d bytes", s.GetName(), len(s.GetTraceId()), len(s.GetSpanId()))
		}
	}
}

// TestFileExporter runs a traced agent into a file and reads it back.
func TestFileExporter(t *testing.T) {
	clearEnv(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nested", "dir", "traces.jsonl")
	tp, err := exporters.NewFile(ctx, exporters.WithFile(path), exporters.WithBatchSize(3))
	if err != nil {
		t.Fatal(err)
	}
	if got := tp.Backends(); len(got) != 1 || got[0] != (exporters.Backend{Name: "file", Target: path}) {
		t.Errorf("backends %+v", got)
	}
	run(t, newTracedAgent(t, tp))
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
	if len(lines) < 2 {
		t.Errorf("%d lines, want several (batches of 3)", len(lines))
	}
	hexID := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for i, line := range lines {
		var doc struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []struct {
						Key   string
						Value map[string]any
					}
				}
				ScopeSpans []struct {
					Spans []struct {
						TraceID string `json:"traceId"`
						Kind    any    `json:"kind"`
					}
				}
			}
		}
		if err := json.Unmarshal(line, &doc); err != nil {
			t.Fatalf("line %d is not JSON: %v", i+1, err)
		}
		for _, rs := range doc.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					if !hexID.MatchString(s.TraceID) {
						t.Errorf("line %d: traceId %q is not 32 hex digits", i+1, s.TraceID)
					}
					if _, ok := s.Kind.(float64); !ok {
						t.Errorf("line %d: kind %v is not a number", i+1, s.Kind)
					}
				}
			}
		}
	}
	reqs, err := otlpjson.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	spans := allSpans(reqs...)
	want := map[string]int{"invoke_agent planner": 1, "invoke_agent researcher": 1, "chat parent-model": 2,
		"chat child-model": 1, "execute_tool get_weather": 1, "execute_tool research": 1}
	if got := spanNames(spans); !mapsEqual(got, want) {
		t.Errorf("span names %v, want %v", got, want)
	}
	byName := map[string][]byte{}
	for _, s := range spans {
		byName[s.GetName()] = s.GetSpanId()
		if !bytes.Equal(s.GetTraceId(), spans[0].GetTraceId()) {
			t.Errorf("span %q in another trace", s.GetName())
		}
	}
	for _, s := range spans {
		if s.GetName() == "invoke_agent researcher" && !bytes.Equal(s.GetParentSpanId(), byName["execute_tool research"]) {
			t.Errorf("the child agent's span is not under execute_tool research")
		}
	}
	svc := ""
	for _, kv := range reqs[0].GetResourceSpans()[0].GetResource().GetAttributes() {
		if kv.GetKey() == "service.name" {
			svc = kv.GetValue().GetStringValue()
		}
	}
	if svc != "harnessx" {
		t.Errorf("service.name %q, want harnessx", svc)
	}
}
