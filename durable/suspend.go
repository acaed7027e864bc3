package durable

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/harnessx/harnessx/harness"
)

// Parking: a run that waits for a person does not hold a worker.
//
// A question a tool asks, or a pause on approvals, with no answer
// recorded yet parks the run: the execution writes what the run waits
// for into the parked table ("harnessx.parked" / "harnessx_parked"),
// fenced on its execution number like the markers, then cancels the run's
// workflow in DBOS (CancelWorkflow from outside the workflow: the row
// becomes CANCELLED, leaves its queue and loses its owner) and returns, so
// that the worker's queue slot is free. The question's or approval's own
// workflow ("<run>/ask/<id>", "<run>/approval/<n>") keeps waiting, as
// before, and lists the question in Pending.
//
// Reply and Resume record the answer (the answers table: the first one
// stands) before they send it, then wake the run: they claim its parked
// rows once every wait has an answer (one UPDATE, so that of two wakers
// one wins) and move the run back to its queue (dbos.ResumeWorkflow), and
// the next execution replays the run's recorded steps and finds the
// answer. Parker and waker each write before they read the other's write
// (the parker cancels, then looks for the answer; the waker records the
// answer, then looks for the parked rows), so at least one of them sees
// the other and wakes the run. A waker that stops after its claim leaves
// the claim to expire (wakeClaim); every launched runtime looks for runs
// whose waits all have answers (wakeEvery) and wakes them.

const (
	// wakeClaim is how long a waker's claim on a parked run holds: a
	// waker that stopped mid-wake is replaced after it.
	wakeClaim = 30 * time.Second
	// wakeEvery is how often a launched runtime looks for parked runs
	// whose waits all have answers.
	wakeEvery = 2 * time.Second
	// askSettle bounds how long a call whose question has an answer
	// waits for the question's workflow to record it.
	askSettle = 5 * time.Second
)

// approvalWait names the n-th pause of a run on approvals in the parked
// and answers tables (a question's wait is its ask ID).
func approvalWait(n int) string { return "#approval/" + strconv.Itoa(n) }

// errParked is what the workflow function of a parked execution returns;
// DBOS does not record it (the run's row is cancelled).
var errParked = errors.New("durable: the run is parked until it is answered")

// waits collects the questions the calls of a run parked on, in the
// order they asked.
type waits struct {
	mu  sync.Mutex
	ids []string
}

func (w *waits) add(id string) {
	w.mu.Lock()
	if !slices.Contains(w.ids, id) {
		w.ids = append(w.ids, id)
	}
	w.mu.Unlock()
}

func (w *waits) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.ids)
}

// park parks the run rs on waits and returns what its workflow function
// returns. A run that a newer execution owns is only left (errFenced).
func (rt *Runtime) park(ctx dbos.Context, rs *runState, waits []string) (runOutput, error) {
	db, err := rt.auxDB(ctx)
	for wait := 100 * time.Millisecond; err == nil; wait = min(2*wait, 5*time.Second) {
		if err = db.park(context.WithoutCancel(ctx), rs.runID, rs.epoch, rt.queue, waits); err == nil || errors.Is(err, errFenced) {
			break
		}
		rt.cfg.logger.Warn("durable: cannot record that a run waits for an answer; waiting for the database", "run_id", rs.runID, "error", err)
		select {
		case <-ctx.Done():
			return runOutput{}, context.Cause(ctx) // stays pending: recovered, it parks again
		case <-time.After(wait):
			err = nil
		}
	}
	if err != nil {
		return runOutput{}, rs.fence(err)
	}
	rt.cfg.logger.Debug("durable: run parks", "run_id", rs.runID, "execution", rs.epoch, "waits", waits)
	rt.cfg.logs.parking.Store(rs.runID, struct{}{})
	// Cancelled from outside the workflow: DBOS writes no step for it,
	// and the row loses its owner, so this execution records nothing
	// more. DBOS retries a database that does not answer.
	if err := dbos.CancelWorkflow(rt.dctx, rs.runID); err != nil {
		// Not parked: the workflow stays pending, and a recovery replays
		// it to the same wait. Its rows stay for that execution.
		rt.cfg.logs.parking.Delete(rs.runID)
		return runOutput{}, fmt.Errorf("durable: park run %s: %w", rs.runID, err)
	}
	rt.notify()
	// An answer given while the run parked: its waker may have found the
	// run still running.
	if _, err := rt.wake(context.WithoutCancel(ctx), rs.runID); err != nil {
		rt.cfg.logger.Warn("durable: cannot wake a parked run; a launched runtime will", "run_id", rs.runID, "error", err)
	}
	return runOutput{}, errParked
}

