package durable

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// waitAsk waits until run runID asks a question, and returns its first.
// When a child process runs it, the child ending first (exited; nil for
// none) fails the test with its standard error.
func waitAsk(t *testing.T, rt *Runtime, runID string, exited <-chan error, stderr *strings.Builder) PendingAsk {
	t.Helper()
	for {
		p, err := rt.Pending(ctxT(t), PendingOf(runID))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Asks) > 0 {
			return p.Asks[0]
		}
		select {
		case err := <-exited:
			t.Fatalf("the child ended before it asked: %v\nstderr: %s", err, stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stopOutsideAWrite stops the process p (SIGSTOP) at a moment when it
// holds no write lock of the fixture's database: SQLite has one writer at
// a time, and a process stopped inside a write transaction would keep
// everybody else's writes waiting. It stops, checks that a write can
// begin, and otherwise lets the process go on a little and tries again.
func stopOutsideAWrite(t *testing.T, dir string, p *os.Process) {
	t.Helper()
	db, err := openLeaseDB(ctxT(t), fixtureDSN(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer db.close()
	for try := 1; ; try++ {
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		tx, err := db.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE on SQLite: the write lock
		if err == nil {
			err = tx.Rollback()
		}
		cancel()
		if err == nil {
			return
		}
		if try == 20 {
			t.Fatalf("the stopped process keeps the database's write lock: %v", err)
		}
		if err := p.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond)
	}
}

// TestSecondAnswerWhileParked: while a question waits (its process is
// stopped, so that the first answer is not taken yet), a second, different
// answer is ErrAlreadyAnswered and the first one stands; the same answer
// again is harmless. Status and Pending report the question, with its
// tool, while it waits.
func TestSecondAnswerWhileParked(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		ctx := ctxT(t)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"=run", envDir+"="+dir, envAgent+"=ask", envRun+"=r2")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited, gone := make(chan error, 1), make(chan struct{})
		go func() { exited <- cmd.Wait(); close(gone) }()
		defer func() {
			_ = cmd.Process.Signal(syscall.SIGCONT)
			select {
			case <-gone:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
			}
		}()
		rt := openFixture(t, dir, false, WithExecutorID("client"))
		ask := waitAsk(t, rt, "r2", exited, &stderr)
		if ask.RunID != "r2" || ask.Tool != "asker" || ask.Key != "r2/tool/1/c1" {
			t.Fatalf("pending ask %+v", ask)
		}
		if other, err := rt.Pending(ctx, PendingOf("nobody")); err != nil || len(other.Asks)+len(other.Approvals) != 0 {
			t.Fatalf("pending of another run: %+v %v", other, err)
		}
		waitStatus(t, rt, "r2", func(st *RunStatus) bool { return st.Parked })
		stopOutsideAWrite(t, dir, cmd.Process)
		st, err := rt.Status(ctx, "r2")
		if err != nil || st.State != StateWaiting || !st.Parked || len(st.Asks) != 1 || st.Asks[0].Request.ID != ask.Request.ID || st.ExecutorID != DefaultExecutorID ||
			st.AppVersion != DefaultAppVersion || st.Attempt != 1 {
			t.Fatalf("status %+v %v", st, err)
		}
		if err := rt.Reply(ctx, "r2", ask.Request.ID, harness.Answer{Choice: "red"}); err != nil {
			t.Fatal(err)
		}
		err = rt.Reply(ctx, "r2", ask.Request.ID, harness.Answer{Choice: "blue"})
		var e *Error
		if !errors.Is(err, ErrAlreadyAnswered) || !errors.As(err, &e) || e.RunID != "r2" || e.Op != "reply" {
			t.Fatalf("a different second answer while parked: %v", err)
		}
		if err := rt.Reply(ctx, "r2", ask.Request.ID, harness.Answer{Choice: "red"}); err != nil {
			t.Fatalf("the same answer again: %v", err)
		}
		if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("child: %v\n%s", err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the child did not finish")
		}
		var out runOutput
		if err := json.Unmarshal([]byte(stdout.String()), &out); err != nil || out.Text != "done: c1=chose red[ok]" {
			t.Fatalf("child's result %q %v", stdout.String(), err)
		}
		if err := rt.Reply(ctx, "r2", ask.Request.ID, harness.Answer{Choice: "blue"}); !errors.Is(err, ErrAlreadyAnswered) {
			t.Fatalf("a different answer after the run: %v", err)
		}
		st, err = rt.Status(ctx, "r2")
		if err != nil || st.State != StateCompleted || st.Err != nil || len(st.Asks) != 0 {
			t.Fatalf("status after %+v %v", st, err)
		}
	})
}

// TestAskOutsideADurableRun: an agent given the runtime's step runner
// but run directly (not by the runtime) gets ErrAskUnsupported from
// AskUser, not a database error.
func TestAskOutsideADurableRun(t *testing.T) {
	rt := openFixture(t, t.TempDir(), true)
	var askErr error
	asker := harness.MustTool(harness.NewTool("asker", "asks", func(ctx context.Context, _ struct{}) (string, error) {
		_, askErr = harness.AskUser(ctx, harness.AskRequest{Kind: harness.AskConfirm, Prompt: "sure?"})
		return "asked", nil
	}))
	asker.ReplayPolicy = harness.ReplaySafe
	p := harnesstest.NewScriptedProvider(
		harnesstest.CallTool("c1", "asker", map[string]any{}),
		harnesstest.Reply("ok"),
	)
	agent, err := harness.New(harness.WithProvider(p), harness.WithModel("m"), harness.WithTools(asker), harness.WithStepRunner(rt.Runner()))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close(context.Background())
	if _, err := agent.Run(ctxT(t), "go"); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(askErr, harness.ErrAskUnsupported) {
		t.Fatalf("AskUser outside a durable run: %v", askErr)
	}
}

// TestVersionMismatch: a run pinned to another application version is
// neither waited for nor moved by a runtime of this version: Wait, Resume
// and Status say so, naming both versions, and the run stays where it is.
func TestVersionMismatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		ctx := ctxT(t)
		// A client of version "old" submits a run that no worker takes.
		old := openFixture(t, dir, false, WithExecutorID("old-client"), WithAppVersion("old"), WithQueue(testQueue))
		if _, err := old.Submit(ctx, "safe", "go", WithRunID("v1")); err != nil {
			t.Fatal(err)
		}
		rt := openFixture(t, dir, false, WithExecutorID("new-client"), WithQueue(testQueue))
		start := time.Now()
		_, err := rt.Wait(ctx, "v1")
		var e *Error
		if !errors.Is(err, ErrVersionMismatch) || !errors.As(err, &e) || e.RunID != "v1" ||
			!strings.Contains(err.Error(), `"old"`) || !strings.Contains(err.Error(), `"`+DefaultAppVersion+`"`) {
			t.Fatalf("wait: %v", err)
		}
		if _, err := rt.Resume(ctx, "v1"); !errors.Is(err, ErrVersionMismatch) {
			t.Fatalf("resume: %v", err)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("the calls took %v: they waited", time.Since(start))
		}
		st, err := rt.Status(ctx, "v1")
		if err != nil || st.State != StateQueued || st.AppVersion != "old" || st.Queue != testQueue {
			t.Fatalf("status %+v %v", st, err)
		}
		if _, err := rt.Status(ctx, "nobody"); !errors.Is(err, ErrUnknownRun) {
			t.Fatalf("status of an unknown run: %v", err)
		}
	})
}
