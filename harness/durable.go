package harness

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// StepKind says what a [Step] runs.
type StepKind uint8

// The kinds of steps.
const (
	// StepModel is one model request of the run loop, retries included.
	StepModel StepKind = iota + 1
	// StepTool is one tool call.
	StepTool
)

// String returns "model" or "tool".
func (k StepKind) String() string {
	switch k {
	case StepModel:
		return "model"
	case StepTool:
		return "tool"
	}
	return "StepKind(" + strconv.Itoa(int(k)) + ")"
}

// Step describes one unit of work that the run loop hands to a
// [StepRunner]. The engine builds it; a runner must not modify it or what
// it points to.
type Step struct {
	// Kind is StepModel or StepTool.
	Kind StepKind
	// RunID is the run's ID (see [ContextWithRunID]).
	RunID string
	// Key identifies the step within the run and is stable across a rerun
	// of the same run ID: it is the [ExecutionKey] of the work inside it,
	// "<run id>/model/<step>" or "<run id>/tool/<step>/<call id>" (a call
	// without an ID is named by its position in the response: "#<n>").
	Key string
	// Index is, for StepModel, the run's step number (1-based, as
	// [RunResult.Steps] counts it); for StepTool, the number of the model
	// step whose response made the call.
	Index int
	// Call is the tool call (StepTool).
	Call *ToolCall
	// Tool is the tool called (StepTool); nil for an unknown tool.
	Tool *Tool
	// Replay is the tool's [ReplayPolicy] (StepTool); ReplayUnsafe when the
	// tool is unknown.
	Replay ReplayPolicy
	// Resumed marks a tool call that runs on [Agent.Resume] after an
	// approval decision. The same call went through the runner before,
	// with the same Key, and ended with a [ToolPending] result.
	Resumed bool
}

// StepRunner runs the steps of the run loop: its model requests and its
// tool calls. Install one with [WithStepRunner]; without one the engine
// calls them directly. A durable runtime implements it to record each
// step's outcome and, when a run is recovered under the same run ID, to
// return the recorded outcome instead of doing the work again.
//
// The engine calls a runner from the run's goroutine, one step or group
// at a time; a runner shared by several agents must be safe for
// concurrent use. A runner must return only after the fn it called has
// returned, and may call fn again (a retry) only after it returned.
//
// A result with Status [ToolPending] is not an outcome: the call waits for
// approval and comes again on Resume with the same Key and Step.Resumed
// set. A runner must not replay it.
type StepRunner interface {
	// Model runs fn — the whole model request of one loop step: retries,
	// interceptors (and so tracing spans), middleware and hooks included —
	// as step s, and returns its response. A durable runner records the
	// response and on recovery returns the recorded one without calling fn
	// (no second request, no second span). It blocks while fn runs.
	Model(ctx context.Context, s *Step, fn func(context.Context) (*ModelResponse, error)) (*ModelResponse, error)
	// Tools runs the tool calls of one group: fn(ctx, i) runs steps[i],
	// the whole call (interceptors, hooks, permission, middleware and the
	// tool), and never returns nil. The calls of a group may run in
	// parallel (the tools are Concurrent); the runner must start them in
	// slice order, because durable engines number steps in the order they
	// are scheduled, and returns the results in slice order. Sequential
	// calls come as groups of one. To report a call that a crash
	// interrupted without running it again, call fn with
	// [InterruptedContext]. A nil entry in the result becomes an error
	// result.
	Tools(ctx context.Context, steps []*Step, fn func(ctx context.Context, i int) *ToolResult) []*ToolResult
}

// Asker is implemented by a [StepRunner] that can park a question for a
// user and return the answer: a durable runtime stores the answer, so that
// a tool rerun after a crash gets it again without asking. [AskUser] calls it
// with the step of the calling tool and a request whose ID is set, for
// ReplaySafe tools only. It may block until the answer comes or ctx is
// done.
//
// ctx is the tool handler's context, which derives from the one the
// runner passed to the call's fn in [StepRunner.Tools], and s is the very
// *Step the runner was given there for the call: a runner that serves
// only its own durable runs recognises them by a value it put in that
// context, naming s (a subagent's tool inside a step inherits the step's
// context values, with a Step of its own). When it cannot serve ctx — the call runs outside its
// durable runs, as when the runner ran the group directly — Ask returns
// an error that wraps [ErrAskUnsupported], without side effects: AskUser
// then gives the question to the application's answerer ([WithAsker])
// when there is one, and returns the error otherwise. Any other error is
// returned to the tool as it is.
type Asker interface {
	Ask(ctx context.Context, s *Step, req AskRequest) (Answer, error)
}

