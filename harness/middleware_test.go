package harness_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

// tracer implements every stage and logs what it sees.
type tracer struct {
	name string
	log  *orderLog
}

type ctxKey string

func (m *tracer) BeforeModelRequest(ctx context.Context, req *harness.ModelRequest) error {
	m.log.add(m.name + ".before_model")
	req.System += "[" + m.name + "]"
	return nil
}

func (m *tracer) AfterModelResponse(ctx context.Context, req *harness.ModelRequest, resp *harness.ModelResponse) error {
	m.log.add(m.name + ".after_model")
	return nil
}

func (m *tracer) BeforeToolExecution(ctx context.Context, call *harness.ToolCall) (harness.ToolAction, error) {
	m.log.add(m.name + ".before_tool")
	return harness.Continue(), nil
}

func (m *tracer) AfterToolExecution(ctx context.Context, call *harness.ToolCall, r *harness.ToolResult) error {
	m.log.add(m.name + ".after_tool")
	r.Content += "+" + m.name
	return nil
}

func (m *tracer) InterceptRun(ctx context.Context, info *harness.RunInfo, next harness.RunFunc) *harness.RunResult {
	m.log.add(m.name + ".run{")
	defer m.log.add(m.name + ".run}")
	return next(context.WithValue(ctx, ctxKey(m.name), "run"))
}

func (m *tracer) InterceptModel(ctx context.Context, req *harness.ModelRequest, next harness.ModelFunc) (*harness.ModelResponse, error) {
	m.log.add(m.name + ".model{")
	defer m.log.add(m.name + ".model}")
	return next(ctx, req)
}

func (m *tracer) InterceptTool(ctx context.Context, call *harness.ToolCall, next harness.ToolFunc) *harness.ToolResult {
	m.log.add(m.name + ".tool{")
	defer m.log.add(m.name + ".tool}")
	return next(context.WithValue(ctx, ctxKey(m.name+".tool"), call.ID), call)
}

func TestMiddlewareOrder(t *testing.T) {
	log := &orderLog{}
	var toolCtx []string
	probe := harness.MustTool(harness.NewTool("probe", "", func(ctx context.Context, _ struct{}) (string, error) {
		for _, k := range []string{"A", "B", "A.tool", "B.tool"} {
			v, _ := ctx.Value(ctxKey(k)).(string)
			toolCtx = append(toolCtx, k+"="+v)
		}
		log.add("tool")
		return "r", nil
	}))
	p := ht.NewScriptedProvider(ht.CallTool("c1", "probe", `{}`), ht.Reply("done"))
	hook := func(ctx context.Context, ev *harness.Event) error {
		if ev.Type == harness.EventSessionStart {
			return nil // at New, outside any run
		}
		if v, _ := ctx.Value(ctxKey("A")).(string); v != "run" {
			t.Errorf("hook %s does not see the run interceptor's context", ev.Type)
		}
		log.add("hook." + ev.Type.String())
		return nil
	}
	a := newAgent(t, p, harness.WithTools(probe), harness.WithSystemPrompt("sys"),
		harness.WithMiddleware(&tracer{"A", log}, &tracer{"B", log}), harness.WithHooks(hook))
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"A.run{", "B.run{", "hook.run_start", "hook.message",
		"A.model{", "B.model{", "A.before_model", "B.before_model", "hook.model_request_start", "hook.model_request_end", "B.after_model", "A.after_model", "B.model}", "A.model}",
		"hook.message",
		"A.tool{", "B.tool{", "hook.tool_call_start", "A.before_tool", "B.before_tool", "tool", "B.after_tool", "A.after_tool", "hook.tool_call_end", "B.tool}", "A.tool}",
		"hook.message",
		"A.model{", "B.model{", "A.before_model", "B.before_model", "hook.model_request_start", "hook.model_request_end", "B.after_model", "A.after_model", "B.model}", "A.model}",
		"hook.message",
		"hook.run_end", "B.run}", "A.run}",
	}
	if got := log.list(); !slices.Equal(got, want) {
		t.Errorf("order:\n got %v\nwant %v", got, want)
	}
	if !slices.Equal(toolCtx, []string{"A=run", "B=run", "A.tool=c1", "B.tool=c1"}) {
		t.Errorf("tool context = %v", toolCtx)
	}
	// Before-stages in order, after-stages reversed: B appended first, A last.
	if got := res.Messages[2].Content[0].ToolResult.Content; got != "r+B+A" {
		t.Errorf("result = %q", got)
	}
	if got := p.Requests()[0].System; got != "sys[A][B]" {
		t.Errorf("system = %q", got)
	}
}

type editBlockAsk struct{}

func (editBlockAsk) BeforeToolExecution(ctx context.Context, call *harness.ToolCall) (harness.ToolAction, error) {
	var in map[string]any
	_ = json.Unmarshal(call.Input, &in)
	text, _ := in["text"].(string)
	switch {
	case strings.Contains(text, "rm -rf"):
		return harness.Block("destructive"), nil
	case strings.Contains(text, "deploy") && !harness.Approved(ctx):
		return harness.Ask("Deploy?"), nil
	}
	in["text"] = strings.TrimSpace(text)
	call.Input, _ = json.Marshal(in)
	return harness.Continue(), nil
}

func TestToolCallMiddlewareEditBlockAsk(t *testing.T) {
	p := ht.NewScriptedProvider(
		ht.Response{ToolCalls: []harness.ToolCall{
			ht.Call("1", "echo", `{"text":"  padded  "}`),
			ht.Call("2", "echo", `{"text":"rm -rf /"}`),
			ht.Call("3", "echo", `{"text":"deploy"}`),
		}},
		ht.Reply("ok"),
	)
	a := newAgent(t, p, harness.WithTools(echoTool()), harness.WithMiddleware(editBlockAsk{}))
	res, err := a.Run(context.Background(), "go")
	if err != nil || res.Status != harness.StatusPaused || res.Pending[0].Reason != "Deploy?" {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = a.Resume(context.Background(), harness.Approve("3"))
	if err != nil {
		t.Fatal(err)
	}
	parts := res.Messages[2].Content
	if r := parts[0].ToolResult; r.Content != "echo: padded" {
		t.Errorf("edited: %+v", r)
	}
	if r := parts[1].ToolResult; r.Status != harness.ToolBlocked || !strings.Contains(r.Content, "destructive") {
		t.Errorf("blocked: %+v", r)
	}
	if r := parts[2].ToolResult; r.Status != harness.ToolOK || r.Content != "echo: deploy" {
		t.Errorf("approved: %+v", r)
	}
}

func TestInvalidMiddlewareRejected(t *testing.T) {
	_, err := harness.New(harness.WithProvider(ht.NewScriptedProvider()), harness.WithMiddleware(struct{}{}))
	if err == nil || !strings.Contains(err.Error(), "no middleware stage") {
		t.Fatalf("err = %v", err)
	}
}
