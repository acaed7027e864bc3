package exporters_test

import (
	"context"
	"flag"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// spansPerRun is how many spans one run of newTracedAgent's agent makes:
// invoke_agent, chat, execute_tool ×2, the child's invoke_agent and chat,
// and the final chat.
const spansPerRun = 7

type weatherIn struct {
	City string `json:"city"`
}

// newTracedAgent returns an agent traced through tp that, on every run,
// calls a weather tool and a traced subagent, then answers. Its scripted
// usage reports cache and reasoning tokens.
func newTracedAgent(t testing.TB, tp trace.TracerProvider) *harness.Agent {
	t.Helper()
	childModel := harnesstest.NewScriptedProvider(harnesstest.Response{
		Text:  "Lisbon: mild, light rain.",
		Usage: harness.Usage{InputTokens: 50, OutputTokens: 9, CacheReadInputTokens: 20},
	})
	childModel.Loop = true
	child, err := harness.New(
		harness.WithName("researcher"),
		harness.WithProvider(childModel),
		harness.WithModel("child-model"),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))),
	)
	if err != nil {
		t.Fatal(err)
	}
	weather := harness.MustTool(harness.NewTool("get_weather", "Weather of a city.",
		func(_ context.Context, in weatherIn) (string, error) { return in.City + ": 18°C", nil }))
	model := harnesstest.NewScriptedProvider(
		harnesstest.Response{
			ToolCalls: []harness.ToolCall{
				harnesstest.Call("call_1", "get_weather", map[string]string{"city": "Lisbon"}),
				harnesstest.Call("call_2", "research", map[string]string{"task": "Lisbon weather trend"}),
			},
			Usage: harness.Usage{InputTokens: 400, OutputTokens: 30, CacheCreationInputTokens: 380},
		},
		harnesstest.Response{
			Reasoning: "Both sources agree.",
			Text:      "18°C and light rain in Lisbon.",
			Usage:     harness.Usage{InputTokens: 460, OutputTokens: 40, CacheReadInputTokens: 380, ReasoningTokens: 12},
		},
	)
	model.Loop = true
	agent, err := harness.New(
		harness.WithName("planner"),
		harness.WithProvider(model),
		harness.WithModel("parent-model"),
		harness.WithTools(weather, harness.AgentTool(child, "research", "Ask the researcher.")),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = agent.Close(context.Background())
		_ = child.Close(context.Background())
	})
	return agent
}

// run runs agent once and fails the test unless the run completes.
func run(t testing.TB, agent *harness.Agent) {
	t.Helper()
	res, err := agent.Run(context.Background(), "What's the weather in Lisbon?")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != harness.StatusCompleted {
		t.Fatalf("run status %s: %v", res.Status, res.Err)
	}
}

// allSpans flattens the spans of requests.
func allSpans(reqs ...*coltracepb.ExportTraceServiceRequest) []*tracepb.Span {
	var out []*tracepb.Span
	for _, r := range reqs {
		for _, rs := range r.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				out = append(out, ss.GetSpans()...)
			}
		}
	}
	return out
}

// attr returns a span attribute's value as a string, and whether it is set.
func attr(s *tracepb.Span, key string) (string, bool) {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			return anyString(kv.GetValue()), true
		}
	}
	return "", false
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	}
	return v.String()
}

// spanNames counts spans by name.
func spanNames(spans []*tracepb.Span) map[string]int {
	m := map[string]int{}
	for _, s := range spans {
		m[s.GetName()]++
	}
	return m
}
