package durable

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/harnessx/harnessx/harness"
)

// workflowIDs lists the IDs of the workflows in the database.
func workflowIDs(t *testing.T, rt *Runtime) map[string]dbos.WorkflowStatusType {
	t.Helper()
	ws, err := dbos.ListWorkflows(rt.dctx, dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]dbos.WorkflowStatusType{}
	for _, w := range ws {
		m[w.ID] = w.Status
	}
	return m
}

// TestRetention: with a short retention, a launched runtime's sweeper
// deletes finished runs with their steps, questions and markers, and
// keeps every row of a run that waits (on a question, on approvals), the
// finished questions of a run that waits on another, and a session's
// newest successful run; orphaned markers and snapshots go.
func TestRetention(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		ctx := ctxT(t)
		rt := openFixture(t, dir, true, WithRetention(0))
		// Finished: a run with a tool call, an answered question, a session's two runs.
		for _, id := range []string{"done-1", "done-2"} {
			if _, err := rt.Run(ctx, "safe", "go", WithRunID(id)); err != nil {
				t.Fatal(err)
			}
		}
		asked, err := rt.Submit(ctx, "ask", "go", WithRunID("asked"))
		if err != nil {
			t.Fatal(err)
		}
		waitAsk(t, rt, asked, nil, nil)
		p, _ := rt.Pending(ctx)
		if err := rt.Reply(ctx, asked, p.Asks[0].Request.ID, harness.Answer{Choice: "red"}); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Wait(ctx, asked); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := rt.Run(ctx, "safe", "go", WithSession("sess")); err != nil {
				t.Fatal(err)
			}
		}
		// Waiting: a run parked on a question, one paused on approvals.
		parked, err := rt.Submit(ctx, "ask", "go", WithRunID("parked"))
		if err != nil {
			t.Fatal(err)
		}
		waitAsk(t, rt, parked, nil, nil)
		if res, err := rt.Run(ctx, "approve", "go", WithRunID("paused")); err != nil || res.Status != harness.StatusPaused {
			t.Fatalf("%+v %v", res, err)
		}
		// Finished while its question waits: cancelled when parked.
		orphanAsk, err := rt.Submit(ctx, "ask", "go", WithRunID("cancelled"))
		if err != nil {
			t.Fatal(err)
		}
		waitAsk(t, rt, orphanAsk, nil, nil)
		if err := dbos.CancelWorkflow(rt.dctx, orphanAsk); err != nil {
			t.Fatal(err)
		}
		before := workflowIDs(t, rt)
		rt.Close(context.Background())
		// Orphans, as a crash leaves them: markers and snapshots of a run
		// that no longer exists and of a finished one (written after
		// Close, so that no cleaner deletes them).
		db, err := openLeaseDB(ctx, fixtureDSN(dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"ghost", "done-1"} {
			if _, _, err := db.mark(ctx, id, id+"/tool/c1", 1); err != nil {
				t.Fatal(err)
			}
			if err := db.saveSnapshot(ctx, id, "k", 1, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
		db.close()
		if before["asked/ask/"+p.Asks[0].Request.ID] == "" || before["sess/1"] == "" {
			t.Fatalf("the setup lacks rows: %v", before)
		}

		markers := func() int {
			return countRows(t, dir, `SELECT COUNT(*) FROM {S} WHERE run_id IN ('ghost', 'done-1', 'done-2', 'asked')`)
		}
		snapshots := func() int { return countRows(t, dir, `SELECT COUNT(*) FROM {P} WHERE run_id IN ('ghost', 'done-1')`) }
		if m, p := markers(), snapshots(); m != 2 || p != 2 {
			t.Fatalf("the setup left %d orphaned markers and %d snapshots, want 2 and 2", m, p)
		}

		time.Sleep(300 * time.Millisecond)
		rt = openFixture(t, dir, true, WithRetention(200*time.Millisecond))
		// One sweep deletes the workflows, then the orphans: wait for both.
		deadline := time.Now().Add(30 * time.Second)
		for {
			after := workflowIDs(t, rt)
			_, d1 := after["done-1"]
			_, a := after["asked"]
			_, s1 := after["sess/1"]
			if !d1 && !a && !s1 && markers() == 0 && snapshots() == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the sweeper left finished runs or orphans (%d markers, %d snapshots): %v", markers(), snapshots(), after)
			}
			time.Sleep(50 * time.Millisecond)
		}
		after := workflowIDs(t, rt)
		for id := range before {
			_, kept := after[id]
			gone := strings.HasPrefix(id, "done-") || strings.HasPrefix(id, "asked") || id == "sess/1"
			if id == "cancelled" && before[id] != dbos.WorkflowStatusCancelled {
				t.Fatalf("run %s is %s, want cancelled", id, before[id])
			}
			if gone == kept {
				t.Errorf("%s: kept=%v", id, kept)
			}
		}
		if _, ok := after["sess/2"]; !ok {
			t.Error("the session's newest run was deleted")
		}
		// The waiting runs still work: the question, the approval, the session.
		p, err = rt.Pending(ctx)
		if err != nil || len(p.Asks) != 2 || len(p.Approvals) != 1 {
			t.Fatalf("pending after the sweep: %+v %v", p, err)
		}
		for _, a := range p.Asks {
			if a.RunID == parked {
				if err := rt.Reply(ctx, parked, a.Request.ID, harness.Answer{Choice: "blue"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if res, err := rt.Wait(ctx, parked); err != nil || !strings.Contains(res.Text, "chose blue") {
			t.Fatalf("the parked run: %+v %v", res, err)
		}
		res, err := rt.Resume(ctx, "paused", harness.Approve(p.Approvals[0].Requests[0].ID))
		if err != nil || res.Status != harness.StatusCompleted {
			t.Fatalf("the paused run: %+v %v", res, err)
		}
		if _, err := rt.Run(ctx, "safe", "go", WithSession("sess")); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Wait(ctx, "sess/3"); err != nil {
			t.Fatalf("the session's next run is not sess/3: %v", err)
		}
	})
}

// TestRetentionOff: 0 keeps every row.
func TestRetentionOff(t *testing.T) {
	dir := t.TempDir()
	rt := openFixture(t, dir, true, WithRetention(0))
	if _, err := rt.Run(ctxT(t), "safe", "go", WithRunID("kept")); err != nil {
		t.Fatal(err)
	}
	if rt.retain != nil {
		t.Fatal("a sweeper runs with retention 0")
	}
	if _, ok := workflowIDs(t, rt)["kept"]; !ok {
		t.Fatal("the run was deleted")
	}
}

// TestAtRestFileModes: Open creates the SQLite file 0600 (its WAL and
// shared memory take its mode) in directories it creates 0700.
func TestAtRestFileModes(t *testing.T) {
	base := t.TempDir()
	path := filepath.Join(base, "a", ".harnessx", "runs.db")
	rt, err := Open(ctxT(t), "sqlite:"+path, WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	rt.Register("safe", factory(base, "safe"))
	if err := rt.Launch(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Run(ctxT(t), "safe", "go"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s: mode %v, want 0600", p, m)
		}
	}
	rt.Close(context.Background())
	for _, d := range []string{filepath.Join(base, "a"), filepath.Dir(path)} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o700 {
			t.Errorf("%s: mode %v, want 0700", d, m)
		}
	}
}

// TestCloseLogsNoError: a Close after runs finished logs no ERROR record,
// however the shutdown's goroutines interleave (repeated: it was reported
// in about half the runs of examples/durable). The runs take every path:
// tools in parallel, an approval resumed, a question answered, and, with
// a queue, a worker's dequeue.
func TestCloseLogsNoError(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		for i := range 4 {
			ctx := ctxT(t)
			c := newCaptured()
			opts := []Option{WithLogger(slog.New(c))}
			if i%2 == 1 {
				opts = append(opts, WithQueue("q"), WithExecutorID(fmt.Sprintf("w%d", i)))
			}
			rt := openFixture(t, dir, true, opts...)
			for _, a := range []string{"safe", "par", "unsafe"} {
				if _, err := rt.Run(ctx, a, "go"); err != nil {
					t.Fatal(err)
				}
			}
			res, err := rt.Run(ctx, "approve", "go")
			if err != nil || res.Status != harness.StatusPaused {
				t.Fatalf("%+v %v", res, err)
			}
			if _, err := rt.Resume(ctx, res.RunID, harness.Approve(res.Pending[0].ID)); err != nil {
				t.Fatalf("%v\n%s", err, strings.Join(c.lines(), "\n"))
			}
			id, err := rt.Submit(ctx, "ask", "go")
			if err != nil {
				t.Fatal(err)
			}
			waitAsk(t, rt, id, nil, nil)
			p, err := rt.Pending(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range p.Asks {
				if a.RunID == id {
					if err := rt.Reply(ctx, id, a.Request.ID, harness.Answer{Choice: "red"}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := rt.Wait(ctx, id); err != nil {
				t.Fatal(err)
			}
			if err := rt.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			if len(*c.recs) == 0 {
				t.Fatal("no record: the test does not see DBOS's log")
			}
			for k, l := range *c.lvls {
				if l >= slog.LevelError {
					t.Errorf("close %d logged: %s", i, (*c.recs)[k])
				}
			}
			c.mu.Unlock()
		}
	})
}
