package harness_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

// counted returns a tool named name that counts its calls and answers
// "<name>:<text>".
func counted(name string, n *atomic.Int32, replay harness.ReplayPolicy, concurrent bool) *harness.Tool {
	t := harness.MustTool(harness.NewTool(name, "", func(_ context.Context, in echoIn) (string, error) {
		n.Add(1)
		return name + ":" + in.Text, nil
	}))
	t.ReplayPolicy, t.Concurrent = replay, concurrent
	return t
}

// stepView is the part of a recorded step the tests compare.
type stepView struct {
	Kind    harness.StepKind
	Key     string
	Index   int
	Group   int
	Replay  harness.ReplayPolicy
	Outcome ht.Outcome
}

func views(steps []ht.RecordedStep) []stepView {
	out := make([]stepView, len(steps))
	for i, s := range steps {
		out[i] = stepView{s.Kind, s.Key, s.Index, s.Group, s.Replay, s.Outcome}
	}
	return out
}

func TestStepRunnerSeesEveryStepInOrder(t *testing.T) {
	var nPar, nSeq atomic.Int32
	p := ht.NewScriptedProvider(
		ht.Response{ToolCalls: []harness.ToolCall{
			ht.Call("c1", "par", `{"text":"a"}`), ht.Call("c2", "par", `{"text":"b"}`),
			ht.Call("c3", "seq", `{"text":"c"}`), ht.Call("c4", "nope", `{}`),
		}},
		ht.Reply("done"),
	)
	r := ht.NewStepRunner()
	a := newAgent(t, p, harness.WithStepRunner(r),
		harness.WithTools(counted("par", &nPar, harness.ReplaySafe, true), counted("seq", &nSeq, harness.ReplayUnsafe, false)))
	res, err := a.Run(harness.ContextWithRunID(context.Background(), "run-1"), "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.RunID != "run-1" || res.Text != "done" {
		t.Fatalf("result = %+v", res)
	}
	want := []stepView{
		{harness.StepModel, "run-1/model/1", 1, 0, harness.ReplayUnsafe, ht.OutcomeRan},
		{harness.StepTool, "run-1/tool/1/c1", 1, 1, harness.ReplaySafe, ht.OutcomeRan},
		{harness.StepTool, "run-1/tool/1/c2", 1, 1, harness.ReplaySafe, ht.OutcomeRan},
		{harness.StepTool, "run-1/tool/1/c3", 1, 2, harness.ReplayUnsafe, ht.OutcomeRan},
		{harness.StepTool, "run-1/tool/1/c4", 1, 3, harness.ReplayUnsafe, ht.OutcomeRan}, // unknown tool
		{harness.StepModel, "run-1/model/2", 2, 0, harness.ReplayUnsafe, ht.OutcomeRan},
	}
	if got := views(r.Steps()); !slices.Equal(got, want) {
		t.Errorf("steps:\n got %+v\nwant %+v", got, want)
	}
	parts := res.Messages[2].Content
	for i, w := range []string{"par:a", "par:b", "seq:c"} {
		if got := parts[i].ToolResult; got.Content != w || got.CallID != "c"+string(rune('1'+i)) {
			t.Errorf("result %d = %+v, want %q", i, got, w)
		}
	}
	if got := parts[3].ToolResult; got.Status != harness.ToolUnknown || got.CallID != "c4" {
		t.Errorf("unknown tool result = %+v", got)
	}
	if nPar.Load() != 2 || nSeq.Load() != 1 {
		t.Errorf("tool calls par=%d seq=%d, want 2 and 1", nPar.Load(), nSeq.Load())
	}
}

