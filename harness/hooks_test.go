package harness_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

func TestHookEventsOfARun(t *testing.T) {
	p := ht.NewScriptedProvider(ht.CallTool("c1", "echo", `{"text":"a"}`), ht.Reply("done"))
	rec := &ht.HookRecorder{}
	a := newAgent(t, p, harness.WithTools(echoTool()), rec.Option(), harness.WithName("bot"))
	if got := rec.Types(); !slices.Equal(got, []harness.HookEvent{harness.EventSessionStart}) {
		t.Fatalf("events of New = %v", got)
	}
	rec.Reset()
	if _, err := a.Run(context.Background(), "hello"); err != nil {
		t.Fatal(err)
	}
	want := []harness.HookEvent{
		harness.EventRunStart, harness.EventMessage,
		harness.EventModelRequestStart, harness.EventModelRequestEnd, harness.EventMessage,
		harness.EventToolCallStart, harness.EventToolCallEnd, harness.EventMessage,
		harness.EventModelRequestStart, harness.EventModelRequestEnd, harness.EventMessage,
		harness.EventRunEnd,
	}
	if got := rec.Types(); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	evs := rec.Events()
	if evs[0].Input != "hello" || evs[0].Agent != "bot" || evs[0].SessionID != a.SessionID() || evs[0].RunID == "" || evs[0].Time.IsZero() {
		t.Errorf("run start = %+v", evs[0])
	}
	if evs[2].Request == nil || evs[2].Request.PrefixKey.Key.IsZero() || evs[2].Step != 1 {
		t.Errorf("model start = %+v", evs[2])
	}
	if evs[3].Response == nil || evs[3].Response.Provider != "scripted" {
		t.Errorf("model end = %+v", evs[3])
	}
	if evs[6].ToolResult == nil || evs[6].ToolResult.Content != "echo: a" || evs[6].ToolCall.ID != "c1" {
		t.Errorf("tool end = %+v", evs[6])
	}
	if evs[11].Result == nil || evs[11].Result.Status != harness.StatusCompleted {
		t.Errorf("run end = %+v", evs[11])
	}
	for _, e := range evs {
		if e.RunID != evs[0].RunID {
			t.Errorf("%s has run ID %q", e.Type, e.RunID)
		}
	}
}

func TestFailingHooksNeverFailTheRun(t *testing.T) {
	p := ht.NewScriptedProvider(ht.CallTool("c1", "echo", `{"text":"a"}`), ht.Reply("done"))
	log, buf := logBuffer()
	rec := &ht.HookRecorder{}
	erring := func(context.Context, *harness.Event) error { return errors.New("hook broke") }
	panicking := func(_ context.Context, ev *harness.Event) error {
		if ev.Type == harness.EventToolCallEnd {
			panic("hook panicked")
		}
		return nil
	}
	a := newAgent(t, p, harness.WithTools(echoTool()), harness.WithLogger(log),
		harness.WithHook(harness.EventRunStart, erring), harness.WithHooks(panicking),
		harness.WithHook(harness.EventHookFailed, rec.Hook),
		harness.WithHook(harness.EventHookFailed, func(context.Context, *harness.Event) error { return errors.New("no recursion") }))
	res, err := a.Run(context.Background(), "go")
	if err != nil || res.Status != harness.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	failed := rec.Of(harness.EventHookFailed)
	if len(failed) != 2 || failed[0].FailedEvent != harness.EventRunStart || failed[1].FailedEvent != harness.EventToolCallEnd {
		t.Fatalf("hook failures = %+v", failed)
	}
	if !strings.Contains(failed[1].Err.Error(), "hook panicked") {
		t.Errorf("err = %v", failed[1].Err)
	}
	out := buf.String()
	if !strings.Contains(out, "hook broke") || !strings.Contains(out, "hook panicked") || !strings.Contains(out, "no recursion") {
		t.Errorf("log = %s", out)
	}
}

func TestUnknownHookEvent(t *testing.T) {
	_, err := harness.New(harness.WithProvider(ht.NewScriptedProvider()), harness.WithHook(harness.HookEvent(200), func(context.Context, *harness.Event) error { return nil }))
	if err == nil {
		t.Fatal("unknown event accepted")
	}
	if harness.HookEvent(200).String() != "unknown" || harness.EventToolCallEnd.String() != "tool_call_end" {
		t.Error("String")
	}
}

