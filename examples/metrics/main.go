package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "metrics:", err)
		os.Exit(1)
	}
}

type cityInput struct {
	City string `json:"city" jsonschema:"the city"`
}

func run(ctx context.Context, w io.Writer) error {
	// A manual reader beside the backends, to print what was recorded.
	summary := sdkmetric.NewManualReader()
	mp, err := exporters.MetersFromEnv(ctx,
		exporters.WithServiceName("harnessx-metrics-example"),
		exporters.WithExportTimeout(3*time.Second),
		exporters.WithMetricReader(summary),
	)
	if err != nil {
		return err
	}
	for _, b := range mp.Backends() {
		fmt.Fprintf(w, "metrics go to %s: %s\n", b.Name, b.Target)
	}

	weather, err := harness.NewTool("get_weather", "Report the current weather of a city.",
		func(_ context.Context, in cityInput) (string, error) { return in.City + ": 18°C, light rain", nil })
	if err != nil {
		return err
	}
	var script []harnesstest.Response
	for i := range 3 {
		cached := int64(4096 * i) // the prompt cache warms up run after run
		script = append(script,
			harnesstest.Response{
				ToolCalls: []harness.ToolCall{harnesstest.Call(fmt.Sprintf("call_%d", i), "get_weather", map[string]string{"city": "Lisbon"})},
				Usage:     harness.Usage{InputTokens: 4200 + 300*int64(i), OutputTokens: 40, CacheReadInputTokens: cached, CacheCreationInputTokens: 4096 - min(cached, 4096), ReasoningTokens: 12},
			},
			harnesstest.Response{
				Text:  "18°C and light rain in Lisbon.",
				Usage: harness.Usage{InputTokens: 4400 + 300*int64(i), OutputTokens: 30, CacheReadInputTokens: 4096, ReasoningTokens: 8},
			})
	}
	agent, err := harness.New(
		harness.WithName("forecaster"),
		// The scripted replies stand in for a real model, so that their
		// usage is priced with the built-in table.
		harness.WithModel("claude-haiku-5-5"),
		harness.WithProvider(harnesstest.NewScriptedProvider(script...)),
		harness.WithTools(weather),
		harness.WithExtensions(tracing.New(
			tracing.WithTracerProvider(noop.NewTracerProvider()), // metrics only
			tracing.WithMeterProvider(mp),
		)),
	)
	if err != nil {
		_ = mp.Shutdown(ctx)
		return err
	}
	defer agent.Close(ctx)
	for _, q := range []string{"Weather in Lisbon?", "And now?", "Still raining?"} {
		res, err := agent.Run(ctx, q)
		if err != nil {
			_ = mp.Shutdown(ctx)
			return err
		}
		agent.Reset()
		fmt.Fprintf(w, "run %s: %s\n", res.Status, res.Text)
	}

	var rm metricdata.ResourceMetrics
	if err := summary.Collect(ctx, &rm); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nrecorded:")
	printSummary(w, &rm)

	// Flush before exiting, but never hang on a collector that is away.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := mp.Shutdown(sctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "connect") || strings.Contains(err.Error(), "refused") {
			fmt.Fprintf(w, "\nthe OTLP collector did not take the metrics (%v);\nstart one with: docker compose -f docker-compose.otel.yml up -d\n", err)
			return nil
		}
		return err
	}
	return nil
}

// printSummary prints each metric with its count or sum, by the attribute
// that matters for it.
func printSummary(w io.Writer, rm *metricdata.ResourceMetrics) {
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[int64]:
				for _, dp := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("  %-36s %-28s %3d requests, %6d %s", m.Name, label(dp.Attributes.ToSlice()), dp.Count, dp.Sum, m.Unit))
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("  %-36s %-28s %3d, %.6f %s in all", m.Name, label(dp.Attributes.ToSlice()), dp.Count, dp.Sum, m.Unit))
				}
			case metricdata.Sum[float64]:
				for _, dp := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("  %-36s %-28s %.6f %s", m.Name, label(dp.Attributes.ToSlice()), dp.Value, m.Unit))
				}
			}
		}
	}
	sort.Strings(lines)
	fmt.Fprintln(w, strings.Join(lines, "\n"))
}

func label(kvs []attribute.KeyValue) string {
	for _, kv := range kvs {
		switch kv.Key {
		case "gen_ai.token.type", "harnessx.token.type", "gen_ai.tool.name", "harnessx.run.status":
			return string(kv.Key) + "=" + kv.Value.Emit()
		}
	}
	for _, kv := range kvs {
		if kv.Key == "gen_ai.response.model" || kv.Key == "gen_ai.request.model" {
			return "model=" + kv.Value.Emit()
		}
	}
	return ""
}