// TestStepRunnerRecovery runs a turn, simulates a crash while its tools
// ran, and recovers it under the same run ID on a fresh agent: recorded
// model responses are not requested again, an unsafe call that was
// running is reported as interrupted, a safe one runs again, and observers
// see the interrupted call.
func TestStepRunnerRecovery(t *testing.T) {
	var nSafe, nUnsafe, nDone atomic.Int32
	tools := func() harness.Option {
		return harness.WithTools(counted("safe", &nSafe, harness.ReplaySafe, true),
			counted("unsafe", &nUnsafe, harness.ReplayUnsafe, true), counted("done", &nDone, harness.ReplayUnsafe, false))
	}
	script := []ht.Response{
		{ToolCalls: []harness.ToolCall{ht.Call("d", "done", `{"text":"0"}`)}},
		{ToolCalls: []harness.ToolCall{ht.Call("s", "safe", `{"text":"1"}`), ht.Call("u", "unsafe", `{"text":"2"}`)}},
		ht.Reply("finished"),
	}
	r := ht.NewStepRunner()
	ctx := harness.ContextWithRunID(context.Background(), "wf-7")
	first := ht.NewScriptedProvider(script...)
	if _, err := newAgent(t, first, harness.WithStepRunner(r), tools()).Run(ctx, "go"); err != nil {
		t.Fatal(err)
	}

	t.Run("replay of a finished run", func(t *testing.T) {
		r.Reset()
		again := ht.NewScriptedProvider() // any request fails: the script is empty
		res, err := newAgent(t, again, harness.WithStepRunner(r), tools()).Run(ctx, "go")
		if err != nil || res.Text != "finished" || res.Steps != 3 {
			t.Fatalf("res = %+v, err = %v", res, err)
		}
		if n := len(again.Requests()); n != 0 {
			t.Errorf("provider called %d times on replay, want 0", n)
		}
		if nSafe.Load() != 1 || nUnsafe.Load() != 1 || nDone.Load() != 1 {
			t.Errorf("tools ran again: safe=%d unsafe=%d done=%d", nSafe.Load(), nUnsafe.Load(), nDone.Load())
		}
		for _, s := range r.Steps() {
			if s.Outcome != ht.OutcomeReplayed {
				t.Errorf("step %s: %s, want replayed", s.Key, s.Outcome)
			}
		}
	})

	t.Run("crash during the second tool group", func(t *testing.T) {
		r.Reset()
		r.Interrupt("wf-7/tool/2/s")
		r.Interrupt("wf-7/tool/2/u")
		r.Forget("wf-7/model/3")
		p := ht.NewScriptedProvider(ht.Reply("recovered"))
		rec := &ht.HookRecorder{}
		res, err := newAgent(t, p, harness.WithStepRunner(r), tools(), rec.Option()).Run(ctx, "go")
		if err != nil || res.Text != "recovered" {
			t.Fatalf("res = %+v, err = %v", res, err)
		}
		if nSafe.Load() != 2 || nUnsafe.Load() != 1 || nDone.Load() != 1 {
			t.Errorf("tool runs: safe=%d (want 2) unsafe=%d (want 1) done=%d (want 1)", nSafe.Load(), nUnsafe.Load(), nDone.Load())
		}
		outcomes := map[string]ht.Outcome{}
		for _, s := range r.Steps() {
			outcomes[s.Key] = s.Outcome
		}
		want := map[string]ht.Outcome{
			"wf-7/model/1": ht.OutcomeReplayed, "wf-7/tool/1/d": ht.OutcomeReplayed, "wf-7/model/2": ht.OutcomeReplayed,
			"wf-7/tool/2/s": ht.OutcomeRerun, "wf-7/tool/2/u": ht.OutcomeInterrupted, "wf-7/model/3": ht.OutcomeRan,
		}
		for k, w := range want {
			if outcomes[k] != w {
				t.Errorf("%s: %q, want %q", k, outcomes[k], w)
			}
		}
		reqs := p.Requests()
		if len(reqs) != 1 || reqs[0].Step != 3 {
			t.Fatalf("requests = %d, want the third step only", len(reqs))
		}
		last := reqs[0].Messages[len(reqs[0].Messages)-1]
		got := last.Content[1].ToolResult
		if got.Status != harness.ToolInterrupted || !got.IsError || got.CallID != "u" ||
			!strings.Contains(got.Content, `outcome of tool "unsafe" is unknown`) {
			t.Errorf("interrupted result = %+v", got)
		}
		if s := last.Content[0].ToolResult; s.Status != harness.ToolOK || s.Content != "safe:1" {
			t.Errorf("rerun safe result = %+v", s)
		}
		var seen bool
		for _, ev := range rec.Of(harness.EventToolCallEnd) {
			if ev.ToolCall.ID == "u" {
				seen = ev.ToolResult.Status == harness.ToolInterrupted
			}
		}
		if !seen {
			t.Error("no tool-call-end event with status interrupted")
		}
	})
}

func TestInterruptedContextNeedsARunner(t *testing.T) {
	var n atomic.Int32
	p := ht.NewScriptedProvider(ht.CallTool("c", "t", `{"text":"x"}`), ht.Reply("ok"))
	a := newAgent(t, p, harness.WithTools(counted("t", &n, harness.ReplayUnsafe, false)))
	res, err := a.Run(harness.InterruptedContext(context.Background()), "go")
	if err != nil || n.Load() != 1 || res.Messages[2].Content[0].ToolResult.Status != harness.ToolOK {
		t.Fatalf("without a runner the marker must not change anything: n=%d res=%+v err=%v", n.Load(), res, err)
	}
}

