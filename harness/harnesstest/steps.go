package harnesstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/harnessx/harnessx/harness"
)

// ErrNoAnswer is returned by [StepRunner.Ask] for a question that has no
// answer yet: where a durable runtime would park the run, the fake fails.
var ErrNoAnswer = errors.New("harnesstest: no answer for the question")

// Outcome says how a [StepRunner] handled a step.
type Outcome string

// The outcomes of a step.
const (
	// OutcomeRan: the step had no recorded outcome and ran.
	OutcomeRan Outcome = "ran"
	// OutcomeReplayed: the recorded outcome was returned; nothing ran.
	OutcomeReplayed Outcome = "replayed"
	// OutcomeRerun: the step was interrupted (see [StepRunner.Interrupt])
	// and, being ReplaySafe (or a model request), ran again.
	OutcomeRerun Outcome = "rerun"
	// OutcomeInterrupted: the step was interrupted and, not being
	// ReplaySafe, was reported as interrupted instead of running again.
	OutcomeInterrupted Outcome = "interrupted"
)

// RecordedStep is one step a [StepRunner] was given, in the order the
// steps were started.
type RecordedStep struct {
	Kind    harness.StepKind
	Key     string
	Index   int
	RunID   string
	CallID  string // StepTool
	Tool    string // StepTool: the called tool's name
	Replay  harness.ReplayPolicy
	Resumed bool
	// Group numbers the Tools calls from 1: steps of one parallel group
	// share it. It is 0 for model steps.
	Group   int
	Outcome Outcome
}

// StepRunner is a fake durable runtime: a [harness.StepRunner] that also
// implements [harness.Asker] and [harness.Clock]. It records every step it
// is given and keeps each finished step's outcome under the step's key;
// given a key it has an outcome for, it returns that outcome without
// running the step, as a durable runtime does when it recovers a run.
//
// To simulate a crash and a recovery, run a turn under a run ID
// ([harness.ContextWithRunID]) on one agent, [StepRunner.Forget] the steps
// that had not finished, [StepRunner.Interrupt] the one that was running,
// and run the same turn under the same run ID on a fresh agent with the
// same runner.
//
// Tools runs a group of several calls in parallel, started in order. It is
// safe for concurrent use. The zero value is not ready; use
// [NewStepRunner].
type StepRunner struct {
	mu          sync.Mutex
	models      map[string]*harness.ModelResponse
	results     map[string]*harness.ToolResult
	interrupted map[string]bool
	answers     map[string]harness.Answer
	steps       []RecordedStep
	asks        []harness.AskRequest
	groups      int
	clock       func() time.Time
}

var (
	_ harness.StepRunner = (*StepRunner)(nil)
	_ harness.Asker      = (*StepRunner)(nil)
	_ harness.Clock      = (*StepRunner)(nil)
)

// NewStepRunner returns an empty StepRunner.
func NewStepRunner() *StepRunner {
	return &StepRunner{
		models:      map[string]*harness.ModelResponse{},
		results:     map[string]*harness.ToolResult{},
		interrupted: map[string]bool{},
		answers:     map[string]harness.Answer{},
	}
}

// Model returns the recorded response of s.Key, or runs fn and records
// its response.
func (r *StepRunner) Model(ctx context.Context, s *harness.Step, fn func(context.Context) (*harness.ModelResponse, error)) (*harness.ModelResponse, error) {
	r.mu.Lock()
	rec := record(s, 0)
	resp, ok := r.models[s.Key]
	switch {
	case ok:
		rec.Outcome = OutcomeReplayed
	case r.interrupted[s.Key]:
		rec.Outcome = OutcomeRerun
	}
	delete(r.interrupted, s.Key)
	r.steps = append(r.steps, rec)
	r.mu.Unlock()
	if ok {
		return resp, nil
	}
	resp, err := fn(ctx)
	if err == nil && resp != nil {
		r.mu.Lock()
		r.models[s.Key] = resp
		r.mu.Unlock()
	}
	return resp, err
}

