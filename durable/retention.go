package durable

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
)

// DefaultRetention is how long a finished run's rows stay in the
// database (see [WithRetention]).
const DefaultRetention = 7 * 24 * time.Hour

// WithRetention sets how long the rows of a finished run (succeeded,
// failed or cancelled) stay in the database after it finished (default
// [DefaultRetention], 7 days): the run's workflow with its steps, its
// questions and approvals, and the runtime's markers, snapshot and blobs. A
// launched runtime deletes them in the background, every d/4 but at most
// every hour (the first time within a minute of Launch); a zero or negative d keeps them forever. An unfinished run
// keeps all its rows, and so does a finished run while one of its
// questions or approvals still waits; the last successful run of a
// session is kept while it is the newest, since the session's next run
// starts from what it saved. A deleted run is unknown ([ErrUnknownRun]),
// and its ID may be used again.
func WithRetention(d time.Duration) Option {
	return func(c *config) { c.retention, c.retentionSet = d, true }
}

// sweepBatch is how many workflows a sweep lists and deletes at once, and
// sweepPages how many times at most.
const (
	sweepBatch = 500
	sweepPages = 20
)

// sweeper deletes the rows of old finished runs, and the runtime's orphaned
// markers and snapshots, off the runs' path.
type sweeper struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// sweepInterval is how often the sweeper runs for retention d.
func sweepInterval(d time.Duration) time.Duration {
	return min(max(d/4, 10*time.Millisecond), time.Hour)
}

func (rt *Runtime) startSweeper() {
	if rt.cfg.retention <= 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &sweeper{cancel: cancel}
	s.wg.Go(func() {
		// The first sweep comes within a minute of Launch, so that a
		// process that runs for less than the interval sweeps too.
		every := sweepInterval(rt.cfg.retention)
		timer := time.NewTimer(min(every, time.Minute))
		defer timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			timer.Reset(every)
			if _, err := rt.sweep(ctx); err != nil && ctx.Err() == nil {
				rt.cfg.logger.Warn("durable: cannot delete the rows of old finished runs", "error", err)
			}
		}
	})
	rt.mu.Lock()
	rt.retain = s
	rt.mu.Unlock()
}

// stopSweeper stops the sweeper and waits for it. Close calls it with
// rt.mu held.
func (rt *Runtime) stopSweeper() {
	if s := rt.retain; s != nil {
		s.cancel()
		s.wg.Wait()
	}
}

// ended reports whether a workflow's outcome is recorded: it succeeded or
// failed. A cancelled run may be parked (suspend.go).
func ended(s dbos.WorkflowStatusType) bool {
	return s == dbos.WorkflowStatusSuccess || s == dbos.WorkflowStatusError
}

// terminal is the statuses of a finished workflow.
var terminal = []dbos.WorkflowStatusType{dbos.WorkflowStatusSuccess, dbos.WorkflowStatusError,
	dbos.WorkflowStatusCancelled, dbos.WorkflowStatusMaxRecoveryAttemptsExceeded}