// TestStepRunnerParallelGroups checks that a group of concurrent calls
// reaches the runner as one Tools call, in call order, that DirectRunner
// runs it in parallel, and that results come back in call order.
func TestStepRunnerParallelGroups(t *testing.T) {
	const n = 4
	var running atomic.Int32
	gate := make(chan struct{})
	par := harness.MustTool(harness.NewTool("par", "", func(_ context.Context, in echoIn) (string, error) {
		if running.Add(1) == n {
			close(gate)
		}
		select {
		case <-gate:
		case <-time.After(2 * time.Second):
			return "", errors.New("calls did not run in parallel")
		}
		return "r" + in.Text, nil
	}))
	par.Concurrent = true
	calls := make([]harness.ToolCall, n)
	for i := range calls {
		calls[i] = ht.Call("c"+string(rune('0'+i)), "par", map[string]string{"text": string(rune('0' + i))})
	}
	rn := &groupRunner{}
	p := ht.NewScriptedProvider(ht.Response{ToolCalls: calls}, ht.Reply("ok"))
	a := newAgent(t, p, harness.WithTools(par), harness.WithStepRunner(rn))
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if len(rn.groups) != 1 || !slices.Equal(rn.groups[0], []string{"c0", "c1", "c2", "c3"}) {
		t.Errorf("groups = %v, want one group c0..c3", rn.groups)
	}
	for i, part := range res.Messages[2].Content {
		if want := "r" + string(rune('0'+i)); part.ToolResult.Content != want || part.ToolResult.CallID != calls[i].ID {
			t.Errorf("result %d = %+v, want %s", i, part.ToolResult, want)
		}
	}
}

// groupRunner is DirectRunner recording the call IDs of each group.
type groupRunner struct {
	harness.DirectRunner
	mu     sync.Mutex
	groups [][]string
}

func (g *groupRunner) Tools(ctx context.Context, steps []*harness.Step, fn func(context.Context, int) *harness.ToolResult) []*harness.ToolResult {
	ids := make([]string, len(steps))
	for i, s := range steps {
		ids[i] = s.Call.ID
	}
	g.mu.Lock()
	g.groups = append(g.groups, ids)
	g.mu.Unlock()
	return g.DirectRunner.Tools(ctx, steps, fn)
}

// brokenRunner returns what it was told to, whatever fn would.
type brokenRunner struct {
	resp    *harness.ModelResponse
	results []*harness.ToolResult
}

func (b brokenRunner) Model(ctx context.Context, _ *harness.Step, fn func(context.Context) (*harness.ModelResponse, error)) (*harness.ModelResponse, error) {
	if b.resp == nil {
		return nil, nil
	}
	return b.resp, nil
}

func (b brokenRunner) Tools(context.Context, []*harness.Step, func(context.Context, int) *harness.ToolResult) []*harness.ToolResult {
	return b.results
}

func TestStepRunnerMisbehaving(t *testing.T) {
	t.Run("no model response", func(t *testing.T) {
		a := newAgent(t, ht.NewScriptedProvider(ht.Reply("x")), harness.WithStepRunner(brokenRunner{}))
		res, err := a.Run(context.Background(), "go")
		if err == nil || res.Status != harness.StatusFailed || !strings.Contains(err.Error(), "no response for model step 1") {
			t.Fatalf("res = %+v, err = %v", res, err)
		}
	})
	t.Run("missing tool results", func(t *testing.T) {
		// Two calls of a concurrent tool make one group, for which the
		// runner returns one result.
		calls := []harness.ToolCall{ht.Call("a", "echo", `{"text":"1"}`), ht.Call("b", "echo", `{"text":"2"}`)}
		echo := echoTool()
		echo.Concurrent = true
		resp := &harness.ModelResponse{Message: harness.Message{Role: harness.RoleAssistant,
			Content: []harness.Part{{Type: harness.PartToolCall, ToolCall: &calls[0]}, {Type: harness.PartToolCall, ToolCall: &calls[1]}}}}
		a := newAgent(t, ht.NewScriptedProvider(), harness.WithTools(echo), harness.WithMaxSteps(1),
			harness.WithStepRunner(brokenRunner{resp: resp, results: []*harness.ToolResult{{Content: "kept"}}}))
		res, _ := a.Run(context.Background(), "go")
		parts := res.Messages[2].Content
		if r := parts[0].ToolResult; r.Content != "kept" || r.CallID != "a" || r.Name != "echo" {
			t.Errorf("first result = %+v", r)
		}
		if r := parts[1].ToolResult; r.Status != harness.ToolMiddlewareErr || !r.IsError || r.CallID != "b" {
			t.Errorf("missing result = %+v", r)
		}
	})
}

