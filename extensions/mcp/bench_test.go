package mcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/extensions/mcp"
	"github.com/harnessx/harnessx/extensions/mcp/internal/testserver"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchServer serves the test server over streamable HTTP on loopback.
func benchServer(b *testing.B) string {
	srv := testserver.New(testserver.Options{})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	b.Cleanup(hs.Close)
	return hs.URL
}

// BenchmarkHTTPToolCall is one call of the echo tool through the adapter
// (the harness tool's handler: session, span attributes, trace context,
// progress token, the watched HTTP requests) over streamable HTTP on
// loopback. Its floor is BenchmarkHTTPToolCallSDK.
func BenchmarkHTTPToolCall(b *testing.B) {
	url := benchServer(b)
	p := harnesstest.NewScriptedProvider(enable("c1", "srv"), harnesstest.Reply("enabled"))
	a, err := harness.New(harness.WithProvider(p), harness.WithLogger(slog.New(slog.DiscardHandler)), harness.WithStateDir(b.TempDir()),
		harness.WithExtensions(mcp.New(mcp.WithServer("srv", mcp.StreamableHTTP(url)))))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close(context.Background()) })
	ctx := context.Background()
	if _, err := a.Run(ctx, "go"); err != nil {
		b.Fatal(err)
	}
	echo, ok := a.Tool("srv__echo")
	if !ok {
		b.Fatal("no srv__echo")
	}
	input := json.RawMessage(`{"text":"hello"}`)
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		out, err := echo.Handler(ctx, input)
		if err != nil || !strings.Contains(out, "hello") {
			b.Fatalf("%q, %v", out, err)
		}
	}
}

// BenchmarkHTTPToolCallSDK is the floor of BenchmarkHTTPToolCall: the same
// call with a bare go-sdk client.
func BenchmarkHTTPToolCallSDK(b *testing.B) {
	url := benchServer(b)
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	params := &sdk.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"text":"hello"}`)}
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "hello") {
			b.Fatalf("%v, %v", res, err)
		}
	}
}

// reportCPU reports the process's CPU time (user and system, the server's
// included: it runs in this process) per operation, as cpu-ns/op: on a
// loaded machine it varies less than the wall time. Call the function it
// returns when the loop ends.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		if b.N > 0 && start >= 0 {
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
