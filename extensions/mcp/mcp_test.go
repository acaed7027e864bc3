package mcp_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/mcp"
	"github.com/harnessx/harnessx/extensions/mcp/internal/testserver"
	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server's tools are not offered before mcp_enable, and are after;
// the malformed tool is skipped with a log naming it while the others work.
func TestDeferredActivation(t *testing.T) {
	var logs logBuffer
	p := harnesstest.NewScriptedProvider(
		enable("c1", "files"),
		harnesstest.CallTool("c2", "files__echo", map[string]string{"text": "hello"}),
		harnesstest.Reply("done"),
	)
	a := newAgent(t, p, mcp.New(mcp.WithServer("files", memServer(t, testserver.New(testserver.Options{})))),
		harness.WithLogger(newLogger(&logs)))

	r := run(t, a, "go")
	if r.Status != harness.StatusCompleted {
		t.Fatalf("status %s: %v", r.Status, r.Err)
	}
	reqs := p.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	before, after := toolNames(reqs[0].Tools), toolNames(reqs[1].Tools)
	if !has(before, mcp.EnableTool) {
		t.Errorf("first request lacks %s: %v", mcp.EnableTool, before)
	}
	for _, n := range before {
		if strings.HasPrefix(n, "files__") {
			t.Errorf("first request offers %s before mcp_enable", n)
		}
	}
	for _, n := range []string{"files__echo", "files__big", "files__fail", "files__remove", "files__touch", "files__note", "files__hang", "files__deploy"} {
		if !has(after, n) {
			t.Errorf("second request lacks %s: %v", n, after)
		}
	}
	if has(after, "files__broken") {
		t.Errorf("the tool with a malformed schema is offered")
	}
	res := results(r)
	mustContain(t, "mcp_enable result", res["c1"].Content, "Enabled MCP server files (testserver 0.1)", "files__echo: Send the text back",
		"Skipped broken: malformed input schema", "Server instructions: A server for tests.")
	if res["c2"].IsError || !strings.Contains(res["c2"].Content, `"text":"hello"`) {
		t.Errorf("echo result: %+v", res["c2"])
	}
	mustContain(t, "log", logs.String(), "mcp: tool skipped", "server=files", "tool=broken", "malformed input schema")
	// The schema passes through: the server's property descriptions are there.
	for _, d := range reqs[1].Tools {
		if d.Name == "files__echo" && !strings.Contains(string(d.InputSchema), "the text to send back") {
			t.Errorf("echo schema %s", d.InputSchema)
		}
	}
}