func TestExecutionKey(t *testing.T) {
	for _, tc := range []struct {
		name   string
		runner harness.StepRunner
	}{{"direct", nil}, {"runner", ht.NewStepRunner()}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var keys []string
			add := func(k string) { mu.Lock(); keys = append(keys, k); mu.Unlock() }
			script := ht.NewScriptedProvider(
				ht.Response{ToolCalls: []harness.ToolCall{ht.Call("c1", "key", `{}`), ht.Call("", "key", `{}`)}},
				ht.Reply("ok"))
			p := harness.ProviderFunc(func(ctx context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
				add("provider " + harness.ExecutionKey(ctx))
				return script.Generate(ctx, req)
			})
			tool := harness.MustTool(harness.NewTool("key", "", func(ctx context.Context, _ struct{}) (string, error) {
				add("tool " + harness.ExecutionKey(ctx))
				return "ok", nil
			}))
			opts := []harness.Option{harness.WithTools(tool),
				harness.WithHook(harness.EventRunStart, func(ctx context.Context, _ *harness.Event) error {
					add("run start " + harness.ExecutionKey(ctx))
					return nil
				})}
			if tc.runner != nil {
				opts = append(opts, harness.WithStepRunner(tc.runner))
			}
			a := newAgent(t, p, opts...)
			if _, err := a.Run(harness.ContextWithRunID(context.Background(), "r1"), "go"); err != nil {
				t.Fatal(err)
			}
			want := []string{"run start ", "provider r1/model/1", "tool r1/tool/1/c1", "tool r1/tool/1/#1", "provider r1/model/2"}
			if !slices.Equal(keys, want) {
				t.Errorf("keys:\n got %q\nwant %q", keys, want)
			}
			if k := harness.ExecutionKey(context.Background()); k != "" {
				t.Errorf("key outside a step = %q", k)
			}
		})
	}
}

// TestRunIDNotInheritedBySubagent checks that a child agent run from a
// tool gets its own run ID and keys, not the parent's.
func TestRunIDNotInheritedBySubagent(t *testing.T) {
	var childKey string
	childP := harness.ProviderFunc(func(ctx context.Context, _ *harness.ModelRequest) (*harness.ModelResponse, error) {
		childKey = harness.ExecutionKey(ctx)
		return &harness.ModelResponse{Message: harness.AssistantMessage("child done")}, nil
	})
	child := newAgent(t, childP)
	p := ht.NewScriptedProvider(ht.CallTool("c1", "child", `{"task":"x"}`), ht.Reply("ok"))
	a := newAgent(t, p, harness.WithTools(harness.AgentTool(child, "child", "")))
	if _, err := a.Run(harness.ContextWithRunID(context.Background(), "parent"), "go"); err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(childKey, "parent/") || !strings.HasSuffix(childKey, "/model/1") {
		t.Errorf("child model key = %q, want its own run ID", childKey)
	}
}

func TestContextWithRunID(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		ok       bool
	}{
		{"plain", "wf-01J8ZQ", true},
		{"max length", strings.Repeat("a", 128), true},
		{"unicode", "déploiement/42", true},
		{"empty", "", false},
		{"too long", strings.Repeat("a", 129), false},
		{"newline", "a\nb", false},
		{"nul", "a\x00b", false},
		{"C1 control", "a\u0085b", false},
		{"bad UTF-8", "a\xffb", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent(t, ht.NewScriptedProvider(ht.Reply("ok")))
			res, err := a.Run(harness.ContextWithRunID(context.Background(), tc.id), "go")
			if tc.ok {
				if err != nil || res.RunID != tc.id {
					t.Fatalf("res = %+v, err = %v", res, err)
				}
				return
			}
			if !errors.Is(err, harness.ErrInvalidRunID) || res != nil {
				t.Fatalf("err = %v, res = %+v; want ErrInvalidRunID", err, res)
			}
			if n := len(a.Messages()); n != 0 {
				t.Errorf("a rejected run added %d messages", n)
			}
		})
	}
}

