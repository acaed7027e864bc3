package tracing

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// A request a tool makes with Agent.Generate (step 0) gets a chat span under
// the tool's span with its own messages, and stays out of the history
// cache: the cache still holds the conversation for the run's next request.
func TestGenerateChatSpanKeepsTheHistoryCache(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e := New(WithTracerProvider(tp))
	var a *harness.Agent
	var lastAfter string
	sample := harness.MustTool(harness.NewTool("sample", "", func(ctx context.Context, _ struct{}) (string, error) {
		resp, err := a.Generate(ctx, &harness.ModelRequest{Messages: []harness.Message{
			harness.UserMessage("summarize this"), harness.AssistantMessage("sure"), harness.UserMessage("token=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"),
		}})
		if err != nil {
			return "", err
		}
		e.history.mu.Lock()
		lastAfter = e.history.last
		e.history.mu.Unlock()
		return resp.Message.Text(), nil
	}))
	p := harnesstest.NewScriptedProvider(harnesstest.CallTool("c1", "sample", `{}`), harnesstest.Reply("short"), harnesstest.Reply("done"))
	var err error
	a, err = harness.New(harness.WithProvider(p), harness.WithModel("m"), harness.WithTools(sample),
		harness.WithLogger(slog.New(slog.DiscardHandler)), harness.WithExtensions(e))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lastAfter, `"go"`) || strings.Contains(lastAfter, "summarize") {
		t.Errorf("the history cache after the sampling holds %s, want the conversation", lastAfter)
	}
	var tool, sampling sdktrace.ReadOnlySpan
	var chats []sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		switch s.Name() {
		case "execute_tool sample":
			tool = s
		case "chat m":
			chats = append(chats, s)
		}
	}
	if tool == nil || len(chats) != 3 {
		t.Fatalf("tool span %v, %d chat spans", tool, len(chats))
	}
	for _, c := range chats {
		if c.Parent().SpanID() == tool.SpanContext().SpanID() {
			sampling = c
		}
	}
	if sampling == nil {
		t.Fatal("no chat span under the tool's span")
	}
	var input string
	for _, kv := range sampling.Attributes() {
		if kv.Key == "gen_ai.input.messages" {
			input = kv.Value.AsString()
		}
	}
	if !strings.Contains(input, "summarize this") || !strings.Contains(input, `"sure"`) || strings.Contains(input, `"go"`) ||
		strings.Contains(input, "abcdefghijklmnop") {
		t.Errorf("the sampling's input messages %s", input)
	}
}
