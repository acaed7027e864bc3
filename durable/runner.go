package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/harnessx/harnessx/harness"
)

// runner is the harness.StepRunner on DBOS. Each model request is a step
// named by its key; each tool call is a step named by its key, which
// first writes the call's marker into the runtime's steps table (see
// leaseDB.mark): a call whose step was not recorded but whose marker was
// had started in an earlier execution. A call resumed after an approval
// is the step "<key>/resume" (marker "<key>/resume"), so that its pending
// result, recorded under "<key>", replays as pending and the decision's
// outcome is recorded apart.
type runner struct{ rt *Runtime }

var (
	_ harness.StepRunner = (*runner)(nil)
	_ harness.Asker      = (*runner)(nil)
	_ harness.Clock      = (*runner)(nil)
)

// runOf returns the durable run ctx belongs to, nil outside a durable run
// and inside a step (a subagent's run inside a tool call then runs its
// steps directly, within its parent's step).
func runOf(ctx context.Context) *runState {
	rs, _ := ctx.Value(wfKey{}).(*runState)
	return rs
}

// inStep hides the workflow from what runs inside a step.
func inStep(ctx context.Context) context.Context {
	return context.WithValue(ctx, wfKey{}, (*runState)(nil))
}

// Model runs the model request as a step: recorded once, replayed after.
// The engine snapshot follows it.
func (r *runner) Model(ctx context.Context, s *harness.Step, fn func(context.Context) (*harness.ModelResponse, error)) (*harness.ModelResponse, error) {
	rs := runOf(ctx)
	if rs == nil {
		return fn(ctx)
	}
	if rs.fenced.Load() {
		return nil, errFenced
	}
	if e := rs.broken.Load(); e != nil {
		return nil, e
	}
	resp, err := r.modelStep(rs, s, inStep(ctx), fn) // seal.go
	rs.fence(err)
	r.rt.snapshot(rs, s.Key)
	return resp, err
}

// callKey holds, in a durable tool call's context, the call (callInfo).
type callKey struct{}

// callInfo is a durable tool call: its run, its step (an ask is served
// only for it) and when its marker says it first started (harness.Now).
type callInfo struct {
	rs    *runState
	step  *harness.Step
	start time.Time
}

// Tools runs each call as a step, started in slice order; a group of
// several runs its steps in parallel (dbos.Go). A call that an earlier
// execution started but did not record was interrupted: a ReplaySafe call
// runs again, a ReplayUnsafe one is reported interrupted. A call whose
// recorded result is a question that parked the run (ToolSuspended) runs
// again, from its start, as the step "<name>/answered/<n>": its question
// has an answer now, or it parks the run again. The engine snapshot
// follows the group.
func (r *runner) Tools(ctx context.Context, steps []*harness.Step, fn func(ctx context.Context, i int) *harness.ToolResult) []*harness.ToolResult {
	rs := runOf(ctx)
	if rs == nil {
		return harness.DirectRunner{}.Tools(ctx, steps, fn)
	}
	inner := inStep(ctx)
	out := make([]*harness.ToolResult, len(steps))
	if e := rs.broken.Load(); e != nil {
		for i, s := range steps {
			out[i] = stepError(s, e)
		}
		return out
	}
	calls := make([]toolCall, len(steps))
	for i, s := range steps {
		calls[i] = toolCall{name: s.Key, todo: true}
		if s.Resumed {
			calls[i].name += "/resume"
		}
	}
	for again, n := 1, len(steps); n > 0; again++ {
		r.toolRound(rs, inner, steps, calls, n, out, fn)
		n = 0
		for i := range calls {
			c := &calls[i]
			c.todo = c.todo && !c.ran && out[i] != nil && out[i].Status == harness.ToolSuspended
			if c.todo {
				// Recorded by an execution that parked: the question is
				// answered, or the call parks the run again.
				c.name = steps[i].Key + "/answered/" + strconv.Itoa(again)
				n++
			}
			c.ran = false
		}
	}
	r.rt.snapshot(rs, steps[len(steps)-1].Key)
	return out
}

// toolCall is a call of a group the runner runs: its step's name, whether
// it runs in this round (todo), and whether it ran in this execution
// rather than replayed (ran).
type toolCall struct {
	name      string
	todo, ran bool
}