func TestResumeThroughRunnerKeepsRunID(t *testing.T) {
	var n atomic.Int32
	deploy := counted("deploy", &n, harness.ReplayUnsafe, false)
	deploy.Permission = harness.PermissionAsk
	r := ht.NewStepRunner()
	p := ht.NewScriptedProvider(ht.CallTool("d1", "deploy", `{"text":"prod"}`), ht.Reply("deployed"))
	a := newAgent(t, p, harness.WithTools(deploy), harness.WithStepRunner(r))
	res, err := a.Run(harness.ContextWithRunID(context.Background(), "wf"), "ship")
	if err != nil || res.Status != harness.StatusPaused {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
	if _, err := a.Resume(harness.ContextWithRunID(context.Background(), "other"), harness.Approve("d1")); !errors.Is(err, harness.ErrInvalidRunID) {
		t.Fatalf("Resume under another run ID: err = %v", err)
	}
	res, err = a.Resume(harness.ContextWithRunID(context.Background(), "wf"), harness.Approve("d1"))
	if err != nil || res.Text != "deployed" || n.Load() != 1 {
		t.Fatalf("res = %+v, err = %v, runs = %d", res, err, n.Load())
	}
	var tools []ht.RecordedStep
	for _, s := range r.Steps() {
		if s.Kind == harness.StepTool {
			tools = append(tools, s)
		}
	}
	if len(tools) != 2 || tools[0].Key != "wf/tool/1/d1" || tools[0].Resumed ||
		tools[1].Key != "wf/tool/1/d1" || !tools[1].Resumed || tools[1].Outcome != ht.OutcomeRan {
		t.Errorf("tool steps = %+v; want the pending call, then its resumed run (not a replay of pending)", tools)
	}
}

func TestAskUserErrors(t *testing.T) {
	confirm := harness.AskRequest{Kind: harness.AskConfirm, Prompt: "Deploy?"}
	for _, tc := range []struct {
		name   string
		replay harness.ReplayPolicy
		runner harness.StepRunner
		req    harness.AskRequest
		want   error
	}{
		{"unsafe tool", harness.ReplayUnsafe, ht.NewStepRunner(), confirm, harness.ErrAskNotReplaySafe},
		{"no runner", harness.ReplaySafe, nil, confirm, harness.ErrAskUnsupported},
		{"runner without Asker", harness.ReplaySafe, harness.DirectRunner{}, confirm, harness.ErrAskUnsupported},
		{"no kind", harness.ReplaySafe, ht.NewStepRunner(), harness.AskRequest{Prompt: "?"}, harness.ErrInvalidAsk},
		{"bad kind", harness.ReplaySafe, ht.NewStepRunner(), harness.AskRequest{Kind: "pick", Prompt: "?"}, harness.ErrInvalidAsk},
		{"select without options", harness.ReplaySafe, ht.NewStepRunner(), harness.AskRequest{Kind: harness.AskSelect, Prompt: "?"}, harness.ErrInvalidAsk},
		{"empty prompt", harness.ReplaySafe, ht.NewStepRunner(), harness.AskRequest{Kind: harness.AskInput}, harness.ErrInvalidAsk},
		{"no answer yet", harness.ReplaySafe, ht.NewStepRunner(), confirm, ht.ErrNoAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var askErr error
			tool := harness.MustTool(harness.NewTool("ask", "", func(ctx context.Context, _ struct{}) (string, error) {
				_, askErr = harness.AskUser(ctx, tc.req)
				return "", askErr
			}))
			tool.ReplayPolicy = tc.replay
			opts := []harness.Option{harness.WithTools(tool)}
			if tc.runner != nil {
				opts = append(opts, harness.WithStepRunner(tc.runner))
			}
			a := newAgent(t, ht.NewScriptedProvider(ht.CallTool("c1", "ask", `{}`), ht.Reply("ok")), opts...)
			if _, err := a.Run(context.Background(), "go"); err != nil {
				t.Fatal(err)
			}
			if !errors.Is(askErr, tc.want) {
				t.Errorf("AskUser: %v, want %v", askErr, tc.want)
			}
		})
	}
	t.Run("outside a tool", func(t *testing.T) {
		if _, err := harness.AskUser(context.Background(), confirm); !errors.Is(err, harness.ErrAskUnsupported) {
			t.Errorf("err = %v", err)
		}
	})
}

// TestAskUserRoundTrip asks twice from a safe tool, then reruns the tool as
// after a crash: the questions have the same IDs and get the stored answers.
func TestAskUserRoundTrip(t *testing.T) {
	r := ht.NewStepRunner()
	r.SetAnswer("wf/tool/1/c1/ask/1", harness.Answer{Confirmed: true})
	r.SetAnswer("wf/tool/1/c1/ask/2", harness.Answer{Choice: "eu"})
	var answers []harness.Answer
	tool := harness.MustTool(harness.NewTool("deploy", "", func(ctx context.Context, _ struct{}) (string, error) {
		a1, err := harness.AskUser(ctx, harness.AskRequest{Kind: harness.AskConfirm, Prompt: "Deploy?"})
		if err != nil {
			return "", err
		}
		a2, err := harness.AskUser(ctx, harness.AskRequest{Kind: harness.AskSelect, Prompt: "Region?", Options: []string{"us", "eu"}})
		if err != nil {
			return "", err
		}
		answers = append(answers, a1, a2)
		return "deployed to " + a2.Choice, nil
	}))
	tool.ReplayPolicy = harness.ReplaySafe
	ctx := harness.ContextWithRunID(context.Background(), "wf")
	scripts := [][]ht.Response{{ht.CallTool("c1", "deploy", `{}`), ht.Reply("ok")}, {ht.Reply("ok")}}
	for _, script := range scripts {
		res, err := newAgent(t, ht.NewScriptedProvider(script...), harness.WithTools(tool), harness.WithStepRunner(r)).Run(ctx, "go")
		if err != nil || res.Messages[2].Content[0].ToolResult.Content != "deployed to eu" {
			t.Fatalf("res = %+v, err = %v", res, err)
		}
		r.Forget("wf/model/2")
		r.Interrupt("wf/tool/1/c1") // crashed mid-call: the safe tool runs again
	}
	want := harness.Answer{ID: "wf/tool/1/c1/ask/1", Kind: harness.AskConfirm, Confirmed: true}
	if len(answers) != 4 || answers[0] != want || answers[2] != want ||
		answers[3] != (harness.Answer{ID: "wf/tool/1/c1/ask/2", Kind: harness.AskSelect, Choice: "eu"}) {
		t.Errorf("answers = %+v", answers)
	}
	var ids []string
	for _, q := range r.Asks() {
		ids = append(ids, q.ID)
	}
	if !slices.Equal(ids, []string{"wf/tool/1/c1/ask/1", "wf/tool/1/c1/ask/2", "wf/tool/1/c1/ask/1", "wf/tool/1/c1/ask/2"}) {
		t.Errorf("ask IDs = %q", ids)
	}
}

