package harness_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

func TestSessionStartEvent(t *testing.T) {
	ctx := context.Background()
	rec := &ht.HookRecorder{}
	a := newAgent(t, ht.NewScriptedProvider(ht.Reply("hi")), rec.Option())
	ev := rec.Of(harness.EventSessionStart)
	if len(ev) != 1 || ev[0].Restored || ev[0].SessionID != a.SessionID() {
		t.Fatalf("session start of New = %+v", ev)
	}
	a.Run(ctx, "x")
	saved, _ := a.SaveSession(ctx)
	rec2 := &ht.HookRecorder{}
	b, err := harness.LoadSession(ctx, saved, harness.WithProvider(ht.NewScriptedProvider()), rec2.Option())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	ev = rec2.Of(harness.EventSessionStart)
	if len(ev) != 1 || !ev[0].Restored || ev[0].SessionID != a.SessionID() {
		t.Errorf("session start of LoadSession = %+v; want one, restored", ev)
	}
	if got := rec2.Types(); got[0] != harness.EventSessionStart || len(got) != 1 {
		t.Errorf("events of LoadSession = %v", got)
	}
}

func TestMessageEvents(t *testing.T) {
	rec := &ht.HookRecorder{}
	p := ht.NewScriptedProvider(ht.CallTool("c1", "echo", `{"text":"a"}`), ht.Reply("done"))
	a := newAgent(t, p, harness.WithTools(echoTool()), rec.Option())
	res, err := a.Run(context.Background(), "hello")
	if err != nil {
		t.Fatal(err)
	}
	ev := rec.Of(harness.EventMessage)
	var roles []harness.Role
	for _, e := range ev {
		roles = append(roles, e.Message.Role)
		if e.RunID != res.RunID {
			t.Errorf("message event run ID %q", e.RunID)
		}
	}
	if !slices.Equal(roles, []harness.Role{harness.RoleUser, harness.RoleAssistant, harness.RoleTool, harness.RoleAssistant}) {
		t.Errorf("message roles = %v", roles)
	}
	if ev[0].Message.Text() != "hello" || ev[2].Message.Content[0].ToolResult.Content != "echo: a" || ev[3].Message.Text() != "done" {
		t.Errorf("message contents: %+v", ev)
	}
	// The assistant's message comes after its model request ends, the
	// tool message after the call ends, the final message before the run ends.
	types := rec.Types()
	idx := func(e harness.HookEvent, n int) int {
		for i, x := range types {
			if x == e {
				if n == 0 {
					return i
				}
				n--
			}
		}
		return -1
	}
	if !(idx(harness.EventModelRequestEnd, 0) < idx(harness.EventMessage, 1) && idx(harness.EventToolCallEnd, 0) < idx(harness.EventMessage, 2) &&
		idx(harness.EventMessage, 3) < idx(harness.EventRunEnd, 0)) {
		t.Errorf("event order: %v", types)
	}
}

func TestToolUpdate(t *testing.T) {
	rec := &ht.HookRecorder{}
	fetch := harness.MustTool(harness.NewTool("fetch", "Fetch pages.", func(ctx context.Context, in queryIn) (string, error) {
		for i := 1; i <= 2; i++ {
			if err := harness.Update(ctx, map[string]any{"page": i, "of": 2}); err != nil {
				return "", err
			}
		}
		return "fetched", nil
	}))
	p := ht.NewScriptedProvider(ht.CallTool("c1", "fetch", `{"q":"x"}`), ht.Reply("done"))
	a := newAgent(t, p, harness.WithTools(fetch), rec.Option())
	if _, err := a.Run(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	ev := rec.Of(harness.EventToolUpdate)
	if len(ev) != 2 || ev[0].ToolCall.Name != "fetch" || ev[0].ToolCall.ID != "c1" || ev[0].Metadata["page"] != 1 || ev[1].Metadata["page"] != 2 ||
		ev[0].Step != 1 || ev[0].RunID == "" {
		t.Errorf("updates = %+v", ev)
	}
	types := slices.DeleteFunc(rec.Types(), func(e harness.HookEvent) bool {
		return e != harness.EventToolCallStart && e != harness.EventToolUpdate && e != harness.EventToolCallEnd
	})
	if !slices.Equal(types, []harness.HookEvent{harness.EventToolCallStart, harness.EventToolUpdate, harness.EventToolUpdate, harness.EventToolCallEnd}) {
		t.Errorf("tool events = %v", types)
	}
	if err := harness.Update(context.Background(), nil); !errors.Is(err, harness.ErrNotInToolCall) {
		t.Errorf("Update outside a tool: %v", err)
	}
}

// TestUpdatesObserved: true inside a tool call of an agent with
// EventToolUpdate hooks, false without them and outside a tool call.
func TestUpdatesObserved(t *testing.T) {
	for _, hooked := range []bool{true, false} {
		var seen []bool
		probe := harness.MustTool(harness.NewTool("probe", "Probe.", func(ctx context.Context, in queryIn) (string, error) {
			seen = append(seen, harness.UpdatesObserved(ctx))
			return "ok", nil
		}))
		opts := []harness.Option{harness.WithTools(probe)}
		if hooked {
			opts = append(opts, harness.WithHooks(func(context.Context, *harness.Event) error { return nil }, harness.EventToolUpdate))
		} else {
			opts = append(opts, harness.WithHooks(func(context.Context, *harness.Event) error { return nil }, harness.EventToolCallEnd))
		}
		a := newAgent(t, ht.NewScriptedProvider(ht.CallTool("c1", "probe", `{"q":"x"}`), ht.Reply("done")), opts...)
		if _, err := a.Run(context.Background(), "x"); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seen, []bool{hooked}) {
			t.Errorf("with update hooks %v: UpdatesObserved = %v", hooked, seen)
		}
	}
	if harness.UpdatesObserved(context.Background()) {
		t.Error("UpdatesObserved outside a tool call")
	}
}