// TestHookDurationsSpanTheirEvents checks that an end event's Duration
// runs from its start event's Time to its own: one clock read each, the
// same for a model request and a tool call, and that a Duration is still
// measured when only the end event has hooks.
func TestHookDurationsSpanTheirEvents(t *testing.T) {
	slow := harness.MustTool(harness.NewTool("slow", "Sleeps.", func(context.Context, struct{}) (string, error) {
		time.Sleep(2 * time.Millisecond)
		return "slept", nil
	}))
	p := ht.NewScriptedProvider(ht.CallTool("c1", "slow", `{}`), ht.Reply("done"))
	rec := &ht.HookRecorder{}
	a := newAgent(t, p, harness.WithTools(slow), rec.Option())
	if _, err := a.Run(context.Background(), "hello"); err != nil {
		t.Fatal(err)
	}
	pairs := 0
	evs := rec.Events()
	for i, e := range evs {
		var startType harness.HookEvent
		switch e.Type {
		case harness.EventModelRequestEnd:
			startType = harness.EventModelRequestStart
		case harness.EventToolCallEnd:
			startType = harness.EventToolCallStart
		default:
			continue
		}
		j := i - 1
		for j >= 0 && evs[j].Type != startType {
			j--
		}
		if j < 0 {
			t.Fatalf("%s without its start event", e.Type)
		}
		if got := e.Time.Sub(evs[j].Time); e.Duration != got || e.Duration <= 0 {
			t.Errorf("%s: Duration %v, want its events' times apart (%v) and positive", e.Type, e.Duration, got)
		}
		pairs++
	}
	if pairs != 3 {
		t.Fatalf("%d start/end pairs, want 3", pairs)
	}

	// Only the end event of a tool call has a hook: its Duration still
	// covers the call.
	var tool time.Duration
	p = ht.NewScriptedProvider(ht.CallTool("c1", "slow", `{}`), ht.Reply("done"))
	a = newAgent(t, p, harness.WithTools(slow), harness.WithHook(harness.EventToolCallEnd, func(_ context.Context, ev *harness.Event) error {
		tool = ev.Duration
		return nil
	}))
	if _, err := a.Run(context.Background(), "hello"); err != nil {
		t.Fatal(err)
	}
	if tool < 2*time.Millisecond {
		t.Errorf("tool Duration with an end hook only = %v, want at least the tool's 2ms", tool)
	}
}

// TestHookEventAllocations checks that hooks on the events of every run's
// path (its start and end, its model requests' and tool calls' start and
// end: those of an observer such as the flight recorder) cost no
// allocation: the engine reuses their events (see harness.Hook). Under
// the race detector, sync.Pool drops some of what it is given back, so
// that only bounds them by the events a run has (six).
func TestHookEventAllocations(t *testing.T) {
	nop := func(context.Context, *harness.Event) error { return nil }
	allocs := func(opts ...harness.Option) float64 {
		p := ht.NewScriptedProvider(benchScript...)
		p.Loop, p.DiscardRequests = true, true
		opts = append(opts, harness.WithProvider(p), harness.WithModel("m"),
			harness.WithTools(harness.MustTool(harness.NewTool("weather", "Weather of a city.", weather))))
		a, err := harness.New(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close(context.Background())
		return testing.AllocsPerRun(200, func() {
			if _, err := a.Run(context.Background(), "weather?"); err != nil {
				t.Fatal(err)
			}
			a.Reset()
		})
	}
	plain := allocs()
	hooked := allocs(harness.WithHooks(nop, harness.EventRunStart, harness.EventRunEnd,
		harness.EventModelRequestStart, harness.EventModelRequestEnd, harness.EventToolCallStart, harness.EventToolCallEnd))
	want := 0.0
	if raceEnabled {
		want = 6
	}
	if hooked-plain > want {
		t.Errorf("hooks on run, model and tool events: %v allocations a run, %v without: want at most %v more", hooked, plain, want)
	}
}