// AnswerFunc answers a user question in process: an interactive
// application (a CLI prompt, a chat UI) installs one with [WithAsker].
// [AskUser] calls it from the asking tool's goroutine with a request whose
// ID is set; it may block until the user answers, and should return when
// ctx is done (the run is cancelled, the tool timed out). Several tool
// calls may ask at once: an AnswerFunc must be safe for concurrent use.
// To decline, return an error (wrap [ErrAskUnsupported] to say that no
// one can answer); the tool gets it from AskUser.
type AnswerFunc func(ctx context.Context, req AskRequest) (Answer, error)

// WithAsker installs fn as the agent's answerer: [AskUser] in a tool of
// this agent gives it the questions that no durable runtime takes, so
// that a tool (an MCP server's elicitation, a confirmation) can ask the
// user of an interactive application without a durable runtime. With a
// [StepRunner] that implements [Asker] (the durable runtime), the runner
// takes the questions of ReplaySafe tools inside its durable runs, and
// fn the others: the runner's questions survive a crash, fn's answers
// are not recorded. A subagent ([AgentTool]) does not inherit it. nil, the
// default, installs none.
func WithAsker(fn AnswerFunc) Option { return func(c *config) { c.answer = fn } }

// Clock is implemented by a [StepRunner] that records time: [Now] calls
// it within a step (s is that step) so that a rerun sees the recorded
// time.
type Clock interface {
	Now(ctx context.Context, s *Step) time.Time
}

// WithStepRunner runs the loop's model requests and tool calls through r
// (see [StepRunner]). nil, the default, runs them directly, at no cost.
func WithStepRunner(r StepRunner) Option { return func(c *config) { c.steps = r } }

// DirectRunner is a [StepRunner] that does the work directly, as an agent
// without a runner does: Model calls fn, Tools runs a group of several
// calls in parallel. A runner can embed or call it for steps it does not
// record.
type DirectRunner struct{}

var _ StepRunner = DirectRunner{}

// Model calls fn.
func (DirectRunner) Model(ctx context.Context, _ *Step, fn func(context.Context) (*ModelResponse, error)) (*ModelResponse, error) {
	return fn(ctx)
}

// Tools runs one call inline and several in parallel, started in order.
func (DirectRunner) Tools(ctx context.Context, steps []*Step, fn func(ctx context.Context, i int) *ToolResult) []*ToolResult {
	out := make([]*ToolResult, len(steps))
	if len(steps) == 1 {
		out[0] = fn(ctx, 0)
		return out
	}
	var wg sync.WaitGroup
	for i := range steps {
		wg.Go(func() { out[i] = fn(ctx, i) })
	}
	wg.Wait()
	return out
}

// ---- run IDs ----

// maxRunIDLen bounds a run ID given with ContextWithRunID.
const maxRunIDLen = 128

// runIDValue is the value ContextWithRunID and ContextRecovered store
// under scopeKey: under that key a tool call or a model request hides it,
// so that a subagent's run inherits neither.
type runIDValue struct {
	id      string
	hasID   bool
	attempt int // 0: not set
}

// nearestRunID returns the runIDValue that is ctx's nearest scope.
func nearestRunID(ctx context.Context) runIDValue {
	v, _ := ctx.Value(scopeKey{}).(runIDValue)
	return v
}

// ContextWithRunID returns a context under which [Agent.Run] uses id as
// the run's ID instead of generating one: a durable runtime runs a turn
// under the ID it chose (its workflow ID), and on recovery under the same
// ID, so that step keys match. The ID must be non-empty valid UTF-8 of at
// most 128 bytes without control characters; Run rejects others with
// [ErrInvalidRunID]. [Agent.Resume] continues the paused run's ID; an ID
// given to it must be that one. A run inside a tool call (a subagent)
// does not inherit the ID: only a context whose nearest run ID, tool call
// or model request is the ID counts.
func ContextWithRunID(ctx context.Context, id string) context.Context {
	v := nearestRunID(ctx)
	v.id, v.hasID = id, true
	return context.WithValue(ctx, scopeKey{}, v)
}

// ContextRecovered returns a context under which [Agent.Run] and
// [Agent.Resume] know that they execute the run again after its process
// stopped: attempt counts the executions of the run from 1, so a durable
// runtime that re-executes a run after a crash passes 2, then 3. The run
// reports it as [RunInfo.Attempt] and [RunInfo.Recovered] to run
// interceptors (the tracing extension marks and links the span), and as
// [Event.Attempt] and [Event.Recovered] on its EventRunStart (the flight
// recorder records a recovery). An attempt below 2 marks nothing. Like a
// run ID (see [ContextWithRunID], with which it combines in any order), a
// subagent's run inside a tool call does not inherit it.
func ContextRecovered(ctx context.Context, attempt int) context.Context {
	v := nearestRunID(ctx)
	v.attempt = attempt
	return context.WithValue(ctx, scopeKey{}, v)
}

