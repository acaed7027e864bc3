package harness_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

// within runs fn and fails the test if it does not return in 10 s (a
// deadlock): the goroutine then leaks, and the test binary reports it.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return: deadlock", what)
	}
}

func namedTool(name string) *harness.Tool {
	t := echoTool()
	t.Name = name
	return t
}

// A transform that tries to change registrations gets ErrInTransform from
// every method that would, and New does not deadlock.
func TestRegisterFromTransformFails(t *testing.T) {
	var errs map[string]error
	var earlier *harness.Handle
	ext := &funcExt{name: "x"}
	ext.install = func(ec *harness.ExtensionContext) error {
		var err error
		if earlier, err = ec.RegisterTool(namedTool("earlier")); err != nil {
			return err
		}
		_, err = ec.TransformTools(func(tools []*harness.Tool) []*harness.Tool {
			if errs != nil {
				return tools // once is enough
			}
			run := func(context.Context, string) (harness.CommandResult, error) { return harness.CommandResult{}, nil }
			errs = map[string]error{}
			_, errs["RegisterTool"] = ec.RegisterTool(namedTool("inner"))
			_, errs["ReplaceTool"] = ec.ReplaceTool(namedTool("echo"))
			_, errs["AddMiddleware"] = ec.AddMiddleware(passiveMW{})
			_, errs["OnHook"] = ec.OnHook(harness.EventRunEnd, func(context.Context, *harness.Event) error { return nil })
			_, errs["RegisterPromptProvider"] = ec.RegisterPromptProvider(func() string { return "" })
			_, errs["RegisterCommand"] = ec.RegisterCommand(harness.Command{Name: "inner", Run: run})
			_, errs["TransformTools"] = ec.TransformTools(func(t []*harness.Tool) []*harness.Tool { return t })
			_, errs["Instructions.Set"] = ec.Instructions().Set("x.k", "text")
			errs["RefreshTools"] = ec.RefreshTools()
			errs["Activate"] = ec.Agent().Tools().Activate("echo")
			errs["Deactivate"] = ec.Agent().Tools().Deactivate("echo")
			errs["Handle.Close"] = earlier.Close()
			// Reads do not block either.
			ec.Agent().Tool("echo")
			ec.Agent().Inventory()
			ec.Agent().Tools().Offered()
			ec.Agent().Tools().Active()
			return tools
		})
		return err
	}
	var a *harness.Agent
	within(t, "New with a transform that registers", func() {
		a = newAgent(t, ht.NewScriptedProvider(), harness.WithTools(echoTool()), harness.WithExtensions(ext))
	})
	if len(errs) == 0 {
		t.Fatal("the transform did not run")
	}
	for name, err := range errs {
		if !errors.Is(err, harness.ErrInTransform) {
			t.Errorf("%s from a transform: %v; want ErrInTransform", name, err)
		}
	}
	inv := a.Inventory()
	if !slices.Equal(inv.Tools, []string{"echo", "earlier"}) || len(inv.Middleware) != 0 || len(inv.Commands) != 0 {
		t.Errorf("a refused registration took effect: %+v", inv)
	}
	// The handle refused inside the transform still works outside.
	if err := earlier.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Tool("earlier"); ok {
		t.Error("Close outside the transform did not remove the tool")
	}
}

