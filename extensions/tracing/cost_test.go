package tracing_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/pricing"
)

// testPrices: "m-2026" (the response model of costScript) at round prices.
func testPrices(t *testing.T) *pricing.Table {
	t.Helper()
	table, err := pricing.Parse([]byte(`{"format": 1, "as_of": "2026-11-30", "models": [
		{"model": "m-2026", "input": 2, "output": 10, "cache_read": 0.5, "cache_write": 4, "reasoning": 20}]}`), "test.json")
	if err != nil {
		t.Fatal(err)
	}
	return table
}

// costScript is a cache-heavy run of two requests: a tool call, then the
// answer with reasoning.
var costScript = []harnesstest.Response{
	{ToolCalls: []harness.ToolCall{{ID: "c1", Name: "weather", Input: []byte(`{"city":"Oslo"}`)}}, Model: "m-2026",
		Usage: harness.Usage{InputTokens: 10_000, OutputTokens: 100, CacheReadInputTokens: 8_000, CacheCreationInputTokens: 1_000}},
	{Text: "Cold.", Model: "m-2026",
		Usage: harness.Usage{InputTokens: 11_000, OutputTokens: 400, CacheReadInputTokens: 9_000, ReasoningTokens: 300}},
}

// The hand-computed costs of costScript with testPrices.
var (
	// 1,000 uncached × 2 + 8,000 read × 0.5 + 1,000 written × 4 + 100 out × 10, per million.
	chat1 = map[string]float64{"input": 0.002, "cache_read": 0.004, "cache_write": 0.004, "output": 0.001, "reasoning": 0, "usd": 0.011}
	// 2,000 uncached × 2 + 9,000 read × 0.5 + 100 out × 10 + 300 reasoning × 20, per million.
	chat2 = map[string]float64{"input": 0.004, "cache_read": 0.0045, "cache_write": 0, "output": 0.001, "reasoning": 0.006, "usd": 0.0155}
)

func costOf(t *testing.T, attrs map[string]float64, s interface {
	Name() string
}, get func(string) (float64, bool)) {
	t.Helper()
	for part, want := range attrs {
		key := "harnessx.cost." + part + "_usd"
		if part == "usd" {
			key = "harnessx.cost.usd"
		}
		got, ok := get(key)
		if !ok || math.Abs(got-want) > 1e-12 {
			t.Errorf("%s: %s = %v (%v), want %v", s.Name(), key, got, ok, want)
		}
	}
}

func TestCostOnSpansAndRun(t *testing.T) {
	tp, sr := recorderTP(t)
	rd := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	defer mp.Shutdown(context.Background())
	ext := tracing.New(tracing.WithTracerProvider(tp), tracing.WithPricing(testPrices(t)), tracing.WithMeterProvider(mp))
	table := testPrices(t)
	a := newAgentExt(t, ext, costScript, harness.WithPricing(table.USD))
	res, err := a.Run(context.Background(), "weather in Oslo?")
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(res.Cost-(chat1["usd"]+chat2["usd"])) > 1e-12 {
		t.Errorf("RunResult.Cost = %v, want %v", res.Cost, chat1["usd"]+chat2["usd"])
	}
	all := spans(sr)
	chats := byName(all, "chat m")
	if len(chats) != 2 {
		t.Fatalf("chat spans %v", names(all))
	}
	for i, want := range []map[string]float64{chat1, chat2} {
		s := chats[i]
		costOf(t, want, s, func(k string) (float64, bool) { v, ok := attr(s, attrKey(k)); return v.AsFloat64(), ok })
		if got := str(s, tracing.KeyCostPricesAsOf); got != "2026-11-30" {
			t.Errorf("prices_as_of %q", got)
		}
	}
	run := byName(all, "invoke_agent weatherbot")[0]
	total := map[string]float64{}
	for k := range chat1 {
		total[k] = chat1[k] + chat2[k]
	}
	costOf(t, total, run, func(k string) (float64, bool) { v, ok := attr(run, attrKey(k)); return v.AsFloat64(), ok })
	if _, ok := attr(run, tracing.KeyCostUnpriced); ok {
		t.Error("unpriced_requests set though every request was priced")
	}
	if _, ok := attr(byName(all, "execute_tool weather")[0], tracing.KeyCostUSD); ok {
		t.Error("a tool span carries a cost")
	}

	var rm metricdata.ResourceMetrics
	if err := rd.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var counted float64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == tracing.MetricCost {
				for _, dp := range m.Data.(metricdata.Sum[float64]).DataPoints {
					counted += dp.Value
				}
			}
		}
	}
	if math.Abs(counted-res.Cost) > 1e-12 {
		t.Errorf("%s = %v, want the run's %v", tracing.MetricCost, counted, res.Cost)
	}
}