func TestNow(t *testing.T) {
	fixed := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var got []time.Time
	tool := harness.MustTool(harness.NewTool("now", "", func(ctx context.Context, _ struct{}) (string, error) {
		got = append(got, harness.Now(ctx))
		return "ok", nil
	}))
	r := ht.NewStepRunner()
	r.SetClock(func() time.Time { return fixed })
	for _, opts := range [][]harness.Option{{harness.WithStepRunner(r)}, nil} {
		p := ht.NewScriptedProvider(ht.CallTool("c", "now", `{}`), ht.Reply("ok"))
		if _, err := newAgent(t, p, append(opts, harness.WithTools(tool))...).Run(context.Background(), "go"); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || !got[0].Equal(fixed) || time.Since(got[1]) > time.Minute {
		t.Errorf("times = %v; want the runner's clock, then the real one", got)
	}
	if time.Since(harness.Now(context.Background())) > time.Minute {
		t.Error("Now outside a step is not the real time")
	}
}

// A tool, its middleware and its hooks read the call's ID with
// ToolCallID, with or without a runner; elsewhere there is none.
func TestToolCallID(t *testing.T) {
	for _, tc := range []struct {
		name   string
		runner harness.StepRunner
	}{{"direct", nil}, {"runner", ht.NewStepRunner()}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			add := func(where string, ctx context.Context) {
				id, ok := harness.ToolCallID(ctx)
				mu.Lock()
				got = append(got, fmt.Sprintf("%s %q %v", where, id, ok))
				mu.Unlock()
			}
			script := ht.NewScriptedProvider(
				ht.Response{ToolCalls: []harness.ToolCall{ht.Call("c1", "id", `{}`), ht.Call("", "id", `{}`)}},
				ht.Reply("ok"))
			p := harness.ProviderFunc(func(ctx context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
				add("provider", ctx)
				return script.Generate(ctx, req)
			})
			tool := harness.MustTool(harness.NewTool("id", "", func(ctx context.Context, _ struct{}) (string, error) {
				add("tool", ctx)
				return "ok", nil
			}))
			opts := []harness.Option{harness.WithTools(tool),
				harness.WithMiddleware(harness.ToolCallFunc(func(ctx context.Context, call *harness.ToolCall) (harness.ToolAction, error) {
					add("middleware", ctx)
					return harness.ToolAction{}, nil
				})),
				harness.WithHook(harness.EventToolCallEnd, func(ctx context.Context, _ *harness.Event) error {
					add("hook", ctx)
					return nil
				})}
			if tc.runner != nil {
				opts = append(opts, harness.WithStepRunner(tc.runner))
			}
			a := newAgent(t, p, opts...)
			if _, err := a.Run(harness.ContextWithRunID(context.Background(), "r1"), "go"); err != nil {
				t.Fatal(err)
			}
			want := []string{`provider "" false`,
				`middleware "c1" true`, `tool "c1" true`, `hook "c1" true`,
				`middleware "" true`, `tool "" true`, `hook "" true`,
				`provider "" false`}
			if !slices.Equal(got, want) {
				t.Errorf("IDs:\n got %q\nwant %q", got, want)
			}
			if id, ok := harness.ToolCallID(context.Background()); id != "" || ok {
				t.Errorf("outside a call: %q, %v", id, ok)
			}
		})
	}
}

// decliningRunner is an Asker that serves no call, as a durable runner
// does outside its durable runs.
type decliningRunner struct {
	harness.DirectRunner
	asked atomic.Int32
}

func (r *decliningRunner) Ask(context.Context, *harness.Step, harness.AskRequest) (harness.Answer, error) {
	r.asked.Add(1)
	return harness.Answer{}, fmt.Errorf("%w: not inside a durable run", harness.ErrAskUnsupported)
}