// wake moves a parked run whose waits all have answers back to its queue;
// woken is false when it is not parked, still waits, or another waker has
// it.
func (rt *Runtime) wake(ctx context.Context, runID string) (woken bool, err error) {
	db, err := rt.auxDB(ctx)
	if err != nil {
		return false, err
	}
	queue, ok, err := db.claimWake(ctx, runID)
	if err != nil || !ok {
		return false, err
	}
	dc, end := rt.within(ctx)
	defer end()
	ws, err := dbos.ListWorkflows(dc, dbos.WithFilterWorkflowIDs(runID), dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return false, errors.Join(err, db.releaseWake(ctx, runID))
	}
	if len(ws) > 0 {
		rt.cfg.logger.Debug("durable: waking a parked run", "run_id", runID, "status", ws[0].Status)
	}
	switch {
	case len(ws) == 0:
		return false, db.unpark(ctx, runID)
	case ws[0].Status == dbos.WorkflowStatusCancelled:
		var opts []dbos.ResumeWorkflowOption
		if queue != "" {
			opts = append(opts, dbos.WithResumeQueue(queue))
		}
		if _, err := dbos.ResumeWorkflow[runOutput](dc, runID, opts...); err != nil {
			return false, errors.Join(err, db.releaseWake(ctx, runID))
		}
		rt.cfg.logs.parking.Delete(runID)
		return true, db.unpark(ctx, runID)
	case ws[0].Status == dbos.WorkflowStatusPending:
		// Still running: its parker has not cancelled it yet, and will
		// find the answer after it did.
		return false, db.releaseWake(ctx, runID)
	default: // queued again, or finished: nothing parks it
		return false, db.unpark(ctx, runID)
	}
}

// startWaker starts the loop that wakes the parked runs whose waits all
// have answers (a waker that stopped, an answer given to a run that was
// parking).
func (rt *Runtime) startWaker() {
	ctx, cancel := context.WithCancel(context.Background())
	rt.wakeStop = cancel
	rt.wakeWG.Go(func() {
		tick := time.NewTicker(wakeEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			db, err := rt.auxDB(ctx)
			var ids []string
			if err == nil {
				ids, err = db.wakeable(ctx)
			}
			for _, id := range ids {
				if _, werr := rt.wake(ctx, id); werr != nil {
					err = werr
				}
			}
			if err != nil && ctx.Err() == nil {
				rt.cfg.logger.Warn("durable: cannot wake parked runs", "error", err)
			}
		}
	})
}

func (rt *Runtime) stopWaker() {
	if rt.wakeStop != nil {
		rt.wakeStop()
		rt.wakeWG.Wait()
	}
}

// recorded returns the answer recorded for the wait of runID (an ask ID,
// or approvalWait), waiting out a database that does not answer until
// ctx ends: a question must not be asked again, nor its answer lost,
// because a read failed.
func (rt *Runtime) recorded(ctx context.Context, runID, wait string) ([]byte, bool, error) {
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 5*time.Second) {
		db, err := rt.auxDB(ctx)
		if err == nil {
			var ans []byte
			var ok bool
			if ans, ok, err = db.recordedAnswer(ctx, runID, wait); err == nil {
				return ans, ok, nil
			}
		}
		if errors.Is(err, ErrPayloadKey) {
			return nil, false, err
		}
		if delay == 100*time.Millisecond {
			rt.cfg.logger.Warn("durable: cannot read a recorded answer; waiting for the database", "run_id", runID, "error", err)
		}
		select {
		case <-ctx.Done():
			return nil, false, context.Cause(ctx)
		case <-time.After(delay):
		}
	}
}

