package tracing_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// render writes the span trees in start order, attributes sorted by key,
// with run IDs, hashes and durations replaced by stable placeholders
// (equal hashes keep equal placeholders).
func render(all []sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	hashes := map[string]string{}
	hexRE := regexp.MustCompile(`[0-9a-f]{64}`)
	norm := func(k attribute.Key, v string) string {
		switch k {
		case tracing.KeyRunID:
			return "<run-id>"
		case "gen_ai.response.time_to_first_chunk":
			return "<seconds>"
		}
		return hexRE.ReplaceAllStringFunc(v, func(h string) string {
			if p, ok := hashes[h]; ok {
				return p
			}
			p := fmt.Sprintf("<hash-%d>", len(hashes)+1)
			hashes[h] = p
			return p
		})
	}
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		ind := strings.Repeat("    ", depth)
		fmt.Fprintf(&b, "%s%s  kind=%s status=%s", ind, s.Name(), s.SpanKind(), s.Status().Code)
		if d := s.Status().Description; d != "" {
			fmt.Fprintf(&b, " %q", d)
		}
		b.WriteByte('\n')
		kvs := slices.Clone(s.Attributes())
		slices.SortFunc(kvs, func(x, y attribute.KeyValue) int { return strings.Compare(string(x.Key), string(y.Key)) })
		for _, kv := range kvs {
			fmt.Fprintf(&b, "%s  | %s = %s\n", ind, kv.Key, norm(kv.Key, kv.Value.Emit()))
		}
		for _, ev := range s.Events() {
			fmt.Fprintf(&b, "%s  * event %s", ind, ev.Name)
			for _, kv := range ev.Attributes {
				fmt.Fprintf(&b, " %s=%s", kv.Key, norm(kv.Key, kv.Value.Emit()))
			}
			b.WriteByte('\n')
		}
		for _, c := range childrenOf(all, s) {
			walk(c, depth+1)
		}
	}
	for _, s := range all {
		if !s.Parent().IsValid() {
			walk(s, 0)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(want, []byte(got)) {
		t.Errorf("%s differs from the spans (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestGoldenAttributes(t *testing.T) {
	tests := []struct {
		name string
		opts []tracing.Option
	}{
		{"spans.golden", nil},
		{"spans_nocontent.golden", []tracing.Option{tracing.WithCaptureContent(false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, sr := recorderTP(t)
			v := 1
			ext := tracing.New(append([]tracing.Option{tracing.WithTracerProvider(tp)}, tt.opts...)...)
			a := newAgentExt(t, ext, []harnesstest.Response{
				{Reasoning: "The user wants the weather.", ToolCalls: []harness.ToolCall{harnesstest.Call("call_1", "weather", `{"city":"Paris"}`)},
					Usage: harness.Usage{InputTokens: 120, OutputTokens: 30, CacheCreationInputTokens: 100, ReasoningTokens: 12}},
				{Text: "It is \"sunny\" in Paris.", Usage: harness.Usage{InputTokens: 160, OutputTokens: 8, CacheReadInputTokens: 100}},
				{Text: "Bonjour!", Model: "m-2026", Usage: harness.Usage{InputTokens: 50, OutputTokens: 3}},
			}, harness.WithMaxTokens(512), harness.WithTemperature(0.2),
				harness.WithMiddleware(systemVersion{&v}))
			if _, err := a.Run(context.Background(), "Weather in Paris?"); err != nil {
				t.Fatal(err)
			}
			v++
			if _, err := a.Run(context.Background(), "Say hello in French."); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.name, render(spans(sr)))
		})
	}
}
