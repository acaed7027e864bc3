package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

type cmdExt struct {
	funcExt
	runs    atomic.Int32
	starts  atomic.Int32
	lastArg atomic.Value
	fail    error
}

func (e *cmdExt) OnTurnStart(context.Context, *harness.ExtensionContext, string) error {
	e.starts.Add(1)
	return nil
}

func newCmdExt() *cmdExt {
	e := &cmdExt{}
	e.name = "cmds"
	e.install = func(ec *harness.ExtensionContext) error {
		if _, err := ec.RegisterCommand(harness.Command{Name: "status", Description: "Show the status.",
			Run: func(ctx context.Context, args string) (harness.CommandResult, error) {
				e.runs.Add(1)
				e.lastArg.Store(args)
				if e.fail != nil {
					return harness.CommandResult{}, e.fail
				}
				return harness.CommandResult{Output: "status: ok " + args}, nil
			}}); err != nil {
			return err
		}
		_, err := ec.RegisterCommand(harness.Command{Name: "review", Description: "Review a file.",
			Run: func(ctx context.Context, args string) (harness.CommandResult, error) {
				e.runs.Add(1)
				return harness.CommandResult{Output: "reviewing", Prompt: "Review " + args + " carefully."}, nil
			}})
		return err
	}
	return e
}

func TestCommandOutput(t *testing.T) {
	ext := newCmdExt()
	p := ht.NewScriptedProvider()
	rec := &ht.HookRecorder{}
	a := newAgent(t, p, harness.WithExtensions(ext), rec.Option())
	rec.Reset() // the session start
	res, err := a.Run(context.Background(), "/status   all  the things ")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != harness.StatusCompleted || res.Text != "status: ok all  the things" || res.Command == nil ||
		res.Command.Name != "status" || res.Command.Args != "all  the things" || res.Command.Replayed {
		t.Errorf("result = %+v, command %+v", res, res.Command)
	}
	if len(p.Requests()) != 0 || len(a.Messages()) != 0 || len(res.Messages) != 0 || res.Steps != 0 {
		t.Errorf("a command without a prompt reached the model or the history: %d requests, %d messages", len(p.Requests()), len(a.Messages()))
	}
	if ext.starts.Load() != 0 {
		t.Error("a command ran the turn-start callbacks")
	}
	if got := rec.Types(); !slices.Equal(got, []harness.HookEvent{harness.EventCommand}) {
		t.Errorf("events = %v; want only the command's", got)
	}
	if ev := rec.Of(harness.EventCommand); len(ev) != 1 || ev[0].Command.Output != "status: ok all  the things" || ev[0].RunID != res.RunID {
		t.Errorf("command event = %+v", ev)
	}
	if got := a.Inventory().Commands; !slices.Equal(got, []string{"review", "status"}) {
		t.Errorf("Inventory.Commands = %q", got)
	}
}

func TestCommandPromptBecomesRun(t *testing.T) {
	ext := newCmdExt()
	p := ht.NewScriptedProvider(ht.Reply("looks fine"))
	a := newAgent(t, p, harness.WithExtensions(ext))
	res, err := a.Run(context.Background(), "/review main.go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "looks fine" || res.Command == nil || res.Command.Output != "reviewing" || res.Steps != 1 {
		t.Errorf("result = %+v", res)
	}
	msgs := a.Messages()
	if len(msgs) != 2 || msgs[0].Text() != "Review main.go carefully." {
		t.Errorf("history = %+v; want the prompt as the user message, not the command", msgs)
	}
	if got := p.Requests()[0].Messages[0].Text(); got != "Review main.go carefully." {
		t.Errorf("the model got %q", got)
	}
	if ext.starts.Load() != 1 {
		t.Errorf("turn starts = %d; the prompt's run is an ordinary run", ext.starts.Load())
	}
}