// decide records the decisions for the run's n-th pause unless some were
// recorded before; ErrAlreadyAnswered when those differ.
func (rt *Runtime) decide(ctx context.Context, runID string, n int, ds []harness.Decision) error {
	db, err := rt.auxDB(ctx)
	if err != nil {
		return err
	}
	enc, err := json.Marshal(ds)
	if err != nil {
		return err
	}
	stood, err := db.answer(ctx, runID, approvalWait(n), enc)
	if err != nil {
		return err
	}
	var first []harness.Decision
	if err := json.Unmarshal(stood, &first); err != nil {
		return fmt.Errorf("approval %d: the recorded decisions: %w", n, err)
	}
	if !sameDecisions(first, ds) {
		return fmt.Errorf("%w: approval %d of the run, with other decisions", ErrAlreadyAnswered, n)
	}
	return nil
}

// sameDecisions compares decisions regardless of their order.
func sameDecisions(a, b []harness.Decision) bool {
	if len(a) != len(b) {
		return false
	}
	for _, d := range a {
		if !slices.Contains(b, d) {
			return false
		}
	}
	return true
}

// settle ends the waiting workflow id (a question's or an approval's)
// whose answer v the run found recorded: it sends v again, in case the
// send of Reply or Resume did not arrive (the idempotency key makes a
// second send harmless), and gives the workflow up to askSettle to record
// it for good before the run goes on, so that its row, which outlives the
// run's answers, still tells a later Reply what stood. A process that
// runs it and stopped is not waited for longer.
func settle[T any](rt *Runtime, h dbos.WorkflowHandle[T], runID, id, topic string, v any) {
	if err := dbos.Send(rt.dctx, id, v, topic, dbos.WithIdempotencyKey(id)); err != nil {
		rt.cfg.logger.Warn("durable: cannot close an answered question or approval", "run_id", runID, "workflow_id", id, "error", err)
	}
	_, _ = h.GetResult(dbos.WithHandleTimeout(askSettle), dbos.WithHandlePollingInterval(rt.cfg.poll))
}

// parkedWaits returns what a run read as CANCELLED is parked on (nil
// when it is not), and whether each wait has its answer. moved is set
// when the run is parked no more: a wake moves the run back to its queue
// before it deletes the parked rows, so a status read before the rows
// may be stale, and the status is read again when there are none.
func (rt *Runtime) parkedWaits(ctx context.Context, runID string) (waits []string, answered []bool, moved bool, err error) {
	db, err := rt.auxDB(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	if waits, answered, err = db.parkedWaits(ctx, runID); err != nil || len(waits) > 0 {
		return waits, answered, false, err
	}
	dc, end := rt.within(ctx)
	defer end()
	ws, err := dbos.ListWorkflows(dc, dbos.WithFilterWorkflowIDs(runID), dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return nil, nil, false, err
	}
	return nil, nil, len(ws) == 1 && ws[0].Status != dbos.WorkflowStatusCancelled, nil
}

// ---- the parked table ----

// park records that the run waits for waits, replacing what an earlier
// execution recorded; errFenced when a newer execution than epoch runs
// the run.
func (l *leaseDB) park(ctx context.Context, runID string, epoch int, queue string, waits []string) error {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, l.q(`DELETE FROM {K} WHERE run_id = $1`), runID); err != nil {
		return err
	}
	for _, w := range waits {
		r, err := tx.ExecContext(ctx, l.q(`INSERT INTO {K} (run_id, wait_id, queue, since_ms) SELECT $1, $2, $3, {NOW}
WHERE COALESCE((SELECT n FROM {S} WHERE run_id = $1 AND step_key = ''), 1) = $4`), runID, w, queue, epoch)
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil || n == 0 {
			if err == nil {
				err = errFenced
			}
			return err
		}
	}
	return tx.Commit()
}

