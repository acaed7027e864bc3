package durable

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/harnessx/harnessx/harness"
)

// approvalInput is the input of the approval workflow a paused run
// starts: it waits for the decisions.
type approvalInput struct {
	RunID  string    `json:"run_id"`
	Seq    int       `json:"seq"`
	Paused runOutput `json:"paused"`
}

// approvalWorkflow parks until Resume sends the decisions.
func approvalWorkflow(ctx dbos.Context, in approvalInput) ([]harness.Decision, error) {
	return dbos.Recv[[]harness.Decision](ctx, decisionsTopic, parkTimeout)
}

// askInput is the input of the ask workflow a tool's question starts.
type askInput struct {
	RunID   string             `json:"run_id"`
	Key     string             `json:"key"`            // the asking call's execution key
	Tool    string             `json:"tool,omitempty"` // the asking tool's name
	Request harness.AskRequest `json:"request"`
}

// askWorkflow parks until Reply sends the answer.
func askWorkflow(ctx dbos.Context, in askInput) (harness.Answer, error) {
	return dbos.Recv[harness.Answer](ctx, answerTopic, parkTimeout)
}

func askWorkflowID(runID, askID string) string { return runID + "/ask/" + askID }

// Pending is what [Runtime.Pending] lists: the approvals and questions
// that runs wait for.
type Pending struct {
	// Approvals are the paused runs.
	Approvals []PendingApproval
	// Asks are the open questions.
	Asks []PendingAsk
}

// PendingApproval is a run paused on approvals.
type PendingApproval struct {
	RunID    string
	Requests []harness.ApprovalRequest
	// Since is when the run paused.
	Since time.Time
}

// PendingAsk is a question a tool of a run waits on.
type PendingAsk struct {
	RunID string
	// Key is the execution key of the asking tool call.
	Key string
	// Tool is the name of the asking tool.
	Tool    string
	Request harness.AskRequest
	Since   time.Time
}

// PendingOption narrows [Runtime.Pending].
type PendingOption func(*pendingConfig)

type pendingConfig struct{ runID string }

// PendingOf lists only what the run runID waits for.
func PendingOf(runID string) PendingOption { return func(c *pendingConfig) { c.runID = runID } }

// Pending lists the approvals and questions that runs of this
// application wait for, oldest first, from the database: it sees the runs
// of every process. [PendingOf] narrows it to one run.
func (rt *Runtime) Pending(ctx context.Context, opts ...PendingOption) (*Pending, error) {
	var c pendingConfig
	for _, o := range opts {
		o(&c)
	}
	dc, end := rt.within(ctx)
	defer end()
	p, err := rt.pending(dc, c.runID)
	return p, opError("pending", c.runID, err)
}

// pending lists the open approvals and questions, of one run when runID
// is not empty.
func (rt *Runtime) pending(dc dbos.Context, runID string) (*Pending, error) {
	filters := []dbos.ListWorkflowsOption{dbos.WithFilterName(approvalWorkflowName, askWorkflowName),
		dbos.WithFilterStatus(dbos.WorkflowStatusPending, dbos.WorkflowStatusEnqueued), dbos.WithFilterLoadInput(true), dbos.WithFilterLoadOutput(false)}
	if runID != "" {
		filters = append(filters, dbos.WithFilterWorkflowIDPrefix(runID+"/"))
	}
	ws, err := dbos.ListWorkflows(dc, filters...)
	if err != nil {
		return nil, err
	}
	p := &Pending{}
	for _, w := range ws {
		switch w.Name {
		case approvalWorkflowName:
			var in approvalInput
			if err := decodeAny(w.Input, &in); err != nil {
				return nil, fmt.Errorf("approval %s: %w", w.ID, err)
			}
			if runID != "" && in.RunID != runID {
				continue // a run whose ID extends runID's
			}
			p.Approvals = append(p.Approvals, PendingApproval{RunID: in.RunID, Requests: in.Paused.Pending, Since: w.CreatedAt})
		case askWorkflowName:
			var in askInput
			if err := decodeAny(w.Input, &in); err != nil {
				return nil, fmt.Errorf("ask %s: %w", w.ID, err)
			}
			if runID != "" && in.RunID != runID {
				continue
			}
			p.Asks = append(p.Asks, PendingAsk{RunID: in.RunID, Key: in.Key, Tool: in.Tool, Request: in.Request, Since: w.CreatedAt})
		}
	}
	slices.SortStableFunc(p.Approvals, func(a, b PendingApproval) int { return a.Since.Compare(b.Since) })
	slices.SortStableFunc(p.Asks, func(a, b PendingAsk) int { return a.Since.Compare(b.Since) })
	return p, nil
}

