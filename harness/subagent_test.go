package harness_test

import (
	"context"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

// ctxTagger derives the tool call's context, as a tracing span would.
type ctxTagger struct{}

func (ctxTagger) InterceptTool(ctx context.Context, call *harness.ToolCall, next harness.ToolFunc) *harness.ToolResult {
	return next(context.WithValue(ctx, ctxKey("parent-call"), call.ID), call)
}

func TestSubagent(t *testing.T) {
	var childSaw string
	childRec := &ht.HookRecorder{}
	child := newAgent(t, ht.NewScriptedProvider(ht.Reply("child result")),
		harness.WithName("child"),
		harness.WithHook(harness.EventRunStart, func(ctx context.Context, ev *harness.Event) error {
			childSaw, _ = ctx.Value(ctxKey("parent-call")).(string)
			return nil
		}), childRec.Option())
	parentExt := &lifecycleExt{name: "parent-only", log: &orderLog{}}
	p := ht.NewScriptedProvider(ht.CallTool("call-7", "researcher", `{"task":"look it up"}`), ht.Reply("parent done"))
	parent := newAgent(t, p, harness.WithTools(harness.AgentTool(child, "researcher", "Delegate research.")),
		harness.WithMiddleware(ctxTagger{}), harness.WithExtensions(parentExt))
	res, err := parent.Run(context.Background(), "go")
	if err != nil || res.Text != "parent done" {
		t.Fatalf("%+v %v", res, err)
	}
	if got := res.Messages[2].Content[0].ToolResult.Content; got != "child result" {
		t.Errorf("tool result = %q", got)
	}
	if childSaw != "call-7" {
		t.Errorf("the child's run context must derive from the tool call's; saw %q", childSaw)
	}
	if starts := childRec.Of(harness.EventRunStart); len(starts) != 1 || starts[0].Input != "look it up" {
		t.Errorf("child runs = %+v", starts)
	}
	if inv := child.Inventory(); len(inv.Extensions) != 0 || len(inv.Middleware) != 0 {
		t.Errorf("the child must not inherit the parent's extensions or middleware: %+v", inv)
	}
}