// TestCostUnknownModel: a model without a price gets no cost attribute,
// the run counts it, and the extension logs one debug line per model,
// not per request.
func TestCostUnknownModel(t *testing.T) {
	tp, sr := recorderTP(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ext := tracing.New(tracing.WithTracerProvider(tp), tracing.WithPricing(testPrices(t)))
	script := []harnesstest.Response{
		{ToolCalls: []harness.ToolCall{{ID: "c1", Name: "weather", Input: []byte(`{"city":"Oslo"}`)}}, Model: "mystery-1"},
		{ToolCalls: []harness.ToolCall{{ID: "c2", Name: "weather", Input: []byte(`{"city":"Rome"}`)}}, Model: "mystery-1"},
		{Text: "ok", Model: "m-2026", Usage: harness.Usage{InputTokens: 1_000_000}},
	}
	a := newAgentExt(t, ext, script, harness.WithLogger(logger))
	if _, err := a.Run(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	for i, s := range byName(spans(sr), "chat m") {
		_, has := attr(s, tracing.KeyCostUSD)
		if has != (i == 2) {
			t.Errorf("chat %d: cost attribute %v", i, has)
		}
	}
	run := byName(spans(sr), "invoke_agent weatherbot")[0]
	if v, _ := attr(run, tracing.KeyCostUnpriced); v.AsInt64() != 2 {
		t.Errorf("unpriced_requests = %v, want 2", v.AsInt64())
	}
	if v, _ := attr(run, tracing.KeyCostUSD); v.AsFloat64() != 2 {
		t.Errorf("run cost %v, want the priced request's 2 USD", v.AsFloat64())
	}
	if n := strings.Count(logs.String(), "no price for the model"); n != 1 || !strings.Contains(logs.String(), "mystery-1") {
		t.Errorf("%d log lines, want 1 naming mystery-1:\n%s", n, logs.String())
	}
}

// TestCostDefaultTableAndOff: the built-in table prices a current model
// by default; HARNESSX_PRICES=off and WithPricing(nil) turn costs off; a
// bad HARNESSX_PRICES file fails the install with its name and line.
func TestCostDefaultTableAndOff(t *testing.T) {
	script := []harnesstest.Response{{Text: "hi", Model: "claude-sonnet-4-5-20250929",
		Usage: harness.Usage{InputTokens: 52_200, OutputTokens: 800, CacheReadInputTokens: 50_000, CacheCreationInputTokens: 2_000, ReasoningTokens: 300}}}
	runCost := func(t *testing.T, opts ...tracing.Option) (float64, bool) {
		tp, sr := recorderTP(t)
		a := newAgentExt(t, tracing.New(append([]tracing.Option{tracing.WithTracerProvider(tp)}, opts...)...), script)
		if _, err := a.Run(context.Background(), "hi"); err != nil {
			t.Fatal(err)
		}
		v, ok := attr(byName(spans(sr), "chat m")[0], tracing.KeyCostUSD)
		return v.AsFloat64(), ok
	}
	t.Run("built-in", func(t *testing.T) {
		t.Setenv(pricing.EnvPrices, "")
		// The Anthropic golden case of the pricing package: 0.0351 USD.
		if usd, ok := runCost(t); !ok || math.Abs(usd-0.0351) > 1e-12 {
			t.Errorf("cost %v %v, want 0.0351", usd, ok)
		}
	})
	t.Run("env off", func(t *testing.T) {
		t.Setenv(pricing.EnvPrices, "off")
		if _, ok := runCost(t); ok {
			t.Error("cost recorded with HARNESSX_PRICES=off")
		}
	})
	t.Run("option nil", func(t *testing.T) {
		t.Setenv(pricing.EnvPrices, "")
		if _, ok := runCost(t, tracing.WithPricing(nil)); ok {
			t.Error("cost recorded with WithPricing(nil)")
		}
	})
	t.Run("env file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "prices.json")
		if err := os.WriteFile(path, []byte(`{"format": 1, "models": [{"model": "claude-sonnet-4-5", "input": 1, "output": 1}]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv(pricing.EnvPrices, path)
		// Every token at 1 USD per million, the dated alias included.
		if usd, ok := runCost(t); !ok || math.Abs(usd-0.053) > 1e-12 {
			t.Errorf("cost %v %v, want 0.053 from the file", usd, ok)
		}
	})
	t.Run("bad env file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "prices.json")
		if err := os.WriteFile(path, []byte("{\"format\": 1,\n\"models\": [{\"model\": \"x\", \"input\": -1, \"output\": 1}]}"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv(pricing.EnvPrices, path)
		_, err := harness.New(harness.WithProvider(harnesstest.NewScriptedProvider(script...)), harness.WithExtensions(tracing.New()))
		if !errors.Is(err, tracing.ErrInvalidConfig) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "models[0] (x).input") {
			t.Errorf("err %v, want a ConfigError naming the file and the field", err)
		}
	})
}