// openApproval returns the input of the run's approval workflow that
// waits, nil when none does.
func (rt *Runtime) openApproval(dc dbos.Context, runID string) (*approvalInput, error) {
	ws, err := dbos.ListWorkflows(dc, dbos.WithFilterName(approvalWorkflowName), dbos.WithFilterParentWorkflowID(runID),
		dbos.WithFilterStatus(dbos.WorkflowStatusPending, dbos.WorkflowStatusEnqueued), dbos.WithFilterLoadInput(true), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return nil, fmt.Errorf("durable: run %s: %w", runID, err)
	}
	if len(ws) == 0 {
		return nil, nil
	}
	var in approvalInput
	if err := decodeAny(ws[0].Input, &in); err != nil {
		return nil, fmt.Errorf("durable: run %s: approval: %w", runID, err)
	}
	// Decided, and the decisions not yet taken: the run continues.
	db, err := rt.auxDB(dc)
	if err != nil {
		return nil, fmt.Errorf("durable: run %s: %w", runID, err)
	}
	if _, decided, err := db.recordedAnswer(dc, runID, approvalWait(in.Seq)); err != nil || decided {
		if err != nil {
			return nil, fmt.Errorf("durable: run %s: approval: %w", runID, err)
		}
		return nil, nil
	}
	// A finished run's decisions go with its rows, and its approval's
	// workflow may not have ended yet: it is not paused.
	run, err := rt.runRow(dc, "resume", runID)
	if err != nil {
		return nil, err
	}
	if ended(run.Status) {
		return nil, nil
	}
	return &in, nil
}

// wakeAfterAnswer wakes the run, parked on the question or approval just
// answered, once all it waits for is answered; a launched runtime does it
// if this cannot.
func (rt *Runtime) wakeAfterAnswer(ctx context.Context, runID string) {
	if _, err := rt.wake(ctx, runID); err != nil {
		rt.cfg.logger.Warn("durable: cannot wake a run after its answer; a launched runtime will", "run_id", runID, "error", err)
	}
}