func TestUnknownCommandAndSlashText(t *testing.T) {
	ctx := context.Background()
	ext := newCmdExt()
	p := ht.NewScriptedProvider(ht.Reply("a"), ht.Reply("b"))
	a := newAgent(t, p, harness.WithExtensions(ext))
	res, err := a.Run(ctx, "/deploy now")
	if !errors.Is(err, harness.ErrUnknownCommand) || res != nil || !strings.Contains(err.Error(), "/deploy") ||
		!strings.Contains(err.Error(), "available commands: /review, /status") {
		t.Errorf("unknown command: %v, %v", res, err)
	}
	if len(a.Messages()) != 0 || len(p.Requests()) != 0 {
		t.Error("an unknown command changed the conversation")
	}
	// Not a command name: sent as is. A double slash escapes one.
	if _, err := a.Run(ctx, "/etc/hosts is missing"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(ctx, "//status is a command"); err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	if got := reqs[0].Messages[0].Text(); got != "/etc/hosts is missing" {
		t.Errorf("model got %q", got)
	}
	if got := reqs[1].Messages[2].Text(); got != "/status is a command" {
		t.Errorf("model got %q", got)
	}
	if ext.runs.Load() != 0 {
		t.Error("a command ran")
	}

	b := newAgent(t, ht.NewScriptedProvider())
	if _, err := b.Run(ctx, "/help"); !errors.Is(err, harness.ErrUnknownCommand) || !strings.Contains(err.Error(), "no commands") {
		t.Errorf("agent without commands: %v", err)
	}
}

func TestCommandRecordedByRunID(t *testing.T) {
	dir := t.TempDir()
	ctx := harness.ContextWithRunID(context.Background(), "op-1")
	ext := newCmdExt()
	a := newAgent(t, ht.NewScriptedProvider(), harness.WithStateDir(dir), harness.WithSessionID("s"), harness.WithExtensions(ext))
	first, err := a.Run(ctx, "/status x")
	if err != nil {
		t.Fatal(err)
	}
	again, err := a.Run(ctx, "/status x")
	if err != nil {
		t.Fatal(err)
	}
	if ext.runs.Load() != 1 || !again.Command.Replayed || again.Text != first.Text || again.RunID != "op-1" {
		t.Errorf("retry: runs %d, result %+v %+v", ext.runs.Load(), again, again.Command)
	}
	// Another operation ID runs it again; the same ID with other input is refused.
	if _, err := a.Run(harness.ContextWithRunID(context.Background(), "op-2"), "/status x"); err != nil || ext.runs.Load() != 2 {
		t.Errorf("new operation: %v, runs %d", err, ext.runs.Load())
	}
	if _, err := a.Run(ctx, "/status y"); !errors.Is(err, harness.ErrInvalidRunID) || !strings.Contains(err.Error(), "/status x") {
		t.Errorf("same ID, other input: %v", err)
	}
	// Without a run ID, nothing is recorded: each submission runs.
	a.Run(context.Background(), "/status x")
	a.Run(context.Background(), "/status x")
	if ext.runs.Load() != 4 {
		t.Errorf("runs = %d; want 4", ext.runs.Load())
	}
	a.Close(context.Background())

	// After a restart, over the same state directory, the record holds.
	ext2 := newCmdExt()
	b := newAgent(t, ht.NewScriptedProvider(), harness.WithStateDir(dir), harness.WithSessionID("s"), harness.WithExtensions(ext2))
	res, err := b.Run(ctx, "/status x")
	if err != nil || ext2.runs.Load() != 0 || !res.Command.Replayed || res.Text != "status: ok x" {
		t.Errorf("after restart: %v, runs %d, %+v", err, ext2.runs.Load(), res)
	}
}

// A prompt command retried under the same run ID on a plain agent does not
// submit its prompt again: the retry returns the recorded outcome.
func TestCommandPromptRecorded(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  harness.Option
	}{{"in memory", harness.WithStateDir("")}, {"in storage", harness.WithStorage(ht.NewMemoryStorage())}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := harness.ContextWithRunID(context.Background(), "op-1")
			ext := newCmdExt()
			p := ht.NewScriptedProvider(ht.Reply("one"), ht.Reply("two"))
			rec := &ht.HookRecorder{}
			a := newAgent(t, p, tc.opt, harness.WithExtensions(ext), rec.Option())
			first, err := a.Run(ctx, "/review a.go")
			if err != nil {
				t.Fatal(err)
			}
			rec.Reset()
			res, err := a.Run(ctx, "/review a.go")
			if err != nil || ext.runs.Load() != 1 || !res.Command.Replayed || res.Text != "one" || res.Status != harness.StatusCompleted ||
				res.Steps != first.Steps || res.Usage != first.Usage || res.RunID != "op-1" {
				t.Errorf("retry: %v, runs %d, %+v", err, ext.runs.Load(), res)
			}
			if n := len(p.Requests()); n != 1 || len(a.Messages()) != 2 || len(res.Messages) != 0 {
				t.Errorf("the retry submitted the prompt again: %d model requests, %d messages", n, len(a.Messages()))
			}
			if got := rec.Types(); !slices.Equal(got, []harness.HookEvent{harness.EventCommand}) {
				t.Errorf("retry events = %v; want only the command's", got)
			}
			// Another run ID submits it again.
			if res, err := a.Run(harness.ContextWithRunID(context.Background(), "op-2"), "/review a.go"); err != nil || res.Text != "two" || ext.runs.Load() != 2 {
				t.Errorf("new run ID: %v, %+v", err, res)
			}
		})
	}
}

