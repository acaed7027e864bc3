package harness_test

import (
	"context"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

type shellIn struct {
	Command string `json:"command"`
}

// guard is the note's execute.before hook as a ToolCallFunc: it trims the
// command, blocks destructive ones and asks before deploying.
var guard = harness.ToolCallFunc(func(_ context.Context, call *harness.ToolCall) (harness.ToolAction, error) {
	var in shellIn
	if err := call.DecodeInput(&in); err != nil {
		return harness.Continue(), err
	}
	switch {
	case strings.Contains(in.Command, "rm -rf"):
		return harness.Block("destructive"), nil
	case strings.Contains(in.Command, "deploy"):
		return harness.Ask("Deploy?"), nil
	}
	in.Command = strings.TrimSpace(in.Command)
	return harness.Continue(), call.SetInput(in)
})

func shellTool(ran *[]string) *harness.Tool {
	return harness.MustTool(harness.NewTool("shell", "Run a command.", func(_ context.Context, in shellIn) (string, error) {
		*ran = append(*ran, in.Command)
		return "ran " + in.Command, nil
	}))
}

func TestToolCallFuncEditBlock(t *testing.T) {
	var ran []string
	p := ht.NewScriptedProvider(
		harnessResponse(ht.Call("c1", "shell", `{"command":"  ls -l  "}`), ht.Call("c2", "shell", `{"command":"rm -rf /"}`)),
		ht.Reply("done"))
	a := newAgent(t, p, harness.WithTools(shellTool(&ran)), harness.WithMiddleware(guard))
	res, err := a.Run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if len(ran) != 1 || ran[0] != "ls -l" {
		t.Errorf("tool ran %q; want the edited command only", ran)
	}
	results := res.Messages[2].Content
	if r := results[1].ToolResult; r.Status != harness.ToolBlocked || !strings.Contains(r.Content, "destructive") {
		t.Errorf("blocked call result = %+v", r)
	}
	// The model's call, in the history, is as it sent it.
	if got := string(res.Messages[1].Content[0].ToolCall.Input); got != `{"command":"  ls -l  "}` {
		t.Errorf("the model's call was changed: %s", got)
	}
}

func harnessResponse(calls ...harness.ToolCall) ht.Response { return ht.Response{ToolCalls: calls} }

func TestToolCallFuncAskIsADurableApproval(t *testing.T) {
	ctx := context.Background()
	var ran []string
	p := ht.NewScriptedProvider(ht.CallTool("c1", "shell", `{"command":"deploy prod"}`))
	a := newAgent(t, p, harness.WithTools(shellTool(&ran)), harness.WithMiddleware(guard))
	res, err := a.Run(ctx, "ship it")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != harness.StatusPaused || len(res.Pending) != 1 || res.Pending[0].Reason != "Deploy?" || len(ran) != 0 {
		t.Fatalf("ask: %+v, ran %q", res, ran)
	}
	// The approval survives a restart: saved, loaded, then approved.
	saved, err := a.SaveSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p2 := ht.NewScriptedProvider(ht.Reply("deployed"))
	b, err := harness.LoadSession(ctx, saved, harness.WithProvider(p2), harness.WithTools(shellTool(&ran)), harness.WithMiddleware(guard))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	res, err = b.Resume(ctx, harness.Approve("c1"))
	if err != nil || res.Text != "deployed" || len(ran) != 1 || ran[0] != "deploy prod" {
		t.Errorf("after approval: %+v, %v, ran %q", res, err, ran)
	}
}

func TestToolResultFuncReplaces(t *testing.T) {
	var ran []string
	redact := harness.ToolResultFunc(func(_ context.Context, call *harness.ToolCall, r *harness.ToolResult) error {
		if call.Name == "shell" && !r.IsError {
			*r = harness.ToolResult{CallID: r.CallID, Name: r.Name, Content: strings.ReplaceAll(r.Content, "secret", "[redacted]"), Status: r.Status}
		}
		return nil
	})
	p := ht.NewScriptedProvider(ht.CallTool("c1", "shell", `{"command":"cat secret"}`), ht.Reply("ok"))
	a := newAgent(t, p, harness.WithTools(shellTool(&ran)), harness.WithMiddleware(redact))
	res, err := a.Run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Messages[2].Content[0].ToolResult.Content; got != "ran cat [redacted]" {
		t.Errorf("result = %q", got)
	}
	if got := p.Requests()[1].Messages[2].Content[0].ToolResult.Content; got != "ran cat [redacted]" {
		t.Errorf("the model read %q", got)
	}
}

func TestToolCallInputHelpers(t *testing.T) {
	call := &harness.ToolCall{Name: "shell", Input: []byte(`{"command":1`)}
	var in shellIn
	if err := call.DecodeInput(&in); err == nil || !strings.Contains(err.Error(), `"shell"`) {
		t.Errorf("DecodeInput of bad JSON: %v", err)
	}
	if err := (&harness.ToolCall{}).DecodeInput(&in); err != nil {
		t.Errorf("DecodeInput of empty input: %v", err)
	}
	before := string(call.Input)
	if err := call.SetInput(map[string]any{"f": func() {}}); err == nil || string(call.Input) != before {
		t.Errorf("SetInput of a function: %v, input %s", err, call.Input)
	}
	if err := call.SetInput(shellIn{Command: "ls"}); err != nil || string(call.Input) != `{"command":"ls"}` {
		t.Errorf("SetInput: %v, %s", err, call.Input)
	}
}