// While a transform runs on one goroutine, a registration from another
// waits for it and succeeds: only the transform's own goroutine is refused.
func TestRegisterDuringTransformFromAnotherGoroutine(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var block atomic.Bool
	ext := &funcExt{name: "x", install: func(ec *harness.ExtensionContext) error {
		_, err := ec.TransformTools(func(tools []*harness.Tool) []*harness.Tool {
			if block.CompareAndSwap(true, false) {
				close(entered)
				<-release
			}
			return tools
		})
		return err
	}}
	a := newAgent(t, ht.NewScriptedProvider(), harness.WithExtensions(ext))
	block.Store(true)
	refreshed := make(chan error, 1)
	go func() { refreshed <- ext.ec.RefreshTools() }()
	<-entered
	registered := make(chan error, 1)
	go func() {
		_, err := ext.ec.RegisterTool(namedTool("late"))
		registered <- err
	}()
	select {
	case err := <-registered:
		t.Fatalf("RegisterTool returned while a transform ran on another goroutine: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-refreshed; err != nil {
		t.Errorf("RefreshTools: %v", err)
	}
	if err := <-registered; err != nil {
		t.Errorf("RegisterTool from another goroutine: %v; want it to wait and succeed", err)
	}
	if _, ok := a.Tool("late"); !ok {
		t.Error("the waiting registration is not in the catalog")
	}
}

// A transform that panics is skipped: the transforms before and after it
// apply, its input passes on intact, and the failure is a hook event.
func TestPanickingTransformIsSkipped(t *testing.T) {
	log, buf := logBuffer()
	rec := &ht.HookRecorder{}
	add := &funcExt{name: "adder", install: func(ec *harness.ExtensionContext) error {
		_, err := ec.TransformTools(func(tools []*harness.Tool) []*harness.Tool {
			return append(tools, namedTool("added"))
		})
		return err
	}}
	bad := &funcExt{name: "buggy", install: func(ec *harness.ExtensionContext) error {
		_, err := ec.TransformTools(func(tools []*harness.Tool) []*harness.Tool {
			tools[0] = nil // damages its copy before it fails
			tools = tools[:1]
			panic("policy bug")
		})
		return err
	}}
	mark := &funcExt{name: "marker", install: func(ec *harness.ExtensionContext) error {
		_, err := ec.TransformTools(suffix(" [marked]"))
		return err
	}}
	a := newAgent(t, ht.NewScriptedProvider(), harness.WithTools(echoTool()), harness.WithLogger(log), rec.Option(),
		harness.WithExtensions(add, bad, mark))
	if got := a.Inventory().Tools; !slices.Equal(got, []string{"echo", "added"}) {
		t.Errorf("catalog = %q; want the other transforms applied", got)
	}
	for _, name := range []string{"echo", "added"} {
		if tool, ok := a.Tool(name); !ok || !strings.HasSuffix(tool.Description, " [marked]") {
			t.Errorf("tool %s: %+v; want the transform after the failed one applied", name, tool)
		}
	}
	failed := rec.Of(harness.EventHookFailed)
	if len(failed) == 0 {
		t.Fatal("no EventHookFailed for the panicking transform")
	}
	var xe *harness.ExtensionError
	var pe *harness.PanicError
	if ev := failed[len(failed)-1]; !errors.As(ev.Err, &xe) || xe.Extension != "buggy" || xe.Op != "tool_transform" ||
		!errors.As(ev.Err, &pe) || pe.Value != "policy bug" || ev.FailedEvent != 0 {
		t.Errorf("failure event = %+v (%v)", ev, ev.Err)
	}
	if !strings.Contains(buf.String(), "tool transform panicked") || !strings.Contains(buf.String(), "buggy") {
		t.Errorf("log lacks the failure: %s", buf)
	}
	// Each rebuild reports it again while it keeps failing.
	n := len(rec.Of(harness.EventHookFailed))
	if err := bad.ec.RefreshTools(); err != nil {
		t.Fatal(err)
	}
	if got := len(rec.Of(harness.EventHookFailed)); got != n+1 {
		t.Errorf("events after a refresh: %d; want %d", got, n+1)
	}
}

// Run, Resume and Close called from an Install fail with ErrInstalling and
// run nothing; after New they work.
func TestRunDuringInstallFails(t *testing.T) {
	p := ht.NewScriptedProvider(ht.Reply("hi"))
	var runErr, resumeErr, closeErr error
	var runRes *harness.RunResult
	first := &funcExt{name: "first", install: func(ec *harness.ExtensionContext) error {
		runRes, runErr = ec.Agent().Run(context.Background(), "hello")
		_, resumeErr = ec.Agent().Resume(context.Background())
		closeErr = ec.Agent().Close(context.Background())
		return nil
	}}
	var installedLater atomic.Bool
	later := &funcExt{name: "later", install: func(ec *harness.ExtensionContext) error {
		installedLater.Store(true)
		return nil
	}}
	a := newAgent(t, p, harness.WithExtensions(first, later))
	for name, err := range map[string]error{"Run": runErr, "Resume": resumeErr, "Close": closeErr} {
		if !errors.Is(err, harness.ErrInstalling) {
			t.Errorf("%s during Install: %v; want ErrInstalling", name, err)
		}
	}
	if runRes != nil || len(p.Requests()) != 0 || len(a.Messages()) != 0 {
		t.Errorf("Run during Install ran: %+v, %d requests", runRes, len(p.Requests()))
	}
	if !installedLater.Load() {
		t.Error("the next extension was not installed")
	}
	if res, err := a.Run(context.Background(), "hello"); err != nil || res.Text != "hi" {
		t.Errorf("Run after New: %v, %+v", err, res)
	}
}

// The registrations of one Install rebuild the catalog once: the
// transforms run once per Install, not once per registration.
func TestOneRebuildPerInstall(t *testing.T) {
	var calls atomic.Int32
	count := func(tools []*harness.Tool) []*harness.Tool { calls.Add(1); return tools }
	run := func(context.Context, string) (harness.CommandResult, error) { return harness.CommandResult{}, nil }
	var foundOwn bool
	a := &funcExt{name: "a", install: func(ec *harness.ExtensionContext) error {
		if _, err := ec.TransformTools(count); err != nil {
			return err
		}
		deferred := namedTool("a_deferred")
		deferred.Deferred = true
		for _, tool := range []*harness.Tool{namedTool("a_one"), namedTool("a_two"), deferred} {
			if _, err := ec.RegisterTool(tool); err != nil {
				return err
			}
		}
		if _, err := ec.RegisterCommand(harness.Command{Name: "a", Run: run}); err != nil {
			return err
		}
		if _, err := ec.AddMiddleware(passiveMW{}); err != nil {
			return err
		}
		if _, err := ec.OnHook(harness.EventRunEnd, func(context.Context, *harness.Event) error { return nil }); err != nil {
			return err
		}
		if _, err := ec.RegisterPromptProvider(func() string { return "" }); err != nil {
			return err
		}
		_, err := ec.Instructions().Set("a.rules", "Be brief.")
		return err
	}}
	if _, err := harness.New(harness.WithProvider(ht.NewScriptedProvider()), harness.WithStateDir(""),
		harness.WithTools(echoTool(), namedTool("native")), harness.WithExtensions(a)); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("one Install with 9 registrations ran the transform %d times; want 1", got)
	}

	// A second extension's Install is one more rebuild, even when it reads
	// the catalog it is building (which rebuilds it early).
	calls.Store(0)
	b := &funcExt{name: "b", install: func(ec *harness.ExtensionContext) error {
		if _, err := ec.RegisterTool(namedTool("b_one")); err != nil {
			return err
		}
		_, foundOwn = ec.Agent().Tool("b_one")
		if err := ec.Agent().Tools().Activate("a_deferred"); err != nil {
			return err
		}
		_, err := ec.RegisterTool(namedTool("b_two"))
		return err
	}}
	a.ec = nil
	ag, err := harness.New(harness.WithProvider(ht.NewScriptedProvider()), harness.WithStateDir(""), harness.WithExtensions(a, b))
	if err != nil {
		t.Fatal(err)
	}
	if !foundOwn {
		t.Error("an Install does not see the tool it registered")
	}
	if got := calls.Load(); got != 3 {
		t.Errorf("transform runs = %d; want 3 (a's Install, b's read of the catalog, b's Install)", got)
	}
	if got := ag.Inventory().Tools; !slices.Contains(got, "b_two") {
		t.Errorf("catalog = %q", got)
	}
	// Close removes a's 9 and b's 2 registrations with one rebuild each.
	calls.Store(0)
	if err := ag.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("Close ran the transform %d times; want 1 (b's registrations removed; a's include the transform)", got)
	}
}
