package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

// lifecycleExt logs every lifecycle callback as "<name>.<callback>".
type lifecycleExt struct {
	name       string
	prio       int
	log        *orderLog
	failStart  error
	failEnd    error
	failTear   error
	failInstal error
	state      int
	results    []*harness.RunResult
}

func (e *lifecycleExt) Name() string { return e.name }
func (e *lifecycleExt) Priority() int {
	if e.prio == 0 {
		return harness.DefaultPriority
	}
	return e.prio
}

func (e *lifecycleExt) Install(ec *harness.ExtensionContext) error {
	e.log.add(e.name + ".install")
	tool := echoTool()
	tool.Name = e.name + "_tool"
	if _, err := ec.RegisterTool(tool); err != nil {
		return err
	}
	if _, err := ec.AddMiddleware(passiveMW{}); err != nil {
		return err
	}
	if _, err := ec.OnHook(harness.EventRunEnd, func(context.Context, *harness.Event) error { return nil }); err != nil {
		return err
	}
	if _, err := ec.RegisterPromptProvider(func() string { return "from " + e.name }); err != nil {
		return err
	}
	return e.failInstal
}

func (e *lifecycleExt) OnTurnStart(ctx context.Context, ec *harness.ExtensionContext, msg string) error {
	e.log.add(e.name + ".start")
	return e.failStart
}

func (e *lifecycleExt) OnTurnEnd(ctx context.Context, ec *harness.ExtensionContext, text string) error {
	e.log.add(e.name + ".end")
	return e.failEnd
}

func (e *lifecycleExt) OnTurnComplete(ctx context.Context, ec *harness.ExtensionContext, r *harness.RunResult) {
	e.log.add(e.name + ".complete")
	e.results = append(e.results, r)
}

func (e *lifecycleExt) OnSaveSession(ctx context.Context, ec *harness.ExtensionContext) (any, error) {
	e.log.add(e.name + ".save")
	return map[string]any{"version": 1, "count": e.state}, nil
}

