package harness_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

type queryIn struct {
	Q string `json:"q"`
}

// webTools returns a deferred search tool and the activator that enables it.
func webTools() (search, enable *harness.Tool) {
	search = harness.MustTool(harness.NewTool("web_search", "Search the web.", func(_ context.Context, in queryIn) (string, error) {
		return "results for " + in.Q, nil
	}))
	search.Deferred = true
	enable = harness.MustTool(harness.NewTool("web_enable", "Enable web access.", func(ctx context.Context, _ struct{}) (string, error) {
		if err := harness.ActivateTools(ctx, "web_search"); err != nil {
			return "", err
		}
		return "web tools enabled", nil
	}))
	return search, enable
}

func toolNames(defs []harness.ToolDefinition) []string {
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	return names
}

func TestDeferredToolNotOffered(t *testing.T) {
	search, enable := webTools()
	p := ht.NewScriptedProvider(ht.CallTool("c1", "web_search", `{"q":"go"}`), ht.Reply("done"))
	a := newAgent(t, p, harness.WithTools(enable, search))
	if got := toolNames(a.Tools().Offered()); !slices.Equal(got, []string{"web_enable"}) {
		t.Errorf("Offered = %q; want [web_enable]", got)
	}
	if got := a.Inventory().Tools; !slices.Equal(got, []string{"web_enable", "web_search"}) {
		t.Errorf("catalog = %q; the deferred tool belongs to it", got)
	}
	if _, ok := a.Tool("web_search"); !ok {
		t.Error("Agent.Tool does not find the deferred tool")
	}
	res, err := a.Run(context.Background(), "search")
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(p.Requests()[0].Tools); !slices.Equal(got, []string{"web_enable"}) {
		t.Errorf("request tools = %q", got)
	}
	tr := res.Messages[2].Content[0].ToolResult
	if tr.Status != harness.ToolUnknown || strings.Contains(tr.Content, "results for") {
		t.Errorf("a call of an inactive deferred tool ran: %+v", tr)
	}
}

func TestActivateFromToolResult(t *testing.T) {
	search, enable := webTools()
	p := ht.NewScriptedProvider(
		ht.CallTool("c1", "web_enable", `{}`),
		ht.CallTool("c2", "web_search", `{"q":"go"}`),
		ht.Reply("done"))
	rec := &ht.HookRecorder{}
	a := newAgent(t, p, harness.WithTools(enable, search), rec.Option())
	res, err := a.Run(context.Background(), "search the web")
	if err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	if got := toolNames(reqs[0].Tools); !slices.Equal(got, []string{"web_enable"}) {
		t.Errorf("request 1 tools = %q", got)
	}
	if got := toolNames(reqs[1].Tools); !slices.Equal(got, []string{"web_enable", "web_search"}) {
		t.Errorf("request 2 tools = %q; want the activated tool", got)
	}
	if r := res.Messages[2].Content[0].ToolResult; !slices.Equal(r.Activate, []string{"web_search"}) {
		t.Errorf("activator result Activate = %q", r.Activate)
	}
	if r := res.Messages[4].Content[0].ToolResult; r.Status != harness.ToolOK || r.Content != "results for go" {
		t.Errorf("activated tool result = %+v", r)
	}
	// The offered set changed: the prefix key says the cache broke because
	// of the tools, as tracing shows it.
	starts := rec.Of(harness.EventModelRequestStart)
	if got := starts[1].Request.PrefixKey.Changed; !slices.Equal(got, []string{harness.PrefixPartTools}) {
		t.Errorf("request 2 PrefixKey.Changed = %q; want [tools]", got)
	}
	if got := starts[2].Request.PrefixKey.Changed; len(got) != 0 {
		t.Errorf("request 3 PrefixKey.Changed = %q; want none (same tools)", got)
	}
	if got := a.Tools().Active(); !slices.Equal(got, []string{"web_search"}) {
		t.Errorf("Active = %q", got)
	}
}