// unanswered is the condition "the run has a wait without an answer".
const unanswered = `EXISTS (SELECT 1 FROM {K} w WHERE w.run_id = $1
  AND NOT EXISTS (SELECT 1 FROM {A} a WHERE a.run_id = w.run_id AND a.ask_id = w.wait_id))`

// claimWake claims the parked run for a wake when every wait of it has
// an answer and no waker holds it; it returns the run's queue.
func (l *leaseDB) claimWake(ctx context.Context, runID string) (queue string, ok bool, err error) {
	rows, err := l.db.QueryContext(ctx, l.q(`UPDATE {K} SET waking_ms = {NOW}
WHERE run_id = $1 AND (waking_ms IS NULL OR waking_ms < {NOW} - $2) AND NOT `+unanswered+`
RETURNING queue`), runID, wakeClaim.Milliseconds())
	if err != nil {
		return "", false, err
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(&queue); err != nil {
			return "", false, err
		}
		ok = true
	}
	return queue, ok, rows.Err()
}

func (l *leaseDB) releaseWake(ctx context.Context, runID string) error {
	_, err := l.db.ExecContext(ctx, l.q(`UPDATE {K} SET waking_ms = NULL WHERE run_id = $1`), runID)
	return err
}

func (l *leaseDB) unpark(ctx context.Context, runID string) error {
	_, err := l.db.ExecContext(ctx, l.q(`DELETE FROM {K} WHERE run_id = $1`), runID)
	return err
}

// wakeable lists parked runs whose waits all have answers and that no
// waker holds, at most 100.
func (l *leaseDB) wakeable(ctx context.Context) ([]string, error) {
	rows, err := l.db.QueryContext(ctx, l.q(`SELECT DISTINCT k.run_id FROM {K} k
WHERE (k.waking_ms IS NULL OR k.waking_ms < {NOW} - $1)
  AND NOT EXISTS (SELECT 1 FROM {K} w WHERE w.run_id = k.run_id
    AND NOT EXISTS (SELECT 1 FROM {A} a WHERE a.run_id = w.run_id AND a.ask_id = w.wait_id))
LIMIT 100`), wakeClaim.Milliseconds())
	if err != nil {
		return nil, err
	}
	return scanStrings(rows)
}

// parkedWaits returns what the run waits for (nil when it is not parked)
// and whether each has an answer.
func (l *leaseDB) parkedWaits(ctx context.Context, runID string) (ids []string, answered []bool, err error) {
	rows, err := l.db.QueryContext(ctx, l.q(`SELECT k.wait_id,
  EXISTS (SELECT 1 FROM {A} a WHERE a.run_id = k.run_id AND a.ask_id = k.wait_id)
FROM {K} k WHERE k.run_id = $1 ORDER BY k.wait_id`), runID)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var ok bool
		if err := rows.Scan(&id, &ok); err != nil {
			return nil, nil, err
		}
		ids, answered = append(ids, id), append(answered, ok)
	}
	return ids, answered, rows.Err()
}

// parkedRuns lists the runs that are parked.
func (l *leaseDB) parkedRuns(ctx context.Context) ([]string, error) {
	rows, err := l.db.QueryContext(ctx, l.q(`SELECT DISTINCT run_id FROM {K}`))
	if err != nil {
		return nil, err
	}
	return scanStrings(rows)
}

// recordedAnswer returns the answer recorded for the wait of runID.
func (l *leaseDB) recordedAnswer(ctx context.Context, runID, wait string) ([]byte, bool, error) {
	var got string
	err := l.db.QueryRowContext(ctx, l.q(`SELECT answer FROM {A} WHERE run_id = $1 AND ask_id = $2`), runID, wait).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	ans, err := l.seal.openValue("answer", got, runID+"\x00"+wait)
	return ans, err == nil, err
}

func scanStrings(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
