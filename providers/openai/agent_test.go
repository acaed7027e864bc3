package openai

import (
	"context"
	"fmt"
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/replay"
)

type weatherInput struct {
	City string `json:"city" jsonschema:"the city to report on"`
}

func weather() *harness.Tool {
	return harness.MustTool(harness.NewTool("get_weather", "Report the current weather of a city.",
		func(_ context.Context, in weatherInput) (string, error) {
			return fmt.Sprintf("%s: 18°C, light rain", in.City), nil
		}))
}

// TestAgentRoundTrip runs a full harness agent against the loopback
// server: the model calls a tool (two in the streamed script), the engine
// runs it and sends the results back, the model answers.
func TestAgentRoundTrip(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			first, second := fixture("tool_use.json"), fixture("final.json")
			calls := 1
			if stream {
				first, second = fixture("stream_tool.sse"), fixture("stream_final.sse")
				calls = 2
			}
			srv := replay.New(first, second)
			defer srv.Close()
			p := newTestProvider(t, srv, WithPromptCacheKey())
			agent, err := harness.New(
				harness.WithProvider(p),
				harness.WithModel(model),
				harness.WithSystemPrompt("You are a concise weather assistant. Use get_weather."),
				harness.WithTools(weather()),
				harness.WithStreaming(stream),
			)
			if err != nil {
				t.Fatal(err)
			}
			defer agent.Close(context.Background())
			res, err := agent.Run(context.Background(), "What's the weather in Lisbon?")
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != harness.StatusCompleted || res.Steps != 2 {
				t.Fatalf("status %s steps %d err %v", res.Status, res.Steps, res.Err)
			}
			if res.Text != "Lisbon is at 18°C with light rain — take an umbrella." {
				t.Errorf("text %q", res.Text)
			}
			if len(res.Messages) != 4 || res.Messages[2].Role != harness.RoleTool || len(res.Messages[2].Content) != calls {
				t.Fatalf("messages %+v", res.Messages)
			}
			if tr := res.Messages[2].Content[0].ToolResult; tr.Content != "Lisbon: 18°C, light rain" || tr.IsError {
				t.Errorf("tool result %+v", tr)
			}
			want := harness.Usage{InputTokens: 412 + 501, OutputTokens: 58 + 19, CacheReadInputTokens: 384}
			if res.Usage != want {
				t.Errorf("usage %+v, want %+v", res.Usage, want)
			}
			checkRequest(t, srv, 1, fmt.Sprintf("agent_step2_stream_%v.request.json", stream))
		})
	}
}
