package durable

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
)

// The several-workers fixture: worker children (the test binary again,
// HX_DURABLE_CHILD=worker) each launch a runtime with their own executor
// ID on the queue "hx" and run until SIGTERM; the test process submits
// runs as a client that does not launch.

const (
	testQueue       = "hx"
	testConcurrency = 2
	testLease       = 2 * time.Second
	envLease        = "HX_LEASE"
)

func workerOptions(lease time.Duration) []Option {
	return []Option{WithQueue(testQueue), WithWorkerConcurrency(testConcurrency), WithLease(lease)}
}

// childWorker is a worker process: it runs the queue's runs until SIGTERM.
func childWorker() int {
	dir := os.Getenv(envDir)
	lease, err := time.ParseDuration(os.Getenv(envLease))
	if err != nil {
		lease = testLease
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	rt, err := openRuntime(dir, true, append(workerOptions(lease), WithExecutorID(executor()))...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	count(dir, "up "+executor())
	<-ctx.Done()
	if err := rt.Close(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

// worker is a running worker child.
type worker struct {
	id     string
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	killed bool // died of SIGKILL
	stderr strings.Builder
}

// startWorker starts a worker child; cleanup stops it (SIGTERM, then
// SIGKILL after 20s), by its PID only.
func startWorker(t *testing.T, dir, id string, kill bool) *worker {
	t.Helper()
	w := &worker{id: id, done: make(chan struct{})}
	w.cmd = exec.Command(os.Args[0], "-test.run=^$")
	w.cmd.Env = append(os.Environ(), envChild+"=worker", envDir+"="+dir, envExec+"="+id, envLease+"="+testLease.String())
	if kill {
		w.cmd.Env = append(w.cmd.Env, envKill+"=1")
	}
	w.cmd.Stderr = &w.stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		w.err = w.cmd.Wait()
		if ee, ok := w.err.(*exec.ExitError); ok {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				w.killed = true
			}
		}
		close(w.done)
	}()
	t.Cleanup(func() {
		select {
		case <-w.done:
			return
		default:
		}
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-w.done:
		case <-time.After(20 * time.Second):
			_ = w.cmd.Process.Kill()
			<-w.done
		}
		if w.err != nil && !w.killed {
			t.Errorf("worker %s: %v\nstderr: %s", w.id, w.err, w.stderr.String())
		}
	})
	return w
}

// waitUp waits until the workers wrote their "up" line.
func waitUp(t *testing.T, dir string, ws ...*worker) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, all := counts(t, dir), true
		for _, w := range ws {
			all = all && c["up "+w.id] == 1
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			for _, w := range ws {
				if c["up "+w.id] == 0 {
					// A stuck worker: its goroutines, from Go's SIGQUIT dump.
					_ = w.cmd.Process.Signal(syscall.SIGQUIT)
					select {
					case <-w.done:
					case <-time.After(5 * time.Second):
						t.Logf("worker %s: stuck, and did not exit on SIGQUIT", w.id)
						continue
					}
				}
				select {
				case <-w.done: // its stderr is complete
					t.Logf("worker %s stderr: %s", w.id, w.stderr.String())
				default:
					t.Logf("worker %s is up and running", w.id)
				}
			}
			t.Fatalf("workers not up: %v", c)
		}
	}
}

// inOut calls f with each "in"/"out" line of the counters file, in order:
// kind "in" or "out", the executor and the execution key.
func inOut(t *testing.T, dir string, f func(kind, executor, key string)) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "counters"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(data)) {
		if fs := strings.Fields(l); len(fs) == 3 && (fs[0] == "in" || fs[0] == "out") {
			f(fs[0], fs[1], fs[2])
		}
	}
}

// concurrency reads, from the order of the "in"/"out" lines in the
// counters file, how many calls each executor ran at once at most, and
// which executor ran each key.
func concurrency(t *testing.T, dir string) (peak map[string]int, ranBy map[string]string) {
	t.Helper()
	now, peak, ranBy := map[string]int{}, map[string]int{}, map[string]string{}
	inOut(t, dir, func(kind, executor, key string) {
		if kind == "out" {
			now[executor]--
			return
		}
		now[executor]++
		peak[executor] = max(peak[executor], now[executor])
		ranBy[key] = executor
	})
	return peak, ranBy
}

