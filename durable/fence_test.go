package durable

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
)

// inFlight returns, per executor, how many calls of the stall tool are in
// flight, from the "in"/"out" lines of the counters file.
func inFlight(t *testing.T, dir string) map[string]int {
	t.Helper()
	open := map[string]int{}
	inOut(t, dir, func(kind, executor, _ string) {
		if kind == "in" {
			open[executor]++
		} else {
			open[executor]--
		}
	})
	return open
}

// TestStalledWorkerNeverRepeatsAnUnsafeCall: two worker processes run a
// stream of runs whose calls are ReplayUnsafe and last 1.5 s. Twenty times
// a worker in the middle of such a call is stopped (SIGSTOP) for 1.5×
// the lease, so that the other one takes its runs over, then continued
// (SIGCONT). No call runs twice, every run completes, and some calls are
// reported interrupted (so the takeovers did happen).
func TestStalledWorkerNeverRepeatsAnUnsafeCall(t *testing.T) {
	if testing.Short() {
		t.Skip("stops workers 20 times (about two minutes)")
	}
	eachBackend(t, func(t *testing.T, dir string) {
		ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
		defer cancel()
		w1 := startWorker(t, dir, "w1", false)
		w2 := startWorker(t, dir, "w2", false)
		waitUp(t, dir, w1, w2)
		workers := map[string]*worker{"w1": w1, "w2": w2}
		client := openFixture(t, dir, false, WithExecutorID("client"), WithQueue(testQueue))

		var runs []string
		submit := func() {
			id := fmt.Sprintf("s-%d", len(runs))
			if _, err := client.Submit(ctx, "stall", "go", WithRunID(id)); err != nil {
				t.Fatal(err)
			}
			runs = append(runs, id)
		}
		for range 6 {
			submit()
		}
		const stalls = 20
		for stall := 0; stall < stalls; {
			if ctx.Err() != nil {
				t.Fatalf("after %d stalls: %v", stall, ctx.Err())
			}
			// Keep the workers busy: about six runs not finished.
			st, err := client.Status(ctx, runs[len(runs)-1])
			if err != nil {
				t.Fatal(err)
			}
			if st.State != StateQueued {
				for range 3 {
					submit()
				}
			}
			open := inFlight(t, dir)
			var w *worker
			for _, id := range []string{"w1", "w2"} {
				if open[id] > 0 && (w == nil || stall%2 == 1) {
					w = workers[id]
				}
			}
			if w == nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(testLease * 3 / 2)
			if err := w.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			stall++
			time.Sleep(300 * time.Millisecond)
		}
		interrupted := 0
		for _, id := range runs {
			res, err := client.Wait(ctx, id)
			if err != nil {
				t.Fatalf("run %s: %v (%+v)", id, err, res)
			}
			if res.Status != harness.StatusCompleted {
				t.Fatalf("run %s: %+v", id, res)
			}
			interrupted += strings.Count(res.Text, "[interrupted]")
		}
		c := counts(t, dir)
		calls := 0
		for line, n := range c {
			if strings.HasPrefix(line, "tool stall ") {
				calls++
				if n != 1 {
					t.Errorf("%s: the unsafe call ran %d times", strings.TrimPrefix(line, "tool stall "), n)
				}
			}
		}
		if interrupted == 0 {
			t.Fatalf("no call was reported interrupted: the stalls moved no run (%d runs, %d calls)", len(runs), calls)
		}
		for _, w := range workers {
			select {
			case <-w.done:
				t.Fatalf("worker %s ended: %v\n%s", w.id, w.err, w.stderr.String())
			default:
			}
		}
		t.Logf("%d stalls of %v (lease %v): %d runs, %d unsafe calls, each once; %d reported interrupted", stalls, testLease*3/2, testLease, len(runs), calls, interrupted)
	})
}

// TestExecutorIDInUse: a second live process with the executor ID of a
// launched one is refused at Launch; once the first is gone (even killed)
// the ID is free again.
func TestExecutorIDInUse(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		w := startWorker(t, dir, "w1", false)
		waitUp(t, dir, w)
		_, err := openRuntime(dir, true, append(workerOptions(testLease), WithExecutorID("w1"))...)
		if !errors.Is(err, ErrExecutorInUse) || !strings.Contains(err.Error(), `"w1"`) {
			t.Fatalf("second launch with w1: %v", err)
		}
		// Another ID launches.
		rt, err := openRuntime(dir, true, append(workerOptions(testLease), WithExecutorID("w2"))...)
		if err != nil {
			t.Fatal(err)
		}
		rt.Close(ctxT(t))
		// The holder dies: its ID is free at once.
		if err := w.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-w.done
		rt, err = openRuntime(dir, true, append(workerOptions(testLease), WithExecutorID("w1"))...)
		if err != nil {
			t.Fatalf("launch after the holder died: %v", err)
		}
		rt.Close(ctxT(t))
	})
}