// TestWithAsker checks who answers AskUser: the runner for a ReplaySafe
// tool when it can, else the application's answerer, else no one.
func TestWithAsker(t *testing.T) {
	confirm := harness.AskRequest{Kind: harness.AskConfirm, Prompt: "Deploy?"}
	var declining decliningRunner
	htRunner := func() *ht.StepRunner {
		r := ht.NewStepRunner()
		r.SetAnswer("r1/tool/1/c1/ask/1", harness.Answer{Confirmed: true, Text: "runner"})
		return r
	}
	for _, tc := range []struct {
		name     string
		replay   harness.ReplayPolicy
		runner   harness.StepRunner
		answerer bool
		want     string // who answered: "app", "runner", or the error
		wantErr  error
	}{
		{"plain agent, unsafe tool", harness.ReplayUnsafe, nil, true, "app", nil},
		{"plain agent, safe tool", harness.ReplaySafe, nil, true, "app", nil},
		{"plain agent, no answerer", harness.ReplaySafe, nil, false, "", harness.ErrAskUnsupported},
		{"runner wins for a safe tool", harness.ReplaySafe, htRunner(), true, "runner", nil},
		{"app answers an unsafe tool under a runner", harness.ReplayUnsafe, htRunner(), true, "app", nil},
		{"unsafe tool under a runner, no answerer", harness.ReplayUnsafe, htRunner(), false, "", harness.ErrAskNotReplaySafe},
		{"runner declines: app answers", harness.ReplaySafe, &declining, true, "app", nil},
		{"runner declines, no answerer", harness.ReplaySafe, &declining, false, "", harness.ErrAskUnsupported},
		{"runner fails otherwise: no fallback", harness.ReplaySafe, ht.NewStepRunner(), true, "", ht.ErrNoAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got harness.Answer
			var askErr error
			tool := harness.MustTool(harness.NewTool("ask", "", func(ctx context.Context, _ struct{}) (string, error) {
				got, askErr = harness.AskUser(ctx, confirm)
				return "", askErr
			}))
			tool.ReplayPolicy = tc.replay
			var appReqs []harness.AskRequest
			opts := []harness.Option{harness.WithTools(tool)}
			if tc.runner != nil {
				opts = append(opts, harness.WithStepRunner(tc.runner))
			}
			if tc.answerer {
				opts = append(opts, harness.WithAsker(func(ctx context.Context, req harness.AskRequest) (harness.Answer, error) {
					if id, _ := harness.ToolCallID(ctx); id != "c1" {
						t.Errorf("the answerer's context belongs to call %q", id)
					}
					appReqs = append(appReqs, req)
					return harness.Answer{Confirmed: true, Text: "app"}, nil
				}))
			}
			a := newAgent(t, ht.NewScriptedProvider(ht.CallTool("c1", "ask", `{}`), ht.Reply("ok")), opts...)
			if _, err := a.Run(harness.ContextWithRunID(context.Background(), "r1"), "go"); err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != nil {
				if !errors.Is(askErr, tc.wantErr) || len(appReqs) != 0 {
					t.Errorf("AskUser: %v (answerer asked %d times); want %v", askErr, len(appReqs), tc.wantErr)
				}
				return
			}
			if askErr != nil || got.Text != tc.want {
				t.Fatalf("AskUser = %+v, %v; want the %s's answer", got, askErr, tc.want)
			}
			want := harness.Answer{ID: "r1/tool/1/c1/ask/1", Kind: harness.AskConfirm, Confirmed: true, Text: tc.want}
			if got != want {
				t.Errorf("answer = %+v; want %+v", got, want)
			}
			if tc.want == "app" && (len(appReqs) != 1 || appReqs[0].ID != want.ID || appReqs[0].Prompt != "Deploy?") {
				t.Errorf("the answerer got %+v", appReqs)
			}
			if r, ok := tc.runner.(*ht.StepRunner); ok && tc.want == "app" && len(r.Asks()) != 0 {
				t.Errorf("the runner was asked for an unsafe tool: %+v", r.Asks())
			}
		})
	}
	if declining.asked.Load() != 2 {
		t.Errorf("the declining runner was asked %d times; want 2 (it is asked first)", declining.asked.Load())
	}
}

func TestFeatureAsks(t *testing.T) {
	answer := harness.WithAsker(func(context.Context, harness.AskRequest) (harness.Answer, error) { return harness.Answer{}, nil })
	for _, tc := range []struct {
		name             string
		opts             []harness.Option
		asks, durableAsk bool
	}{
		{"nothing", nil, false, false},
		{"answerer", []harness.Option{answer}, true, false},
		{"asker runner", []harness.Option{harness.WithStepRunner(ht.NewStepRunner())}, true, true},
		{"runner without Ask", []harness.Option{harness.WithStepRunner(harness.DirectRunner{})}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ext := &funcExt{name: "probe"}
			newAgent(t, ht.NewScriptedProvider(), append(tc.opts, harness.WithExtensions(ext))...)
			if got := ext.ec.Supports(harness.FeatureAsks); got != tc.asks {
				t.Errorf("Supports(FeatureAsks) = %v", got)
			}
			if got := ext.ec.Supports(harness.FeatureDurableAsks); got != tc.durableAsk {
				t.Errorf("Supports(FeatureDurableAsks) = %v", got)
			}
		})
	}
}

