package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/pricing"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "jaeger:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer) error {
	service := os.Getenv("OTEL_SERVICE_NAME")
	if service == "" {
		service = "harnessx-example"
	}
	roots := &rootRecorder{}
	tp, err := exporters.NewOTLP(ctx,
		exporters.WithServiceName(service),
		exporters.WithExportTimeout(3*time.Second),
		exporters.WithSpanProcessor(roots),
	)
	if err != nil {
		return err
	}
	target := tp.Backends()[0].Target
	fmt.Fprintf(w, "sending spans to %s as service %q\n\n", target, service)

	if err := runAgent(ctx, w, tp); err != nil {
		_ = tp.Shutdown(ctx)
		return err
	}

	// Flush before exiting, but never hang on a backend that is away.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err = tp.Shutdown(sctx)
	st := tp.Stats()
	if err != nil && !errors.Is(err, exporters.ErrSpansLost) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if st.Lost() > 0 {
		fmt.Fprintf(w, "\n%d spans exported, %d lost: nothing accepted them at %s.\n", st.Exported, st.Lost(), target)
		fmt.Fprintln(w, "Start Jaeger and run again. With Docker:")
		fmt.Fprintln(w, "  docker compose -f docker-compose.otel.yml up -d")
		fmt.Fprintln(w, "Without Docker, from the repository root (the first run compiles Jaeger):")
		fmt.Fprintln(w, "  OTEL_TRACES_SAMPLER=always_off go tool -modfile=tools/go.mod jaeger --set=service.telemetry.metrics.level=none")
		fmt.Fprintln(w, "Or point OTEL_EXPORTER_OTLP_ENDPOINT at your collector, or see runs locally with")
		fmt.Fprintln(w, "  go run ./cmd/flightrec ui")
		return nil
	}
	fmt.Fprintf(w, "\n%d spans exported.\n", st.Exported)
	ui := uiURL(target)
	if id := roots.traceID(); id != "" {
		fmt.Fprintf(w, "Open %s/trace/%s\n", ui, id)
	}
	fmt.Fprintf(w, "or search service %q at %s/search\n", service, ui)
	return nil
}

// uiURL guesses the Jaeger UI from the OTLP URL: same host, port 16686.
func uiURL(target string) string {
	u, err := url.Parse(target)
	if err != nil || u.Hostname() == "" {
		return "http://localhost:16686"
	}
	return "http://" + u.Hostname() + ":16686"
}

// rootRecorder remembers the trace ID of the first root span that ends.
type rootRecorder struct {
	mu sync.Mutex
	id string
}

func (r *rootRecorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (r *rootRecorder) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.Parent().IsValid() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.id == "" {
		r.id = s.SpanContext().TraceID().String()
	}
}
func (r *rootRecorder) Shutdown(context.Context) error   { return nil }
func (r *rootRecorder) ForceFlush(context.Context) error { return nil }

func (r *rootRecorder) traceID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.id
}

type cityInput struct {
	City string `json:"city" jsonschema:"the city"`
}

// runAgent runs the planner with its researcher subagent, both traced.
func runAgent(ctx context.Context, w io.Writer, tp *exporters.Provider) error {
	researcher, err := harness.New(
		harness.WithName("researcher"),
		// The scripted replies stand in for real models, so that their
		// usage is priced with the built-in table.
		harness.WithModel("claude-haiku-5-5"),
		harness.WithSystemPrompt("You research weather trends."),
		harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Response{
			Reasoning: "Look at the last week of observations.",
			Text:      "Rain most afternoons this week; mornings are dry.",
			Usage:     harness.Usage{InputTokens: 640, OutputTokens: 58, CacheReadInputTokens: 512, CacheCreationInputTokens: 96, ReasoningTokens: 21},
		})),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))),
	)
	if err != nil {
		return err
	}
	defer researcher.Close(ctx)

	weather, err := harness.NewTool("get_weather", "Report the current weather of a city.",
		func(_ context.Context, in cityInput) (string, error) { return in.City + ": 18°C, light rain", nil })
	if err != nil {
		return err
	}
	// HARNESSX_PRICES may extend the built-in table, or turn costs off.
	prices, err := pricing.FromEnv()
	if err != nil {
		return err
	}
	var costOpt []harness.Option
	if prices != nil {
		costOpt = append(costOpt, harness.WithPricing(prices.USD))
	}
	planner, err := harness.New(append(costOpt,
		harness.WithName("planner"),
		harness.WithModel("claude-sonnet-5-5"),
		harness.WithSystemPrompt("You plan days out. Use the tools."),
		harness.WithMaxTokens(1024),
		harness.WithTemperature(0.2),
		harness.WithProvider(harnesstest.NewScriptedProvider(
			harnesstest.Response{
				Reasoning: "I need today's weather and the trend.",
				Text:      "Let me check.",
				ToolCalls: []harness.ToolCall{
					harnesstest.Call("call_1", "get_weather", map[string]string{"city": "Lisbon"}),
					harnesstest.Call("call_2", "research", map[string]string{"task": "How has Lisbon's weather been this week?"}),
				},
				Usage: harness.Usage{InputTokens: 1900, OutputTokens: 85, CacheCreationInputTokens: 1536, CacheReadInputTokens: 256, ReasoningTokens: 40},
			},
			harnesstest.Response{
				Reasoning: "Rain is likely in the afternoon.",
				Text:      "Go out this morning: 18°C now, with rain most afternoons. Take an umbrella.",
				Usage:     harness.Usage{InputTokens: 2100, OutputTokens: 64, CacheReadInputTokens: 1792, CacheCreationInputTokens: 128, ReasoningTokens: 27},
			},
		)),
		harness.WithTools(weather, harness.AgentTool(researcher, "research", "Ask the researcher subagent.")),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))),
	)...)
	if err != nil {
		return err
	}
	defer planner.Close(ctx)

	q := "Should I go out this morning or this afternoon in Lisbon?"
	res, err := planner.Run(ctx, q)
	if err != nil {
		return err
	}
	u := res.Usage
	fmt.Fprintf(w, "user: %s\nplanner: %s\n", q, res.Text)
	fmt.Fprintf(w, "status %s, %d model requests; tokens: input %d (cache read %d, cache write %d), output %d (reasoning %d)\n",
		res.Status, res.Steps, u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens, u.ReasoningTokens)
	if prices != nil {
		fmt.Fprintf(w, "cost $%.6f for the planner's requests at the prices of %s (the researcher's are on its own span; harnessx.cost.usd on the spans)\n",
			res.Cost, prices.AsOf())
	} else {
		fmt.Fprintf(w, "cost not computed (%s=off)\n", pricing.EnvPrices)
	}
	return nil
}