// toolRound runs the n calls marked todo as steps, in parallel when there
// are several, sets out[i], and marks those that ran in this execution.
func (r *runner) toolRound(rs *runState, inner context.Context, steps []*harness.Step, calls []toolCall, n int, out []*harness.ToolResult, fn func(ctx context.Context, i int) *harness.ToolResult) {
	body := func(i int) func(context.Context) (*harness.ToolResult, error) {
		s, c := steps[i], &calls[i]
		return func(context.Context) (res *harness.ToolResult, err error) {
			c.ran = true
			defer func() {
				if p := recover(); p != nil {
					// A result, not the step's error: DBOS records errors in plain text.
					res, err = stepError(s, fmt.Errorf("tool step %s panicked: %v", s.Key, p)), nil
				}
			}()
			if rs.fenced.Load() {
				return stepError(s, errFenced), nil
			}
			start, fresh, err := r.rt.mark(inner, rs, c.name)
			if err != nil {
				return stepError(s, fmt.Errorf("record that the call starts: %w", err)), nil
			}
			ctx := context.WithValue(inner, callKey{}, callInfo{rs, s, start})
			if !fresh && s.Replay != harness.ReplaySafe {
				ctx = harness.InterruptedContext(ctx)
			}
			// Large parts are recorded by reference (blob.go).
			return r.rt.recordResult(inner, rs, c.name, fn(ctx, i)), nil
		}
	}
	if n == 1 {
		for i := range calls {
			if calls[i].todo {
				res, err := dbos.RunAsStep(rs.wf, body(i), dbos.WithStepName(calls[i].name))
				if rs.fence(err) != nil {
					res = stepError(steps[i], err)
				} else if err := r.rt.restoreResult(inner, rs, calls[i].name, res); err != nil {
					res = stepError(steps[i], err)
				}
				out[i] = res
			}
		}
		return
	}
	chans := make([]<-chan dbos.StepOutcome[*harness.ToolResult], len(calls))
	for i := range calls {
		if !calls[i].todo {
			continue
		}
		ch, err := dbos.Go(rs.wf, body(i), dbos.WithStepName(calls[i].name))
		if rs.fence(err) != nil {
			out[i] = stepError(steps[i], err)
			continue
		}
		chans[i] = ch
	}
	for i, ch := range chans {
		if ch == nil {
			continue
		}
		o := <-ch
		out[i] = o.Result
		if rs.fence(o.Err) != nil {
			out[i] = stepError(steps[i], o.Err)
		} else if err := r.rt.restoreResult(inner, rs, calls[i].name, o.Result); err != nil {
			out[i] = stepError(steps[i], err)
		}
	}
}

// stepError is the result of a call whose step failed in the runtime (the
// database, a cancelled run).
func stepError(s *harness.Step, err error) *harness.ToolResult {
	return &harness.ToolResult{CallID: s.Call.ID, Name: s.Call.Name, Content: "durable: " + err.Error(), IsError: true, Status: harness.ToolError}
}

// Ask serves a question of a durable run's tool call. The question is a
// workflow named "<run id>/ask/<ask id>", which waits for [Runtime.Reply]
// and lists the question in Pending. With an answer recorded, Ask returns
// it; without one, the run parks ([harness.ErrSuspended]): its execution
// ends and frees its worker, and the run continues, running the call
// again from its start, once the question is answered (suspend.go). A
// tool run again after a crash finds the same question, and so its
// answer, without asking twice.
func (r *runner) Ask(ctx context.Context, s *harness.Step, req harness.AskRequest) (harness.Answer, error) {
	call, _ := ctx.Value(callKey{}).(callInfo)
	if s == nil || call.step != s {
		// Only a tool call of a durable run has a run to park: not a
		// call outside one, nor a subagent's call inside one (its context
		// holds its parent's call, with another step). The agent's own
		// answerer (harness.WithAsker), if any, answers instead.
		return harness.Answer{}, fmt.Errorf("%w: outside a durable run", harness.ErrAskUnsupported)
	}
	call.rs.asked.Store(true)
	id := askWorkflowID(s.RunID, req.ID)
	h, err := dbos.RunWorkflow(r.rt.dctx, askWorkflow, askInput{RunID: s.RunID, Key: s.Key, Tool: s.Call.Name, Request: req},
		dbos.WithWorkflowID(id))
	if err != nil {
		return harness.Answer{}, fmt.Errorf("durable: ask %s: %w", req.ID, err)
	}
	enc, ok, err := r.rt.recorded(ctx, s.RunID, req.ID)
	if err != nil {
		return harness.Answer{}, fmt.Errorf("durable: ask %s: %w", req.ID, err)
	}
	if ok {
		var ans harness.Answer
		if err := json.Unmarshal(enc, &ans); err != nil {
			return harness.Answer{}, fmt.Errorf("durable: ask %s: the recorded answer: %w", req.ID, err)
		}
		settle(r.rt, h, s.RunID, id, answerTopic, ans)
		return ans, nil
	}
	if st, err := h.GetStatus(); err == nil && st.Status == dbos.WorkflowStatusSuccess {
		// Answered before the answers were recorded apart.
		return h.GetResult()
	}
	r.rt.notify()
	call.rs.waits.add(req.ID)
	return harness.Answer{}, fmt.Errorf("%w: question %s of run %s", harness.ErrSuspended, req.ID, s.RunID)
}

// Now returns, inside a tool call, the time its marker recorded when the
// call first started, so that a rerun sees the same time; elsewhere
// (a model request is one step, recorded whole) the current time.
func (r *runner) Now(ctx context.Context, s *harness.Step) time.Time {
	if call, ok := ctx.Value(callKey{}).(callInfo); ok {
		return call.start
	}
	return time.Now()
}