// Resume continues a run from any process on the database, and waits, as
// [Runtime.Run] does, until the run finishes or pauses again.
//
// With decisions it continues a run paused on approvals: one decision for
// every pending approval, checked first ([ErrInvalidDecision] otherwise,
// and nothing is sent). Resume returns only once a launched runtime took
// the decisions; cancelling ctx stops the wait, and the decisions stay
// sent (a second Resume with the same decisions is harmless).
//
// Without decisions it recovers a run whose process stopped: an
// unfinished run that is not paused on approvals is moved, with its
// parked questions, to the runtime's queue (DBOS's internal one without
// [WithQueue]), and a launched runtime of the same application version
// — this one, or any worker — continues it from its last recorded step,
// as Launch recovers its own runs. It is for a run whose executor does
// not come back (without a lease, or before it expires); a run that is
// still running elsewhere is fenced by DBOS: its old execution's next
// step fails and the recovered one records the run. A run already waiting
// in a queue is only waited for.
//
// A finished run, or a run not paused on approvals given decisions, is
// [ErrNotPaused]; an unknown run [ErrUnknownRun].
func (rt *Runtime) Resume(ctx context.Context, runID string, decisions ...harness.Decision) (*harness.RunResult, error) {
	dc, end := rt.within(ctx)
	defer end()
	ws, err := rt.runRow(dc, "resume", runID)
	if err != nil {
		return nil, err
	}
	finished := ws.Status != dbos.WorkflowStatusPending && ws.Status != dbos.WorkflowStatusEnqueued && ws.Status != dbos.WorkflowStatusDelayed
	if ws.Status == dbos.WorkflowStatusCancelled {
		if waits, _, moved, err := rt.parkedWaits(dc, runID); err != nil {
			return nil, opError("resume", runID, err)
		} else if len(waits) > 0 || moved {
			finished = false // parked (it waits for answers or decisions), or woken just now
		}
	}
	if !finished {
		// A run of another version is neither moved nor waited for: no
		// worker of this version would take it.
		if err := rt.checkVersion("resume", ws); err != nil {
			return nil, err
		}
	}
	ap, err := rt.openApproval(dc, runID)
	if err != nil {
		return nil, opError("resume", runID, err)
	}
	if ap == nil {
		if len(decisions) == 0 {
			switch ws.Status {
			case dbos.WorkflowStatusCancelled:
				if !finished { // parked: woken if it has its answers, else waited for
					rt.wakeAfterAnswer(ctx, runID)
					return rt.Wait(ctx, runID)
				}
			case dbos.WorkflowStatusEnqueued, dbos.WorkflowStatusDelayed:
				return rt.Wait(ctx, runID)
			case dbos.WorkflowStatusPending:
				if err := rt.recoverRun(dc, runID); err != nil {
					return nil, opError("resume", runID, err)
				}
				return rt.Wait(ctx, runID)
			}
		}
		msg := "it is " + stateWord(ws.Status)
		if !finished {
			msg += ", not paused on approvals"
		}
		return nil, &Error{Op: "resume", RunID: runID, Class: ErrNotPaused, Msg: msg}
	}
	if err := checkDecisions(ap.Paused.Pending, decisions); err != nil {
		return nil, opError("resume", runID, err)
	}
	// Recorded before they are sent, as an answer is: the first
	// decisions stand, and a parked run finds them when it continues.
	if err := rt.decide(ctx, runID, ap.Seq, decisions); err != nil {
		return nil, opError("resume", runID, err)
	}
	id := fmt.Sprintf("%s/approval/%d", runID, ap.Seq)
	if err := dbos.Send(dc, id, decisions, decisionsTopic, dbos.WithIdempotencyKey(id)); err != nil {
		return nil, opError("resume", runID, err)
	}
	rt.wakeAfterAnswer(ctx, runID)
	// openApproval no longer reports the pause they answer.
	return rt.Wait(ctx, runID)
}

// recoverRun re-enqueues a pending run and its pending questions and
// approvals ("<run>/…"), as the lease does for a dead worker's runs.
func (rt *Runtime) recoverRun(dc dbos.Context, runID string) error {
	children, err := dbos.ListWorkflows(dc, dbos.WithFilterWorkflowIDPrefix(runID+"/"), dbos.WithFilterStatus(dbos.WorkflowStatusPending),
		dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return err
	}
	var parked []string
	for _, w := range children {
		// Only this run's own: "<run>/ask/…", "<run>/approval/…"; a run
		// named "<run>/…" is another run, with its own questions.
		rest := strings.TrimPrefix(w.ID, runID+"/")
		if w.Name != runWorkflowName && (strings.HasPrefix(rest, "ask/") || strings.HasPrefix(rest, "approval/")) {
			parked = append(parked, w.ID)
		}
	}
	return rt.resumeWorkflows(dc, []string{runID}, parked)
}

func checkDecisions(pending []harness.ApprovalRequest, ds []harness.Decision) error {
	seen := map[string]int{}
	for _, d := range ds {
		seen[d.ID]++
	}
	for _, p := range pending {
		switch seen[p.ID] {
		case 0:
			return fmt.Errorf("%w: no decision for approval %q", ErrInvalidDecision, p.ID)
		case 1:
		default:
			return fmt.Errorf("%w: %d decisions for approval %q", ErrInvalidDecision, seen[p.ID], p.ID)
		}
		delete(seen, p.ID)
	}
	for id := range seen {
		return fmt.Errorf("%w: no pending approval %q", ErrInvalidDecision, id)
	}
	return nil
}

// Reply answers the question askID of a run (see [harness.AskUser]) from
// any process on the database; the asking tool gets the answer once a
// launched runtime takes it. The answer's Kind must be the question's
// (empty means the question's), and a choice one of its options
// ([ErrInvalidAnswer]). Replying twice with the same answer is harmless;
// with another answer it is [ErrAlreadyAnswered]. An unknown run is
// [ErrUnknownRun], an unknown question [ErrUnknownAsk].
func (rt *Runtime) Reply(ctx context.Context, runID, askID string, ans harness.Answer) error {
	err := rt.reply(ctx, runID, askID, ans)
	return opError("reply", runID, err)
}