// Annotations set the replay policy and the permission: destructive tools
// ask, read-only and idempotent ones are replay safe.
func TestAnnotations(t *testing.T) {
	p := harnesstest.NewScriptedProvider(
		enable("c1", "files"),
		harnesstest.CallTool("c2", "files__remove", map[string]string{"path": "/etc/passwd"}),
	)
	a := newAgent(t, p, mcp.New(mcp.WithServer("files", memServer(t, testserver.New(testserver.Options{})))))
	r := run(t, a, "go")
	for _, c := range []struct {
		name   string
		policy harness.ReplayPolicy
		perm   harness.Permission
		conc   bool
	}{
		{"files__echo", harness.ReplaySafe, harness.PermissionInherit, true},
		{"files__touch", harness.ReplaySafe, harness.PermissionInherit, false},
		{"files__remove", harness.ReplayUnsafe, harness.PermissionAsk, false},
		{"files__note", harness.ReplayUnsafe, harness.PermissionInherit, false},
	} {
		tool, ok := a.Tool(c.name)
		if !ok {
			t.Errorf("%s not in the catalog", c.name)
			continue
		}
		if tool.ReplayPolicy != c.policy || tool.Permission != c.perm || tool.Concurrent != c.conc || !tool.Deferred {
			t.Errorf("%s: replay %s, permission %s, concurrent %v, deferred %v; want %s, %s, %v, true",
				c.name, tool.ReplayPolicy, tool.Permission, tool.Concurrent, tool.Deferred, c.policy, c.perm, c.conc)
		}
	}
	if r.Status != harness.StatusPaused || len(r.Pending) != 1 || r.Pending[0].ToolCall.Name != "files__remove" {
		t.Fatalf("the destructive call did not wait for approval: status %s, pending %+v", r.Status, r.Pending)
	}
	p.Push(harnesstest.Reply("ok"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := a.Resume(ctx, harness.Approve(r.Pending[0].ID))
	if err != nil {
		t.Fatal(err)
	}
	if got := results(r)["c2"]; got == nil || got.IsError || got.Content != "removed /etc/passwd" {
		t.Errorf("approved call: %+v", got)
	}
}

// A result with isError is an error result; a server that never answers
// times out with a clear error and the run goes on.
func TestErrorResultAndTimeout(t *testing.T) {
	p := harnesstest.NewScriptedProvider(
		enable("c1", "files"),
		harnesstest.CallTool("c2", "files__fail", map[string]any{}),
		harnesstest.CallTool("c3", "files__hang", map[string]any{}),
		harnesstest.CallTool("c4", "files__echo", map[string]string{"text": "still here"}),
		harnesstest.Reply("done"),
	)
	a := newAgent(t, p, mcp.New(
		mcp.WithServer("files", memServer(t, testserver.New(testserver.Options{}))),
		mcp.WithCallTimeout(300*time.Millisecond),
	))
	r := run(t, a, "go")
	if r.Status != harness.StatusCompleted {
		t.Fatalf("status %s: %v", r.Status, r.Err)
	}
	res := results(r)
	if got := res["c2"]; !got.IsError || got.Content != "the disk is on fire" || got.Status != harness.ToolError {
		t.Errorf("isError result: %+v", got)
	}
	if got := res["c3"]; !got.IsError || !strings.Contains(got.Content, `mcp: server "files" did not answer tools/call hang within 300ms`) {
		t.Errorf("timed-out call: %+v", got)
	}
	if got := res["c4"]; got.IsError || !strings.Contains(got.Content, "still here") {
		t.Errorf("call after the timeout: %+v", got)
	}
}

// A 10 MB result is spilled by the spill extension: the model reads an
// envelope, and read_result reads the stored result.
func TestHugeResultSpilled(t *testing.T) {
	const size = 10 << 20
	p := harnesstest.NewScriptedProvider(
		enable("c1", "files"),
		harnesstest.CallTool("c2", "files__big", map[string]int{"bytes": size}),
		harnesstest.Reply("done"),
	)
	a := newAgent(t, p, mcp.New(mcp.WithServer("files", memServer(t, testserver.New(testserver.Options{})))),
		harness.WithExtensions(spill.New()))
	// 10 MB through the SDK's decoder, the adapter and spill takes about
	// 10 s of CPU under -race: a loaded machine needs more than run's 30 s.
	r := runWithin(t, a, "go", 2*time.Minute)
	got := results(r)["c2"]
	if got == nil || got.IsError {
		t.Fatalf("big result: %+v", got)
	}
	if len(got.Content) > 10_000 {
		t.Fatalf("the model reads %d bytes", len(got.Content))
	}
	mustContain(t, "envelope", got.Content, "[result spilled: files__big returned 10,485,760 bytes", "line 0000001 of the big result")
	last := p.Requests()[2]
	for _, m := range last.Messages {
		for _, part := range m.Content {
			if part.ToolResult != nil && len(part.ToolResult.Content) > 10_000 {
				t.Errorf("the model request carries a %d-byte result", len(part.ToolResult.Content))
			}
		}
	}
}

// tools/list_changed refreshes the catalog: a new tool is offered (the
// server is enabled) and a removed one disappears.
func TestListChanged(t *testing.T) {
	srv := testserver.New(testserver.Options{})
	changed := make(chan []string, 8)
	p := harnesstest.NewScriptedProvider(enable("c1", "files"), harnesstest.Reply("enabled"))
	a := newAgent(t, p, mcp.New(
		mcp.WithServer("files", memServer(t, srv)),
		mcp.WithToolsChanged(func(server string, tools []string) { changed <- tools }),
	))
	run(t, a, "go")
	<-changed // the list loaded at the connection

	srv.AddTool(&sdk.Tool{Name: "late", Description: "Added later.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "late ran"}}}, nil
		})
	srv.RemoveTools("note")
	waitFor(t, changed, func(tools []string) bool { return has(tools, "files__late") && !has(tools, "files__note") })

	offered := toolNames(a.Tools().Offered())
	if !has(offered, "files__late") || has(offered, "files__note") {
		t.Errorf("offered after list_changed: %v", offered)
	}
	p.Push(harnesstest.CallTool("c2", "files__late", map[string]any{}), harnesstest.Reply("done"))
	r := run(t, a, "again")
	if got := results(r)["c2"]; got == nil || got.Content != "late ran" {
		t.Errorf("new tool's result: %+v", got)
	}
	reqs := p.Requests()
	if last := toolNames(reqs[len(reqs)-1].Tools); !has(last, "files__late") {
		t.Errorf("the model request lacks the new tool: %v", last)
	}
}

// waitFor reads lists from ch until ok accepts one.
func waitFor(t *testing.T, ch <-chan []string, ok func([]string) bool) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case tools := <-ch:
			if ok(tools) {
				return
			}
		case <-timeout:
			t.Fatal("the tool list did not change")
		}
	}
}