// runIDFrom returns the run ID set on ctx, "" when none, and the attempt
// (1 unless ContextRecovered set a later one).
func runIDFrom(ctx context.Context) (id string, set bool, attempt int, err error) {
	v := nearestRunID(ctx)
	attempt = max(v.attempt, 1)
	if !v.hasID {
		return "", false, attempt, nil
	}
	return v.id, true, attempt, validRunID(v.id)
}

// runKey is the context key of the run a context belongs to; unlike
// scopeKey, a tool call or model request does not hide it (they belong to
// the run), and a subagent's run replaces it with its own.
type runKey struct{}

// runScope is the context of a run: the one Run or Resume passes to the
// run interceptors and the loop. It holds the run's [RunInfo], and costs
// no allocation beyond the RunInfo's.
type runScope struct {
	context.Context
	info RunInfo
}

// Value returns the scope for runKey and asks the parent otherwise.
func (s *runScope) Value(key any) any {
	if key == (runKey{}) {
		return s
	}
	return s.Context.Value(key)
}

// RunIDFromContext returns the ID of the run ctx belongs to: inside
// [Agent.Run] or [Agent.Resume] — run interceptors, turn callbacks, model
// requests, tool calls, middleware and hooks — the run's ID; elsewhere "".
// Inside a subagent's run it is the subagent's. A tracer's ID generator
// can derive a trace ID from it, so that every execution of a run, a
// recovery after a crash included, lands in one trace.
func RunIDFromContext(ctx context.Context) string {
	if s, ok := ctx.Value(runKey{}).(*runScope); ok {
		return s.info.RunID
	}
	return ""
}

// RunInfoFromContext returns a copy of the [RunInfo] of the run ctx
// belongs to (see [RunIDFromContext]), and false outside a run.
func RunInfoFromContext(ctx context.Context) (RunInfo, bool) {
	if s, ok := ctx.Value(runKey{}).(*runScope); ok {
		return s.info, true
	}
	return RunInfo{}, false
}

func validRunID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidRunID)
	case len(id) > maxRunIDLen:
		return fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidRunID, len(id), maxRunIDLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidRunID, id)
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: %q contains a control character", ErrInvalidRunID, id)
		}
	}
	return nil
}

// ---- execution keys ----

// scopeKey is the context key of the innermost scope: a run ID, a tool
// call or a model request. One key for all three makes the nearest one
// win, so a subagent's run inside a tool call sees its own.
type scopeKey struct{}

// toolScope is the context of one tool call. It holds the copy of the call
// that middleware edits, so that it costs no allocation beyond the one the
// copy needed before.
type toolScope struct {
	context.Context
	call ToolCall
	// origID and origName are the call's as the model sent it.
	origID, origName string
	a                *Agent
	st               *Step // with a runner
	run              string
	step             int32 // the model step of the call
	pos              int32 // the call's position in the response
	asks             atomic.Int32
	// suspended is set when the runner parked the run on a question the
	// call asked (ErrSuspended).
	suspended atomic.Bool

	mu       sync.Mutex
	activate []string // from ActivateTools
	parts    []Part   // from AddResultParts
}

// Value returns the scope for scopeKey and asks the parent otherwise.
func (s *toolScope) Value(key any) any {
	if key == (scopeKey{}) {
		return s
	}
	return s.Context.Value(key)
}

func (s *toolScope) key() string {
	if s.st != nil {
		return s.st.Key
	}
	return toolKey(s.run, int(s.step), s.origID, int(s.pos))
}

// modelScope is the context of one model request attempt. It holds the
// request, so that it costs no allocation beyond the request's.
type modelScope struct {
	context.Context
	// req is the attempt's request; its RunID and Step make the key.
	req ModelRequest
	a   *Agent
	st  *Step // with a runner
}

// Value returns the scope for scopeKey and asks the parent otherwise.
func (s *modelScope) Value(key any) any {
	if key == (scopeKey{}) {
		return s
	}
	return s.Context.Value(key)
}

func (s *modelScope) key() string {
	if s.st != nil {
		return s.st.Key
	}
	return modelKey(s.req.RunID, s.req.Step)
}

func modelKey(run string, step int) string {
	return run + "/model/" + strconv.Itoa(step)
}

