package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/mcp"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// samplingServer is a go-sdk server (protocol 2025-11-25, whose servers
// send sampling/createMessage requests of their own) with a tool that asks
// the client's model to summarize its text during the call and answers
// what came back, and a tool that asks with no messages.
func samplingServer() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "sampler", Version: "1"}, &sdk.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	addSamplingTools(srv)
	return srv
}

func addSamplingTools(srv *sdk.Server) {
	sdk.AddTool(srv, &sdk.Tool{Name: "summarize", Description: "Summarize a text with the client's model.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*sdk.CallToolResult, any, error) {
			caps := req.Session.InitializeParams().Capabilities
			advertised := caps != nil && caps.Sampling != nil
			res, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{
				Messages: []*sdk.SamplingMessage{
					{Role: "user", Content: &sdk.TextContent{Text: "Summarize: " + in.Text}},
					{Role: "assistant", Content: &sdk.TextContent{Text: "Summary:"}},
					{Role: "user", Content: &sdk.ImageContent{Data: []byte("\x89PNG"), MIMEType: "image/png"}},
				},
				SystemPrompt:     "Be brief.",
				MaxTokens:        1 << 20,
				Temperature:      0.25,
				StopSequences:    []string{"STOP"},
				ModelPreferences: &sdk.ModelPreferences{Hints: []*sdk.ModelHint{{Name: "some-other-model"}}},
			})
			if err != nil {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{
					Text: fmt.Sprintf("advertised=%v: %v", advertised, err)}}}, nil, nil
			}
			text, _ := res.Content.(*sdk.TextContent)
			if text == nil {
				return nil, nil, fmt.Errorf("content %T", res.Content)
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{
				Text: fmt.Sprintf("advertised=%v %s|%s|%s|%s", advertised, text.Text, res.Model, res.Role, res.StopReason)}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "empty", Description: "Ask the client's model nothing."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			_, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 10})
			return &sdk.CallToolResult{IsError: err != nil, Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(err)}}}, nil, nil
		})
}

// A server allowed to sample, over streamable HTTP on loopback, asks
// during a call: the agent's provider answers (with the agent's model, the
// request's system prompt, messages and temperature, maxTokens capped),
// the answer goes back cut at the stop sequence, and the chat span of the
// sampling is a child of the call's execute_tool span.
func TestSamplingServedByTheAgentsProvider(t *testing.T) {
	url, _ := httpServer(t, samplingServer(), nil)
	spanRec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spanRec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	p := harnesstest.NewScriptedProvider(
		enable("c1", "srv"),
		harnesstest.CallTool("c2", "srv__summarize", map[string]string{"text": "a long story"}),
		harnesstest.Response{Text: "a story STOP and more", Usage: harness.Usage{InputTokens: 12, OutputTokens: 5}},
		harnesstest.Reply("done"),
	)
	a := newAgent(t, p, mcp.New(mcp.WithServer("srv", mcp.StreamableHTTP(url), mcp.AllowSampling()), mcp.WithCallTimeout(10*time.Second)),
		harness.WithModel("agent-model"), harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))))
	r := run(t, a, "summarize")
	if r.Text != "done" {
		t.Errorf("run text %q", r.Text)
	}
	got := results(r)["c2"]
	if want := "advertised=true a story |agent-model|assistant|stopSequence"; got == nil || got.IsError || got.Content != want {
		t.Fatalf("result %+v, want %q", got, want)
	}
	reqs := p.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	g := reqs[2]
	if g.Model != "agent-model" || g.System != "Be brief." || g.MaxTokens != mcp.MaxSamplingTokens || g.Temperature == nil || *g.Temperature != 0.25 ||
		len(g.Tools) != 0 || g.Step != 0 || g.RunID != r.RunID {
		t.Errorf("sampling request %+v", g)
	}
	if len(g.Messages) != 3 || g.Messages[0].Role != harness.RoleUser || g.Messages[0].Text() != "Summarize: a long story" ||
		g.Messages[1].Role != harness.RoleAssistant || g.Messages[1].Text() != "Summary:" ||
		g.Messages[2].Content[0].Type != harness.PartImage || string(g.Messages[2].Content[0].Media.Data) != "\x89PNG" ||
		g.Messages[2].Content[0].Media.MIME != "image/png" {
		t.Errorf("sampling messages %+v", g.Messages)
	}
	// The conversation does not hold the sampling.
	for _, m := range a.Messages() {
		if strings.Contains(m.Text(), "Summarize:") || strings.Contains(m.Text(), "STOP") {
			t.Errorf("the conversation holds the sampling: %+v", m)
		}
	}
	if r.Steps != 3 {
		t.Errorf("steps %d, want 3", r.Steps)
	}

	spans := spanRec.Ended()
	call := toolSpan(t, spans, "srv__summarize")
	var chats []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "chat agent-model" && s.Parent().SpanID() == call.SpanContext().SpanID() {
			chats = append(chats, s)
		}
	}
	if len(chats) != 1 {
		t.Fatalf("%d chat spans under the call's span, want 1", len(chats))
	}
	at := attrs(chats[0])
	if at["gen_ai.operation.name"] != "chat" || at["gen_ai.request.model"] != "agent-model" || at["gen_ai.request.max_tokens"] != fmt.Sprint(mcp.MaxSamplingTokens) ||
		at["gen_ai.request.temperature"] != "0.25" || at["gen_ai.usage.output_tokens"] != "5" || at["gen_ai.provider.name"] != "scripted" ||
		!strings.Contains(at["gen_ai.system_instructions"], "Be brief.") || chats[0].SpanContext().TraceID() != call.SpanContext().TraceID() {
		t.Errorf("chat span attributes %v", at)
	}
}