// The recorded outcome survives a restart, and follows a paused run to
// the end of its Resume.
func TestCommandPromptOutcomeAfterPauseAndRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := harness.ContextWithRunID(context.Background(), "op-1")
	deploy := echoTool()
	deploy.Name = "deploy"
	deploy.Permission = harness.PermissionAsk
	ext := newCmdExt()
	p := ht.NewScriptedProvider(ht.CallTool("d1", "deploy", `{"text":"x"}`), ht.Reply("deployed"))
	a := newAgent(t, p, harness.WithStateDir(dir), harness.WithSessionID("s"), harness.WithTools(deploy), harness.WithExtensions(ext))
	res, err := a.Run(ctx, "/review a.go")
	if err != nil || res.Status != harness.StatusPaused {
		t.Fatalf("first run: %v, %+v", err, res)
	}
	if _, err := a.Run(ctx, "/review a.go"); !errors.Is(err, harness.ErrPaused) {
		t.Errorf("retry while paused: %v; want ErrPaused", err)
	}
	done, err := a.Resume(ctx, harness.Approve("d1"))
	if err != nil || done.Text != "deployed" || done.Command != nil {
		t.Fatalf("resume: %v, %+v", err, done)
	}
	res, err = a.Run(ctx, "/review a.go")
	if err != nil || res.Status != harness.StatusCompleted || res.Text != "deployed" || res.Steps != 2 || !res.Command.Replayed {
		t.Errorf("retry after Resume: %v, %+v; want the resumed run's outcome", err, res)
	}
	a.Close(context.Background())

	ext2 := newCmdExt()
	p2 := ht.NewScriptedProvider(ht.Reply("again"))
	b := newAgent(t, p2, harness.WithStateDir(dir), harness.WithSessionID("s"), harness.WithTools(deploy), harness.WithExtensions(ext2))
	res, err = b.Run(ctx, "/review a.go")
	if err != nil || res.Text != "deployed" || ext2.runs.Load() != 0 || len(p2.Requests()) != 0 {
		t.Errorf("retry after a restart: %v, %+v, %d command runs, %d requests", err, res, ext2.runs.Load(), len(p2.Requests()))
	}
}

// failingPuts is a storage backend whose writes fail once ok is false.
type failingPuts struct {
	harness.StorageBackend
	ok atomic.Bool
}

func (f *failingPuts) Put(ctx context.Context, scope harness.StorageScope, key string, value json.RawMessage) error {
	if !f.ok.Load() {
		return errors.New("disk full")
	}
	return f.StorageBackend.Put(ctx, scope, key, value)
}