// /mcp lists the servers and, once connected, their tools with what the
// annotations made of them; /mcp <server> connects one first.
func TestCommand(t *testing.T) {
	p := harnesstest.NewScriptedProvider()
	a := newAgent(t, p, mcp.New(
		mcp.WithServer("files", memServer(t, testserver.New(testserver.Options{}))),
		mcp.WithServer("web", mcp.StreamableHTTP("http://127.0.0.1:1/mcp")),
	))
	r := run(t, a, "/mcp")
	mustContain(t, "/mcp", r.Text, "MCP servers (2):", "files (memory): not connected; mcp_enable connects it",
		"web (http: http://127.0.0.1:1/mcp): not connected")

	r = run(t, a, "/mcp files")
	mustContain(t, "/mcp files", r.Text, "files (memory): connected to testserver 0.1, protocol ",
		"files__echo [read-only, replay safe]: Send the text back",
		"files__remove [destructive, replay unsafe, asks]: Remove a file.",
		"files__touch [idempotent, replay safe]",
		"skipped broken: malformed input schema")
	if strings.Contains(r.Text, "web") {
		t.Errorf("/mcp files lists web:\n%s", r.Text)
	}
	if len(p.Requests()) != 0 {
		t.Errorf("a command reached the model")
	}
	// Connecting is not enabling: the tools stay deferred.
	if offered := toolNames(a.Tools().Offered()); has(offered, "files__echo") {
		t.Errorf("/mcp files activated the tools: %v", offered)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := a.Run(ctx, "/mcp nosuch"); err == nil || !strings.Contains(err.Error(), `mcp: no server "nosuch"; the servers are files, web`) {
		t.Errorf("/mcp nosuch: %v", err)
	}
	if _, err := a.Run(ctx, "/mcp web"); err == nil || !strings.Contains(err.Error(), `mcp: server "web" (http: http://127.0.0.1:1/mcp): connect:`) {
		t.Errorf("/mcp web: %v", err)
	}
}

// Bad configurations fail the install with a clear error.
func TestInstallErrors(t *testing.T) {
	tr := mcp.Command("true")
	for _, c := range []struct {
		name string
		ext  *mcp.Extension
		want error
		text string
	}{
		{"none", mcp.New(), mcp.ErrNoServers, "no servers"},
		{"bad name", mcp.New(mcp.WithServer("a__b", tr)), mcp.ErrInvalidServer, `name "a__b"`},
		{"twice", mcp.New(mcp.WithServer("a", tr), mcp.WithServer("a", tr)), mcp.ErrInvalidServer, `"a" is given twice`},
		{"zero transport", mcp.New(mcp.WithServer("a", mcp.Transport{})), mcp.ErrInvalidServer, `"a" has no transport`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := harness.New(harness.WithProvider(harnesstest.NewScriptedProvider()), harness.WithStateDir(t.TempDir()), harness.WithExtensions(c.ext))
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
				t.Errorf("New: %v, want %v with %q", err, c.want, c.text)
			}
		})
	}
}

