// Package demo is the quickstart's agent, on the scripted model or, with
// -live, a real one: a weather tool, a traced run, its transcript, its
// usage and its span tree, and where the traces went.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/traceview"
	"github.com/harnessx/harnessx/pricing"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Backend is the model the quickstart talks to.
type Backend struct {
	Provider harness.Provider
	Label    string // printed first, e.g. "anthropic, claude-haiku-5-5"
	Model    string
	// Prices prices the model's requests; nil leaves the tracing
	// extension's default (the built-in table, or HARNESSX_PRICES).
	Prices *pricing.Table
}

// scriptedPrice prices the scripted model like a small real one (US
// dollars per million tokens), so that the offline run shows a cost.
const scriptedPrice = `{"format": 1, "as_of": "2026-12-01", "notes": "the quickstart's scripted model, priced like a small model",
  "models": [{"model": "scripted-model", "input": 1, "output": 5, "cache_read": 0.10, "cache_write": 1.25}]}`

// scriptedPrices returns the prices of HARNESSX_PRICES (the built-in
// table by default) with the scripted model's added; nil when pricing is
// off, or when the table cannot be used (the tracing extension then says
// why).
func scriptedPrices() *pricing.Table {
	base, err := pricing.FromEnv()
	if err != nil || base == nil {
		return nil
	}
	own, err := pricing.Parse([]byte(scriptedPrice), "quickstart")
	if err != nil {
		return nil
	}
	t, err := base.Merge(own)
	if err != nil {
		return nil
	}
	return t
}

// Model returns the model name: $HARNESSX_MODEL, else def.
func Model(def string) string {
	if m := os.Getenv("HARNESSX_MODEL"); m != "" {
		return m
	}
	return def
}

// Offline returns the scripted model: it asks the weather tool for Lisbon,
// then answers, with the usage a cached prompt would report. It has a
// price (that of a small model), so the run shows its cost.
func Offline() Backend {
	return Backend{
		Provider: harnesstest.NewScriptedProvider(
			harnesstest.Response{
				Text:      "Let me check.",
				ToolCalls: []harness.ToolCall{harnesstest.Call("call_1", "get_weather", map[string]string{"city": "Lisbon"})},
				Usage:     harness.Usage{InputTokens: 412, OutputTokens: 31, CacheCreationInputTokens: 380},
			},
			harnesstest.Response{
				Text:  "Lisbon is at 18°C with light rain — take an umbrella.",
				Usage: harness.Usage{InputTokens: 468, OutputTokens: 22, CacheReadInputTokens: 380},
			},
		),
		Label:  "scripted (offline)",
		Model:  Model("scripted-model"),
		Prices: scriptedPrices(),
	}
}

type weatherInput struct {
	City string `json:"city" jsonschema:"the city to report on"`
}

