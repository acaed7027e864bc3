package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/mcp"
	"github.com/harnessx/harnessx/extensions/mcp/internal/testserver"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

func deployScript() *harnesstest.ScriptedProvider { return deployScriptOf("files__deploy") }

func deployScriptOf(tool string) *harnesstest.ScriptedProvider {
	return harnesstest.NewScriptedProvider(
		enable("c1", "files"),
		harnesstest.CallTool("c2", tool, map[string]string{"env": "prod"}),
		harnesstest.Reply("done"),
	)
}

// A server's request for input becomes a durable ask: the runner (a fake
// durable runtime) gets the question under the call's execution key and
// its answer goes back to the server.
func TestElicitationDurableAsk(t *testing.T) {
	for _, c := range []struct {
		confirmed bool
		want      string
	}{
		{true, "deployed to prod"},
		{false, "not deployed: the user said no"},
	} {
		runner := harnesstest.NewStepRunner()
		const id = "r1/tool/2/c2/ask/1"
		runner.SetAnswer(id, harness.Answer{ID: id, Kind: harness.AskConfirm, Confirmed: c.confirmed})
		p := deployScript()
		a := newAgent(t, p, mcp.New(mcp.WithServer("files", memServer(t, testserver.New(testserver.Options{})))),
			harness.WithStepRunner(runner))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		r, err := a.Run(harness.ContextWithRunID(ctx, "r1"), "deploy")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if got := results(r)["c2"]; got == nil || got.IsError || got.Content != c.want {
			t.Errorf("confirmed %v: result %+v, want %q", c.confirmed, got, c.want)
		}
		asks := runner.Asks()
		if len(asks) != 1 || asks[0].ID != id || asks[0].Kind != harness.AskConfirm ||
			!strings.Contains(asks[0].Prompt, "[MCP server files] Deploy to prod?") || !strings.Contains(asks[0].Prompt, "approve: yes to deploy") {
			t.Errorf("asks %+v", asks)
		}
	}
}

// Without a durable runtime the ask fails, and the server gets a declined
// elicitation that says why.
func TestElicitationDeclinedWithoutRunner(t *testing.T) {
	var logs logBuffer
	a := newAgent(t, deployScript(), mcp.New(mcp.WithServer("files", memServer(t, testserver.New(testserver.Options{})))),
		harness.WithLogger(newLogger(&logs)))
	r := run(t, a, "deploy")
	got := results(r)["c2"]
	if got == nil || got.IsError {
		t.Fatalf("result %+v", got)
	}
	mustContain(t, "result", got.Content, "not deployed: decline", `mcp: server "files" asked for input ("Deploy to prod?") and the agent cannot ask the user`,
		harness.ErrAskUnsupported.Error())
	mustContain(t, "log", logs.String(), "mcp: elicitation declined", "server=files")
}