// One extension manages several servers; enabling one offers its tools
// only.
func TestSeveralServers(t *testing.T) {
	p := harnesstest.NewScriptedProvider(
		enable("c1", "a"),
		harnesstest.Response{ToolCalls: []harness.ToolCall{ // read-only: run in parallel
			harnesstest.Call("c2", "a__echo", map[string]string{"text": "one"}),
			harnesstest.Call("c3", "a__echo", map[string]string{"text": "two"}),
		}},
		enable("c4", "b"),
		harnesstest.CallTool("c5", "b__echo", map[string]string{"text": "three"}),
		harnesstest.Reply("done"),
	)
	a := newAgent(t, p, mcp.New(
		mcp.WithServer("a", memServer(t, testserver.New(testserver.Options{}))),
		mcp.WithServer("b", memServer(t, testserver.New(testserver.Options{}))),
	))
	r := run(t, a, "go")
	res := results(r)
	for id, want := range map[string]string{"c2": "one", "c3": "two", "c5": "three"} {
		if got := res[id]; got == nil || got.IsError || !strings.Contains(got.Content, `"text":"`+want+`"`) {
			t.Errorf("%s: %+v", id, got)
		}
	}
	reqs := p.Requests()
	second, fourth := toolNames(reqs[1].Tools), toolNames(reqs[3].Tools)
	if !has(second, "a__echo") || has(second, "b__echo") {
		t.Errorf("after enabling a: %v", second)
	}
	if !has(fourth, "a__echo") || !has(fourth, "b__echo") {
		t.Errorf("after enabling b: %v", fourth)
	}
	if !strings.Contains(reqs[0].Tools[0].Description, "- a (memory)\n- b (memory)") {
		t.Errorf("mcp_enable description: %q", reqs[0].Tools[0].Description)
	}
}

// A server that cannot start gives mcp_enable an error result naming it;
// the run goes on.
func TestServerThatCannotStart(t *testing.T) {
	missing := t.TempDir() + "/no-such-server"
	p := harnesstest.NewScriptedProvider(enable("c1", "gone"), harnesstest.Reply("I could not reach it."))
	a := newAgent(t, p, mcp.New(mcp.WithServer("gone", mcp.Command(missing))))
	r := run(t, a, "go")
	if r.Status != harness.StatusCompleted {
		t.Fatalf("status %s: %v", r.Status, r.Err)
	}
	got := results(r)["c1"]
	if got == nil || !got.IsError || !strings.Contains(got.Content, `mcp: server "gone" (stdio: `+missing+`): connect:`) {
		t.Errorf("mcp_enable result: %+v", got)
	}
	if offered := toolNames(a.Tools().Offered()); len(offered) != 1 {
		t.Errorf("offered %v", offered)
	}
}

// A server's progress notifications are the call's live updates.
func TestProgressAsUpdates(t *testing.T) {
	var mu sync.Mutex
	var updates []map[string]any
	hook := func(_ context.Context, ev *harness.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if ev.ToolCall.Name == "files__progress" {
			updates = append(updates, ev.Metadata)
		}
		return nil
	}
	p := harnesstest.NewScriptedProvider(enable("c1", "files"), harnesstest.CallTool("c2", "files__progress", map[string]any{}), harnesstest.Reply("done"))
	a := newAgent(t, p, mcp.New(mcp.WithServer("files", memServer(t, testserver.New(testserver.Options{})))),
		harness.WithHook(harness.EventToolUpdate, hook))
	r := run(t, a, "go")
	if got := results(r)["c2"]; got == nil || got.Content != "finished" {
		t.Fatalf("result %+v", got)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []map[string]any{
		{mcp.MetaProgress: 1.0, mcp.MetaProgressTotal: 3.0, mcp.MetaProgressMessage: "halfway"},
		{mcp.MetaProgress: 2.0, mcp.MetaProgressTotal: 3.0, mcp.MetaProgressMessage: "almost"},
	}
	if !reflect.DeepEqual(updates, want) {
		t.Errorf("updates %v, want %v", updates, want)
	}
}

// A process that never completes the handshake fails mcp_enable after the
// connect timeout, and is stopped.
func TestServerThatNeverInitializes(t *testing.T) {
	p := harnesstest.NewScriptedProvider(enable("c1", "mute"), harnesstest.Reply("no luck"))
	a := newAgent(t, p, mcp.New(mcp.WithServer("mute", mcp.Command("sleep", "60")), mcp.WithConnectTimeout(300*time.Millisecond)))
	start := time.Now()
	r := run(t, a, "go")
	got := results(r)["c1"]
	if got == nil || !got.IsError || !strings.Contains(got.Content, `mcp: server "mute" (stdio: sleep 60) did not complete the connection within 300ms`) {
		t.Errorf("mcp_enable result: %+v", got)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}