// Run runs one traced turn of the weather agent on b and prints the
// transcript, the usage, the run's span tree and where its spans went.
// Spans go where the environment says (exporters.FromEnv: by default the
// OTLP JSON file .harnessx/traces.jsonl).
func Run(ctx context.Context, w io.Writer, b Backend) (err error) {
	weather, err := harness.NewTool("get_weather", "Report the current weather of a city.",
		func(_ context.Context, in weatherInput) (string, error) {
			return fmt.Sprintf("%s: 18°C, light rain", in.City), nil
		})
	if err != nil {
		return err
	}
	// The quickstart says where the spans went at the end, so it keeps
	// only the exporters' warnings (a backend that is down) on stderr.
	warnings := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tp, err := exporters.FromEnv(ctx, exporters.WithLogger(warnings))
	if err != nil {
		return err
	}
	// The span tree printed at the end comes from this in-memory copy.
	spans := tracetest.NewSpanRecorder()
	tp.SDK().RegisterSpanProcessor(spans)
	shutdown := func() error {
		// Flush, but never hang on a backend that is away.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return tp.Shutdown(sctx)
	}
	defer func() {
		if tp != nil {
			_ = shutdown()
		}
	}()

	agent, err := harness.New(
		harness.WithName("quickstart"),
		harness.WithProvider(b.Provider),
		harness.WithModel(b.Model),
		harness.WithSystemPrompt("You are a concise weather assistant. Use get_weather."),
		harness.WithTools(weather),
		harness.WithExtensions(tracing.New(tracingOpts(tp, b)...)),
	)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "provider: %s\n\n", b.Label)
	question := "What's the weather in Lisbon?"
	res, err := agent.Run(ctx, question)
	if cerr := agent.Close(context.WithoutCancel(ctx)); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "user: %s\n", question)
	printTranscript(w, res.Messages[1:])
	u := res.Usage
	fmt.Fprintf(w, "\nstatus: %s, steps: %d\n", res.Status, res.Steps)
	fmt.Fprintf(w, "usage: input %d (cache read %d, cache write %d), output %d (reasoning %d), total %d\n",
		u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens, u.ReasoningTokens, u.TotalTokens())

	serr := shutdown()
	stats := tp.Stats()
	backends := tp.Backends()
	tp = nil
	if serr != nil && !errors.Is(serr, exporters.ErrSpansLost) && !errors.Is(serr, context.DeadlineExceeded) {
		return serr
	}

	runs := traceview.BuildRuns(traceview.FromSDK(spans.Ended()))
	if len(runs) > 0 {
		fmt.Fprintln(w, "\nspans:")
		if err := traceview.WriteTree(w, runs[len(runs)-1], traceview.TreeOptions{}); err != nil {
			return err
		}
	}
	printDestinations(w, backends, stats)
	return nil
}

// tracingOpts are the tracing extension's options: the provider, and the
// backend's prices when it has its own.
func tracingOpts(tp *exporters.Provider, b Backend) []tracing.Option {
	opts := []tracing.Option{tracing.WithTracerProvider(tp)}
	if b.Prices != nil {
		opts = append(opts, tracing.WithPricing(b.Prices))
	}
	return opts
}

// printDestinations says where the spans went and how to look at them.
func printDestinations(w io.Writer, backends []exporters.Backend, st exporters.Stats) {
	fmt.Fprintln(w)
	for i, b := range backends {
		var bs exporters.BackendStats
		if i < len(st.Backends) {
			bs = st.Backends[i]
		}
		lost := ""
		if n := bs.Failed + bs.Dropped; n > 0 {
			lost = fmt.Sprintf(", %d lost", n)
		}
		fmt.Fprintf(w, "traces: %d spans to %s %s%s\n", bs.Exported, b.Name, b.Target, lost)
		switch b.Name {
		case "file":
			flag := ""
			if os.Getenv("HARNESSX_TRACES_FILE") != "" {
				flag = " --traces " + b.Target
			}
			fmt.Fprintf(w, "  see this run again:  go run ./cmd/flightrec trace --last%s\n", flag)
			fmt.Fprintf(w, "  in a browser:        go run ./cmd/flightrec ui%s\n", flag)
		case "otlp":
			fmt.Fprintln(w, "  open your OTLP backend's UI (Jaeger: http://localhost:16686, service \"harnessx\")")
		case "langsmith":
			fmt.Fprintln(w, "  open the project in LangSmith")
		}
	}
	if len(backends) == 0 {
		fmt.Fprintln(w, "traces: not exported (OTEL_TRACES_EXPORTER=none)")
	}
	fmt.Fprintln(w, "  Jaeger or a collector: OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318; LangSmith: LANGSMITH_API_KEY (see the README)")
}

func printTranscript(w io.Writer, msgs []harness.Message) {
	for _, m := range msgs {
		for _, p := range m.Content {
			switch p.Type {
			case harness.PartText:
				fmt.Fprintf(w, "%s: %s\n", m.Role, strings.TrimSpace(p.Text))
			case harness.PartReasoning:
				fmt.Fprintf(w, "%s (thinking): %s\n", m.Role, strings.TrimSpace(p.Text))
			case harness.PartToolCall:
				fmt.Fprintf(w, "%s → %s(%s)\n", m.Role, p.ToolCall.Name, p.ToolCall.Input)
			case harness.PartToolResult:
				fmt.Fprintf(w, "tool ← %s: %s\n", p.ToolResult.Name, p.ToolResult.Content)
			}
		}
	}
}