// Tools returns the recorded results of the group's keys and runs the
// other calls, several in parallel, started in order, recording their
// results (except pending approvals).
func (r *StepRunner) Tools(ctx context.Context, steps []*harness.Step, fn func(ctx context.Context, i int) *harness.ToolResult) []*harness.ToolResult {
	out := make([]*harness.ToolResult, len(steps))
	ctxs := make([]context.Context, len(steps))
	r.mu.Lock()
	r.groups++
	for i, s := range steps {
		rec := record(s, r.groups)
		if res, ok := r.results[s.Key]; ok {
			rec.Outcome, out[i] = OutcomeReplayed, res
		} else if r.interrupted[s.Key] {
			ctxs[i] = ctx
			if rec.Outcome = OutcomeRerun; s.Replay != harness.ReplaySafe {
				rec.Outcome, ctxs[i] = OutcomeInterrupted, harness.InterruptedContext(ctx)
			}
		} else {
			ctxs[i] = ctx
		}
		delete(r.interrupted, s.Key)
		r.steps = append(r.steps, rec)
	}
	r.mu.Unlock()
	run := func(i int) {
		res := fn(ctxs[i], i)
		out[i] = res
		if res != nil && res.Status != harness.ToolPending {
			r.mu.Lock()
			r.results[steps[i].Key] = res
			r.mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	for i := range steps {
		if ctxs[i] == nil {
			continue
		}
		if len(steps) == 1 {
			run(i)
		} else {
			wg.Go(func() { run(i) })
		}
	}
	wg.Wait()
	return out
}

func record(s *harness.Step, group int) RecordedStep {
	rec := RecordedStep{Kind: s.Kind, Key: s.Key, Index: s.Index, RunID: s.RunID, Replay: s.Replay,
		Resumed: s.Resumed, Group: group, Outcome: OutcomeRan}
	if s.Call != nil {
		rec.CallID, rec.Tool = s.Call.ID, s.Call.Name
	}
	return rec
}

// Ask records req and returns the answer set for req.ID with
// [StepRunner.SetAnswer], or [ErrNoAnswer].
func (r *StepRunner) Ask(_ context.Context, _ *harness.Step, req harness.AskRequest) (harness.Answer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asks = append(r.asks, req)
	a, ok := r.answers[req.ID]
	if !ok {
		return harness.Answer{}, fmt.Errorf("%w %q", ErrNoAnswer, req.ID)
	}
	return a, nil
}

// SetAnswer answers the question id.
func (r *StepRunner) SetAnswer(id string, a harness.Answer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[id] = a
}

// Now returns the time of the clock set with [StepRunner.SetClock], or
// time.Now().
func (r *StepRunner) Now(context.Context, *harness.Step) time.Time {
	r.mu.Lock()
	clock := r.clock
	r.mu.Unlock()
	if clock != nil {
		return clock()
	}
	return time.Now()
}

// SetClock makes Now return clock().
func (r *StepRunner) SetClock(clock func() time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clock = clock
}

// Forget drops the recorded outcomes of keys, as if those steps had not
// finished before a crash: they run again.
func (r *StepRunner) Forget(keys ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		delete(r.models, k)
		delete(r.results, k)
	}
}

// Interrupt drops the recorded outcome of key and marks the step as
// interrupted mid-way by a crash: when it comes again, a ReplaySafe tool
// call or a model request runs again, and another tool call is reported
// as interrupted ([harness.InterruptedContext]) without running.
func (r *StepRunner) Interrupt(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.models, key)
	delete(r.results, key)
	r.interrupted[key] = true
}

// Steps returns the recorded steps, in the order they were started.
func (r *StepRunner) Steps() []RecordedStep {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.steps)
}

// Asks returns the questions asked, in order.
func (r *StepRunner) Asks() []harness.AskRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.asks)
}

// Reset forgets the recorded steps and asks, keeping the outcomes,
// interruptions and answers.
func (r *StepRunner) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps, r.asks, r.groups = nil, nil, 0
}
