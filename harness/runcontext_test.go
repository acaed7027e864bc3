package harness_test

import (
	"context"
	"sync"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

// runSpy is a run interceptor that keeps the RunInfo of each run and the
// run ID and info its context reports.
type runSpy struct {
	mu    sync.Mutex
	infos []harness.RunInfo
	ids   []string
	ctx   []harness.RunInfo
}

func (s *runSpy) InterceptRun(ctx context.Context, info *harness.RunInfo, next harness.RunFunc) *harness.RunResult {
	ci, _ := harness.RunInfoFromContext(ctx)
	s.mu.Lock()
	s.infos = append(s.infos, *info)
	s.ids = append(s.ids, harness.RunIDFromContext(ctx))
	s.ctx = append(s.ctx, ci)
	s.mu.Unlock()
	return next(ctx)
}

func TestRunIDFromContext(t *testing.T) {
	ctx := context.Background()
	if id := harness.RunIDFromContext(harness.ContextWithRunID(ctx, "r")); id != "" {
		t.Fatalf("outside a run: %q", id)
	}
	if _, ok := harness.RunInfoFromContext(ctx); ok {
		t.Fatal("RunInfoFromContext outside a run: ok")
	}
	var mu sync.Mutex
	seen := map[string]string{}
	note := func(where string, ctx context.Context) {
		mu.Lock()
		seen[where] = harness.RunIDFromContext(ctx)
		mu.Unlock()
	}
	probe := harness.MustTool(harness.NewTool("probe", "", func(ctx context.Context, _ struct{}) (string, error) {
		note("tool", ctx)
		return "ok", nil
	}))
	// A subagent runs inside the parent's tool call: it sees its own run ID.
	child := newAgent(t, ht.NewScriptedProvider(ht.Reply("child")), harness.WithName("child"),
		harness.WithHooks(func(ctx context.Context, ev *harness.Event) error {
			if ev.Type == harness.EventRunStart {
				note("child:"+ev.RunID, ctx)
			}
			return nil
		}))
	p := ht.NewScriptedProvider(
		ht.Response{ToolCalls: []harness.ToolCall{ht.Call("c1", "probe", `{}`), ht.Call("c2", "sub", `{"task":"hi"}`)}},
		ht.Reply("done"))
	spy := &runSpy{}
	a := newAgent(t, p, harness.WithTools(probe, harness.AgentTool(child, "sub", "child")),
		harness.WithMiddleware(spy),
		harness.WithHooks(func(ctx context.Context, ev *harness.Event) error {
			note(ev.Type.String(), ctx)
			return nil
		}))
	res, err := a.Run(harness.ContextWithRunID(ctx, "run-7"), "go")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"tool", "run_start", "model_request_start", "tool_call_end", "run_end"} {
		if seen[w] != "run-7" {
			t.Errorf("%s: RunIDFromContext = %q, want run-7", w, seen[w])
		}
	}
	childRuns := 0
	for w, id := range seen {
		if len(w) > 6 && w[:6] == "child:" {
			childRuns++
			if id != w[6:] || id == "run-7" || id == "" {
				t.Errorf("subagent's run: RunIDFromContext = %q, want its own ID %q", id, w[6:])
			}
		}
	}
	if childRuns != 1 {
		t.Errorf("child runs seen: %d", childRuns)
	}
	if len(spy.ids) != 1 || spy.ids[0] != res.RunID || spy.ctx[0].RunID != res.RunID || spy.ctx[0].Agent != spy.infos[0].Agent {
		t.Errorf("interceptor: ids %q, ctx info %+v, info %+v", spy.ids, spy.ctx, spy.infos)
	}
	if got := spy.infos[0]; got.Attempt != 1 || got.Recovered || got.Steps != 0 {
		t.Errorf("a first run: %+v, want Attempt 1, not recovered", got)
	}
}

