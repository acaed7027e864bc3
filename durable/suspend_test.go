package durable

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
)

// TestParkedRunsFreeTheirSlots: a worker process with concurrency 2 takes
// five runs that ask a question and three that pause on approvals; all
// park without holding a slot (Status says so), and three new runs
// submitted after them complete while they wait. Then every question is
// answered and every approval decided: each parked run continues and
// completes, its asking tool run twice (asking, then answered) and its
// approved tool once.
func TestParkedRunsFreeTheirSlots(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		ctx := ctxT(t)
		w := startWorker(t, dir, "w1", false)
		waitUp(t, dir, w)
		client := openFixture(t, dir, false, WithExecutorID("client"), WithQueue(testQueue))

		const asks, approvals = 5, 3
		for i := range asks {
			if _, err := client.Submit(ctx, "ask", "go", WithRunID(fmt.Sprintf("q%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		for i := range approvals {
			if _, err := client.Submit(ctx, "approve", "go", WithRunID(fmt.Sprintf("a%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		// All park: the five questions are pending and the three runs
		// paused, although the worker runs two at a time.
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			p, err := client.Pending(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Asks) == asks && len(p.Approvals) == approvals {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("not all parked: %d questions, %d approvals pending\n%v", len(p.Asks), len(p.Approvals), counts(t, dir))
			}
		}
		for i := range asks {
			id := fmt.Sprintf("q%d", i)
			st := waitStatus(t, client, id, func(st *RunStatus) bool { return st.Parked })
			if st.State != StateWaiting || len(st.Asks) != 1 {
				t.Fatalf("status of %s: %+v", id, st)
			}
		}
		for i := range approvals {
			id := fmt.Sprintf("a%d", i)
			st := waitStatus(t, client, id, func(st *RunStatus) bool { return st.Parked })
			if st.State != StatePaused || len(st.Approvals) != 1 {
				t.Fatalf("status of %s: %+v", id, st)
			}
		}

		// New runs get the worker's slots.
		for i := range 3 {
			if _, err := client.Submit(ctx, "work", "go", WithRunID(fmt.Sprintf("n%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 3 {
			res, err := client.Wait(ctxT(t), fmt.Sprintf("n%d", i))
			if err != nil || res.Text != "done: c1=work-ok[ok]" {
				t.Fatalf("new run n%d while %d runs are parked: %+v %v\n%v", i, asks+approvals, res, err, counts(t, dir))
			}
		}

		// Answered and decided, the parked runs continue.
		p, err := client.Pending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range p.Asks {
			if err := client.Reply(ctx, a.RunID, a.Request.ID, harness.Answer{Choice: "blue"}); err != nil {
				t.Fatal(err)
			}
		}
		for _, a := range p.Approvals {
			ds := make([]harness.Decision, 0, len(a.Requests))
			for _, r := range a.Requests {
				ds = append(ds, harness.Approve(r.ID))
			}
			res, err := client.Resume(ctx, a.RunID, ds...)
			if err != nil || res.Status != harness.StatusCompleted || res.Text != "done: c1=deployed[ok]" {
				t.Fatalf("resume %s: %+v %v", a.RunID, res, err)
			}
		}
		c := counts(t, dir)
		for i := range asks {
			id := fmt.Sprintf("q%d", i)
			res, err := client.Wait(ctxT(t), id)
			if err != nil || res.Text != "done: c1=chose blue[ok]" {
				t.Fatalf("run %s after its answer: %+v %v", id, res, err)
			}
			c = counts(t, dir)
			if n := c["tool asker "+id+"/tool/1/c1"]; n != 2 {
				t.Errorf("run %s: the asking tool ran %d times; want 2 (it asked, then it was answered)", id, n)
			}
		}
		for i := range approvals {
			if n := c[fmt.Sprintf("tool guarded a%d/tool/1/c1", i)]; n != 1 {
				t.Errorf("run a%d: the approved tool ran %d times", i, n)
			}
		}
		// Nothing parked is left behind.
		db, err := client.auxDB(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if left, err := db.parkedRuns(ctx); err != nil || len(left) != 0 {
			t.Errorf("parked rows left: %v %v", left, err)
		}
		for i := range asks {
			if st, err := client.Status(ctx, fmt.Sprintf("q%d", i)); err != nil || st.State != StateCompleted || st.Parked {
				t.Errorf("status of q%d at the end: %+v %v", i, st, err)
			}
		}
	})
}

// waitStatus polls the run's status until ok accepts it (30 s at most).
func waitStatus(t *testing.T, rt *Runtime, runID string, ok func(*RunStatus) bool) *RunStatus {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st, err := rt.Status(ctxT(t), runID)
		if err != nil {
			t.Fatal(err)
		}
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("status of %s: %+v", runID, st)
		}
	}
}

// TestAnswerRacesThePark: answers given at every moment around a run's
// park — before it parks, while it parks, after — all wake it: each of
// twenty runs completes with its answer. The wake is idempotent: no run
// executes more than twice.
func TestAnswerRacesThePark(t *testing.T) {
	dir := t.TempDir()
	rt := openFixture(t, dir, true)
	ctx := ctxT(t)
	const n = 20
	for i := range n {
		if _, err := rt.Submit(ctx, "ask", "go", WithRunID(fmt.Sprintf("r%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	// Answer each as soon as its question shows, whether or not it has
	// parked yet.
	answered := map[string]bool{}
	for deadline := time.Now().Add(60 * time.Second); len(answered) < n; time.Sleep(time.Millisecond) {
		p, err := rt.Pending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range p.Asks {
			if !answered[a.RunID] {
				if err := rt.Reply(ctx, a.RunID, a.Request.ID, harness.Answer{Choice: "red"}); err != nil {
					t.Fatal(err)
				}
				answered[a.RunID] = true
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("answered %d of %d", len(answered), n)
		}
	}
	c := map[string]int{}
	for i := range n {
		id := fmt.Sprintf("r%d", i)
		res, err := rt.Wait(ctxT(t), id)
		if err != nil || res.Text != "done: c1=chose red[ok]" {
			t.Fatalf("run %s: %+v %v", id, res, err)
		}
		c = counts(t, dir)
		if k := c["tool asker "+id+"/tool/1/c1"]; k < 1 || k > 2 {
			t.Errorf("run %s: the asking tool ran %d times", id, k)
		}
	}
	for k, v := range c {
		if strings.HasPrefix(k, "start ") && strings.Contains(k, "attempt=3") {
			t.Errorf("%s (%d): a run executed three times", k, v)
		}
	}
}