type stepMark struct{}

// markingRunner marks each call's context with its step, and serves asks
// only where the mark names the asking step, as a durable runner
// recognises its own runs.
type markingRunner struct {
	harness.DirectRunner
	given  []*harness.Step
	served int
}

func (r *markingRunner) Tools(ctx context.Context, steps []*harness.Step, fn func(context.Context, int) *harness.ToolResult) []*harness.ToolResult {
	r.given = append(r.given, steps...)
	return r.DirectRunner.Tools(ctx, steps, func(ctx context.Context, i int) *harness.ToolResult {
		return fn(context.WithValue(ctx, stepMark{}, steps[i]), i)
	})
}

func (r *markingRunner) Ask(ctx context.Context, s *harness.Step, req harness.AskRequest) (harness.Answer, error) {
	if m, _ := ctx.Value(stepMark{}).(*harness.Step); m == nil || m != s {
		return harness.Answer{}, fmt.Errorf("%w: not my step", harness.ErrAskUnsupported)
	}
	r.served++
	return harness.Answer{Confirmed: true}, nil
}

// The Step an Asker gets is the one it was given in Tools, and the ask's
// context carries what the runner put in the call's: enough for a
// runner to tell its own calls.
func TestAskerRecognisesItsStep(t *testing.T) {
	r := &markingRunner{}
	tool := harness.MustTool(harness.NewTool("ask", "", func(ctx context.Context, _ struct{}) (string, error) {
		a, err := harness.AskUser(ctx, harness.AskRequest{Kind: harness.AskConfirm, Prompt: "ok?"})
		return fmt.Sprint(a.Confirmed), err
	}))
	tool.ReplayPolicy = harness.ReplaySafe
	a := newAgent(t, ht.NewScriptedProvider(ht.CallTool("c1", "ask", `{}`), ht.Reply("done")),
		harness.WithTools(tool), harness.WithStepRunner(r))
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Messages[2].Content[0].ToolResult; got.IsError || got.Content != "true" || r.served != 1 || len(r.given) != 1 {
		t.Errorf("result %+v, served %d; want the runner to recognise its step", got, r.served)
	}
}

// suspendingRunner parks every question it is asked (ErrSuspended).
type suspendingRunner struct{ harness.DirectRunner }

func (suspendingRunner) Ask(context.Context, *harness.Step, harness.AskRequest) (harness.Answer, error) {
	return harness.Answer{}, fmt.Errorf("%w: parked", harness.ErrSuspended)
}

// A question the runner parks suspends the run: the asking call ends
// with ToolSuspended whatever the tool made of the error, no tool
// message reaches the conversation, the run ends StatusSuspended without
// an error, and the other calls of the group ran.
func TestAskSuspendsTheRun(t *testing.T) {
	ask := harness.MustTool(harness.NewTool("ask", "", func(ctx context.Context, _ struct{}) (string, error) {
		_, err := harness.AskUser(ctx, harness.AskRequest{Kind: harness.AskConfirm, Prompt: "ok?"})
		return "", fmt.Errorf("wrapped without %%w: %v", err) // the tool loses the sentinel
	}))
	ask.ReplayPolicy = harness.ReplaySafe
	ask.Concurrent = true
	var other atomic.Int32
	echo := harness.MustTool(harness.NewTool("echo", "", func(ctx context.Context, _ struct{}) (string, error) {
		other.Add(1)
		return "echoed", nil
	}))
	echo.Concurrent = true
	var rec ht.HookRecorder
	both := ht.Response{ToolCalls: []harness.ToolCall{ht.Call("c1", "ask", `{}`), ht.Call("c2", "echo", `{}`)}}
	a := newAgent(t, ht.NewScriptedProvider(both, ht.Reply("never")),
		harness.WithTools(ask, echo), harness.WithStepRunner(suspendingRunner{}), rec.Option())
	res, err := a.Run(context.Background(), "go")
	if err != nil || res.Status != harness.StatusSuspended || res.Err != nil {
		t.Fatalf("res = %+v, err = %v; want suspended without an error", res, err)
	}
	if res.Steps != 1 || other.Load() != 1 {
		t.Errorf("steps %d, echo ran %d times; want one model step and the other call run", res.Steps, other.Load())
	}
	for _, m := range res.Messages {
		if m.Role == harness.RoleTool {
			t.Errorf("a tool message reached the conversation: %+v", m)
		}
	}
	var statuses []harness.ToolStatus
	for _, e := range rec.Of(harness.EventToolCallEnd) {
		statuses = append(statuses, e.ToolResult.Status)
	}
	slices.Sort(statuses)
	if !slices.Equal(statuses, []harness.ToolStatus{harness.ToolOK, harness.ToolSuspended}) {
		t.Errorf("tool end statuses = %q", statuses)
	}
}
