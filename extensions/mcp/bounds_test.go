package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/mcp"
	"github.com/harnessx/harnessx/extensions/mcp/internal/testserver"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// deepSchema is an object schema nested n levels.
func deepSchema(n int) string {
	return strings.Repeat(`{"type":"object","properties":{"a":`, n) + `{"type":"string"}` + strings.Repeat(`}}`, n)
}

// A tool with a schema nested 2,000 levels, one with a 5,000-byte name and
// one that requires tasks are skipped, each with a reason that names it
// (the long name cut); the other tools are offered and work.
func TestBadToolsSkipped(t *testing.T) {
	long := strings.Repeat("n", 5000)
	extra := []string{
		`{"name":"deep","description":"Deep.","inputSchema":` + deepSchema(2000) + `}`,
		`{"name":"` + long + `","description":"Long name.","inputSchema":{"type":"object"}}`,
		`{"name":"tasky","description":"Needs tasks.","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}`,
		`{"name":"optional_tasks","description":"Tasks optional.","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}`,
		`{"name":"wordy","description":"` + strings.Repeat("word ", 4000) + `","inputSchema":{"type":"object"}}`,
	}
	// Over stdio: the test server as a subprocess, told to add the tools.
	file := filepath.Join(t.TempDir(), "extra.json")
	if err := os.WriteFile(file, []byte("["+strings.Join(extra, ",")+"]"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("stdio", func(t *testing.T) { checkBadTools(t, mcp.Command(serverBin, "-extra", file)) })
	// Over streamable HTTP.
	raw := &testserver.Raw{}
	for _, e := range extra {
		raw.Extra = append(raw.Extra, json.RawMessage(e))
	}
	t.Run("http", func(t *testing.T) {
		url := rawHTTPServer(t, testserver.New(testserver.Options{}), raw)
		checkBadTools(t, mcp.StreamableHTTP(url))
	})
	// In memory, the SDK's own decoding refuses the deep schema: only the
	// tools that it reads can be checked.
}

func checkBadTools(t *testing.T, tr mcp.Transport) {
	var logs logBuffer
	p := harnesstest.NewScriptedProvider(
		enable("c1", "srv"),
		harnesstest.CallTool("c2", "srv__echo", map[string]string{"text": "still works"}),
		harnesstest.Reply("done"),
	)
	a := newAgent(t, p, mcp.New(mcp.WithServer("srv", tr)), harness.WithLogger(newLogger(&logs)))
	r := run(t, a, "go")
	res := results(r)
	if got := res["c2"]; got == nil || got.IsError || !strings.Contains(got.Content, "still works") {
		t.Errorf("echo: %+v", got)
	}
	enabled := res["c1"].Content
	mustContain(t, "mcp_enable result", enabled,
		"Skipped deep: malformed input schema: it nests more than 64 levels",
		`Skipped "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"… (5000 bytes): its name is 5000 bytes long, more than 128`,
		"Skipped tasky: it requires task augmentation")
	offered := toolNames(p.Requests()[1].Tools)
	for _, n := range []string{"srv__echo", "srv__optional_tasks", "srv__wordy"} {
		if !has(offered, n) {
			t.Errorf("%s not offered: %v", n, offered)
		}
	}
	for _, n := range offered {
		if strings.Contains(n, "deep") || strings.Contains(n, "tasky") || strings.Contains(n, "nnnn") {
			t.Errorf("%s offered", n)
		}
	}
	for _, d := range p.Requests()[1].Tools {
		if d.Name == "srv__wordy" && len(d.Description) > 8300 {
			t.Errorf("a %d-byte description is offered", len(d.Description))
		}
	}
	for what, text := range map[string]string{"mcp_enable result": enabled, "log": logs.String()} {
		if strings.Contains(text, strings.Repeat("n", 200)) {
			t.Errorf("the %s echoes the long name", what)
		}
	}
	mustContain(t, "log", logs.String(), "tool=deep", "tool=tasky")
}

// A flood of 100,000 tools/list_changed notifications from a stdio
// server: one reload runs at a time and one more is wanted at most, and
// the notifications that are not needed are dropped before the SDK decodes
// them, so the goroutines and the heap stay bounded, and the list is
// loaded a handful of times.
func TestListChangedFlood(t *testing.T) {
	const n = 100_000
	var loads atomic.Int64
	p := harnesstest.NewScriptedProvider(enable("c1", "srv"), harnesstest.Reply("enabled"))
	a := newAgent(t, p, mcp.New(
		mcp.WithServer("srv", stdioServer()),
		mcp.WithToolsChanged(func(string, []string) { loads.Add(1) }),
		mcp.WithCallTimeout(2*time.Minute),
	))
	run(t, a, "go")
	flood, ok := a.Tool("srv__flood")
	if !ok {
		t.Fatal("no flood tool")
	}

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	baseG := runtime.NumGoroutine()
	// Sampled during the flood: the goroutines, the heap (HeapAlloc: with
	// the garbage of the sender, which runs in this process, and of the
	// SDK, which allocates about 100 KB to decode each message), and the
	// live heap (what the last collection marked, /gc/heap/live:bytes).
	var maxG int
	var maxHeap, maxLive uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			maxG = max(maxG, runtime.NumGoroutine())
			metrics.Read(live)
			maxLive = max(maxLive, live[0].Value.Uint64())
			if i%10 == 0 {
				runtime.ReadMemStats(&ms)
				maxHeap = max(maxHeap, ms.HeapAlloc)
			}
		}
	})
	start := time.Now()
	out, err := flood.Handler(context.Background(), json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)))
	if err != nil || out != "flooded" {
		t.Fatalf("flood: %q, %v", out, err)
	}
	// The last notification is followed by a reload that lists the tools.
	deadline := time.Now().Add(20 * time.Second)
	for last := int64(-1); ; {
		time.Sleep(50 * time.Millisecond)
		l := loads.Load()
		if l == last || time.Now().After(deadline) {
			break
		}
		last = l
	}
	close(stop)
	wg.Wait()
	heap := maxHeap - min(maxHeap, before.HeapAlloc)
	live := maxLive - min(maxLive, before.HeapAlloc)
	t.Logf("%d notifications in %v: %d loads, at most %d goroutines (%d before); HeapAlloc grew by at most %.1f MB, the live heap by %.1f MB",
		n, time.Since(start).Round(time.Millisecond), loads.Load()-1, maxG, baseG, float64(heap)/1e6, float64(live)/1e6)
	if maxG >= 50 {
		t.Errorf("%d goroutines during the flood, want < 50", maxG)
	}
	if live >= 20<<20 {
		t.Errorf("the live heap grew by %d bytes, want < 20 MB", live)
	}
	if l := loads.Load() - 1; l < 1 || l > n/10 {
		t.Errorf("%d reloads for %d notifications", l, n)
	}
	if offered := toolNames(a.Tools().Offered()); !has(offered, "srv__echo") {
		t.Errorf("offered after the flood: %v", offered)
	}
}