// Without AllowSampling the client does not advertise sampling, the
// server's request is refused with a JSON-RPC error that says why, and
// the run goes on with the tool's error. With it, a request with no
// messages is refused.
func TestSamplingRefused(t *testing.T) {
	t.Run("not allowed", func(t *testing.T) {
		p := harnesstest.NewScriptedProvider(
			enable("c1", "srv"),
			harnesstest.CallTool("c2", "srv__summarize", map[string]string{"text": "x"}),
			harnesstest.Reply("done"),
		)
		a := newAgent(t, p, mcp.New(mcp.WithServer("srv", memServer(t, samplingServer()))))
		r := run(t, a, "go")
		got := results(r)["c2"]
		if got == nil || !got.IsError {
			t.Fatalf("result %+v", got)
		}
		mustContain(t, "result", got.Content, "advertised=false", "sampling is not allowed", `server "srv"`)
		if r.Text != "done" || r.Status != harness.StatusCompleted || len(p.Requests()) != 3 {
			t.Errorf("run %+v after %d requests", r, len(p.Requests()))
		}
	})
	t.Run("no messages", func(t *testing.T) {
		p := harnesstest.NewScriptedProvider(
			enable("c1", "srv"),
			harnesstest.CallTool("c2", "srv__empty", map[string]any{}),
			harnesstest.Reply("done"),
		)
		a := newAgent(t, p, mcp.New(mcp.WithServer("srv", memServer(t, samplingServer()), mcp.AllowSampling())))
		r := run(t, a, "go")
		got := results(r)["c2"]
		if got == nil || !got.IsError {
			t.Fatalf("result %+v", got)
		}
		mustContain(t, "result", got.Content, "no messages")
		if len(p.Requests()) != 3 {
			t.Errorf("%d model requests, want 3", len(p.Requests()))
		}
	})
}

