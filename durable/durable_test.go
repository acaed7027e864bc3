package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessx/harnessx/harness"
)

func TestMain(m *testing.M) {
	switch os.Getenv(envChild) {
	case "run", "pause":
		os.Exit(child())
	case "reply":
		os.Exit(childReply())
	case "worker":
		os.Exit(childWorker())
	}
	stop := watchdog(12 * time.Minute)
	defer stop()
	goleak.VerifyTestMain(m, goleakOptions()...)
}

// watchdog ends the test process after d with the stacks of the
// goroutines that run harnessx code: a hang fails in minutes, with the
// frames that tell where, rather than at go test's timeout with a dump of
// every goroutine that a CI log cuts short.
func watchdog(d time.Duration) (stop func()) {
	t := time.AfterFunc(d, func() {
		buf := make([]byte, 64<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var b strings.Builder
		others := 0
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if strings.Contains(g, "harnessx/harnessx/") {
				b.WriteString(g)
				b.WriteString("\n\n")
			} else {
				others++
			}
		}
		fmt.Fprintf(os.Stderr, "durable tests: still running after %v: the goroutines in harnessx code (%d others not shown):\n\n%s", d, others, b.String())
		os.Exit(2)
	})
	return func() { t.Stop() }
}

// goleakOptions ignores the goroutines DBOS leaves after Shutdown: the
// SQLite driver's connection openers and DBOS's database retriers that
// stop on their own shortly after.
func goleakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("database/sql.(*DB).connectionOpener"),
		goleak.IgnoreAnyFunction("database/sql.(*DB).connectionCleaner"),
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// runResult is what a call that runs or waits for a run returned.
type runResult struct {
	res *harness.RunResult
	err error
}

// async calls f in a goroutine; the channel delivers what it returned.
func async(f func() (*harness.RunResult, error)) <-chan runResult {
	ch := make(chan runResult, 1)
	go func() {
		res, err := f()
		ch <- runResult{res, err}
	}()
	return ch
}

func TestRunCompletes(t *testing.T) {
	dir := t.TempDir()
	rt := openFixture(t, dir, true)
	res, err := rt.Run(ctxT(t), "safe", "go", WithRunID("r1"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != harness.StatusCompleted || res.Text != "done: c1=safe-ok[ok]" || res.RunID != "r1" || res.Steps != 2 {
		t.Fatalf("result %+v", res)
	}
	if res.Usage.InputTokens != 30 {
		t.Fatalf("usage %+v", res.Usage)
	}
	// The same run ID again returns the recorded outcome without running.
	before := counts(t, dir)
	res2, err := rt.Run(ctxT(t), "safe", "other", WithRunID("r1"))
	if err != nil || res2.Text != res.Text {
		t.Fatalf("rerun: %+v %v", res2, err)
	}
	if after := counts(t, dir); !reflect.DeepEqual(before, after) {
		t.Fatalf("a rerun of a finished run worked: %v -> %v", before, after)
	}
	if _, err := rt.Run(ctxT(t), "nobody", "go"); !errors.Is(err, ErrUnknownAgent) {
		t.Fatalf("unknown agent: %v", err)
	}
	if err := rt.Register("late", factory(dir, "safe")); !errors.Is(err, ErrRegistration) {
		t.Fatalf("register after launch: %v", err)
	}
}

func TestModelResponseRoundTrip(t *testing.T) {
	in := &harness.ModelResponse{
		Message: harness.Message{Role: harness.RoleAssistant, Content: []harness.Part{
			{Type: harness.PartReasoning, Text: "think", ProviderData: json.RawMessage(`{"signature":"abc"}`)},
			{Type: harness.PartText, Text: "hi ✓"},
			{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "c1", Name: "t", Input: json.RawMessage(`{"a":[1,2.5,"x"],"b":null}`)}},
		}},
		StopReason: harness.StopToolUse, RawStopReason: "tool_calls",
		Usage: harness.Usage{InputTokens: 1, OutputTokens: 2, CacheReadInputTokens: 3, CacheCreationInputTokens: 4, ReasoningTokens: 5},
		Model: "m", ID: "resp-1", Provider: "p",
		FirstChunkAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		Sent:         harness.RequestParams{Model: "m", MaxTokens: 100, Temperature: 0.5, HasTemperature: true, Stream: true},
	}
	// DBOS records a step's output with encoding/json; the runner's
	// recorded response must come back equal.
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out harness.ModelResponse
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, &out) {
		t.Fatalf("round trip:\n%+v\n%+v", in, &out)
	}
}