func (e *lifecycleExt) OnLoadSession(ctx context.Context, ec *harness.ExtensionContext, raw json.RawMessage) error {
	e.log.add(e.name + ".load")
	var s struct {
		Version int `json:"version"`
		Count   int `json:"count"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.Version != 1 || s.Count < 0 {
		return fmt.Errorf("invalid state %s", raw)
	}
	e.state = s.Count
	return nil
}

func (e *lifecycleExt) Teardown(ctx context.Context) error {
	e.log.add(e.name + ".teardown")
	return e.failTear
}

func TestExtensionLifecycleOrder(t *testing.T) {
	log := &orderLog{}
	late := &lifecycleExt{name: "late", prio: 200, log: log}
	first := &lifecycleExt{name: "first", log: log}
	second := &lifecycleExt{name: "second", log: log}
	early := &lifecycleExt{name: "early", prio: 10, log: log}
	p := ht.NewScriptedProvider(ht.Reply("hi"))
	a, err := harness.New(harness.WithProvider(p), harness.WithExtensions(late, first, second, early))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SaveSession(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"early.install", "first.install", "second.install", "late.install",
		"early.start", "first.start", "second.start", "late.start",
		"early.end", "first.end", "second.end", "late.end",
		"late.complete", "second.complete", "first.complete", "early.complete",
		"early.save", "first.save", "second.save", "late.save",
		"late.teardown", "second.teardown", "first.teardown", "early.teardown",
	}
	if got := log.list(); !slices.Equal(got, want) {
		t.Errorf("order:\n got %v\nwant %v", got, want)
	}
	if got := p.Requests()[0].System; got != "from early\n\nfrom first\n\nfrom second\n\nfrom late" {
		t.Errorf("prompt providers in install order: %q", got)
	}
	if r := first.results[0]; r.Status != harness.StatusCompleted || r.Text != "hi" {
		t.Errorf("OnTurnComplete got %+v", r)
	}
}

func TestExtensionNames(t *testing.T) {
	log := &orderLog{}
	for _, c := range []struct {
		name string
		exts []harness.Extension
		want string
	}{
		{"empty", []harness.Extension{&lifecycleExt{name: "", log: log}}, "empty name"},
		{"collision", []harness.Extension{&lifecycleExt{name: "a", log: log}, &lifecycleExt{name: "a", log: log}}, "more than one"},
		{"nil", []harness.Extension{nil}, "nil extension"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := harness.New(harness.WithProvider(ht.NewScriptedProvider()), harness.WithExtensions(c.exts...))
			if !errors.Is(err, harness.ErrExtension) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	if got := log.list(); len(got) != 0 {
		t.Errorf("name collisions must be rejected before any install: %v", got)
	}
}

func TestInstallFailureRollsBack(t *testing.T) {
	log := &orderLog{}
	good := &lifecycleExt{name: "good", log: log}
	bad := &lifecycleExt{name: "bad", log: log, failInstal: errors.New("no config")}
	never := &lifecycleExt{name: "never", prio: 300, log: log}
	_, err := harness.New(harness.WithProvider(ht.NewScriptedProvider()), harness.WithExtensions(good, bad, never))
	var ee *harness.ExtensionError
	if !errors.As(err, &ee) || ee.Extension != "bad" || ee.Op != "install" || !strings.Contains(err.Error(), "no config") {
		t.Fatalf("err = %v", err)
	}
	if got := log.list(); !slices.Equal(got, []string{"good.install", "bad.install", "good.teardown"}) {
		t.Errorf("log = %v (later extensions must not install; earlier ones are torn down)", got)
	}
}

func TestInstallFailureRemovesRegistrations(t *testing.T) {
	bad := &lifecycleExt{name: "bad", log: &orderLog{}, failInstal: errors.New("nope")}
	var during harness.Inventory
	// A panicking install is a failure too.
	panicky := &panicExt{}
	for _, ext := range []harness.Extension{bad, panicky} {
		holder := &holderExt{}
		_, err := harness.New(harness.WithProvider(ht.NewScriptedProvider()), harness.WithExtensions(holder, ext))
		if err == nil {
			t.Fatalf("%s: install should fail", ext.Name())
		}
		during = holder.ec.Agent().Inventory()
		if len(during.Tools) != 0 || len(during.Middleware) != 0 || len(during.Hooks) != 0 || during.PromptProviders != 0 {
			t.Errorf("%s: registrations left after failed New: %+v", ext.Name(), during)
		}
	}
}

type holderExt struct{ ec *harness.ExtensionContext }

func (h *holderExt) Name() string                               { return "holder" }
func (h *holderExt) Install(ec *harness.ExtensionContext) error { h.ec = ec; return nil }

type panicExt struct{}

func (panicExt) Name() string { return "panicky" }
func (panicExt) Install(ec *harness.ExtensionContext) error {
	ec.RegisterPromptProvider(func() string { return "x" })
	panic("install blew up")
}

func TestTurnStartAndEndErrors(t *testing.T) {
	t.Run("start error fails the turn", func(t *testing.T) {
		ext := &lifecycleExt{name: "x", log: &orderLog{}, failStart: errors.New("no resource")}
		p := ht.NewScriptedProvider(ht.Reply("never"))
		a := newAgent(t, p, harness.WithExtensions(ext))
		res, err := a.Run(context.Background(), "hi")
		var ee *harness.ExtensionError
		if !errors.As(err, &ee) || ee.Op != "turn_start" || res.Status != harness.StatusFailed {
			t.Fatalf("%+v %v", res, err)
		}
		if len(p.Requests()) != 0 || len(a.Messages()) != 0 {
			t.Errorf("a failed turn start must not reach the model nor add messages")
		}
		if !contains(ext.log.list(), "x.complete") {
			t.Errorf("failure is terminal: complete must run: %v", ext.log.list())
		}
	})
	t.Run("end error fails the run", func(t *testing.T) {
		ext := &lifecycleExt{name: "x", log: &orderLog{}, failEnd: errors.New("flush failed")}
		a := newAgent(t, ht.NewScriptedProvider(ht.Reply("text")), harness.WithExtensions(ext))
		res, err := a.Run(context.Background(), "hi")
		var ee *harness.ExtensionError
		if !errors.As(err, &ee) || ee.Op != "turn_end" || res.Status != harness.StatusFailed || res.Text != "text" {
			t.Fatalf("%+v %v", res, err)
		}
		if r := ext.results[0]; r.Status != harness.StatusFailed {
			t.Errorf("complete saw %s", r.Status)
		}
	})
}

func TestCloseTearsDownAndRemovesRegistrations(t *testing.T) {
	log := &orderLog{}
	a1 := &lifecycleExt{name: "a1", log: log, failTear: errors.New("a1 leak")}
	a2 := &lifecycleExt{name: "a2", log: log, failTear: errors.New("a2 leak")}
	a, err := harness.New(harness.WithProvider(ht.NewScriptedProvider()), harness.WithTools(echoTool()), harness.WithExtensions(a1, a2))
	if err != nil {
		t.Fatal(err)
	}
	inv := a.Inventory()
	if !slices.Equal(inv.Tools, []string{"echo", "a1_tool", "a2_tool"}) || len(inv.Middleware) != 2 || inv.Hooks[harness.EventRunEnd] != 2 || inv.PromptProviders != 2 {
		t.Fatalf("inventory = %+v", inv)
	}
	err = a.Close(context.Background())
	if !strings.Contains(fmt.Sprint(err), "a1 leak") || !strings.Contains(fmt.Sprint(err), "a2 leak") {
		t.Fatalf("Close must join every teardown error: %v", err)
	}
	inv = a.Inventory()
	if !slices.Equal(inv.Tools, []string{"echo"}) || len(inv.Middleware) != 0 || len(inv.Hooks) != 0 || inv.PromptProviders != 0 {
		t.Errorf("after Close: %+v", inv)
	}
	if err2 := a.Close(context.Background()); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("second Close = %v", err2)
	}
	if got := log.list(); strings.Count(strings.Join(got, ","), "teardown") != 2 {
		t.Errorf("teardown ran more than once: %v", got)
	}
}

// handleExt exposes its context for handle tests.
type handleExt struct {
	name string
	ec   *harness.ExtensionContext
}

func (h *handleExt) Name() string                               { return h.name }
func (h *handleExt) Install(ec *harness.ExtensionContext) error { h.ec = ec; return nil }

func TestHandlesAndReplacement(t *testing.T) {
	e1, e2 := &handleExt{name: "e1"}, &handleExt{name: "e2"}
	a := newAgent(t, ht.NewScriptedProvider(), harness.WithTools(echoTool()), harness.WithExtensions(e1, e2))

	if _, err := e1.ec.RegisterTool(echoTool()); !errors.Is(err, harness.ErrDuplicateTool) {
		t.Fatalf("duplicate without replace: %v", err)
	}
	v1 := echoTool()
	v1.Description = "v1"
	h1, err := e1.ec.ReplaceTool(v1)
	if err != nil {
		t.Fatal(err)
	}
	if tool, _ := a.Tool("echo"); tool.Description != "v1" {
		t.Fatalf("replacement not active")
	}
	h1.Close()
	h1.Close() // harmless
	if tool, _ := a.Tool("echo"); tool.Description != "Echo the text." {
		t.Fatalf("closing the replacement must restore the original, got %q", tool.Description)
	}

	// e1 replaces, e2 replaces on top; e1 closing does not disturb e2's.
	h1, _ = e1.ec.ReplaceTool(v1)
	v2 := echoTool()
	v2.Description = "v2"
	h2, _ := e2.ec.ReplaceTool(v2)
	h1.Close()
	if tool, _ := a.Tool("echo"); tool.Description != "v2" {
		t.Fatalf("e1 no longer owns the active binding; got %q", tool.Description)
	}
	h2.Close()
	if tool, _ := a.Tool("echo"); tool.Description != "Echo the text." {
		t.Fatalf("got %q", tool.Description)
	}

	hm, _ := e1.ec.AddMiddleware(&tracer{"m", &orderLog{}})
	hh, _ := e1.ec.OnHook(harness.EventRunStart, func(context.Context, *harness.Event) error { return nil })
	hp, _ := e1.ec.RegisterPromptProvider(func() string { return "p" })
	inv := a.Inventory()
	if len(inv.Middleware) != 1 || inv.Hooks[harness.EventRunStart] != 1 || inv.PromptProviders != 1 {
		t.Fatalf("inventory = %+v", inv)
	}
	hm.Close()
	hh.Close()
	hp.Close()
	inv = a.Inventory()
	if len(inv.Middleware) != 0 || len(inv.Hooks) != 0 || inv.PromptProviders != 0 {
		t.Fatalf("after closing handles: %+v", inv)
	}
}

func TestPromptProviderPanicIgnoredAndState(t *testing.T) {
	e := &handleExt{name: "e"}
	p := ht.NewScriptedProvider(ht.Reply("ok"))
	log, buf := logBuffer()
	a := newAgent(t, p, harness.WithSystemPrompt("base"), harness.WithExtensions(e), harness.WithLogger(log))
	e.ec.RegisterPromptProvider(func() string { panic("bad provider") })
	e.ec.RegisterPromptProvider(func() string { return "" })
	e.ec.RegisterPromptProvider(func() string { return "tail" })
	if _, err := a.Run(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	if got := p.Requests()[0].System; got != "base\n\ntail" {
		t.Errorf("system = %q", got)
	}
	if !strings.Contains(buf.String(), "prompt provider panicked") {
		t.Errorf("panic not logged: %s", buf.String())
	}
	e.ec.SetState("e.counter", 3)
	if v, ok := e.ec.GetState("e.counter"); !ok || v != 3 {
		t.Errorf("state = %v %v", v, ok)
	}
	if _, ok := e.ec.GetState("missing"); ok {
		t.Errorf("missing key reported present")
	}
}

// passiveMW implements one stage and changes nothing.
type passiveMW struct{}

func (passiveMW) BeforeModelRequest(context.Context, *harness.ModelRequest) error { return nil }
