package durable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/harnessx/harnessx/harness"
)

// State is where a run stands, as [Runtime.Status] reports it.
type State string

// The states of a run.
const (
	// StateQueued: the run waits in its queue for a worker.
	StateQueued State = "queued"
	// StateRunning: a process executes the run, or executed it and
	// stopped (its process died): it is recovered by a Launch with the
	// same executor ID, the lease, or Resume without decisions.
	StateRunning State = "running"
	// StateWaiting: a tool of the run waits for an answer ([Runtime.Reply]).
	StateWaiting State = "waiting"
	// StatePaused: the run waits for approval decisions ([Runtime.Resume]).
	StatePaused State = "paused"
	// StateCompleted, StateFailed, StateCancelled: the run finished.
	StateCompleted State = "completed"
	StateFailed    State = "failed"
	StateCancelled State = "cancelled"
)

// Finished reports whether the state is final.
func (s State) Finished() bool {
	return s == StateCompleted || s == StateFailed || s == StateCancelled
}

// RunStatus is what [Runtime.Status] reports of a run.
type RunStatus struct {
	RunID string
	State State
	// AppVersion is the application version the run is pinned to: only
	// workers of that version run or recover it.
	AppVersion string
	// ExecutorID is the executor that runs it, or ran it last; empty
	// while it is queued.
	ExecutorID string
	// Queue is the queue it was submitted to; empty for a run that
	// executes where it started.
	Queue string
	// Attempt is which execution of the run is the latest: 1 for the
	// first, more after a recovery. 0 once the run finished (its
	// execution count is deleted with it).
	Attempt int
	// Created is when the run started; Updated when its state last
	// changed.
	Created, Updated time.Time
	// Approvals are the approvals a paused run waits for.
	Approvals []harness.ApprovalRequest
	// Asks are the questions the run waits on.
	Asks []PendingAsk
	// Parked is set while the run waits for answers or decisions without
	// an execution: it holds no worker's queue slot, and continues once
	// answered (see the package doc).
	Parked bool
	// Err is a finished run's error, nil when it completed.
	Err error
}

// Status reports a run's state from the database, from any process,
// without side effects: it neither waits, nor starts, moves or recovers
// anything. An unknown run is [ErrUnknownRun].
func (rt *Runtime) Status(ctx context.Context, runID string) (*RunStatus, error) {
	dc, end := rt.within(ctx)
	defer end()
	ws, err := rt.runRow(dc, "status", runID)
	if err != nil {
		return nil, err
	}
	st := &RunStatus{RunID: runID, AppVersion: ws.ApplicationVersion, ExecutorID: ws.ExecutorID, Queue: ws.QueueName,
		Created: ws.CreatedAt, Updated: ws.UpdatedAt}
	switch ws.Status {
	case dbos.WorkflowStatusEnqueued, dbos.WorkflowStatusDelayed:
		st.State, st.ExecutorID = StateQueued, ""
		if st.Queue == "" || strings.HasPrefix(st.Queue, "_dbos") {
			st.Queue = rt.queue
		}
	case dbos.WorkflowStatusPending:
		st.State = StateRunning
	case dbos.WorkflowStatusCancelled:
		waits, answered, moved, err := rt.parkedWaits(ctx, runID)
		if err != nil {
			return nil, opError("status", runID, err)
		}
		if moved { // woken since its status was read: read it again
			return rt.Status(ctx, runID)
		}
		if len(waits) == 0 {
			st.State = StateCancelled
			st.Err = &RunError{RunID: runID, Msg: "durable: the run was cancelled"}
			return st, nil
		}
		// Parked: it holds no worker. Waiting for an answer or decisions
		// (below), or answered and about to be queued again.
		st.State, st.Parked = StateRunning, true
		if !slices.Contains(answered, false) {
			st.State = StateQueued
		}
		if st.Queue == "" || strings.HasPrefix(st.Queue, "_dbos") {
			st.Queue = rt.queue
		}
	default:
		res, _, err := rt.state(dc, runID)
		if res == nil {
			return nil, opError("status", runID, err)
		}
		switch res.Status {
		case harness.StatusCompleted:
			st.State = StateCompleted
		case harness.StatusCancelled:
			st.State = StateCancelled
		default:
			st.State = StateFailed
		}
		st.Err = res.Err
		return st, nil
	}
	if st.State == StateRunning {
		ap, err := rt.openApproval(dc, runID)
		if err != nil {
			return nil, opError("status", runID, err)
		}
		if ap != nil {
			st.State, st.Approvals = StatePaused, ap.Paused.Pending
		}
	}
	p, err := rt.pending(dc, runID)
	if err != nil {
		return nil, opError("status", runID, err)
	}
	st.Asks = p.Asks
	if st.State == StateRunning && len(st.Asks) > 0 {
		st.State = StateWaiting
	}
	db, err := rt.auxDB(ctx)
	if err == nil {
		st.Attempt, err = db.attempt(ctx, runID)
	}
	if err != nil {
		return nil, opError("status", runID, err)
	}
	return st, nil
}