// TestKillAfterModelResponse kills the process during the second model
// request: the first response, recorded, is not requested again.
func TestKillAfterModelResponse(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		_, killed := runChild(t, dir, "run", "model", "rm", true)
		if !killed {
			t.Fatal("the child was not killed")
		}
		if c := counts(t, dir); c["model 1"] != 1 || c["model 2"] != 1 || c["tool fast rm/tool/1/c1"] != 1 {
			t.Fatalf("before recovery: %v", c)
		}
		rt := openFixture(t, dir, true)
		res, err := rt.Wait(ctxT(t), "rm")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != harness.StatusCompleted || res.Text != "done: c1=fast-ok[ok]" {
			t.Fatalf("result %+v", res)
		}
		// Model step 1 and the tool were recorded: not again. Model step 2 died
		// mid-request: requested again.
		if c := counts(t, dir); c["model 1"] != 1 || c["model 2"] != 2 || c["tool fast rm/tool/1/c1"] != 1 {
			t.Fatalf("after recovery: %v", c)
		}
		// The first execution and its recovery, told apart.
		if c := counts(t, dir); c["start rm attempt=1 recovered=false"] != 1 || c["start rm attempt=2 recovered=true"] != 1 {
			t.Fatalf("run starts: %v", c)
		}
	})
}

// TestRecoveredTwice kills a run, then kills its recovery at the same
// point: the third execution knows it is attempt 3. A run that completes
// first time is attempt 1 and not recovered.
func TestRecoveredTwice(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		for i := range 2 {
			if _, killed := runChild(t, dir, "run", "model", "r2", true); !killed {
				t.Fatalf("execution %d was not killed", i+1)
			}
			if err := os.Remove(filepath.Join(dir, "killed-model")); err != nil {
				t.Fatal(err)
			}
		}
		rt := openFixture(t, dir, true)
		res, err := rt.Wait(ctxT(t), "r2")
		if err != nil || res.Status != harness.StatusCompleted {
			t.Fatalf("%+v %v", res, err)
		}
		if _, err := rt.Run(ctxT(t), "model", "go", WithRunID("fresh")); err != nil {
			t.Fatal(err)
		}
		c := counts(t, dir)
		for _, want := range []string{"start r2 attempt=1 recovered=false", "start r2 attempt=2 recovered=true", "start r2 attempt=3 recovered=true",
			"start fresh attempt=1 recovered=false"} {
			if c[want] != 1 {
				t.Errorf("%q counted %d times: %v", want, c[want], c)
			}
		}
		if c["model 1"] != 2 || c["model 2"] != 4 { // r2: 1 and 3 (killed twice); fresh: 1 and 1
			t.Errorf("model requests: %v", c)
		}
	})
}

func TestKillMidSafeTool(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		if _, killed := runChild(t, dir, "run", "safe", "rs", true); !killed {
			t.Fatal("the child was not killed")
		}
		rt := openFixture(t, dir, true)
		res, err := rt.Wait(ctxT(t), "rs")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != harness.StatusCompleted || res.Text != "done: c1=safe-ok[ok]" {
			t.Fatalf("result %+v", res)
		}
		c := counts(t, dir)
		if c["model 1"] != 1 || c["tool safe rs/tool/1/c1"] != 2 || c["model 2"] != 1 {
			t.Fatalf("counters %v", c)
		}
		// harness.Now is the same time, to the nanosecond, on both attempts.
		nows := 0
		for line, n := range c {
			if strings.HasPrefix(line, "now rs/tool/1/c1 ") {
				nows++
				if n != 2 {
					t.Fatalf("harness.Now differs between the attempts: %v", c)
				}
			}
		}
		if nows != 1 {
			t.Fatalf("harness.Now lines: %v", c)
		}
	})
}

