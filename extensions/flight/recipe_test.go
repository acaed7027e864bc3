package flight_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// recipeAgent builds the README's recipe: exporters.FromEnv, then the
// tracing, spill and flight extensions, with no span processor wired by
// hand. more adds options to the recorder.
func recipeAgent(t *testing.T, tp trace.TracerProvider, script []harnesstest.Response, more ...flight.Option) (*harness.Agent, *flight.Extension, string) {
	t.Helper()
	dir := t.TempDir()
	rec := flight.New(append([]flight.Option{flight.WithDir(dir)}, more...)...)
	a, err := harness.New(
		harness.WithName("recipe"),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithProvider(harnesstest.NewScriptedProvider(script...)),
		harness.WithModel("scripted-model"),
		harness.WithTools(echoTool()),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp)), spill.New(), rec),
	)
	if err != nil {
		t.Fatal(err)
	}
	return a, rec, dir
}

func failingScript() []harnesstest.Response {
	return []harnesstest.Response{
		{ToolCalls: []harness.ToolCall{harnesstest.Call("c1", "echo", map[string]string{"text": "hi"})}},
		{Err: errors.New("upstream model failed")},
	}
}

func newEnvProvider(t *testing.T) *exporters.Provider {
	t.Helper()
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "LANGSMITH_API_KEY",
		"OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME"} {
		t.Setenv(k, "")
	}
	t.Setenv("HARNESSX_TRACES_FILE", filepath.Join(t.TempDir(), "traces.jsonl"))
	tp, err := exporters.FromEnv(context.Background(), exporters.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

// TestRecipeBundlesHaveSpans: the README's shortest recipe gives incident
// bundles that hold the run's spans, the agent span included, and name
// the service, both from the recorder itself and from the journal after
// the agent closed.
func TestRecipeBundlesHaveSpans(t *testing.T) {
	tp := newEnvProvider(t)
	a, rec, dir := recipeAgent(t, tp, failingScript())
	ctx := context.Background()
	if _, err := a.Run(ctx, "hello"); err == nil {
		t.Fatal("the run should fail")
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	inc := rec.Incidents()
	if len(inc) != 1 {
		t.Fatalf("incidents %v, want one bundle", inc)
	}
	b, err := flight.ReadBundleFile(inc[0], flight.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSpans := func(what string, b *flight.Bundle) {
		t.Helper()
		m := b.Manifest
		if m.Spans < 4 || m.SpansNote != "" {
			t.Errorf("%s: %d spans, note %q; want the run's spans", what, m.Spans, m.SpansNote)
		}
		if m.Service != "harnessx" {
			t.Errorf("%s: service %q, want the provider's service name harnessx", what, m.Service)
		}
		data, _ := b.Member(flight.SpansName)
		for _, name := range []string{`"invoke_agent recipe"`, `"chat scripted-model"`, `"execute_tool echo"`} {
			if !bytes.Contains(data, []byte(name)) {
				t.Errorf("%s: spans lack %s", what, name)
			}
		}
	}
	checkSpans("incident bundle", b)

	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := flight.ExportJournal(ctx, filepath.Join(dir, "recipe-session"), &out, flight.ExportOptions{}); err != nil {
		// The session directory is named after the session ID; find it.
		ents, _ := os.ReadDir(dir)
		if len(ents) != 1 {
			t.Fatalf("recordings %v: %v", ents, err)
		}
		out.Reset()
		if _, err := flight.ExportJournal(ctx, filepath.Join(dir, ents[0].Name()), &out, flight.ExportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b, err = flight.ReadBundle(&out, flight.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSpans("export after Close", b)
}

// TestRecipeUnregistersAtClose: the recorder's processor leaves the
// provider when the agent closes, so a provider that outlives the agent
// does not feed a closed recorder.
func TestRecipeUnregistersAtClose(t *testing.T) {
	tp := newEnvProvider(t)
	a, rec, _ := recipeAgent(t, tp, []harnesstest.Response{{Text: "hi"}})
	ctx := context.Background()
	if _, err := a.Run(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	n := len(rec.SpanProcessor().Spans(nil))
	if n == 0 {
		t.Fatal("the recorder kept no span of the run")
	}
	_, s := tp.Tracer("after").Start(ctx, "after close")
	s.End()
	if got := len(rec.SpanProcessor().Spans(nil)); got != n {
		t.Errorf("the recorder kept %d spans after Close, had %d", got, n)
	}
}

// TestRecipeRegisteredTwice: registering the processor by hand as well
// keeps each span once.
func TestRecipeRegisteredTwice(t *testing.T) {
	tp := newEnvProvider(t)
	a, rec, _ := recipeAgent(t, tp, []harnesstest.Response{
		{ToolCalls: []harness.ToolCall{harnesstest.Call("c1", "echo", map[string]string{"text": "hi"})}},
		{Text: "done"},
	})
	tp.RegisterSpanProcessor(rec.SpanProcessor())
	ctx := context.Background()
	if _, err := a.Run(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, s := range rec.SpanProcessor().Spans(nil) {
		seen[s.SpanContext().SpanID().String()]++
	}
	if len(seen) != 4 {
		t.Errorf("%d distinct spans, want 4 (agent, 2 chats, 1 tool)", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("span %s kept %d times", id, n)
		}
	}
	_ = a.Close(ctx)
}

// opaqueProvider hides the SDK provider's registration methods, as a
// provider the recorder cannot read spans back from.
type opaqueProvider struct{ trace.TracerProvider }

// TestNoSpansSaysWhy: when the tracing provider is not one the recorder
// can register on, a bundle of traced events holds no span and its
// manifest says why.
func TestNoSpansSaysWhy(t *testing.T) {
	tp := newEnvProvider(t)
	a, rec, _ := recipeAgent(t, opaqueProvider{tp}, failingScript())
	ctx := context.Background()
	_, _ = a.Run(ctx, "hello")
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	inc := rec.Incidents()
	if len(inc) != 1 {
		t.Fatalf("incidents %v, want one bundle", inc)
	}
	b, err := flight.ReadBundleFile(inc[0], flight.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := b.Manifest
	if m.Spans != 0 || !strings.Contains(m.SpansNote, "span processor was not registered") {
		t.Errorf("spans %d, note %q", m.Spans, m.SpansNote)
	}
	if m.Service != "recipe" {
		t.Errorf("service %q, want the agent's name when no span names one", m.Service)
	}
	_ = a.Close(ctx)
}

// TestSaysWhereItRecords: a recorder whose directory nobody chose says,
// at Info level, where it records and how to look; one given a directory
// says it only at Debug level.
func TestSaysWhereItRecords(t *testing.T) {
	tests := []struct {
		name     string
		opts     func(dir string) []flight.Option
		wantInfo bool
	}{
		{"the default directory", func(string) []flight.Option { return nil }, true},
		{"a directory given", func(dir string) []flight.Option { return []flight.Option{flight.WithDir(dir)} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(flight.EnvDir, "")
			wd := t.TempDir()
			t.Chdir(wd)
			var log bytes.Buffer
			rec := flight.New(tt.opts(t.TempDir())...)
			a, err := harness.New(
				harness.WithName("announcer"),
				harness.WithLogger(slog.New(slog.NewTextHandler(&log, nil))),
				harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Response{Text: "hi"})),
				harness.WithModel("m"),
				harness.WithExtensions(rec),
			)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Run(context.Background(), "hello"); err != nil {
				t.Fatal(err)
			}
			if err := a.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := log.String()
			said := strings.Contains(got, `level=INFO msg="flight: recording the agent's events" agent=announcer extension=flight dir=.harnessx/flight/`) &&
				strings.Contains(got, `view="flightrec list --dir .harnessx/flight; flightrec ui --dir .harnessx/flight"`)
			if said != tt.wantInfo {
				t.Errorf("said at Info: %v, want %v; log:\n%s", said, tt.wantInfo, got)
			}
			if n := strings.Count(got, "recording the agent's events"); n > 1 {
				t.Errorf("said %d times", n)
			}
		})
	}
}