// TestWorkersShareRunsAndResumeADeadOne: two worker processes on one
// database share the runs a client submits, at most testConcurrency at a
// time each; a worker SIGKILLed inside a tool leaves its run to the other,
// which resumes it after the lease expired.
func TestWorkersShareRunsAndResumeADeadOne(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		ctx := ctxT(t)
		w1 := startWorker(t, dir, "w1", true)
		w2 := startWorker(t, dir, "w2", true)
		waitUp(t, dir, w1, w2)
		client := openFixture(t, dir, false, WithExecutorID("client"), WithQueue(testQueue))

		// Shared runs.
		const n = 8
		for i := range n {
			id, err := client.Submit(ctx, "work", "go", WithRunID("w-"+strconv.Itoa(i)))
			if err != nil || id != "w-"+strconv.Itoa(i) {
				t.Fatalf("submit: %q %v", id, err)
			}
		}
		for i := range n {
			res, err := client.Wait(ctx, "w-"+strconv.Itoa(i))
			if err != nil || res.Text != "done: c1=work-ok[ok]" {
				t.Fatalf("run %d: %+v %v", i, res, err)
			}
		}
		c := counts(t, dir)
		peak, ranBy := concurrency(t, dir)
		perWorker := map[string]int{}
		for i := range n {
			key := "w-" + strconv.Itoa(i) + "/tool/1/c1"
			if c["tool work "+key] != 1 {
				t.Fatalf("run %d's tool ran %d times: %v", i, c["tool work "+key], c)
			}
			perWorker[ranBy[key]]++
		}
		if perWorker["w1"] == 0 || perWorker["w2"] == 0 || perWorker["w1"]+perWorker["w2"] != n {
			t.Fatalf("runs were not shared: %v", perWorker)
		}
		if peak["w1"] > testConcurrency || peak["w2"] > testConcurrency {
			t.Fatalf("worker concurrency above %d: %v", testConcurrency, peak)
		}
		t.Logf("runs per worker %v, peak concurrency %v", perWorker, peak)

		// A worker dies inside an unsafe tool; the other finishes its run.
		submitted := time.Now()
		if _, err := client.Submit(ctx, "unsafe", "go", WithRunID("v")); err != nil {
			t.Fatal(err)
		}
		var dead, alive *worker
		select {
		case <-w1.done:
			dead, alive = w1, w2
		case <-w2.done:
			dead, alive = w2, w1
		case <-time.After(30 * time.Second):
			t.Fatalf("no worker died: %v", counts(t, dir))
		}
		if !dead.killed {
			t.Fatalf("worker %s ended without SIGKILL: %v\n%s", dead.id, dead.err, dead.stderr.String())
		}
		killedAt := time.Now()
		res, err := client.Wait(ctx, "v")
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(killedAt)
		if res.Status != harness.StatusCompleted || !strings.Contains(res.Text, "c1=") || !strings.Contains(res.Text, "[interrupted]") {
			t.Fatalf("result %+v", res)
		}
		c = counts(t, dir)
		if c["tool unsafe v/tool/1/c1"] != 1 || c["by "+dead.id+" v/model/1"] != 1 || c["by "+alive.id+" v/model/2"] != 1 || c["model 2"] != n+1 {
			t.Fatalf("counters %v", c)
		}
		if took < testLease/2 {
			t.Fatalf("the run moved %v after the kill, before the lease (%v) could expire", took, testLease)
		}
		t.Logf("worker %s killed %v after the submit; %s finished its run %v later (lease %v)", dead.id, killedAt.Sub(submitted).Round(time.Millisecond), alive.id, took.Round(time.Millisecond), testLease)

		// The dead worker was claimed and its row removed; the live one
		// heartbeats.
		l, err := openLeaseDB(ctx, fixtureDSN(dir))
		if err != nil {
			t.Fatal(err)
		}
		defer l.db.Close()
		rows := map[string]bool{}
		r, err := l.db.QueryContext(ctx, l.q(`SELECT executor_id FROM {T} WHERE app_name = $1`), DefaultAppName)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var id string
			if err := r.Scan(&id); err != nil {
				t.Fatal(err)
			}
			rows[id] = true
		}
		r.Close()
		if rows[dead.id] || !rows[alive.id] {
			t.Fatalf("lease rows %v (dead %s)", rows, dead.id)
		}
	})
}

// TestLeaseClaimOnce: of supervisors racing for an expired worker, one
// claims it; a heartbeat takes a claimed row back.
func TestLeaseClaimOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		ctx := ctxT(t)
		// DBOS creates the database (Postgres) and the file (SQLite).
		rt := openFixture(t, dir, false)
		_ = rt
		l, err := openLeaseDB(ctx, fixtureDSN(dir))
		if err != nil {
			t.Fatal(err)
		}
		defer l.db.Close()
		if err := l.beat(ctx, "app", "dead", "v1"); err != nil {
			t.Fatal(err)
		}
		if err := l.beat(ctx, "app", "other-version", "v2"); err != nil {
			t.Fatal(err)
		}
		if got, err := l.claim(ctx, "app", "v1", "s0", time.Hour, time.Hour); err != nil || len(got) != 0 {
			t.Fatalf("claimed a live worker: %v %v", got, err)
		}
		time.Sleep(50 * time.Millisecond)
		var mu sync.Mutex
		var claims []string
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				got, err := l.claim(ctx, "app", "v1", "s"+strconv.Itoa(i), 10*time.Millisecond, time.Hour)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				claims = append(claims, got...)
				mu.Unlock()
			})
		}
		wg.Wait()
		if len(claims) != 1 || claims[0] != "dead" {
			t.Fatalf("claims %v", claims)
		}
		// The worker comes back: its heartbeat clears the claim, and the
		// claimer's release leaves its row.
		if err := l.beat(ctx, "app", "dead", "v1"); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if err := l.release(ctx, "app", "dead", "s"+strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
		}
		var n int
		if err := l.db.QueryRowContext(ctx, l.q(`SELECT count(*) FROM {T} WHERE executor_id = $1 AND claimed_by IS NULL`), "dead").Scan(&n); err != nil || n != 1 {
			t.Fatalf("row after return: %d %v", n, err)
		}
	})
}