// TestResumeCrashedRunFromAnotherProcess kills a run's process; a process
// with another executor ID, whose Launch does not recover that run,
// recovers it with Resume(runID).
func TestResumeCrashedRunFromAnotherProcess(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		if _, killed := runChild(t, dir, "run", "safe", "rr", true); !killed {
			t.Fatal("the child was not killed")
		}
		rt := openFixture(t, dir, true, WithExecutorID("other"))
		time.Sleep(300 * time.Millisecond) // Launch recovered nothing of "local"
		if c := counts(t, dir); c["tool safe rr/tool/1/c1"] != 1 || c["model 2"] != 0 {
			t.Fatalf("the run moved before Resume: %v", c)
		}
		res, err := rt.Resume(ctxT(t), "rr")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != harness.StatusCompleted || res.Text != "done: c1=safe-ok[ok]" {
			t.Fatalf("result %+v", res)
		}
		c := counts(t, dir)
		if c["model 1"] != 1 || c["tool safe rr/tool/1/c1"] != 2 || c["model 2"] != 1 || c["start rr attempt=2 recovered=true"] != 1 {
			t.Fatalf("counters %v", c)
		}
		_, err = rt.Resume(ctxT(t), "rr")
		var e *Error
		if !errors.Is(err, ErrNotPaused) || !strings.Contains(err.Error(), "it is finished") || strings.Contains(err.Error(), "success") ||
			!errors.As(err, &e) || e.RunID != "rr" || e.Op != "resume" || e.Class != ErrNotPaused {
			t.Fatalf("resume a finished run: %v", err)
		}
		if _, err := rt.Resume(ctxT(t), "nobody"); !errors.Is(err, ErrUnknownRun) {
			t.Fatalf("resume an unknown run: %v", err)
		}
	})
}

// TestResumeRunParkedOnAskFromAnotherProcess kills a process whose run
// waits on a question; another process resumes the run, whose question
// moves with it, and answers it.
func TestResumeRunParkedOnAskFromAnotherProcess(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"=run", envDir+"="+dir, envAgent+"=ask", envRun+"=rk")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		defer func() {
			_ = cmd.Process.Kill()
			<-exited
		}()
		rt := openFixture(t, dir, true, WithExecutorID("other"))
		ctx := ctxT(t)
		waitAsk(t, rt, "rk", exited, &stderr)
		_ = cmd.Process.Kill() // SIGKILL while parked
		if err := <-exited; err == nil {
			t.Fatal("the child ended on its own while parked")
		}
		exited <- nil // for the deferred wait

		done := async(func() (*harness.RunResult, error) { return rt.Resume(ctx, "rk") })
		if err := rt.Reply(ctx, "rk", "rk/tool/1/c1/ask/1", harness.Answer{Choice: "red"}); err != nil {
			t.Fatal(err)
		}
		r := <-done
		if r.err != nil || r.res.Text != "done: c1=chose red[ok]" {
			t.Fatalf("%+v %v", r.res, r.err)
		}
		if c := counts(t, dir); c["tool asker rk/tool/1/c1"] != 2 || c["start rk attempt=2 recovered=true"] != 1 {
			t.Fatalf("counters %v", c)
		}
	})
}

// TestKillWhileParallelCallAsks kills a run inside a parallel group in
// which one call asked (p2) while another was still running (p3): the
// run is recovered in another process, parks on p2's question, and the
// answer completes it. The call that had ended (p1) is not run again, the
// one killed midway (p3, replay-safe) is, and the asking call gets the
// answer.
func TestKillWhileParallelCallAsks(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		if _, killed := runChild(t, dir, "run", "parask", "rq", true); !killed {
			t.Fatal("the child was not killed")
		}
		rt := openFixture(t, dir, true, WithExecutorID("other"))
		ctx := ctxT(t)
		done := async(func() (*harness.RunResult, error) { return rt.Resume(ctx, "rq") })
		never := make(chan error)
		var none strings.Builder
		ask := waitAsk(t, rt, "rq", never, &none)
		if ask.Key != "rq/tool/1/p2" || ask.Tool != "askpar" {
			t.Fatalf("the question is %s's (%s), want p2's", ask.Key, ask.Tool)
		}
		if err := rt.Reply(ctx, "rq", ask.Request.ID, harness.Answer{Choice: "blue"}); err != nil {
			t.Fatal(err)
		}
		r := <-done
		if r.err != nil || r.res.Text != "done: p1=fast-ok[ok] p2=chose blue[ok] p3=slow-ok[ok]" {
			t.Fatalf("%+v %v", r.res, r.err)
		}
		// p1 ran once (its result was recorded before the kill), p3 twice
		// (killed midway, replay-safe), p2 twice: it asked, and after the
		// answer it ran again from its start and got it; the recovery
		// replayed its recorded suspension without asking again.
		c := counts(t, dir)
		if c["tool fast rq/tool/1/p1"] != 1 || c["tool slowask rq/tool/1/p3"] != 2 || c["tool askpar rq/tool/1/p2"] != 2 ||
			c["model 1"] != 1 || c["model 2"] != 1 || c["start rq attempt=2 recovered=true"] != 1 {
			t.Fatalf("counters %v", c)
		}
	})
}