// toolKey names a tool call by its step and ID; a call without an ID (some
// providers leave it out) by its position in the response, "#<n>".
func toolKey(run string, step int, id string, pos int) string {
	if id == "" {
		id = "#" + strconv.Itoa(pos)
	}
	return run + "/tool/" + strconv.Itoa(step) + "/" + id
}

// ExecutionKey returns the key of the work ctx belongs to, stable across a
// rerun of the same run ID (see [ContextWithRunID]): inside a tool call —
// its handler, interceptors, middleware and hooks —
// "<run id>/tool/<step>/<call id>", where step is the model step that made
// the call (a call without an ID is named "#<n>", its position in the
// model's response, from 0); inside a model request — the provider's Generate, interceptors,
// middleware and hooks — "<run id>/model/<step>". Elsewhere it returns "".
// A tool can pass it to an external API as an idempotency key, so that a
// call rerun after a crash does not act twice. It is available with or
// without a [StepRunner] and equals [Step.Key] of the step. A tool that
// needs its call ID alone reads [ToolCallID] rather than parse the key.
func ExecutionKey(ctx context.Context) string {
	switch s := ctx.Value(scopeKey{}).(type) {
	case *toolScope:
		return s.key()
	case *modelScope:
		return s.key()
	}
	return ""
}

// ToolCallID returns the ID of the tool call ctx belongs to — inside its
// handler, interceptors, middleware and hooks — as the model sent it
// ([ToolCall.ID]), and true; outside a tool call, "" and false. A call
// the model sent without an ID gives "" and true (its [ExecutionKey]
// names it by position instead). Inside a model request it returns ""
// and false, as it does in run interceptors and turn callbacks.
func ToolCallID(ctx context.Context) (string, bool) {
	if s, ok := ctx.Value(scopeKey{}).(*toolScope); ok {
		return s.origID, true
	}
	return "", false
}

// Now returns the current time, as recorded by the [StepRunner] when it
// implements [Clock] and ctx belongs to a tool call or a model request;
// time.Now() otherwise. A tool that must see the same time when it reruns
// after a crash reads the time with Now.
func Now(ctx context.Context) time.Time {
	var a *Agent
	var st *Step
	switch s := ctx.Value(scopeKey{}).(type) {
	case *toolScope:
		a, st = s.a, s.st
	case *modelScope:
		a, st = s.a, s.st
	}
	if a != nil {
		if c, ok := a.cfg.steps.(Clock); ok {
			return c.Now(ctx, st)
		}
	}
	return time.Now()
}

// ---- interrupted calls ----

type interruptedKey struct{}

// InterruptedContext returns a context that makes a [StepRunner]'s tool fn
// report its call as interrupted instead of running it: the call goes
// through its interceptors, hooks and result middleware, so observers see
// it, and its result is [InterruptedResult]. A durable runner uses it on
// recovery for a ReplayUnsafe call that started and has no recorded
// outcome; it reruns a ReplaySafe one. It has no effect without a runner.
func InterruptedContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, interruptedKey{}, true)
}

// InterruptedResult returns the error result, with status
// [ToolInterrupted], of a call that a stopped process interrupted and that
// was not run again because its tool is not safe to repeat.
func InterruptedResult(call *ToolCall) *ToolResult {
	return errorResult(call, ToolInterrupted, fmt.Sprintf(
		"the outcome of tool %q is unknown: the process stopped while it ran, and it was not run again because it is not safe to repeat; its effects may or may not have happened, so check before calling it again",
		call.Name))
}

// ---- asks ----

// AskKind is the kind of question of an [AskRequest].
type AskKind string

// The kinds of questions.
const (
	// AskConfirm asks yes or no; the answer is Answer.Confirmed.
	AskConfirm AskKind = "confirm"
	// AskSelect asks for one of AskRequest.Options; the answer is
	// Answer.Choice.
	AskSelect AskKind = "select"
	// AskInput asks for free text; the answer is Answer.Text.
	AskInput AskKind = "input"
)

// AskRequest is a question a tool asks the user through [AskUser].
type AskRequest struct {
	// ID identifies the question; a durable runtime stores the answer
	// under it. It must be the same when the tool reruns. Empty, the
	// default, means "<execution key>/ask/<n>", n counting the asks of the
	// call from 1, which is deterministic when the tool is.
	ID string `json:"id"`
	// Kind is the kind of question; required.
	Kind AskKind `json:"kind"`
	// Prompt is the question; required.
	Prompt string `json:"prompt"`
	// Options are the choices of an AskSelect question; required for it.
	Options []string `json:"options,omitempty"`
}

