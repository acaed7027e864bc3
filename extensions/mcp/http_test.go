package mcp_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/mcp"
	"github.com/harnessx/harnessx/extensions/mcp/internal/testserver"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// httpRecorder records what the go-sdk server's HTTP handler received.
type httpRecorder struct {
	mu sync.Mutex
	// posts are the Mcp-Protocol-Version headers of the POSTs, in order,
	// with the JSON-RPC method of the body ("" for a response).
	posts []postSeen
	gets  int // GET requests: the standalone stream
}

type postSeen struct{ protocol, method string }

func (r *httpRecorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		switch req.Method {
		case http.MethodGet:
			r.gets++
		case http.MethodPost:
			r.posts = append(r.posts, postSeen{req.Header.Get("Mcp-Protocol-Version"), bodyMethod(req)})
		}
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	})
}

func (r *httpRecorder) snapshot() ([]postSeen, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]postSeen(nil), r.posts...), r.gets
}

// bodyMethod reads the method of a POST's JSON-RPC body, and puts the body
// back.
func bodyMethod(req *http.Request) string {
	var buf strings.Builder
	if req.Body == nil {
		return ""
	}
	b := make([]byte, 4096)
	for {
		n, err := req.Body.Read(b)
		buf.Write(b[:n])
		if err != nil {
			break
		}
	}
	req.Body.Close()
	body := buf.String()
	req.Body = nopCloser{strings.NewReader(body)}
	_, rest, ok := strings.Cut(body, `"method":"`)
	if !ok {
		return ""
	}
	m, _, _ := strings.Cut(rest, `"`)
	return m
}

type nopCloser struct{ *strings.Reader }

func (nopCloser) Close() error { return nil }

// httpServer serves srv over streamable HTTP on loopback, as the go-sdk
// serves it, with opts; the recorder sees the requests.
func httpServer(t *testing.T, srv *sdk.Server, opts *sdk.StreamableHTTPOptions) (string, *httpRecorder) {
	rec := &httpRecorder{}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, opts)
	hs := httptest.NewServer(rec.wrap(h))
	t.Cleanup(hs.Close) // after the agent's Close, registered later
	return hs.URL, rec
}