func TestKillMidUnsafeTool(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		if _, killed := runChild(t, dir, "run", "unsafe", "ru", true); !killed {
			t.Fatal("the child was not killed")
		}
		rt := openFixture(t, dir, true)
		res, err := rt.Wait(ctxT(t), "ru")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != harness.StatusCompleted || !strings.Contains(res.Text, "[interrupted]") || !strings.Contains(res.Text, "outcome of tool \"unsafe\" is unknown") {
			t.Fatalf("result %+v", res)
		}
		if c := counts(t, dir); c["model 1"] != 1 || c["tool unsafe ru/tool/1/c1"] != 1 || c["model 2"] != 1 {
			t.Fatalf("counters %v", c)
		}
		var status harness.ToolStatus
		for _, m := range res.Messages {
			for _, p := range m.Content {
				if p.ToolResult != nil {
					status = p.ToolResult.Status
				}
			}
		}
		if status != harness.ToolInterrupted {
			t.Fatalf("tool status %q", status)
		}
	})
}

func TestKillDuringParallelTools(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		if _, killed := runChild(t, dir, "run", "par", "rp", true); !killed {
			t.Fatal("the child was not killed")
		}
		rt := openFixture(t, dir, true)
		res, err := rt.Wait(ctxT(t), "rp")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != harness.StatusCompleted || !strings.HasPrefix(res.Text, "done: p1=fast-ok[ok] p2=fast-ok[ok] p3=") || !strings.Contains(res.Text, "[interrupted]") {
			t.Fatalf("result %+v", res)
		}
		c := counts(t, dir)
		if c["tool fast rp/tool/1/p1"] != 1 || c["tool fast rp/tool/1/p2"] != 1 || c["tool slow rp/tool/1/p3"] != 1 || c["model 1"] != 1 {
			t.Fatalf("counters %v", c)
		}
	})
}

// TestRecoveredExtensionState kills a run mid tool after an earlier tool's
// result was spilled to spill's default temporary store. The recovered
// run's extensions start from the engine snapshot of the last recorded
// step: the tally continues from 1 (not 0), and read_result finds the
// result that the crashed process spilled, which no session lists and
// which the temporary store would not adopt.
func TestRecoveredExtensionState(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		if _, killed := runChild(t, dir, "run", "spill", "sx", true); !killed {
			t.Fatal("the child was not killed")
		}
		if c := counts(t, dir); c["tool big sx/tool/1/c1"] != 1 || c["tool bomb sx/tool/2/c2"] != 1 {
			t.Fatalf("before recovery: %v", c)
		}
		rt := openFixture(t, dir, true)
		res, err := rt.Wait(ctxT(t), "sx")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != harness.StatusCompleted {
			t.Fatalf("result %+v", res)
		}
		if !strings.Contains(res.Text, "c3=") || !strings.Contains(res.Text, "needle-1500") || !strings.HasSuffix(res.Text, "[ok]") {
			t.Fatalf("read_result of the crashed execution's spilled result: %s", res.Text)
		}
		c := counts(t, dir)
		if c["tool big sx/tool/1/c1"] != 1 {
			t.Errorf("the spilling tool ran again: %v", c)
		}
		// Loaded once, with the state after step 1's tool (the bomb's
		// call never ended); then the interrupted bomb and read_result.
		if c["tally load n=1"] != 1 || c["tally end n=3"] != 1 {
			t.Errorf("tally: %v", c)
		}
		if c["tally saved outside a snapshot"] != 0 {
			t.Errorf("an engine snapshot was not marked harness.AsSnapshot: %v", c)
		}
		// The finished run's snapshot is deleted with its markers.
		if err := rt.Close(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, dir, "SELECT COUNT(*) FROM {P} WHERE run_id = 'sx'"); n != 0 {
			t.Fatalf("%d snapshot rows left for a finished run", n)
		}
	})
}

