package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/extensions/mcp"
	"github.com/harnessx/harnessx/extensions/mcp/internal/testserver"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A stdio server that crashes in the middle of a call gives an error
// result; the run goes on and the next call starts the server again.
func TestStdioCrashMidCall(t *testing.T) {
	p := harnesstest.NewScriptedProvider(
		enable("c1", "proc"),
		harnesstest.CallTool("c2", "proc__crash", map[string]any{}),
		harnesstest.CallTool("c3", "proc__echo", map[string]string{"text": "after the crash"}),
		harnesstest.Reply("done"),
	)
	a := newAgent(t, p, mcp.New(mcp.WithServer("proc", stdioServer())))
	r := run(t, a, "go")
	if r.Status != harness.StatusCompleted {
		t.Fatalf("status %s: %v", r.Status, r.Err)
	}
	res := results(r)
	if got := res["c2"]; !got.IsError || !strings.Contains(got.Content, `mcp: server "proc" closed the connection during tools/call crash (did it crash?); the next call reconnects`) {
		t.Errorf("crashed call: %+v", got)
	}
	if got := res["c3"]; got.IsError || !strings.Contains(got.Content, "after the crash") {
		t.Errorf("call after the crash: %+v", got)
	}
}

// spansOf runs script on an agent with the tracing extension and the
// server, and returns the ended spans.
func tracedRun(t *testing.T, tr mcp.Transport, calls ...harnesstest.Response) (*harness.RunResult, []sdktrace.ReadOnlySpan) {
	t.Helper()
	return tracedRunWith(t, tr, nil, calls...)
}

// tracedRunWith is tracedRun with options for the extension.
func tracedRunWith(t *testing.T, tr mcp.Transport, opts []mcp.Option, calls ...harnesstest.Response) (*harness.RunResult, []sdktrace.ReadOnlySpan) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	p := harnesstest.NewScriptedProvider(append(append([]harnesstest.Response{enable("c1", "srv")}, calls...), harnesstest.Reply("done"))...)
	a := newAgent(t, p, mcp.New(append([]mcp.Option{mcp.WithServer("srv", tr)}, opts...)...), harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))))
	r := run(t, a, "go")
	return r, rec.Ended()
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

func toolSpan(t *testing.T, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "execute_tool "+name {
			if found != nil {
				t.Fatalf("two spans for %s", name)
			}
			found = s
		}
	}
	if found == nil {
		t.Fatalf("no execute_tool span for %s", name)
	}
	return found
}

// The MCP attributes are on the execute_tool span (no second span), and the
// server receives the span's context as traceparent in params._meta.
func TestStdioTraceAttributes(t *testing.T) {
	r, spans := tracedRun(t, stdioServer(),
		harnesstest.CallTool("c2", "srv__echo", map[string]string{"text": "traced"}),
		harnesstest.CallTool("c3", "srv__progress", map[string]any{}))
	s := toolSpan(t, spans, "srv__echo")
	a := attrs(s)
	for k, want := range map[attribute.Key]string{
		"mcp.method.name":   "tools/call",
		"network.transport": "pipe",
		"gen_ai.tool.name":  "srv__echo",
	} {
		if a[k] != want {
			t.Errorf("%s = %q, want %q", k, a[k], want)
		}
	}
	if a["mcp.protocol.version"] == "" || a["jsonrpc.request.id"] == "" {
		t.Errorf("protocol version %q, request id %q", a["mcp.protocol.version"], a["jsonrpc.request.id"])
	}
	if _, ok := a["mcp.session.id"]; ok {
		t.Errorf("a stdio call has mcp.session.id %q", a["mcp.session.id"])
	}
	var tools int
	for _, s := range spans {
		if strings.HasPrefix(s.Name(), "execute_tool ") {
			tools++
		}
		if strings.Contains(s.Name(), "tools/call") {
			t.Errorf("a second span for the call: %s", s.Name())
		}
	}
	if tools != 3 {
		t.Errorf("%d execute_tool spans, want 3 (mcp_enable and the calls)", tools)
	}
	// The progress notifications are events of the call's span.
	var progress []string
	for _, ev := range toolSpan(t, spans, "srv__progress").Events() {
		for _, kv := range ev.Attributes {
			if kv.Key == tracing.KeyToolUpdatePrefix+mcp.MetaProgressMessage {
				progress = append(progress, ev.Name+" "+kv.Value.Emit())
			}
		}
	}
	if want := []string{tracing.EventToolUpdate + " halfway", tracing.EventToolUpdate + " almost"}; !slices.Equal(progress, want) {
		t.Errorf("progress events %v, want %v", progress, want)
	}
	var echo testserver.Echo
	if err := json.Unmarshal([]byte(results(r)["c2"].Content), &echo); err != nil {
		t.Fatal(err)
	}
	sc := s.SpanContext()
	if want := fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID()); echo.Traceparent != want {
		t.Errorf("the server received traceparent %q, want %q (the execute_tool span)", echo.Traceparent, want)
	}
}

// An isError result sets error.type=tool_error on the call's span, with
// the tracing extension itself: the class travels as the result's
// harness.ToolResult.ErrorType.
func TestErrorTypeToolError(t *testing.T) {
	r, spans := tracedRun(t, memServer(t, testserver.New(testserver.Options{})), harnesstest.CallTool("c2", "srv__fail", map[string]any{}))
	if got := results(r)["c2"]; !got.IsError || got.ErrorType != "tool_error" {
		t.Fatalf("result %+v", got)
	}
	got := attrs(toolSpan(t, spans, "srv__fail"))
	if got["error.type"] != "tool_error" || got["mcp.method.name"] != "tools/call" {
		t.Errorf("span attributes %v", got)
	}
	if _, ok := got["network.transport"]; ok {
		t.Errorf("an in-memory transport has network.transport %q", got["network.transport"])
	}
}

// Over streamable HTTP the call carries the MCP session ID and tcp.
func TestStreamableHTTP(t *testing.T) {
	srv := testserver.New(testserver.Options{})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close) // after the agent's Close, registered later
	r, spans := tracedRun(t, mcp.StreamableHTTP(hs.URL), harnesstest.CallTool("c2", "srv__echo", map[string]string{"text": "over http"}))
	if got := results(r)["c2"]; got.IsError || !strings.Contains(got.Content, "over http") {
		t.Fatalf("echo over HTTP: %+v", got)
	}
	a := attrs(toolSpan(t, spans, "srv__echo"))
	if a["network.transport"] != "tcp" || a["mcp.session.id"] == "" || a["mcp.method.name"] != "tools/call" {
		t.Errorf("span attributes %v", a)
	}
}
