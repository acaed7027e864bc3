package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
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

// A stdio server gets HOME, LOGNAME, PATH, SHELL, TERM and USER of the
// agent's environment and the variables named with PassEnv, not the rest
// (the agent's API keys).
func TestStdioEnvironment(t *testing.T) {
	t.Setenv("HARNESSX_TEST_API_KEY", "sk-not-for-servers")
	t.Setenv("HARNESSX_TEST_PASSED", "passed-on")
	t.Setenv("PATH", os.Getenv("PATH"))
	r, _ := tracedRun(t, mcp.Command(serverBin).PassEnv("HARNESSX_TEST_PASSED", "HARNESSX_TEST_UNSET"),
		harnesstest.CallTool("c2", "srv__env", map[string]any{}))
	got := results(r)["c2"]
	if got == nil || got.IsError {
		t.Fatalf("env: %+v", got)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(got.Content, "\n") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if env["HARNESSX_TEST_PASSED"] != "passed-on" || env["PATH"] != os.Getenv("PATH") {
		t.Errorf("the server lacks PATH or the passed variable: %v", env)
	}
	for k := range env {
		if !slices.Contains([]string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "HARNESSX_TEST_PASSED"}, k) {
			t.Errorf("the server got %s", k)
		}
	}
}

// A stdio server that dies at start: the error the model reads, and the
// log, show the end of its standard error, redacted.
func TestStdioStderrShown(t *testing.T) {
	script := `echo "loading config" >&2
i=0; while [ $i -lt 3000 ]; do echo "noise line $i of the start-up chatter" >&2; i=$((i+1)); done
echo "fatal: cannot reach https://admin:hunter2@db.internal/ with api_key=abcdef0123456789" >&2
exit 1`
	var logs logBuffer
	p := harnesstest.NewScriptedProvider(enable("c1", "dying"), harnesstest.Reply("it died"))
	a := newAgent(t, p, mcp.New(mcp.WithServer("dying", mcp.Command("sh", "-c", script))), harness.WithLogger(newLogger(&logs)))
	r := run(t, a, "go")
	got := results(r)["c1"]
	if got == nil || !got.IsError {
		t.Fatalf("mcp_enable: %+v", got)
	}
	mustContain(t, "error", got.Content, `mcp: server "dying" (stdio: sh -c`, "the end of its standard error (", "fatal: cannot reach https://admin:", "noise line 2999")
	if strings.Contains(got.Content, "noise line 0 ") || len(got.Content) > 6000 {
		t.Errorf("the error shows %d bytes, from the start of the standard error", len(got.Content))
	}
	log := logs.String()
	mustContain(t, "log", log, "mcp: cannot connect a server", "fatal: cannot reach", "noise line 2999")
	for what, text := range map[string]string{"error": got.Content, "log": log} {
		for _, secret := range []string{"hunter2", "abcdef0123456789"} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s shows %s", what, secret)
			}
		}
	}
	// The log keeps the last 64 KiB, not all 100 KB.
	if strings.Contains(log, "noise line 10 of") || strings.Contains(log, "loading config\n") || !strings.Contains(log, "noise line 2000 of") {
		t.Errorf("the log does not keep the last 64 KiB of the standard error")
	}
}

// A failed connection's error does not show the URL's secrets to the model,
// nor does /mcp (which shows the URL without its user information).
func TestConnectErrorRedacted(t *testing.T) {
	url := "http://user:hunter2@127.0.0.1:1/mcp?api_key=supersecret123"
	p := harnesstest.NewScriptedProvider(enable("c1", "web"), harnesstest.Reply("no luck"))
	a := newAgent(t, p, mcp.New(mcp.WithServer("web", mcp.StreamableHTTP(url))))
	r := run(t, a, "go")
	got := results(r)["c1"]
	if got == nil || !got.IsError || !strings.Contains(got.Content, `mcp: server "web" (http: http://127.0.0.1:1/mcp?api_key=`) {
		t.Fatalf("mcp_enable: %+v", got)
	}
	list := run(t, a, "/mcp").Text
	for what, text := range map[string]string{"error": got.Content, "/mcp": list, "model request": fmt.Sprint(p.Requests())} {
		for _, secret := range []string{"hunter2", "supersecret123"} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s shows %s: %s", what, secret, text)
			}
		}
	}
}