// TestRecoveredWithoutItsExtension recovers a run whose factory no longer
// installs the extension of its snapshot: a clear error, not a silent loss.
func TestRecoveredWithoutItsExtension(t *testing.T) {
	dir := t.TempDir()
	if _, killed := runChild(t, dir, "run", "spill", "sy", true); !killed {
		t.Fatal("the child was not killed")
	}
	rt, err := Open(ctxT(t), fixtureDSN(dir), WithLogger(quietLogger()), WithPollInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	for _, a := range agents {
		f := factory(dir, a)
		if a == "spill" {
			f = factory(dir, "safe") // the same tools, no extensions
		}
		if err := rt.Register(a, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Launch(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	_, err = rt.Wait(ctxT(t), "sy")
	if err == nil || !strings.Contains(err.Error(), "restore its extension state") || !strings.Contains(err.Error(), `extensions "spill", "tally", which are not installed`) {
		t.Fatalf("err = %v", err)
	}
}

func TestKillWhilePausedOnApproval(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		out, killed := runChild(t, dir, "pause", "approve", "ra", false)
		if !killed {
			t.Fatal("the child was not killed")
		}
		var paused runOutput
		if err := json.Unmarshal([]byte(out), &paused); err != nil || paused.Status != harness.StatusPaused || len(paused.Pending) != 1 {
			t.Fatalf("child result %q: %v", out, err)
		}
		rt := openFixture(t, dir, true)
		ctx := ctxT(t)
		p, err := rt.Pending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Approvals) != 1 || p.Approvals[0].RunID != "ra" || p.Approvals[0].Requests[0].ID != "c1" {
			t.Fatalf("pending %+v", p)
		}
		if _, err := rt.Resume(ctx, "ra", harness.Approve("nope")); !errors.Is(err, ErrInvalidDecision) {
			t.Fatalf("wrong decision: %v", err)
		}
		if _, err := rt.Resume(ctx, "zz"); !errors.Is(err, ErrUnknownRun) {
			t.Fatalf("unknown run: %v", err)
		}
		res, err := rt.Resume(ctx, "ra", harness.Approve("c1"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != harness.StatusCompleted || res.Text != "done: c1=deployed[ok]" {
			t.Fatalf("result %+v", res)
		}
		if c := counts(t, dir); c["model 1"] != 1 || c["tool guarded ra/tool/1/c1"] != 1 || c["model 2"] != 1 {
			t.Fatalf("counters %v", c)
		}
		if _, err := rt.Resume(ctx, "ra", harness.Approve("c1")); !errors.Is(err, ErrNotPaused) {
			t.Fatalf("resume a finished run: %v", err)
		}
		if p, err := rt.Pending(ctx); err != nil || len(p.Approvals) != 0 {
			t.Fatalf("pending after: %+v %v", p, err)
		}
	})
}

// childReply answers the first open question from a runtime that is not
// launched (another executor ID), as an operator's CLI would.
func childReply() int {
	dir := os.Getenv(envDir)
	rt, err := openRuntime(dir, false, WithExecutorID("replier"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "reply:", err)
		return 1
	}
	defer rt.Close(context.Background())
	ctx := context.Background()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		p, err := rt.Pending(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "reply:", err)
			return 1
		}
		if len(p.Asks) == 0 {
			continue
		}
		a := p.Asks[0]
		if err := rt.Reply(ctx, a.RunID, a.Request.ID, harness.Answer{Kind: harness.AskConfirm}); !errors.Is(err, ErrInvalidAnswer) {
			fmt.Fprintln(os.Stderr, "reply: wrong kind:", err)
			return 1
		}
		if err := rt.Reply(ctx, a.RunID, a.Request.ID, harness.Answer{Choice: "green"}); !errors.Is(err, ErrInvalidAnswer) {
			fmt.Fprintln(os.Stderr, "reply: bad choice:", err)
			return 1
		}
		for range 2 { // twice: harmless
			if err := rt.Reply(ctx, a.RunID, a.Request.ID, harness.Answer{Choice: "blue"}); err != nil {
				fmt.Fprintln(os.Stderr, "reply:", err)
				return 1
			}
		}
		fmt.Println(a.RunID, a.Request.ID)
		return 0
	}
	fmt.Fprintln(os.Stderr, "reply: no question")
	return 1
}

func TestAskAnsweredFromAnotherProcess(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		rt := openFixture(t, dir, true)
		ctx := ctxT(t)
		done := async(func() (*harness.RunResult, error) { return rt.Run(ctx, "ask", "go", WithRunID("rq")) })
		out, _ := runChild(t, dir, "reply", "", "", false)
		if !strings.HasPrefix(out, "rq rq/tool/1/c1/ask/1") {
			t.Fatalf("reply child printed %q", out)
		}
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.res.Text != "done: c1=chose blue[ok]" {
			t.Fatalf("result %+v", r.res)
		}
		// The answer is recorded: the same again is fine, another is not.
		askID := "rq/tool/1/c1/ask/1"
		if err := rt.Reply(ctx, "rq", askID, harness.Answer{Choice: "blue"}); err != nil {
			t.Fatalf("same answer again: %v", err)
		}
		if err := rt.Reply(ctx, "rq", askID, harness.Answer{Choice: "red"}); !errors.Is(err, ErrAlreadyAnswered) {
			t.Fatalf("other answer: %v", err)
		}
		if err := rt.Reply(ctx, "rq", "nope", harness.Answer{Choice: "red"}); !errors.Is(err, ErrUnknownAsk) {
			t.Fatalf("unknown ask: %v", err)
		}
		if err := rt.Reply(ctx, "zz", "nope", harness.Answer{Choice: "red"}); !errors.Is(err, ErrUnknownRun) {
			t.Fatalf("unknown run: %v", err)
		}
	})
}