// Over streamable HTTP, with the go-sdk's own server, for the current
// protocol (2026-07-28: subscriptions/listen) and the one before it
// (2025-11-25: the standalone GET stream): a tool added later is offered
// after list_changed; a log message and an elicitation during a call
// arrive; every request after the handshake carries Mcp-Protocol-Version;
// the call's span has jsonrpc.request.id.
func TestStreamableHTTPHearsTheServer(t *testing.T) {
	for _, protocol := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(protocol, func(t *testing.T) {
			srvProtocol, opts := protocol, (*sdk.StreamableHTTPOptions)(nil)
			if protocol == "2026-07-28" {
				// The go-sdk serves this protocol statelessly.
				srvProtocol, opts = "", &sdk.StreamableHTTPOptions{Stateless: true}
			}
			srv := testserver.New(testserver.Options{Protocol: srvProtocol})
			url, httpRec := httpServer(t, srv, opts)

			changed := make(chan []string, 16)
			var mu sync.Mutex
			var logs []map[string]any
			hook := func(_ context.Context, ev *harness.Event) error {
				mu.Lock()
				defer mu.Unlock()
				if _, ok := ev.Metadata[mcp.MetaLogData]; ok {
					logs = append(logs, ev.Metadata)
				}
				return nil
			}
			runner := harnesstest.NewStepRunner()
			const askID = "r1/tool/3/c3/ask/1"
			runner.SetAnswer(askID, harness.Answer{ID: askID, Kind: harness.AskConfirm, Confirmed: true})
			deployTool := "srv__deploy"
			if protocol != "2026-07-28" {
				deployTool = "srv__deploy_legacy"
			}
			spanRec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spanRec))
			t.Cleanup(func() { tp.Shutdown(context.Background()) })
			p := harnesstest.NewScriptedProvider(
				enable("c1", "srv"),
				harnesstest.CallTool("c2", "srv__log", map[string]string{"text": "disk almost full"}),
				harnesstest.CallTool("c3", deployTool, map[string]string{"env": "prod"}),
				harnesstest.Reply("done"),
			)
			a := newAgent(t, p, mcp.New(
				mcp.WithServer("srv", mcp.StreamableHTTP(url)),
				mcp.WithToolsChanged(func(_ string, tools []string) { changed <- tools }),
				mcp.WithCallTimeout(10*time.Second),
			), harness.WithHook(harness.EventToolUpdate, hook), harness.WithStepRunner(runner),
				harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))))

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := a.Run(harness.ContextWithRunID(ctx, "r1"), "go")
			if err != nil {
				t.Fatal(err)
			}
			res := results(r)
			if got := res["c2"]; got == nil || got.IsError || got.Content != "logged" {
				t.Errorf("log call: %+v", got)
			}
			if got := res["c3"]; got == nil || got.IsError || got.Content != "deployed to prod" {
				t.Errorf("the elicitation during the call was not answered: %+v", got)
			}
			if asks := runner.Asks(); len(asks) != 1 || asks[0].ID != askID {
				t.Errorf("asks %+v", asks)
			}
			mu.Lock()
			if len(logs) != 1 || logs[0][mcp.MetaLogData] != "disk almost full" || logs[0][mcp.MetaLogLevel] != "warning" || logs[0][mcp.MetaLogLogger] != "worker" {
				t.Errorf("log messages published: %v", logs)
			}
			mu.Unlock()

			// The log message is an event of the call's span; the request
			// ID is on it.
			spans := spanRec.Ended()
			logSpan := toolSpan(t, spans, "srv__log")
			if at := attrs(logSpan); at["jsonrpc.request.id"] == "" || at["mcp.protocol.version"] != protocol || at["network.transport"] != "tcp" ||
				(protocol == "2025-11-25" && at["mcp.session.id"] == "") {
				t.Errorf("span attributes %v", at)
			}
			var sawEvent bool
			for _, ev := range logSpan.Events() {
				for _, kv := range ev.Attributes {
					if kv.Key == tracing.KeyToolUpdatePrefix+mcp.MetaLogData && kv.Value.AsString() == "disk almost full" {
						sawEvent = true
					}
				}
			}
			if !sawEvent {
				t.Errorf("no span event for the log message: %v", logSpan.Events())
			}

			// list_changed: a tool added now is offered.
			<-changed
			srv.AddTool(&sdk.Tool{Name: "late", Description: "Added later.", InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "late ran"}}}, nil
				})
			waitFor(t, changed, func(tools []string) bool { return has(tools, "srv__late") })
			p.Push(harnesstest.CallTool("c4", "srv__late", map[string]any{}), harnesstest.Reply("done"))
			r = run(t, a, "again")
			if got := results(r)["c4"]; got == nil || got.Content != "late ran" {
				t.Errorf("the tool added later: %+v", got)
			}

			posts, gets := httpRec.snapshot()
			var checked int
			for i, ps := range posts {
				if ps.method == "initialize" || ps.method == "server/discover" {
					continue
				}
				if i > 0 && ps.protocol != protocol {
					t.Errorf("POST %d (%q) has Mcp-Protocol-Version %q, want %q", i, ps.method, ps.protocol, protocol)
				}
				checked++
			}
			if checked < 4 {
				t.Errorf("only %d POSTs after the handshake: %+v", checked, posts)
			}
			if protocol == "2025-11-25" && gets == 0 {
				t.Errorf("the standalone GET stream was never opened")
			}
		})
	}
}

// The standalone stream (protocol 2025-11-25) that the server ends is
// opened again, with Last-Event-ID, and a notification sent meanwhile
// arrives.
func TestStreamableHTTPStandaloneStreamReconnects(t *testing.T) {
	srv := testserver.New(testserver.Options{Protocol: "2025-11-25"})
	var mu sync.Mutex
	var gets []string // the Last-Event-ID of each GET
	var cut func()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{EventStore: sdk.NewMemoryEventStore(nil)})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet {
			ctx, cancel := context.WithCancel(req.Context())
			mu.Lock()
			gets = append(gets, req.Header.Get("Last-Event-ID"))
			if len(gets) == 1 {
				cut = cancel // the test ends the first stream
			}
			mu.Unlock()
			defer cancel()
			req = req.WithContext(ctx)
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(hs.Close)

	changed := make(chan []string, 16)
	p := harnesstest.NewScriptedProvider(enable("c1", "srv"), harnesstest.Reply("enabled"))
	a := newAgent(t, p, mcp.New(
		mcp.WithServer("srv", mcp.StreamableHTTP(hs.URL)),
		mcp.WithToolsChanged(func(_ string, tools []string) { changed <- tools }),
	))
	run(t, a, "go")
	<-changed
	// A first notification on the first stream gives it an event ID.
	addTool(srv, "first")
	waitFor(t, changed, func(tools []string) bool { return has(tools, "srv__first") })
	mu.Lock()
	end := cut
	mu.Unlock()
	if end == nil {
		t.Fatal("no standalone stream")
	}
	end()
	addTool(srv, "second")
	waitFor(t, changed, func(tools []string) bool { return has(tools, "srv__second") })
	mu.Lock()
	defer mu.Unlock()
	if len(gets) < 2 || gets[len(gets)-1] == "" {
		t.Errorf("GETs with Last-Event-ID %q: want a second one resuming the first", gets)
	}
	if offered := toolNames(a.Tools().Offered()); !has(offered, "srv__second") {
		t.Errorf("offered %v", offered)
	}
}

