package harness_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

func TestPermissionDenyAndInherit(t *testing.T) {
	denied := echoTool()
	denied.Name = "rm"
	denied.Permission = harness.PermissionDeny
	allowedByTool := echoTool()
	allowedByTool.Name = "ls"
	allowedByTool.Permission = harness.PermissionAllow
	mgr := harness.PermissionFunc(func(_ context.Context, tool *harness.Tool, _ *harness.ToolCall) (harness.Permission, string) {
		return harness.PermissionDeny, "policy forbids " + tool.Name
	})
	p := ht.NewScriptedProvider(ht.Response{ToolCalls: []harness.ToolCall{
		ht.Call("1", "rm", `{"text":"/"}`), ht.Call("2", "echo", `{"text":"x"}`), ht.Call("3", "ls", `{"text":"."}`),
	}}, ht.Reply("ok"))
	a := newAgent(t, p, harness.WithTools(denied, echoTool(), allowedByTool), harness.WithPermissionManager(mgr))
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	parts := res.Messages[2].Content
	if r := parts[0].ToolResult; r.Status != harness.ToolDenied || !r.IsError || !strings.Contains(r.Content, "not permitted") {
		t.Errorf("explicit deny: %+v", r)
	}
	if r := parts[1].ToolResult; r.Status != harness.ToolDenied || !strings.Contains(r.Content, "policy forbids echo") {
		t.Errorf("inherited deny: %+v", r)
	}
	if r := parts[2].ToolResult; r.Status != harness.ToolOK {
		t.Errorf("explicit allow overrides the manager: %+v", r)
	}
}

func TestAskPausesAndResumeApproves(t *testing.T) {
	deploy := echoTool()
	deploy.Name = "deploy"
	deploy.Permission = harness.PermissionAsk
	p := ht.NewScriptedProvider(
		ht.Response{ToolCalls: []harness.ToolCall{ht.Call("d1", "deploy", `{"text":"prod"}`), ht.Call("e1", "echo", `{"text":"side"}`)}},
		ht.Reply("deployed"),
	)
	rec := &ht.HookRecorder{}
	ext := &lifecycleExt{name: "obs", log: &orderLog{}}
	a := newAgent(t, p, harness.WithTools(deploy, echoTool()), rec.Option(), harness.WithExtensions(ext))
	res, err := a.Run(context.Background(), "ship it")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != harness.StatusPaused || len(res.Pending) != 1 || res.Pending[0].ID != "d1" || res.Pending[0].ToolCall.Name != "deploy" {
		t.Fatalf("result = %+v", res)
	}
	if n := len(rec.Of(harness.EventApprovalRequested)); n != 1 {
		t.Errorf("approval events = %d", n)
	}
	// A pause is not completion.
	if got := ext.log.list(); contains(got, "obs.complete") || contains(got, "obs.end") {
		t.Errorf("pause ran completion callbacks: %v", got)
	}
	if _, err := a.Run(context.Background(), "another"); !errors.Is(err, harness.ErrPaused) {
		t.Errorf("Run while paused: %v", err)
	}
	if _, err := a.Resume(context.Background()); err == nil || !strings.Contains(err.Error(), "d1") {
		t.Errorf("Resume without decisions: %v", err)
	}
	if _, err := a.Resume(context.Background(), harness.Approve("zzz")); !errors.Is(err, harness.ErrUnknownApproval) {
		t.Errorf("Resume with unknown id: %v", err)
	}
	res, err = a.Resume(context.Background(), harness.Approve("d1"))
	if err != nil || res.Status != harness.StatusCompleted || res.Text != "deployed" || res.Steps != 2 {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	results := res.Messages[2].Content
	if results[0].ToolResult.Content != "echo: prod" || results[1].ToolResult.Content != "echo: side" {
		t.Errorf("results = %+v %+v", results[0].ToolResult, results[1].ToolResult)
	}
	if got := ext.log.list(); !contains(got, "obs.complete") {
		t.Errorf("completion after resume missing: %v", got)
	}
	if _, err := a.Resume(context.Background()); !errors.Is(err, harness.ErrNotPaused) {
		t.Errorf("Resume when not paused: %v", err)
	}
}

func TestResumeDeny(t *testing.T) {
	p := ht.NewScriptedProvider(ht.CallTool("d1", "echo", `{"text":"x"}`), ht.Reply("fine"))
	ask := harness.PermissionFunc(func(context.Context, *harness.Tool, *harness.ToolCall) (harness.Permission, string) {
		return harness.PermissionAsk, "needs a human"
	})
	a := newAgent(t, p, harness.WithTools(echoTool()), harness.WithPermissionManager(ask))
	res, err := a.Run(context.Background(), "go")
	if err != nil || res.Status != harness.StatusPaused || res.Pending[0].Reason != "needs a human" {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = a.Resume(context.Background(), harness.Deny("d1", "not today"))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Messages[2].Content[0].ToolResult
	if r.Status != harness.ToolDenied || !strings.Contains(r.Content, "not today") {
		t.Errorf("denied result = %+v", r)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