func (rt *Runtime) reply(ctx context.Context, runID, askID string, ans harness.Answer) error {
	id := askWorkflowID(runID, askID)
	dc, end := rt.within(ctx)
	defer end()
	ws, err := dbos.ListWorkflows(dc, dbos.WithFilterWorkflowIDs(id), dbos.WithFilterName(askWorkflowName),
		dbos.WithFilterLoadInput(true), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return err
	}
	if len(ws) == 0 {
		if _, err := rt.runRow(dc, "reply", runID); err != nil {
			return err
		}
		return fmt.Errorf("%w: the run has no question %q", ErrUnknownAsk, askID)
	}
	var in askInput
	if err := decodeAny(ws[0].Input, &in); err != nil {
		return fmt.Errorf("question %q: %w", askID, err)
	}
	req := in.Request
	if ans.Kind == "" {
		ans.Kind = req.Kind
	}
	if ans.ID == "" {
		ans.ID = req.ID
	}
	switch {
	case ans.Kind != req.Kind:
		return fmt.Errorf("%w: question %q asks for %s, got a %s answer", ErrInvalidAnswer, askID, req.Kind, ans.Kind)
	case ans.ID != req.ID:
		return fmt.Errorf("%w: answer for %q given to question %q", ErrInvalidAnswer, ans.ID, askID)
	case req.Kind == harness.AskSelect && !slices.Contains(req.Options, ans.Choice):
		return fmt.Errorf("%w: %q is not one of %q", ErrInvalidAnswer, ans.Choice, req.Options)
	}
	switch ws[0].Status {
	case dbos.WorkflowStatusPending, dbos.WorkflowStatusEnqueued:
		// A run that finished took its answer (its recorded answers go
		// with it), or ended without one: either way this one comes late.
		run, err := rt.runRow(dc, "reply", runID)
		if err != nil {
			return err
		}
		if ended(run.Status) {
			return fmt.Errorf("%w: question %q: the run %s", ErrAlreadyAnswered, askID, stateWord(run.Status))
		}
		// The first answer stands: it is recorded before it is sent, so
		// that a different second one is refused even while the first
		// is on its way (a message's idempotency key alone would drop
		// the second one silently).
		db, err := rt.auxDB(ctx)
		if err != nil {
			return err
		}
		enc, err := json.Marshal(ans)
		if err != nil {
			return err
		}
		stood, err := db.answer(ctx, runID, askID, enc)
		if err != nil {
			return err
		}
		var first harness.Answer
		if err := json.Unmarshal(stood, &first); err != nil {
			return fmt.Errorf("question %q: the recorded answer: %w", askID, err)
		}
		if first != ans {
			return fmt.Errorf("%w: question %q, with another answer", ErrAlreadyAnswered, askID)
		}
		if err := dbos.Send(dc, id, ans, answerTopic, dbos.WithIdempotencyKey(id)); err != nil {
			return err
		}
		rt.wakeAfterAnswer(ctx, runID)
		return nil
	case dbos.WorkflowStatusSuccess:
		h, err := dbos.RetrieveWorkflow[harness.Answer](dc, id)
		if err != nil {
			return err
		}
		got, err := h.GetResult()
		if err != nil {
			return err
		}
		if got != ans {
			return fmt.Errorf("%w: question %q, with another answer", ErrAlreadyAnswered, askID)
		}
		return nil
	default:
		return fmt.Errorf("%w: question %q is %s", ErrAlreadyAnswered, askID, stateWord(ws[0].Status))
	}
}

// decodeAny decodes a workflow input or output as ListWorkflows returns
// it: the encoded string (base64 of JSON, or JSON) or decoded JSON values.
func decodeAny(v any, dst any) error {
	var data []byte
	switch x := v.(type) {
	case nil:
		return errors.New("no data")
	case string:
		if isSealed(x) { // DBOS could not open it: the key does not (seal.go)
			return unreadable(x)
		}
		if b, err := base64.StdEncoding.DecodeString(x); err == nil && json.Valid(b) {
			data = b
		} else {
			data = []byte(x)
		}
	case []byte:
		data = x
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return err
		}
		data = b
	}
	return json.Unmarshal(data, dst)
}