// Concurrent calls of a server allowed to sample, over streamable HTTP,
// each ask while the others do: each sampling's chat span is a child of
// its own call's span, and the one beyond MaxConcurrentSamplings is
// refused while the others are served.
func TestSamplingConcurrentCalls(t *testing.T) {
	url, _ := httpServer(t, samplingServer(), nil)
	spanRec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spanRec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	n := mcp.MaxConcurrentSamplings + 1
	calls := harnesstest.Response{}
	script := []harnesstest.Response{enable("c1", "srv")}
	for i := range n {
		calls.ToolCalls = append(calls.ToolCalls, harnesstest.Call(fmt.Sprintf("s%d", i), "srv__summarize", map[string]string{"text": fmt.Sprint(i)}))
	}
	script = append(script, calls)
	for range n - 1 {
		// The samplings that are served hold their slot a while, so that
		// the last one comes while they run.
		script = append(script, harnesstest.Response{Text: "summary", Delay: time.Second})
	}
	script = append(script, harnesstest.Reply("done"))
	p := harnesstest.NewScriptedProvider(script...)
	a := newAgent(t, p, mcp.New(mcp.WithServer("srv", mcp.StreamableHTTP(url), mcp.AllowSampling()), mcp.WithCallTimeout(20*time.Second)),
		harness.WithModel("agent-model"), harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))))
	r := run(t, a, "go")
	var served, refused int
	for i := range n {
		got := results(r)[fmt.Sprintf("s%d", i)]
		switch {
		case got == nil:
			t.Errorf("no result for s%d", i)
		case !got.IsError && got.Content == "advertised=true summary|agent-model|assistant|endTurn":
			served++
		case got.IsError && strings.Contains(got.Content, "too many sampling requests at once"):
			refused++
		default:
			t.Errorf("s%d: %+v", i, got)
		}
	}
	if served != n-1 || refused != 1 {
		t.Errorf("%d served, %d refused; want %d and 1", served, refused, n-1)
	}
	spans := spanRec.Ended()
	parents := map[string]int{}
	for _, s := range spans {
		if s.Name() == "execute_tool srv__summarize" {
			parents[s.SpanContext().SpanID().String()] = 0
		}
	}
	for _, s := range spans {
		if s.Name() == "chat agent-model" && s.Parent().IsValid() {
			if _, ok := parents[s.Parent().SpanID().String()]; ok {
				parents[s.Parent().SpanID().String()]++
			}
		}
	}
	var under int
	for _, c := range parents {
		if c > 1 {
			t.Errorf("a call's span has %d chat spans", c)
		}
		under += c
	}
	if len(parents) != n || under != n-1 {
		t.Errorf("%d call spans, %d chat spans under them; want %d and %d", len(parents), under, n, n-1)
	}
}

// With protocol 2026-07-28 a server asks with a multi-round-trip input
// request, which the SDK fulfils in the context of the call: it is served
// too, and its chat span is a child of the call's span.
func TestSamplingInputRequest(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "sampler", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "summarize", Description: "Summarize a text with the client's model."},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*sdk.CallToolResult, any, error) {
			resp, ok := req.Params.InputResponses["s"]
			if !ok {
				return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"s": &sdk.CreateMessageParams{
					Messages:  []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "Summarize: " + in.Text}}},
					MaxTokens: 100,
				}}}, nil, nil
			}
			// The SDK decodes the answer as a result with tools.
			res, _ := resp.(*sdk.CreateMessageWithToolsResult)
			if res == nil || len(res.Content) != 1 {
				return nil, nil, fmt.Errorf("input response %T %+v", resp, resp)
			}
			text, _ := res.Content[0].(*sdk.TextContent)
			if text == nil {
				return nil, nil, fmt.Errorf("content %T", res.Content[0])
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text.Text + "|" + res.StopReason}}}, nil, nil
		})
	spanRec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spanRec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	p := harnesstest.NewScriptedProvider(
		enable("c1", "srv"),
		harnesstest.CallTool("c2", "srv__summarize", map[string]string{"text": "a long story"}),
		harnesstest.Response{Text: "a story", StopReason: harness.StopMaxTokens},
		harnesstest.Reply("done"),
	)
	a := newAgent(t, p, mcp.New(mcp.WithServer("srv", memServer(t, srv), mcp.AllowSampling())),
		harness.WithModel("agent-model"), harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))))
	r := run(t, a, "go")
	if got := results(r)["c2"]; got == nil || got.IsError || got.Content != "a story|maxTokens" {
		t.Fatalf("result %+v", got)
	}
	if g := p.Requests()[2]; g.MaxTokens != 100 || len(g.Messages) != 1 || g.Messages[0].Text() != "Summarize: a long story" {
		t.Errorf("sampling request %+v", g)
	}
	spans := spanRec.Ended()
	call := toolSpan(t, spans, "srv__summarize")
	var under int
	for _, s := range spans {
		if s.Name() == "chat agent-model" && s.Parent().SpanID() == call.SpanContext().SpanID() {
			under++
		}
	}
	if under != 1 {
		t.Errorf("%d chat spans under the call's span, want 1", under)
	}
}