// addTool adds a tool that answers its name.
func addTool(srv *sdk.Server, name string) {
	srv.AddTool(&sdk.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name}}}, nil
		})
}

// Over streamable HTTP, a server on protocol 2025-11-25 asks with
// elicitation/create requests of its own during two concurrent calls:
// each comes on its call's response stream, so each is asked as the
// question of its call, and each answer goes to its call.
func TestStreamableHTTPConcurrentElicitations(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "asker", Version: "1"}, &sdk.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	var arrived sync.WaitGroup
	arrived.Add(2)
	sdk.AddTool(srv, &sdk.Tool{Name: "ask", Description: "Ask whether to go on.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct {
			Job string `json:"job"`
		}) (*sdk.CallToolResult, any, error) {
			arrived.Done()
			arrived.Wait() // both calls run when they ask
			er, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Go on with " + in.Job + "?"})
			if err != nil {
				return nil, nil, err
			}
			reason, _ := er.Meta[mcp.MetaDeclineReason].(string)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Job + ": " + er.Action + " " + reason}}}, nil, nil
		})
	url, _ := httpServer(t, srv, nil)
	runner := harnesstest.NewStepRunner()
	for id, yes := range map[string]bool{"r1/tool/2/c2/ask/1": true, "r1/tool/2/c3/ask/1": false} {
		runner.SetAnswer(id, harness.Answer{ID: id, Kind: harness.AskConfirm, Confirmed: yes})
	}
	p := harnesstest.NewScriptedProvider(
		enable("c1", "srv"),
		harnesstest.Response{ToolCalls: []harness.ToolCall{
			harnesstest.Call("c2", "srv__ask", map[string]string{"job": "backup"}),
			harnesstest.Call("c3", "srv__ask", map[string]string{"job": "purge"}),
		}},
		harnesstest.Reply("done"),
	)
	a := newAgent(t, p, mcp.New(mcp.WithServer("srv", mcp.StreamableHTTP(url)), mcp.WithCallTimeout(10*time.Second)),
		harness.WithStepRunner(runner))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := a.Run(harness.ContextWithRunID(ctx, "r1"), "go")
	if err != nil {
		t.Fatal(err)
	}
	res := results(r)
	if got := res["c2"]; got == nil || got.Content != "backup: accept " {
		t.Errorf("c2: %+v", got)
	}
	if got := res["c3"]; got == nil || got.Content != "purge: decline " {
		t.Errorf("c3: %+v", got)
	}
	var prompts []string
	for _, ask := range runner.Asks() {
		prompts = append(prompts, ask.ID+" "+ask.Prompt)
	}
	slices.Sort(prompts)
	if want := []string{"r1/tool/2/c2/ask/1 [MCP server srv] Go on with backup?", "r1/tool/2/c3/ask/1 [MCP server srv] Go on with purge?"}; !slices.Equal(prompts, want) {
		t.Errorf("asks %q, want %q", prompts, want)
	}
}

// A tools/call asks the server for progress notifications (a progress
// token) only when the call's updates have an observer: an agent with an
// EventToolUpdate hook sends one, an agent without sends none.
func TestProgressTokenOnlyWhenObserved(t *testing.T) {
	for _, observed := range []bool{true, false} {
		srv := testserver.New(testserver.Options{})
		var mu sync.Mutex
		var calls []string
		h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.Method == http.MethodPost {
				body, _ := io.ReadAll(req.Body)
				req.Body = io.NopCloser(bytes.NewReader(body))
				if strings.Contains(string(body), `"method":"tools/call"`) {
					mu.Lock()
					calls = append(calls, string(body))
					mu.Unlock()
				}
			}
			h.ServeHTTP(w, req)
		}))
		t.Cleanup(hs.Close)
		var opts []harness.Option
		if observed {
			opts = append(opts, harness.WithHooks(func(context.Context, *harness.Event) error { return nil }, harness.EventToolUpdate))
		}
		p := harnesstest.NewScriptedProvider(enable("c1", "srv"), harnesstest.CallTool("c2", "srv__echo", map[string]any{"text": "hi"}), harnesstest.Reply("done"))
		a := newAgent(t, p, mcp.New(mcp.WithServer("srv", mcp.StreamableHTTP(hs.URL))), opts...)
		if r := results(run(t, a, "go")); r["c2"] == nil || r["c2"].IsError {
			t.Fatalf("observed %v: the call: %+v", observed, r["c2"])
		}
		mu.Lock()
		got := slices.Clone(calls)
		mu.Unlock()
		if len(got) != 1 || strings.Contains(got[0], "progressToken") != observed {
			t.Errorf("observed %v: tools/call bodies %q", observed, got)
		}
	}
}