func (r *AskRequest) validate() error {
	switch r.Kind {
	case AskConfirm, AskInput:
	case AskSelect:
		if len(r.Options) == 0 {
			return fmt.Errorf("%w: a select question needs options", ErrInvalidAsk)
		}
	case "":
		return fmt.Errorf("%w: no kind (want confirm, select or input)", ErrInvalidAsk)
	default:
		return fmt.Errorf("%w: unknown kind %q (want confirm, select or input)", ErrInvalidAsk, r.Kind)
	}
	if r.Prompt == "" {
		return fmt.Errorf("%w: empty prompt", ErrInvalidAsk)
	}
	return nil
}

// Answer answers an [AskRequest].
type Answer struct {
	// ID and Kind are the request's.
	ID   string  `json:"id"`
	Kind AskKind `json:"kind"`
	// Confirmed answers an AskConfirm question.
	Confirmed bool `json:"confirmed,omitempty"`
	// Choice answers an AskSelect question: one of its options.
	Choice string `json:"choice,omitempty"`
	// Text answers an AskInput question.
	Text string `json:"text,omitempty"`
}

// AskUser asks the user a question from inside a tool handler and returns
// the answer. It may block until the answer comes. Who answers:
//
//  1. A [StepRunner] that implements [Asker] — a durable runtime, which
//     parks the question and stores the answer — for a ReplaySafe tool:
//     after a crash the tool runs again from its start, and AskUser
//     returns the stored answer.
//  2. Otherwise, or when the runner declines with [ErrAskUnsupported]
//     (the call is not inside one of its durable runs), the application's
//     answerer from [WithAsker], in process. Its answers are not
//     recorded, which is sound for the questions it gets: without a
//     durable runtime nothing runs again, and a durable runtime does not
//     run a tool that is not ReplaySafe again after a crash.
//  3. With neither, AskUser fails with [ErrAskUnsupported], or with
//     [ErrAskNotReplaySafe] when the runner could have asked but the tool
//     is not ReplaySafe.
//
// Outside a tool call it fails with [ErrAskUnsupported]; a malformed
// request fails with [ErrInvalidAsk]. The answer's ID and Kind are the
// request's when the answerer left them empty.
func AskUser(ctx context.Context, req AskRequest) (Answer, error) {
	s, _ := ctx.Value(scopeKey{}).(*toolScope)
	if s == nil {
		return Answer{}, fmt.Errorf("%w: AskUser is called from a tool handler", ErrAskUnsupported)
	}
	if err := req.validate(); err != nil {
		return Answer{}, err
	}
	answer := s.a.cfg.answer
	if asker, ok := s.a.cfg.steps.(Asker); ok {
		t := s.a.snap.Load().lookup(s.origName)
		if s.st != nil {
			t = s.st.Tool
		}
		switch {
		case t != nil && t.ReplayPolicy == ReplaySafe:
			s.askID(&req)
			ans, err := asker.Ask(ctx, s.st, req)
			if err == nil {
				return completeAnswer(ans, &req), nil
			}
			if errors.Is(err, ErrSuspended) {
				s.suspended.Store(true)
				return Answer{}, err
			}
			if answer == nil || !errors.Is(err, ErrAskUnsupported) {
				return Answer{}, err
			}
			// The runner cannot serve this call: the application answers.
		case answer == nil:
			return Answer{}, fmt.Errorf("%w: tool %q; an asking tool runs again from its start after a crash, so it must be marked ReplaySafe", ErrAskNotReplaySafe, s.origName)
		}
	}
	if answer == nil {
		return Answer{}, fmt.Errorf("%w: no one can answer: install an answerer with WithAsker, or a StepRunner that implements Asker (a durable runtime) with WithStepRunner", ErrAskUnsupported)
	}
	s.askID(&req)
	ans, err := answer(ctx, req)
	if err != nil {
		return Answer{}, err
	}
	return completeAnswer(ans, &req), nil
}

// askID names a question of the call that has no ID: "<execution
// key>/ask/<n>", n counting the call's questions from 1.
func (s *toolScope) askID(req *AskRequest) {
	n := s.asks.Add(1)
	if req.ID == "" {
		req.ID = s.key() + "/ask/" + strconv.Itoa(int(n))
	}
}

// completeAnswer gives ans the request's ID and kind where it has none.
func completeAnswer(ans Answer, req *AskRequest) Answer {
	if ans.ID == "" {
		ans.ID = req.ID
	}
	if ans.Kind == "" {
		ans.Kind = req.Kind
	}
	return ans
}
