package tracing_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"slices"
	"sort"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorderTP returns a TracerProvider that records ended spans.
func recorderTP(t testing.TB) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, sr
}

type weatherIn struct {
	City string `json:"city"`
}

func weatherTool() *harness.Tool {
	return harness.MustTool(harness.NewTool("weather", "Weather of a city.",
		func(_ context.Context, in weatherIn) (string, error) { return "sunny in " + in.City, nil }))
}

// newAgent builds an agent traced into tp with a scripted provider.
func newAgent(t testing.TB, tp trace.TracerProvider, script []harnesstest.Response, opts ...harness.Option) (*harness.Agent, *tracing.Extension) {
	t.Helper()
	ext := tracing.New(tracing.WithTracerProvider(tp))
	return newAgentExt(t, ext, script, opts...), ext
}

func newAgentExt(t testing.TB, ext *tracing.Extension, script []harnesstest.Response, opts ...harness.Option) *harness.Agent {
	t.Helper()
	p := harnesstest.NewScriptedProvider(script...)
	base := []harness.Option{
		harness.WithProvider(p), harness.WithModel("m"), harness.WithName("weatherbot"),
		harness.WithSessionID("sess-1"), harness.WithTools(weatherTool()),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithExtensions(ext),
	}
	a, err := harness.New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	return a
}

// spans returns the ended spans ordered by start time.
func spans(sr *tracetest.SpanRecorder) []sdktrace.ReadOnlySpan {
	s := sr.Ended()
	sort.SliceStable(s, func(i, j int) bool { return s[i].StartTime().Before(s[j].StartTime()) })
	return s
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func attr(s sdktrace.ReadOnlySpan, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func str(s sdktrace.ReadOnlySpan, k attribute.Key) string {
	v, _ := attr(s, k)
	return v.Emit()
}

func byName(all []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range all {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func childrenOf(all []sdktrace.ReadOnlySpan, parent sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range all {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() && s.Parent().IsValid() {
			out = append(out, s)
		}
	}
	return out
}

func names(all []sdktrace.ReadOnlySpan) []string {
	out := make([]string, len(all))
	for i, s := range all {
		out[i] = s.Name()
	}
	return out
}

// checkNoOrphans fails when a span's parent is neither in all nor allowed.
func checkNoOrphans(t *testing.T, all []sdktrace.ReadOnlySpan, allowedParents ...trace.SpanID) {
	t.Helper()
	ids := map[trace.SpanID]bool{}
	for _, s := range all {
		ids[s.SpanContext().SpanID()] = true
	}
	for _, s := range all {
		p := s.Parent()
		if !p.IsValid() {
			continue
		}
		if !ids[p.SpanID()] && !slices.Contains(allowedParents, p.SpanID()) {
			t.Errorf("span %q has parent %s, which is not among the recorded spans", s.Name(), p.SpanID())
		}
	}
}

func eventNames(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		out = append(out, e.Name)
	}
	return out
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func attrKey(k string) attribute.Key { return attribute.Key(k) }