// When the prompt's run was submitted but its outcome not recorded (the
// process stopped during the run; here, the write failed), a retry fails
// with ErrInvalidRunID instead of submitting the prompt again. Recorded
// failures come back with their text.
func TestCommandPromptOutcomeUnknownOrFailed(t *testing.T) {
	ctx := harness.ContextWithRunID(context.Background(), "op-1")
	store := &failingPuts{StorageBackend: ht.NewMemoryStorage()}
	store.ok.Store(true)
	ext := newCmdExt()
	p := ht.NewScriptedProvider(ht.Reply("one"))
	a := newAgent(t, p, harness.WithStorage(store), harness.WithExtensions(ext), harness.WithHook(harness.EventRunStart,
		func(context.Context, *harness.Event) error { store.ok.Store(false); return nil }))
	if _, err := a.Run(ctx, "/review a.go"); err != nil {
		t.Fatal(err)
	}
	store.ok.Store(true)
	res, err := a.Run(ctx, "/review a.go")
	if !errors.Is(err, harness.ErrInvalidRunID) || !strings.Contains(err.Error(), "not recorded") || res == nil ||
		res.Status != harness.StatusFailed || !res.Command.Replayed || len(p.Requests()) != 1 {
		t.Errorf("retry with no outcome: %v, %+v, %d requests", err, res, len(p.Requests()))
	}

	ctx2 := harness.ContextWithRunID(context.Background(), "op-2")
	q := harness.ProviderFunc(func(context.Context, *harness.ModelRequest) (*harness.ModelResponse, error) {
		return nil, errors.New("model down")
	})
	rec := &ht.HookRecorder{}
	b := newAgent(t, q, harness.WithStateDir(""), harness.WithExtensions(newCmdExt()), rec.Option())
	if _, err := b.Run(ctx2, "/review a.go"); err == nil {
		t.Fatal("the run did not fail")
	}
	rec.Reset()
	res, err = b.Run(ctx2, "/review a.go")
	if err == nil || !strings.Contains(err.Error(), "model down") || res.Status != harness.StatusFailed || !res.Command.Replayed {
		t.Errorf("retry of a failed run: %v, %+v", err, res)
	}
	if ev := rec.Of(harness.EventCommand); len(ev) != 1 || ev[0].Err != nil {
		t.Errorf("command event of the retry: %+v; the command did not fail, its run did", ev)
	}
}

// With a step runner, the runner records the prompt run's steps: the
// retry executes the run again and the runner replays them, so the model
// is not asked twice either.
func TestCommandPromptRetryWithRunner(t *testing.T) {
	ctx := harness.ContextWithRunID(context.Background(), "op-1")
	ext := newCmdExt()
	p := ht.NewScriptedProvider(ht.Reply("one"), ht.Reply("two"))
	runner := ht.NewStepRunner()
	a := newAgent(t, p, harness.WithStateDir(""), harness.WithStepRunner(runner), harness.WithExtensions(ext))
	a.Run(ctx, "/review a.go")
	res, err := a.Run(ctx, "/review a.go")
	if err != nil || res.Text != "one" || ext.runs.Load() != 1 || len(p.Requests()) != 1 {
		t.Errorf("retry: %v, %+v, %d requests", err, res, len(p.Requests()))
	}
}

func TestCommandFailure(t *testing.T) {
	ctx := harness.ContextWithRunID(context.Background(), "op-1")
	ext := newCmdExt()
	ext.fail = errors.New("backend down")
	a := newAgent(t, ht.NewScriptedProvider(), harness.WithStateDir(t.TempDir()), harness.WithExtensions(ext))
	res, err := a.Run(ctx, "/status")
	if err == nil || !strings.Contains(err.Error(), "/status") || !strings.Contains(err.Error(), "backend down") ||
		res == nil || res.Status != harness.StatusFailed || !errors.Is(res.Err, ext.fail) {
		t.Errorf("failed command: %+v, %v", res, err)
	}
	// A failed command is not recorded: the retry runs it.
	ext.fail = nil
	if res, err := a.Run(ctx, "/status"); err != nil || res.Command.Replayed || ext.runs.Load() != 2 {
		t.Errorf("retry after failure: %+v, %v, runs %d", res, err, ext.runs.Load())
	}
}

func TestRegisterCommandErrors(t *testing.T) {
	ext := newCmdExt()
	newAgent(t, ht.NewScriptedProvider(), harness.WithExtensions(ext))
	run := func(context.Context, string) (harness.CommandResult, error) { return harness.CommandResult{}, nil }
	if _, err := ext.ec.RegisterCommand(harness.Command{Name: "status", Run: run}); !errors.Is(err, harness.ErrDuplicateCommand) {
		t.Errorf("duplicate: %v", err)
	}
	for _, name := range []string{"", "9lives", "with space", "a/b", "ünï", strings.Repeat("a", 65)} {
		if _, err := ext.ec.RegisterCommand(harness.Command{Name: name, Run: run}); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	if _, err := ext.ec.RegisterCommand(harness.Command{Name: "norun"}); err == nil {
		t.Error("a command without Run accepted")
	}
	h, err := ext.ec.RegisterCommand(harness.Command{Name: "mcp:list", Run: run})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if got := ext.ec.Agent().Inventory().Commands; slices.Contains(got, "mcp:list") {
		t.Errorf("closed command still registered: %q", got)
	}
}