func TestSession(t *testing.T) {
	dir := t.TempDir()
	rt := openFixture(t, dir, true)
	ctx := ctxT(t)
	r1, err := rt.Run(ctx, "safe", "first", WithSession("s"))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := rt.Run(ctx, "safe", "second", WithSession("s"))
	if err != nil {
		t.Fatal(err)
	}
	if r1.RunID != "s/1" || r2.RunID != "s/2" {
		t.Fatalf("run IDs %q %q", r1.RunID, r2.RunID)
	}
	// The second run continued the conversation: it saw the first turn.
	h, err := rt.Run(ctx, "safe", "third", WithSession("s"))
	if err != nil {
		t.Fatal(err)
	}
	_ = h
	// Read the session saved by the last run.
	_, data, err := rt.sessionState(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	agent, err := harness.LoadSession(ctx, data, harness.WithProvider(harness.ProviderFunc(func(context.Context, *harness.ModelRequest) (*harness.ModelResponse, error) {
		return nil, errors.New("unused")
	})))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close(ctx)
	var users []string
	for _, m := range agent.Messages() {
		if m.Role == harness.RoleUser {
			users = append(users, m.Text())
		}
	}
	if strings.Join(users, ",") != "first,second,third" || agent.SessionID() != "s" {
		t.Fatalf("session %q %q", users, agent.SessionID())
	}
	if _, err := rt.Run(ctx, "safe", "x", WithSession("a/b")); err == nil {
		t.Fatal("a session ID with a slash")
	}
}

func TestSessionBusyWhilePaused(t *testing.T) {
	dir := t.TempDir()
	rt := openFixture(t, dir, true)
	ctx := ctxT(t)
	res, err := rt.Run(ctx, "approve", "go", WithSession("s"))
	if err != nil || res.Status != harness.StatusPaused {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := rt.Run(ctx, "approve", "again", WithSession("s")); !errors.Is(err, ErrSessionBusy) {
		t.Fatalf("busy: %v", err)
	}
	if res, err := rt.Resume(ctx, res.RunID, harness.Deny("c1", "no")); err != nil || res.Status != harness.StatusCompleted || !strings.Contains(res.Text, "[denied]") {
		t.Fatalf("%+v %v", res, err)
	}
}