func TestActivateFailedCallActivatesNothing(t *testing.T) {
	search, _ := webTools()
	bad := harness.MustTool(harness.NewTool("bad_enable", "", func(ctx context.Context, _ struct{}) (string, error) {
		harness.ActivateTools(ctx, "web_search")
		return "", errors.New("no")
	}))
	p := ht.NewScriptedProvider(ht.CallTool("c1", "bad_enable", `{}`), ht.Reply("done"))
	a := newAgent(t, p, harness.WithTools(bad, search))
	if _, err := a.Run(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(p.Requests()[1].Tools); slices.Contains(got, "web_search") {
		t.Errorf("a failed call activated a tool: %q", got)
	}
	if err := harness.ActivateTools(context.Background(), "web_search"); !errors.Is(err, harness.ErrNotInToolCall) {
		t.Errorf("ActivateTools outside a tool: %v", err)
	}
}

func TestSessionToolsAPIAndSession(t *testing.T) {
	ctx := context.Background()
	search, enable := webTools()
	p := ht.NewScriptedProvider(ht.Reply("one"), ht.Reply("two"), ht.Reply("three"))
	rec := &ht.HookRecorder{}
	a := newAgent(t, p, harness.WithTools(enable, search), rec.Option())
	err := a.Tools().Activate("web_search", "nope")
	if !errors.Is(err, harness.ErrUnknownTool) || !strings.Contains(err.Error(), "nope") || !strings.Contains(err.Error(), "web_search") {
		t.Errorf("Activate of an unknown tool: %v", err)
	}
	if len(a.Tools().Active()) != 0 {
		t.Error("a failed Activate changed the set")
	}
	if _, err := a.Run(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	if err := a.Tools().Activate("web_search"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(ctx, "second"); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(p.Requests()[1].Tools); !slices.Equal(got, []string{"web_enable", "web_search"}) {
		t.Errorf("after Activate, tools = %q", got)
	}
	if got := rec.Of(harness.EventModelRequestStart)[1].Request.PrefixKey.Changed; !slices.Equal(got, []string{harness.PrefixPartTools}) {
		t.Errorf("Changed = %q; want [tools]", got)
	}

	// Saved with the session, restored by LoadSession.
	saved, err := a.SaveSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(saved), `"active_tools":["web_search"]`) {
		t.Errorf("saved session lacks the activation: %s", saved)
	}
	search2, enable2 := webTools()
	p2 := ht.NewScriptedProvider(ht.Reply("three"), ht.Reply("four"))
	b, err := harness.LoadSession(ctx, saved, harness.WithProvider(p2), harness.WithTools(enable2, search2))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if got := toolNames(b.Tools().Offered()); !slices.Equal(got, []string{"web_enable", "web_search"}) {
		t.Errorf("after LoadSession, Offered = %q", got)
	}
	b.Tools().Deactivate("web_search", "never-active")
	if _, err := b.Run(ctx, "third"); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(p2.Requests()[0].Tools); !slices.Equal(got, []string{"web_enable"}) {
		t.Errorf("after Deactivate, tools = %q", got)
	}
	saved2, _ := b.SaveSession(ctx)
	if strings.Contains(string(saved2), "active_tools") {
		t.Errorf("a session without activations saves them: %s", saved2)
	}
	if _, err := harness.LoadSession(ctx, []byte(`{"version":1,"session_id":"s","messages":[],"active_tools":[""]}`), harness.WithProvider(p2)); !errors.Is(err, harness.ErrSession) {
		t.Errorf("LoadSession with an empty active tool name: %v", err)
	}
}

// A durable runtime that recovers a run replays the activator's recorded
// result; the activation comes from it, not from running the tool again.
func TestActivationReplayedOnRecovery(t *testing.T) {
	ctx := harness.ContextWithRunID(context.Background(), "run-1")
	runner := ht.NewStepRunner()
	script := []ht.Response{ht.CallTool("c1", "web_enable", `{}`), ht.CallTool("c2", "web_search", `{"q":"go"}`), ht.Reply("done")}
	search, enable := webTools()
	a := newAgent(t, ht.NewScriptedProvider(script...), harness.WithTools(enable, search), harness.WithStepRunner(runner))
	if _, err := a.Run(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	// The process stopped before the last model request was recorded.
	runner.Forget("run-1/model/3")
	var enables int
	search2 := *search
	enable2 := harness.MustTool(harness.NewTool("web_enable", "Enable web access.", func(ctx context.Context, _ struct{}) (string, error) {
		enables++
		return "", errors.New("must not run again")
	}))
	p := ht.NewScriptedProvider(ht.Reply("done"))
	b := newAgent(t, p, harness.WithTools(enable2, &search2), harness.WithStepRunner(runner))
	res, err := b.Run(harness.ContextRecovered(ctx, 2), "x")
	if err != nil {
		t.Fatal(err)
	}
	if enables != 0 {
		t.Errorf("the activator ran again %d times", enables)
	}
	if r := res.Messages[4].Content[0].ToolResult; r.Status != harness.ToolOK || r.Content != "results for go" {
		t.Errorf("replayed activated call = %+v", r)
	}
	if got := toolNames(p.Requests()[0].Tools); !slices.Equal(got, []string{"web_enable", "web_search"}) {
		t.Errorf("recovered request tools = %q; want the replayed activation", got)
	}
}