// error.type on the execute_tool span is the class of the failure: the
// timeout, a JSON-RPC error's code, the closed connection.
func TestErrorTypeClasses(t *testing.T) {
	srv := testserver.New(testserver.Options{})
	sdk.AddTool(srv, &sdk.Tool{Name: "refuse", Description: "Fails with a JSON-RPC error."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, &jsonrpc.Error{Code: -32042, Message: "over quota"}
		})
	r, spans := tracedRunWith(t, memServer(t, srv), []mcp.Option{mcp.WithCallTimeout(200 * time.Millisecond)},
		harnesstest.CallTool("c2", "srv__hang", map[string]any{}),
		harnesstest.CallTool("c3", "srv__refuse", map[string]any{}))
	res := results(r)
	for id, want := range map[string]string{"c2": "timeout", "c3": "-32042"} {
		if got := res[id]; got == nil || got.ErrorType != want {
			t.Errorf("%s: %+v, want error type %s", id, got, want)
		}
	}
	for tool, want := range map[string]string{"srv__hang": "timeout", "srv__refuse": "-32042"} {
		if got := attrs(toolSpan(t, spans, tool))["error.type"]; got != want {
			t.Errorf("%s: error.type %q, want %q", tool, got, want)
		}
	}
	if !strings.Contains(res["c3"].Content, "over quota (JSON-RPC error -32042)") {
		t.Errorf("refused: %q", res["c3"].Content)
	}

	r, spans = tracedRunWith(t, stdioServer(), nil, harnesstest.CallTool("c2", "srv__crash", map[string]any{}))
	if got := results(r)["c2"]; got == nil || got.ErrorType != "connection_closed" {
		t.Errorf("crash: %+v", got)
	}
	if got := attrs(toolSpan(t, spans, "srv__crash"))["error.type"]; got != "connection_closed" {
		t.Errorf("crash: error.type %q", got)
	}
}