// A loaded session reconnects the servers it had enabled, so its restored
// activations are offered again at the next turn.
func TestSessionRestoresEnabledServers(t *testing.T) {
	srv := testserver.New(testserver.Options{})
	p := harnesstest.NewScriptedProvider(enable("c1", "files"), harnesstest.Reply("enabled"))
	a := newAgent(t, p, mcp.New(mcp.WithServer("files", memServer(t, srv))))
	run(t, a, "go")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	data, err := a.SaveSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"enabled":["files"]`) {
		t.Errorf("session lacks the enabled server: %s", data)
	}

	p2 := harnesstest.NewScriptedProvider(harnesstest.CallTool("c2", "files__echo", map[string]string{"text": "restored"}), harnesstest.Reply("done"))
	b, err := harness.LoadSession(ctx, data, harness.WithProvider(p2), harness.WithStateDir(t.TempDir()),
		harness.WithExtensions(mcp.New(mcp.WithServer("files", memServer(t, srv)))))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	r, err := b.Run(ctx, "again")
	if err != nil {
		t.Fatal(err)
	}
	if got := results(r)["c2"]; got == nil || got.IsError || !strings.Contains(got.Content, "restored") {
		t.Errorf("call after LoadSession: %+v", got)
	}
	if tools := toolNames(p2.Requests()[0].Tools); !has(tools, "files__echo") {
		t.Errorf("the restored session's first request lacks the server's tools: %v", tools)
	}
}

// A server on an older protocol asks with an elicitation/create request of
// its own, outside the call's context: it is asked as the question of the
// server's running call.
func TestElicitationLegacyRequest(t *testing.T) {
	runner := harnesstest.NewStepRunner()
	const id = "r1/tool/2/c2/ask/1"
	runner.SetAnswer(id, harness.Answer{ID: id, Kind: harness.AskConfirm, Confirmed: true})
	a := newAgent(t, deployScriptOf("files__deploy_legacy"),
		mcp.New(mcp.WithServer("files", memServer(t, testserver.New(testserver.Options{Protocol: "2025-11-25"})))),
		harness.WithStepRunner(runner))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := a.Run(harness.ContextWithRunID(ctx, "r1"), "deploy")
	if err != nil {
		t.Fatal(err)
	}
	if got := results(r)["c2"]; got == nil || got.IsError || got.Content != "deployed to prod" {
		t.Errorf("result %+v", got)
	}
	if asks := runner.Asks(); len(asks) != 1 || asks[0].ID != id {
		t.Errorf("asks %+v", asks)
	}
	out := run(t, a, "/mcp")
	mustContain(t, "/mcp", out.Text, "protocol 2025-11-25")
}

// A tool that is not replay safe cannot ask (a rerun after a crash would
// ask again): the server gets a decline saying so.
func TestElicitationFromUnsafeToolDeclined(t *testing.T) {
	runner := harnesstest.NewStepRunner()
	a := newAgent(t, deployScriptOf("files__deploy_unannotated"),
		mcp.New(mcp.WithServer("files", memServer(t, testserver.New(testserver.Options{})))),
		harness.WithStepRunner(runner))
	r := run(t, a, "deploy")
	got := results(r)["c2"]
	if got == nil || got.IsError {
		t.Fatalf("result %+v", got)
	}
	mustContain(t, "result", got.Content, "not deployed: decline", harness.ErrAskNotReplaySafe.Error())
	if asks := runner.Asks(); len(asks) != 0 {
		t.Errorf("the runner was asked: %+v", asks)
	}
}

// slowAsker is a durable runtime whose user takes a while to answer.
type slowAsker struct {
	*harnesstest.StepRunner
	delay time.Duration
}

func (r slowAsker) Ask(ctx context.Context, s *harness.Step, req harness.AskRequest) (harness.Answer, error) {
	select {
	case <-time.After(r.delay):
	case <-ctx.Done():
		return harness.Answer{}, ctx.Err()
	}
	return r.StepRunner.Ask(ctx, s, req)
}

// The time the user takes to answer an elicitation does not count against
// the call timeout: a person is slower than a server.
func TestElicitationAnswerOutlastsCallTimeout(t *testing.T) {
	for _, c := range []struct{ tool, protocol string }{{"files__deploy", ""}, {"files__deploy_legacy", "2025-11-25"}} {
		t.Run(c.tool, func(t *testing.T) {
			runner := harnesstest.NewStepRunner()
			const id = "r1/tool/2/c2/ask/1"
			runner.SetAnswer(id, harness.Answer{ID: id, Kind: harness.AskConfirm, Confirmed: true})
			a := newAgent(t, deployScriptOf(c.tool), mcp.New(
				mcp.WithServer("files", memServer(t, testserver.New(testserver.Options{Protocol: c.protocol}))),
				mcp.WithCallTimeout(300*time.Millisecond),
			), harness.WithStepRunner(slowAsker{runner, 800 * time.Millisecond}))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r, err := a.Run(harness.ContextWithRunID(ctx, "r1"), "deploy")
			if err != nil {
				t.Fatal(err)
			}
			if got := results(r)["c2"]; got == nil || got.IsError || got.Content != "deployed to prod" {
				t.Errorf("result %+v", got)
			}
		})
	}
}