// runRow reads the run's row; an unknown run is [ErrUnknownRun].
func (rt *Runtime) runRow(dc dbos.Context, op, runID string) (*dbos.WorkflowStatus, error) {
	ws, err := dbos.ListWorkflows(dc, dbos.WithFilterWorkflowIDs(runID), dbos.WithFilterName(runWorkflowName),
		dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return nil, opError(op, runID, err)
	}
	if len(ws) == 0 {
		return nil, &Error{Op: op, RunID: runID, Class: ErrUnknownRun}
	}
	return &ws[0], nil
}

// checkVersion refuses a run that is not finished and is pinned to
// another application version than the runtime's: no worker of this
// version would run it.
func (rt *Runtime) checkVersion(op string, ws *dbos.WorkflowStatus) error {
	if ws.ApplicationVersion == "" || ws.ApplicationVersion == rt.cfg.appVersion {
		return nil
	}
	return &Error{Op: op, RunID: ws.ID, Class: ErrVersionMismatch,
		Msg: fmt.Sprintf("the run is pinned to application version %q and this runtime is %q: only a runtime of version %q runs, recovers or resumes it (WithAppVersion)",
			ws.ApplicationVersion, rt.cfg.appVersion, ws.ApplicationVersion)}
}

// stateWord names a DBOS status in the runtime's words.
func stateWord(s dbos.WorkflowStatusType) string {
	switch s {
	case dbos.WorkflowStatusEnqueued, dbos.WorkflowStatusDelayed:
		return "queued"
	case dbos.WorkflowStatusPending:
		return "running"
	case dbos.WorkflowStatusSuccess:
		return "finished"
	case dbos.WorkflowStatusError:
		return "failed"
	case dbos.WorkflowStatusCancelled:
		return "cancelled"
	case dbos.WorkflowStatusMaxRecoveryAttemptsExceeded:
		return "failed (it crashed too often on recovery)"
	}
	return strings.ToLower(string(s))
}

// Error is the error of a runtime call about a run. errors.As gives the
// call, the run and the class, one of the Err… sentinels of this package,
// which errors.Is matches; Err is the underlying cause, if any (a
// database error: class [ErrDatabase]).
type Error struct {
	// Op is the call: "run", "submit", "wait", "resume", "reply",
	// "status" or "pending"; "replay" for a recovered run's own failure
	// to replay a recorded step ([ErrBlob]).
	Op    string
	RunID string
	// Class is what went wrong: ErrUnknownRun, ErrNotPaused,
	// ErrVersionMismatch, ErrDatabase, …
	Class error
	// Msg says more, in the runtime's words; may be empty.
	Msg string
	// Err is the cause; may be nil.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("durable: ")
	b.WriteString(e.Op)
	if e.RunID != "" {
		fmt.Fprintf(&b, " run %q", e.RunID)
	}
	if e.Class != nil {
		b.WriteString(": ")
		b.WriteString(strings.TrimPrefix(e.Class.Error(), "durable: "))
	}
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(describe(e.Err))
	}
	return b.String()
}

// Unwrap gives the class and the cause.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Class != nil {
		out = append(out, e.Class)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// opError turns an error of a call about a run into an *Error: an *Error
// keeps its class (its Op becomes op), a context's end stays itself, and
// anything else is a database error.
func opError(op, runID string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		c := *e
		c.Op = op
		if c.RunID == "" {
			c.RunID = runID
		}
		return &c
	}
	for _, class := range []error{ErrUnknownRun, ErrUnknownAsk, ErrNotPaused, ErrInvalidDecision, ErrInvalidAnswer,
		ErrAlreadyAnswered, ErrSessionBusy, ErrUnknownAgent, ErrVersionMismatch, ErrClosed, ErrNotLaunched,
		ErrInvalidRunOption, ErrRegistration, harness.ErrInvalidRunID} {
		if errors.Is(err, class) {
			return &Error{Op: op, RunID: runID, Class: class, Msg: strings.TrimPrefix(strings.TrimPrefix(err.Error(), class.Error()), ": ")}
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &Error{Op: op, RunID: runID, Err: err}
	}
	return &Error{Op: op, RunID: runID, Class: ErrDatabase, Err: err}
}

// describe renders a cause in the runtime's words: DBOS's errors carry
// its vocabulary ("workflow"), which means a run here.
func describe(err error) string {
	msg := err.Error()
	var de *dbos.Error
	if errors.As(err, &de) {
		switch {
		case errors.Is(err, dbos.ErrNonExistentWorkflow):
			return "no such run"
		case errors.Is(err, dbos.ErrConflictingWorkflowID):
			return "another execution owns the run"
		case errors.Is(err, dbos.ErrWorkflowCancelled), errors.Is(err, dbos.ErrAwaitedWorkflowCancelled):
			return "the run was cancelled"
		}
	}
	r := strings.NewReplacer("workflows", "runs", "Workflows", "Runs", "workflow", "run", "Workflow", "Run", "DBOS ", "")
	return r.Replace(msg)
}

// transient reports whether err is a database error worth waiting out,
// as opposed to an answer (an unknown run, a refused call) or the end of
// the caller's context.
func transient(err error) bool {
	var e *Error
	if errors.As(err, &e) && e.Class != nil && e.Class != ErrDatabase {
		return false
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) &&
		!slices.ContainsFunc([]error{ErrUnknownRun, ErrClosed, ErrVersionMismatch}, func(c error) bool { return errors.Is(err, c) })
}