// The last progress update of a call is published even when the server
// answers right after it: the call waits for the notifications read
// before its response.
func TestLastProgressKept(t *testing.T) {
	const calls = 30
	var mu sync.Mutex
	last := map[string]string{} // call ID → last progress message
	hook := func(_ context.Context, ev *harness.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if m, ok := ev.Metadata[mcp.MetaProgressMessage].(string); ok {
			last[ev.ToolCall.ID] = m
		}
		return nil
	}
	for _, c := range []struct {
		name string
		tr   func(t *testing.T) mcp.Transport
	}{
		{"memory", func(t *testing.T) mcp.Transport { return memServer(t, testserver.New(testserver.Options{})) }},
		{"http", func(t *testing.T) mcp.Transport {
			url, _ := httpServer(t, testserver.New(testserver.Options{}), nil)
			return mcp.StreamableHTTP(url)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clear(last)
			script := []harnesstest.Response{enable("c0", "srv")}
			for i := range calls {
				script = append(script, harnesstest.CallTool(fmt.Sprint("c", i+1), "srv__progress_fast", map[string]any{}))
			}
			p := harnesstest.NewScriptedProvider(append(script, harnesstest.Reply("done"))...)
			a := newAgent(t, p, mcp.New(mcp.WithServer("srv", c.tr(t))), harness.WithHook(harness.EventToolUpdate, hook))
			run(t, a, "go")
			mu.Lock()
			defer mu.Unlock()
			for i := range calls {
				if id := fmt.Sprint("c", i+1); last[id] != "step 3" {
					t.Errorf("call %s: last progress %q, want \"step 3\"", id, last[id])
				}
			}
		})
	}
}

// A server that floods the agent with elicitations it cannot answer gets
// each declined, and the log says so a few times only.
func TestElicitationDeclinesRateLimited(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "nag", Version: "1"}, &sdk.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	sdk.AddTool(srv, &sdk.Tool{Name: "nag", Description: "Asks 40 times."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			declined := 0
			for range 40 {
				er, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Really?"})
				if err != nil {
					return nil, nil, err
				}
				if er.Action == "decline" {
					declined++
				}
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(declined, " declined")}}}, nil, nil
		})
	var logs logBuffer
	p := harnesstest.NewScriptedProvider(enable("c1", "srv"), harnesstest.CallTool("c2", "srv__nag", map[string]any{}), harnesstest.Reply("done"))
	a := newAgent(t, p, mcp.New(mcp.WithServer("srv", memServer(t, srv))), harness.WithLogger(newLogger(&logs)))
	r := run(t, a, "go")
	if got := results(r)["c2"]; got == nil || got.Content != "40 declined" {
		t.Errorf("result %+v", got)
	}
	if n := strings.Count(logs.String(), "mcp: elicitation declined"); n < 1 || n > 5 {
		t.Errorf("%d log lines for 40 declines, want 1 to 5", n)
	}
}

// A resource link names the server's read_resource tool, which reads it.
func TestReadResource(t *testing.T) {
	r, spans := tracedRunWith(t, memServer(t, testserver.New(testserver.Options{})), nil,
		harnesstest.CallTool("c2", "srv__link", map[string]any{}),
		harnesstest.CallTool("c3", "srv__read_resource", map[string]string{"uri": testserver.NotesURI}),
		harnesstest.CallTool("c4", "srv__read_resource", map[string]string{"uri": "notes://nowhere"}))
	res := results(r)
	if got := res["c2"]; got == nil || got.Content != "[resource: today notes://today; srv__read_resource reads it]" {
		t.Errorf("link: %+v", got)
	}
	if got := res["c3"]; got == nil || got.IsError || got.Content != testserver.NotesText {
		t.Errorf("read_resource: %+v", got)
	}
	if got := res["c4"]; got == nil || !got.IsError {
		t.Errorf("read_resource of a missing resource: %+v", got)
	}
	var reads int
	for _, s := range spans {
		if s.Name() == "execute_tool srv__read_resource" && attrs(s)["mcp.method.name"] == "resources/read" {
			reads++
		}
	}
	if reads != 2 {
		t.Errorf("%d read_resource spans with mcp.method.name=resources/read, want 2", reads)
	}
}

// rawHTTPServer serves srv over streamable HTTP on loopback with the
// extra tools of raw in its tools/list results: the data of each event
// (or the JSON body) of a POST's response goes through raw.Message.
func rawHTTPServer(t *testing.T, srv *sdk.Server, raw *testserver.Raw) string {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			h.ServeHTTP(w, req)
			return
		}
		rw := &rewriter{ResponseWriter: w, raw: raw}
		h.ServeHTTP(rw, req)
		rw.Flush()
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// rewriter holds a response's bytes until a flush, and rewrites the
// messages among them.
type rewriter struct {
	http.ResponseWriter
	raw *testserver.Raw
	buf []byte
}

func (r *rewriter) Write(p []byte) (int, error) {
	r.buf = append(r.buf, p...)
	return len(p), nil
}

func (r *rewriter) Flush() {
	if len(r.buf) == 0 {
		return
	}
	var out []byte
	if strings.HasPrefix(r.Header().Get("Content-Type"), "application/json") {
		out = r.raw.Message(r.buf)
	} else {
		for _, line := range strings.SplitAfter(string(r.buf), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				d = strings.TrimSuffix(d, "\n")
				line = "data: " + string(r.raw.Message([]byte(d))) + "\n"
			}
			out = append(out, line...)
		}
	}
	r.buf = r.buf[:0]
	r.ResponseWriter.Write(out)
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
