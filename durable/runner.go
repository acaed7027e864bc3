package durable

import (
	"context"
	"fmt"
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
// runs again, a ReplayUnsafe one is reported interrupted. The engine
// snapshot follows the group.
func (r *runner) Tools(ctx context.Context, steps []*harness.Step, fn func(ctx context.Context, i int) *harness.ToolResult) []*harness.ToolResult {
	rs := runOf(ctx)
	if rs == nil {
		return harness.DirectRunner{}.Tools(ctx, steps, fn)
	}
	wf := rs.wf
	inner := inStep(ctx)
	out := make([]*harness.ToolResult, len(steps))
	chans := make([]<-chan dbos.StepOutcome[*harness.ToolResult], len(steps))
	for i, s := range steps {
		name := s.Key
		if s.Resumed {
			name += "/resume"
		}
		body := func(context.Context) (res *harness.ToolResult, err error) {
			defer func() {
				if p := recover(); p != nil {
					// A result, not the step's error: DBOS records errors in plain text.
					res, err = stepError(s, fmt.Errorf("tool step %s panicked: %v", s.Key, p)), nil
				}
			}()
			if rs.fenced.Load() {
				return stepError(s, errFenced), nil
			}
			start, fresh, err := r.rt.mark(inner, rs, name)
			if err != nil {
				return stepError(s, fmt.Errorf("record that the call starts: %w", err)), nil
			}
			c := context.WithValue(inner, callKey{}, callInfo{rs, s, start})
			if !fresh && s.Replay != harness.ReplaySafe {
				return fn(harness.InterruptedContext(c), i), nil
			}
			return fn(c, i), nil
		}
		if len(steps) == 1 {
			res, err := dbos.RunAsStep(wf, body, dbos.WithStepName(name))
			if rs.fence(err) != nil {
				res = stepError(s, err)
			}
			out[i] = res
			continue
		}
		ch, err := dbos.Go(wf, body, dbos.WithStepName(name))
		if rs.fence(err) != nil {
			out[i] = stepError(s, err)
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
		}
	}
	r.rt.snapshot(rs, steps[len(steps)-1].Key)
	return out
}

// stepError is the result of a call whose step failed in the runtime (the
// database, a cancelled run).
func stepError(s *harness.Step, err error) *harness.ToolResult {
	return &harness.ToolResult{CallID: s.Call.ID, Name: s.Call.Name, Content: "durable: " + err.Error(), IsError: true, Status: harness.ToolError}
}

// Ask parks the question in an ask workflow named "<run id>/ask/<ask id>",
// which waits for [Runtime.Reply]; the tool waits for its result. A tool
// run again after a crash finds the same workflow, and so the recorded
// answer, without asking again.
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
	h, err := dbos.RunWorkflow(r.rt.dctx, askWorkflow, askInput{RunID: s.RunID, Key: s.Key, Tool: s.Call.Name, Request: req},
		dbos.WithWorkflowID(askWorkflowID(s.RunID, req.ID)))
	if err != nil {
		return harness.Answer{}, fmt.Errorf("durable: ask %s: %w", req.ID, err)
	}
	r.rt.notify()
	type result struct {
		a   harness.Answer
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := h.GetResult()
		done <- result{a, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return harness.Answer{}, fmt.Errorf("durable: ask %s: %w", req.ID, res.err)
		}
		return res.a, nil
	case <-ctx.Done():
		return harness.Answer{}, context.Cause(ctx)
	}
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
