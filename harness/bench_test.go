package harness_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

type weatherIn struct {
	City string `json:"city"`
}

func weather(_ context.Context, in weatherIn) (string, error) { return "sunny in " + in.City, nil }

var benchScript = []harnesstest.Response{
	harnesstest.CallTool("call_1", "weather", `{"city":"Paris"}`),
	{Text: "It is sunny in Paris.", Usage: harness.Usage{InputTokens: 10, OutputTokens: 5}},
}

// BenchmarkFloor is a bare hand-written loop doing the work of one
// BenchmarkRun: two scripted model replies, one JSON argument decode, one
// tool function call.
func BenchmarkFloor(b *testing.B) {
	p := harnesstest.NewScriptedProvider(benchScript...)
	p.Loop, p.DiscardRequests = true, true
	ctx := context.Background()
	req := &harness.ModelRequest{Model: "m"}
	b.ReportAllocs()
	for b.Loop() {
		msgs := []harness.Message{harness.UserMessage("weather?")}
		req.Messages = msgs
		resp, _ := p.Generate(ctx, req)
		msgs = append(msgs, resp.Message)
		call := resp.Message.Content[0].ToolCall
		var in weatherIn
		if err := json.Unmarshal(call.Input, &in); err != nil {
			b.Fatal(err)
		}
		out, _ := weather(ctx, in)
		msgs = append(msgs, harness.Message{Role: harness.RoleTool, Content: []harness.Part{{Type: harness.PartToolResult,
			ToolResult: &harness.ToolResult{CallID: call.ID, Name: call.Name, Content: out}}}})
		req.Messages = msgs
		resp, _ = p.Generate(ctx, req)
		if resp.Message.Text() == "" {
			b.Fatal("no text")
		}
	}
}

// BenchmarkRun is one agent.Run of two scripted model calls and one tool call.
func BenchmarkRun(b *testing.B) {
	p := harnesstest.NewScriptedProvider(benchScript...)
	p.Loop, p.DiscardRequests = true, true
	a, err := harness.New(harness.WithProvider(p), harness.WithModel("m"),
		harness.WithTools(harness.MustTool(harness.NewTool("weather", "Weather of a city.", weather))))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := a.Run(ctx, "weather?")
		if err != nil || res.Text == "" {
			b.Fatal(err, res)
		}
		a.Reset()
	}
}