func TestContextRecovered(t *testing.T) {
	deploy := harness.MustTool(harness.NewTool("deploy", "", func(context.Context, struct{}) (string, error) { return "deployed", nil }))
	deploy.Permission = harness.PermissionAsk
	var mu sync.Mutex
	var starts []harness.Event
	var childStarts []harness.Event
	child := newAgent(t, ht.NewScriptedProvider(ht.Reply("child")), harness.WithName("child"),
		harness.WithHooks(func(_ context.Context, ev *harness.Event) error {
			if ev.Type == harness.EventRunStart {
				mu.Lock()
				childStarts = append(childStarts, *ev)
				mu.Unlock()
			}
			return nil
		}))
	p := ht.NewScriptedProvider(
		ht.Response{ToolCalls: []harness.ToolCall{ht.Call("c0", "sub", `{"task":"hi"}`)}},
		ht.Response{ToolCalls: []harness.ToolCall{ht.Call("c1", "deploy", `{}`)}},
		ht.Reply("done"))
	spy := &runSpy{}
	a := newAgent(t, p, harness.WithTools(deploy, harness.AgentTool(child, "sub", "child")), harness.WithMiddleware(spy),
		harness.WithHooks(func(_ context.Context, ev *harness.Event) error {
			if ev.Type == harness.EventRunStart {
				mu.Lock()
				starts = append(starts, *ev)
				mu.Unlock()
			}
			return nil
		}))
	// The marker combines with the run ID in either order.
	ctx := harness.ContextWithRunID(harness.ContextRecovered(context.Background(), 3), "run-r")
	res, err := a.Run(ctx, "go")
	if err != nil || res.Status != harness.StatusPaused || res.RunID != "run-r" {
		t.Fatalf("Run: %v %v %q", err, res.Status, res.RunID)
	}
	res, err = a.Resume(harness.ContextRecovered(harness.ContextWithRunID(context.Background(), "run-r"), 3), harness.Approve("c1"))
	if err != nil || res.Status != harness.StatusCompleted {
		t.Fatalf("Resume: %v %v", err, res.Status)
	}
	if len(spy.infos) != 2 {
		t.Fatalf("interceptor saw %d runs", len(spy.infos))
	}
	run, resume := spy.infos[0], spy.infos[1]
	if run.Attempt != 3 || !run.Recovered || run.Resumed || run.Steps != 0 {
		t.Errorf("Run's info: %+v", run)
	}
	if resume.Attempt != 3 || !resume.Recovered || !resume.Resumed || resume.Steps != 2 {
		t.Errorf("Resume's info: %+v (want Steps 2: the requests before the pause)", resume)
	}
	if spy.ctx[1] != resume {
		t.Errorf("RunInfoFromContext = %+v, want %+v", spy.ctx[1], resume)
	}
	if len(starts) != 2 || starts[0].Attempt != 3 || !starts[0].Recovered || starts[1].Attempt != 3 || !starts[1].Recovered {
		t.Errorf("run-start events: %+v", starts)
	}
	// The subagent's run inside the recovered run's tool call is its own
	// first attempt.
	if len(childStarts) != 1 || childStarts[0].Attempt != 1 || childStarts[0].Recovered {
		t.Errorf("subagent's run-start events: %+v", childStarts)
	}

	// Attempt 1 (or less) marks nothing.
	a2 := newAgent(t, ht.NewScriptedProvider(ht.Reply("x")), harness.WithMiddleware(spy))
	if _, err := a2.Run(harness.ContextRecovered(context.Background(), 0), "go"); err != nil {
		t.Fatal(err)
	}
	if got := spy.infos[2]; got.Attempt != 1 || got.Recovered {
		t.Errorf("attempt 0: %+v", got)
	}
}

// TestRunInfoMessage: RunInfo.Message is the user message of RunMessage,
// parts and all, and nil for Run.
func TestRunInfoMessage(t *testing.T) {
	spy := &runSpy{}
	a := newAgent(t, ht.NewScriptedProvider(ht.Reply("a"), ht.Reply("b")), harness.WithMiddleware(spy))
	img := []byte("\x89PNG fake")
	if _, err := a.RunMessage(context.Background(), harness.UserParts(harness.Text("what is this?"), harness.ImagePart(img, "image/png"))); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), "and now?"); err != nil {
		t.Fatal(err)
	}
	if len(spy.infos) != 2 {
		t.Fatalf("%d runs", len(spy.infos))
	}
	m := spy.infos[0].Message
	if m == nil || m.Role != harness.RoleUser || len(m.Content) != 2 || m.Content[1].Media == nil || &m.Content[1].Media.Data[0] != &img[0] ||
		spy.infos[0].Input != "what is this?" {
		t.Errorf("RunMessage: Input %q, Message %+v", spy.infos[0].Input, m)
	}
	if spy.infos[1].Message != nil {
		t.Errorf("Run: Message %+v, want nil", spy.infos[1].Message)
	}
}