// sweep deletes, once, the workflows of this application that finished
// before the retention (at most sweepBatch×sweepPages of them), with the runtime's
// rows of the runs among them, and the orphaned rows of the runtime's
// tables. It returns how many workflows it deleted.
//
// A workflow is kept when its ID, or the ID of a workflow it belongs to
// ("<run>" for "<run>/ask/…", "<run>/approval/…"), is a prefix at a "/"
// of an unfinished workflow's ID: an unfinished run keeps its finished
// questions (a re-execution finds their answers), and a finished run its
// own while one of them waits. Over-keeping errs on the safe side (a run
// named "a" is kept while "a/1" runs).
func (rt *Runtime) sweep(ctx context.Context) (int, error) {
	dc, end := rt.within(ctx)
	defer end()
	open, err := dbos.ListWorkflows(dc, dbos.WithFilterStatus(dbos.WorkflowStatusPending, dbos.WorkflowStatusEnqueued, dbos.WorkflowStatusDelayed),
		dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return 0, err
	}
	busy := map[string]bool{}
	for _, w := range open {
		for id := w.ID; ; {
			busy[id] = true
			i := strings.LastIndexByte(id, '/')
			if i < 0 {
				break
			}
			id = id[:i]
		}
	}
	// A parked run is cancelled in DBOS's eyes, and unfinished in ours.
	db, err := rt.auxDB(ctx)
	if err != nil {
		return 0, err
	}
	parked, err := db.parkedRuns(ctx)
	if err != nil {
		return 0, err
	}
	for _, id := range parked {
		busy[id] = true
	}
	// Pages of the oldest first: the kept ones stay at the front, so the
	// next page starts after them.
	cutoff := time.Now().Add(-rt.cfg.retention)
	var deleted, runs []string
	for kept, page := 0, 0; page < sweepPages; page++ {
		old, err := dbos.ListWorkflows(dc, dbos.WithFilterStatus(terminal...), dbos.WithFilterApplicationName(rt.cfg.appName),
			dbos.WithFilterCompletedBefore(cutoff), dbos.WithFilterLimit(sweepBatch), dbos.WithFilterOffset(kept),
			dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
		if err != nil {
			return len(deleted), err
		}
		// A session's newest successful run among these stays: the
		// session's next run reads what it saved.
		newest := map[string]int{}
		for _, w := range old {
			if s, n, ok := sessionRun(w); ok && n > newest[s] {
				newest[s] = n
			}
		}
		var ids []string
		for _, w := range old {
			if s, n, ok := sessionRun(w); isBusy(busy, w.ID) || ok && newest[s] == n {
				kept++
				continue
			}
			ids = append(ids, w.ID)
			if w.Name == runWorkflowName {
				runs = append(runs, w.ID)
			}
		}
		if len(ids) > 0 {
			if err := dbos.DeleteWorkflows(dc, ids); err != nil {
				return len(deleted), err
			}
			deleted = append(deleted, ids...)
		}
		if len(old) < sweepBatch {
			break
		}
	}
	ids := deleted
	if err := rt.sweepOrphans(ctx, dc, db, runs); err != nil {
		return len(ids), err
	}
	return len(ids), nil
}

// sessionRun tells a successful run named like a session's ("<session>/<n>").
func sessionRun(w dbos.WorkflowStatus) (session string, n int, ok bool) {
	if w.Name != runWorkflowName || w.Status != dbos.WorkflowStatusSuccess {
		return "", 0, false
	}
	i := strings.LastIndexByte(w.ID, '/')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(w.ID[i+1:])
	if err != nil || n < 1 {
		return "", 0, false
	}
	return w.ID[:i], n, true
}

func isBusy(busy map[string]bool, id string) bool {
	for {
		if busy[id] {
			return true
		}
		i := strings.LastIndexByte(id, '/')
		if i < 0 {
			return false
		}
		id = id[:i]
	}
}

// sweepOrphans deletes the runtime's markers, snapshots, answers and blobs of the runs
// just deleted, and of every run in its tables that no longer exists or
// that succeeded or failed (a crash between a run's end and the cleaner
// leaves them). A cancelled run keeps them until it is deleted: it may be
// resumed, and its markers tell its interrupted calls.
func (rt *Runtime) sweepOrphans(ctx context.Context, dc dbos.Context, db *leaseDB, deleted []string) error {
	ids := map[string]bool{}
	for _, table := range []string{db.steps, db.snaps, db.answers, db.parked, db.blobs} {
		rows, err := db.db.QueryContext(ctx, `SELECT DISTINCT run_id FROM `+table)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	gone := map[string]bool{}
	for _, id := range deleted {
		if ids[id] {
			gone[id] = true
		}
	}
	var check []string
	for id := range ids {
		if !gone[id] {
			check = append(check, id)
		}
	}
	for len(check) > 0 {
		batch := check[:min(len(check), sweepBatch)]
		check = check[len(batch):]
		ws, err := dbos.ListWorkflows(dc, dbos.WithFilterWorkflowIDs(batch...), dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
		if err != nil {
			return err
		}
		live := map[string]bool{}
		for _, w := range ws {
			if !ended(w.Status) {
				live[w.ID] = true
			}
		}
		for _, id := range batch {
			if !live[id] {
				gone[id] = true
			}
		}
	}
	if len(gone) == 0 {
		return nil
	}
	runs := make([]finishedRun, 0, len(gone))
	for id := range gone {
		runs = append(runs, finishedRun{id: id, snap: true, asked: true, blobs: true, epoch: -1})
	}
	return db.done(ctx, runs)
}
