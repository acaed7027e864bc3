package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
)

// Status is how a run ended.
type Status string

// The statuses of a run.
const (
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	// StatusPaused means the run waits for approvals: see RunResult.Pending
	// and [Agent.Resume]. A pause is not a completion.
	StatusPaused Status = "paused"
	// StatusSuspended means a tool's question parked the run
	// ([ErrSuspended]): its step runner (a durable runtime) continues it
	// once the question is answered. Only a step runner that implements
	// [Asker] suspends a run.
	StatusSuspended Status = "suspended"
)

// RunResult is the outcome of [Agent.Run] or [Agent.Resume]. After a
// Resume it covers the whole turn: messages, usage and steps since Run.
type RunResult struct {
	// RunID identifies the run: the ID given with [ContextWithRunID], else
	// one the agent makes, 32 lower-case hex digits: 24 of a random prefix
	// the agent draws from crypto/rand (96 bits), then 8 of a counter of
	// its runs. Run IDs are unique across agents and processes (two agents
	// draw one prefix with a probability of about n²/2⁹⁷ among n agents)
	// and valid for ContextWithRunID.
	RunID  string
	Status Status
	// Text is the final assistant text (completed runs).
	Text string
	// Messages are the messages the turn added to the conversation.
	Messages []Message
	// Usage sums the usage of every model request of the turn.
	Usage Usage
	// Cost sums, in US dollars, the cost of the model requests of the turn
	// that the [WithPricing] function priced; 0 without one. Requests it
	// could not price add nothing.
	Cost float64
	// Steps counts the model requests of the turn.
	Steps int
	// Pending lists the approvals a paused run waits for.
	Pending []ApprovalRequest
	// Err is why the run failed or was cancelled; nil otherwise.
	Err error
	// Command is set when the input was a slash command (see [Agent.Run]).
	// A command without a prompt ends the run at once: Text is then the
	// command's Output, and no message is added.
	Command *CommandRun
}

// ApprovalRequest is a tool call waiting for a decision.
type ApprovalRequest struct {
	// ID identifies the request for [Decision]; it is the call's ID.
	ID       string   `json:"id"`
	ToolCall ToolCall `json:"tool_call"`
	// Reason is why approval is needed, from the permission manager or a
	// middleware.
	Reason string `json:"reason,omitempty"`
}

// Decision answers an [ApprovalRequest].
type Decision struct {
	ID      string
	Approve bool
	// Reason is shown to the model when the call is denied.
	Reason string
}

// Approve returns a decision approving request id.
func Approve(id string) Decision { return Decision{ID: id, Approve: true} }

// Deny returns a decision denying request id with reason.
func Deny(id, reason string) Decision { return Decision{ID: id, Reason: reason} }

// pendingRun is the state of a paused turn.
type pendingRun struct {
	RunID    string            `json:"run_id"`
	Input    string            `json:"input"`
	Steps    int               `json:"steps"`
	Usage    Usage             `json:"usage"`
	Cost     float64           `json:"cost,omitempty"`
	MsgStart int               `json:"msg_start"`
	Calls    []ToolCall        `json:"calls"`
	Results  []*ToolResult     `json:"results"` // nil where the call waits
	Requests []ApprovalRequest `json:"requests"`
	// Command marks the run of a recorded command's prompt (see
	// Agent.Run): Resume records the outcome in the command's record.
	Command bool `json:"command,omitempty"`
}

type approvalKey struct{}

// Approved reports whether ctx belongs to a tool call that was approved on
// [Agent.Resume]. Tool-call middleware sees it; an ask then counts as
// approved.
func Approved(ctx context.Context) bool {
	d, _ := ctx.Value(approvalKey{}).(*Decision)
	return d != nil && d.Approve
}

// Run adds userMessage to the conversation and runs the loop: model, then
// the tools it calls, then the model again, until the model answers without
// calling a tool. It returns the result and, when the run failed or was
// cancelled, the same error as RunResult.Err. A paused run returns a nil
// error and StatusPaused. Cancelling ctx stops the model request and the
// running tools and ends the run with StatusCancelled.
//
// Input of the form "/name args" runs the [Command] name (see
// [ExtensionContext.RegisterCommand]) before anything is stored, sent to
// the model or seen by a turn callback. A command's Output comes back in
// [RunResult.Command] and, when it returned no Prompt, as RunResult.Text
// of a completed run with no messages and no steps. A Prompt becomes the
// user message of an ordinary run, which follows at once. Input whose
// first word is not a command name ("/etc/hosts is missing") goes to the
// model as it is; "//" at the start sends one slash to the model. A name
// that no command has fails with [ErrUnknownCommand], listing the
// available commands, and changes nothing.
//
// With a run ID from [ContextWithRunID], the command run is recorded under
// that ID (in the agent's storage when it has one, so the record survives
// a restart): a retried submission with the same ID and input does not
// run the command again but returns the recorded result, with
// [CommandRun.Replayed] set. A command that failed is not recorded. Nor
// is its prompt submitted twice: without a step runner, the outcome of
// the prompt's run (its status, text, steps, usage, cost, pending
// approvals and error text; after a pause, as its Resume ended it) is
// recorded too, and the retry returns it without a run — no model
// request, no message, no turn callback or run hook, only EventCommand.
// A retry that finds the prompt submitted but no outcome (the process
// stopped during the run) fails with [ErrInvalidRunID] rather than submit
// it again. With a step runner (a durable runtime) the prompt's run
// executes again under the run ID, and the runner returns its recorded
// steps instead of doing them again.
//
// Called from an extension's Install, before [New] returns, Run fails with
// [ErrInstalling] and runs nothing: the extensions after it are not
// installed yet.
func (a *Agent) Run(ctx context.Context, userMessage string) (*RunResult, error) {
	return a.run(ctx, userMessage, nil)
}

// RunMessage is [Agent.Run] with a user message of parts instead of a
// string: text, images, documents and audio, built with [UserParts].
//
//	res, err := agent.RunMessage(ctx, harness.UserParts(
//		harness.Text("What is in this picture?"),
//		harness.ImagePart(png, "image/png")))
//
// The message's role must be user (an empty role means user). Its parts
// are checked before anything is stored or sent: a malformed part fails
// with [ErrInvalidPart], and a part whose inline bytes exceed the inline
// limit ([WithInlineLimit], default 5 MiB) with a [*PartSizeError]
// ([ErrPartTooLarge]) that names the part and the limit. No command is
// resolved: text that starts with "/" goes to the model as it is. The
// input that turn-start callbacks, run interceptors and run-start hooks
// see is the message's text ([Message.Text]).
//
// The parts' content slice is copied, the media are not: the history and
// every model request of the run refer to the caller's bytes, which must
// not change afterwards.
func (a *Agent) RunMessage(ctx context.Context, m Message) (*RunResult, error) {
	if m.Role == "" {
		m.Role = RoleUser
	}
	if m.Role != RoleUser {
		return nil, fmt.Errorf("%w: RunMessage takes a user message, not a %q one", ErrInvalidPart, m.Role)
	}
	if len(m.Content) == 0 {
		return nil, fmt.Errorf("%w: RunMessage with an empty message", ErrInvalidPart)
	}
	for i := range m.Content {
		if err := checkContentPart(&m.Content[i]); err != nil {
			return nil, fmt.Errorf("%w: part %d of the user message: %v", ErrInvalidPart, i, err)
		}
	}
	if err := checkInline(m.Content, a.cfg.inlineLimit, "user message"); err != nil {
		return nil, err
	}
	m.Content = slices.Clone(m.Content)
	return a.run(ctx, m.Text(), &m)
}

// run is Run (msg nil: userMessage is the input, commands resolve) and
// RunMessage (msg is the user message, userMessage its text).
func (a *Agent) run(ctx context.Context, userMessage string, msg *Message) (*RunResult, error) {
	if a.installing.Load() {
		return nil, fmt.Errorf("%w: Run during an extension's Install", ErrInstalling)
	}
	a.runMu.Lock()
	defer a.runMu.Unlock()
	if a.closed.Load() {
		return nil, ErrClosed
	}
	if a.pending != nil {
		return nil, ErrPaused
	}
	id, set, attempt, err := runIDFrom(ctx)
	if err != nil {
		return nil, err
	}
	st := &runState{}
	a.cur = st
	defer a.endRun()
	if !set {
		id = a.newRunID()
	}
	st.res = RunResult{RunID: id, Status: StatusCompleted}
	res := &st.res
	st.scope = runScope{Context: ctx, info: RunInfo{Agent: a.cfg.name, RunID: res.RunID, SessionID: a.cfg.sessionID, Input: userMessage,
		Message: msg, Attempt: attempt, Recovered: attempt > 1}}
	rs := &st.scope
	info := &rs.info
	if msg == nil && len(userMessage) > 1 && userMessage[0] == '/' {
		if userMessage[1] == '/' {
			userMessage = userMessage[1:]
			info.Input = userMessage
		} else if name, args, ok := parseCommand(userMessage); ok {
			done, err := a.command(rs, res, set, name, args)
			if res.Command == nil {
				return nil, err
			} else if done {
				return res, err
			}
			userMessage = res.Command.Prompt
			info.Input = userMessage
		}
	}
	if len(a.snap.Load().runIC) == 0 {
		res = a.turn(rs, res, userMessage, msg, nil, info)
	} else {
		r := res // not res: the closure would move a variable it shares to the heap
		res = a.intercept(rs, info, func(ctx context.Context) *RunResult {
			return a.turn(ctx, r, userMessage, msg, nil, info)
		})
	}
	if set && res.Command != nil && a.recordsOutcome() {
		// The run of a recorded command's prompt: its outcome joins the
		// record, and a paused run's Resume updates it.
		a.recordOutcome(rs, res.Command, res)
		if res.Status == StatusPaused {
			a.markCommandPending()
		}
	}
	return res, res.Err
}

// Resume continues a paused run with a decision for every pending approval.
// Approved calls run; denied calls give the model an error result with the
// decision's reason. A decision for an unknown request, or a missing
// decision, is an error and changes nothing. Called from an extension's
// Install, Resume fails with [ErrInstalling], as Run does.
func (a *Agent) Resume(ctx context.Context, decisions ...Decision) (*RunResult, error) {
	if a.installing.Load() {
		return nil, fmt.Errorf("%w: Resume during an extension's Install", ErrInstalling)
	}
	a.runMu.Lock()
	defer a.runMu.Unlock()
	if a.closed.Load() {
		return nil, ErrClosed
	}
	p := a.pending
	if p == nil {
		return nil, ErrNotPaused
	}
	id, set, attempt, err := runIDFrom(ctx)
	if err != nil {
		return nil, err
	} else if set && id != p.RunID {
		return nil, fmt.Errorf("%w: %q is not the paused run's ID %q", ErrInvalidRunID, id, p.RunID)
	}
	byID := make(map[string]*Decision, len(decisions))
	for i := range decisions {
		d := &decisions[i]
		if !slices.ContainsFunc(p.Requests, func(r ApprovalRequest) bool { return r.ID == d.ID }) {
			return nil, fmt.Errorf("%w: %q", ErrUnknownApproval, d.ID)
		}
		byID[d.ID] = d
	}
	var missing []string
	for _, r := range p.Requests {
		if byID[r.ID] == nil {
			missing = append(missing, r.ID)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("harness: Resume needs a decision for every pending approval; missing %s", strings.Join(missing, ", "))
	}
	a.setPending(nil)
	st := &runState{}
	a.cur = st
	defer a.endRun()
	st.res = RunResult{RunID: p.RunID, Status: StatusCompleted, Steps: p.Steps, Usage: p.Usage, Cost: p.Cost}
	res := &st.res
	st.scope = runScope{Context: ctx, info: RunInfo{Agent: a.cfg.name, RunID: p.RunID, SessionID: a.cfg.sessionID, Resumed: true,
		Steps: p.Steps, Attempt: attempt, Recovered: attempt > 1}}
	rs := &st.scope
	info := &rs.info
	r := res
	res = a.intercept(rs, info, func(ctx context.Context) *RunResult {
		return a.turn(ctx, r, p.Input, nil, &resumeState{p: p, decisions: byID}, info)
	})
	if p.Command && a.recordsOutcome() {
		a.recordOutcome(rs, nil, res)
		if res.Status == StatusPaused {
			a.markCommandPending()
		}
	}
	return res, res.Err
}

// markCommandPending marks the paused run as a recorded command's prompt
// run, so that Resume records its outcome. The pending state is replaced,
// not changed: a session save may be reading it.
func (a *Agent) markCommandPending() {
	a.histMu.Lock()
	defer a.histMu.Unlock()
	if a.pending != nil {
		p := *a.pending
		p.Command = true
		a.pending = &p
	}
}

type resumeState struct {
	p         *pendingRun
	decisions map[string]*Decision
}

func (a *Agent) intercept(ctx context.Context, info *RunInfo, core RunFunc) *RunResult {
	ics := a.snap.Load().runIC
	if len(ics) == 0 {
		return core(ctx)
	}
	next := core
	for i := len(ics) - 1; i >= 1; i-- { // the outermost is called directly
		ic, inner := ics[i], next
		next = func(ctx context.Context) *RunResult { return ic.InterceptRun(ctx, info, inner) }
	}
	return ics[0].InterceptRun(ctx, info, next)
}

// turn runs a turn (msg is its user message; nil means input as text) or
// its resumption. It owns runMu.
func (a *Agent) turn(ctx context.Context, res *RunResult, input string, msg *Message, rs *resumeState, info *RunInfo) *RunResult {
	s := a.snap.Load()
	if len(s.hooks[EventRunStart]) > 0 {
		a.emitPooled(ctx, s, Event{Type: EventRunStart, RunID: res.RunID, Input: input, Attempt: info.Attempt, Recovered: info.Recovered})
	}
	var msgStart int
	if rs == nil {
		for _, ec := range a.exts {
			if ts, ok := ec.ext.(TurnStarter); ok {
				if err := safeCall(func() error { return ts.OnTurnStart(ctx, ec, input) }); err != nil {
					return a.finish(ctx, res, len(a.messages), &ExtensionError{Extension: ec.name, Op: "turn_start", Err: err})
				}
			}
		}
		msgStart = len(a.messages)
		if msg != nil {
			a.addMessage(ctx, res, *msg)
		} else {
			a.addMessage(ctx, res, a.userMessage(input))
		}
	} else {
		msgStart = rs.p.MsgStart
		results := a.resumeTools(ctx, res, rs)
		if suspended(results) {
			return a.suspend(ctx, res, msgStart)
		}
		a.addMessage(ctx, res, a.toolMessage(results))
		if err := ctx.Err(); err != nil {
			return a.finish(ctx, res, msgStart, err)
		}
	}
	return a.loop(ctx, res, input, msgStart)
}

func (a *Agent) loop(ctx context.Context, res *RunResult, input string, msgStart int) *RunResult {
	for {
		if res.Steps >= a.cfg.maxSteps {
			return a.finish(ctx, res, msgStart, &MaxStepsError{Steps: res.Steps})
		}
		res.Steps++
		var resp *ModelResponse
		var err error
		if a.cfg.steps == nil {
			resp, err = a.model(ctx, res, nil)
		} else {
			resp, err = a.modelStep(ctx, res)
		}
		if err != nil {
			return a.finish(ctx, res, msgStart, err)
		}
		res.Usage.Add(resp.Usage)
		if a.cfg.pricing != nil {
			a.addCost(res, resp)
		}
		a.addMessage(ctx, res, resp.Message)
		calls := a.cur.toolCalls(&resp.Message, a.cfg.steps == nil)
		if len(calls) == 0 {
			res.Text = resp.Message.Text()
			for _, ec := range a.exts {
				if te, ok := ec.ext.(TurnEnder); ok {
					if err := safeCall(func() error { return te.OnTurnEnd(ctx, ec, res.Text) }); err != nil {
						return a.finish(ctx, res, msgStart, &ExtensionError{Extension: ec.name, Op: "turn_end", Err: err})
					}
				}
			}
			return a.finish(ctx, res, msgStart, nil)
		}
		results := a.cur.resultSlice(len(calls))
		a.runTools(ctx, res, calls, results, nil)
		if reqs := pendingRequests(calls, results); len(reqs) > 0 {
			for i, r := range results {
				if r != nil && (r.Status == ToolPending || r.Status == ToolSuspended) {
					results[i] = nil // run on Resume
				}
			}
			// The step's slices are reused: the pending run keeps copies.
			a.setPending(&pendingRun{
				RunID: res.RunID, Input: input, Steps: res.Steps, Usage: res.Usage, Cost: res.Cost,
				MsgStart: msgStart, Calls: slices.Clone(calls), Results: slices.Clone(results), Requests: reqs,
			})
			return a.finish(ctx, res, msgStart, nil)
		}
		if suspended(results) {
			return a.suspend(ctx, res, msgStart)
		}
		a.addMessage(ctx, res, a.toolMessage(results))
		if err := ctx.Err(); err != nil {
			return a.finish(ctx, res, msgStart, err)
		}
	}
}

// suspended reports whether a call of the group parked the run on a
// question ([ToolSuspended]).
func suspended(results []*ToolResult) bool {
	for _, r := range results {
		if r != nil && r.Status == ToolSuspended {
			return true
		}
	}
	return false
}

// suspend ends the run as suspended: the tool results are not added (the
// model never sees a suspended call), and the step runner continues the
// run later from its recorded steps.
func (a *Agent) suspend(ctx context.Context, res *RunResult, msgStart int) *RunResult {
	res.Status = StatusSuspended
	return a.finish(ctx, res, msgStart, nil)
}

// finish sets the status, runs the completion callbacks and the run-end
// hook.
func (a *Agent) finish(ctx context.Context, res *RunResult, msgStart int, err error) *RunResult {
	if msgStart <= len(a.messages) {
		res.Messages = a.messages[msgStart:len(a.messages):len(a.messages)]
	}
	s := a.snap.Load()
	switch {
	case err != nil && ctx.Err() != nil:
		res.Status = StatusCancelled
		res.Err = ctx.Err()
		if !errors.Is(err, ctx.Err()) {
			res.Err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
	case err != nil:
		res.Status = StatusFailed
		res.Err = err
	case a.pending != nil:
		res.Status = StatusPaused
		res.Pending = slices.Clone(a.pending.Requests)
	case res.Status == StatusSuspended:
	default:
		res.Status = StatusCompleted
	}
	if err != nil && len(s.hooks[EventError]) > 0 {
		a.emit(ctx, s, &Event{Type: EventError, RunID: res.RunID, Step: res.Steps, Err: res.Err})
	}
	// Completion observers run even when ctx is cancelled: they get a
	// context that keeps ctx's values but not its cancellation.
	if res.Status != StatusPaused && res.Status != StatusSuspended && len(a.exts) > 0 {
		cctx := ctx
		if ctx.Done() != nil { // a context that cannot end needs no shield
			cctx = context.WithoutCancel(ctx)
		}
		for i := len(a.exts) - 1; i >= 0; i-- {
			ec := a.exts[i]
			if tc, ok := ec.ext.(TurnCompleter); ok {
				if perr := safeCall(func() error { tc.OnTurnComplete(cctx, ec, res); return nil }); perr != nil {
					a.logger.Warn("harness: OnTurnComplete failed; ignored", "extension", ec.name, "err", perr)
				}
			}
		}
	}
	if len(s.hooks[EventRunEnd]) > 0 {
		ectx := ctx
		if ctx.Done() != nil { // as above: and a value lookup through the shield allocates
			ectx = context.WithoutCancel(ctx)
		}
		a.emitPooled(ectx, s, Event{Type: EventRunEnd, RunID: res.RunID, Step: res.Steps, Result: res, Err: res.Err})
	}
	return res
}

func pendingRequests(calls []ToolCall, results []*ToolResult) []ApprovalRequest {
	var reqs []ApprovalRequest
	for i, r := range results {
		if r != nil && r.Status == ToolPending {
			reqs = append(reqs, ApprovalRequest{ID: calls[i].ID, ToolCall: calls[i], Reason: r.Content})
		}
	}
	return reqs
}

func (a *Agent) toolMessage(results []*ToolResult) Message {
	m := Message{Role: RoleTool, Content: a.newParts(len(results))}
	for i, r := range results {
		m.Content[i] = Part{Type: PartToolResult, ToolResult: r}
	}
	return m
}

// resumeTools runs the calls that waited for approval, each with its
// decision in its context, and returns the step's results in call order.
// A call that still asks for approval (a middleware asking again after a
// denial) counts as not approved.
func (a *Agent) resumeTools(ctx context.Context, res *RunResult, rs *resumeState) []*ToolResult {
	p := rs.p
	results := slices.Clone(p.Results)
	a.runTools(ctx, res, p.Calls, results, rs.decisions)
	for i, r := range results {
		if r == nil || r.Status == ToolPending {
			results[i] = &ToolResult{CallID: p.Calls[i].ID, Name: p.Calls[i].Name, IsError: true, Status: ToolDenied,
				Content: "tool call was not approved"}
		}
	}
	return results
}

// appendMessage adds m to the conversation. Only the run goroutine (holding
// runMu) writes; histMu lets SaveSession and Messages read a consistent
// prefix during a run. Messages are never changed once added.
func (a *Agent) appendMessage(m Message) {
	a.histMu.Lock()
	if a.messages == nil {
		a.messages = make([]Message, 0, 8)
	}
	a.messages = append(a.messages, m)
	a.histMu.Unlock()
}

func (a *Agent) setPending(p *pendingRun) {
	a.histMu.Lock()
	a.pending = p
	a.histMu.Unlock()
}

// history returns the conversation and pending state, safe to call from
// any goroutine.
func (a *Agent) history() ([]Message, *pendingRun) {
	a.histMu.Lock()
	defer a.histMu.Unlock()
	return a.messages[:len(a.messages):len(a.messages)], a.pending
}

// ---- model requests ----

// modelStep runs the model request of the current step through the step
// runner.
func (a *Agent) modelStep(ctx context.Context, res *RunResult) (*ModelResponse, error) {
	st := &Step{Kind: StepModel, RunID: res.RunID, Key: modelKey(res.RunID, res.Steps), Index: res.Steps}
	resp, err := a.cfg.steps.Model(ctx, st, func(ctx context.Context) (*ModelResponse, error) {
		return a.model(ctx, res, st)
	})
	if err == nil && resp == nil {
		err = fmt.Errorf("harness: the step runner returned no response for model step %d", res.Steps)
	}
	return resp, err
}

// model sends the request of the current step, retrying as configured. st
// is the step when a runner runs it.
func (a *Agent) model(ctx context.Context, res *RunResult, st *Step) (*ModelResponse, error) {
	s := a.snap.Load()
	backoff := a.cfg.retry.Backoff
	for attempt := 1; ; attempt++ {
		// The request lives in its scope, the context of the attempt, which
		// makes ExecutionKey work without an allocation of its own.
		ms := a.cur.modelScope()
		ms.Context, ms.a, ms.st = ctx, a, st
		ms.req = ModelRequest{
			Model:       a.cfg.model,
			System:      a.systemPrompt(s),
			Messages:    a.messages[:len(a.messages):len(a.messages)],
			Tools:       s.defs,
			MaxTokens:   a.cfg.maxTokens,
			Temperature: a.cfg.temperature,
			Stream:      a.cfg.stream,
			Attempt:     attempt,
			Provider:    a.providerName,
			RunID:       res.RunID,
			Step:        res.Steps,
		}
		resp, err := a.modelAttempt(ms, s, &ms.req, true)
		if err == nil {
			return resp, nil
		}
		var re RetryableError
		if ctx.Err() != nil || attempt >= a.cfg.retry.MaxAttempts || !errors.As(err, &re) || !re.Retryable() {
			return nil, err
		}
		a.logger.Info("harness: retrying model request", "step", res.Steps, "attempt", attempt, "err", err)
		if backoff > 0 {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, err
			case <-t.C:
			}
			backoff *= 2
		}
	}
}

// modelAttempt sends req through the model interceptors and middleware.
// prefix says whether the run's prefix key is computed for it (not for
// [Agent.Generate], whose request is not the conversation's).
func (a *Agent) modelAttempt(ctx context.Context, s *snapshot, req *ModelRequest, prefix bool) (*ModelResponse, error) {
	if len(s.modelIC) == 0 {
		return a.modelCore(ctx, s, req, prefix)
	}
	next := ModelFunc(func(ctx context.Context, req *ModelRequest) (*ModelResponse, error) {
		return a.modelCore(ctx, s, req, prefix)
	})
	// The outermost interceptor is called directly: a chain of n costs n
	// closures, not n+1.
	for i := len(s.modelIC) - 1; i >= 1; i-- {
		ic, inner := s.modelIC[i], next
		next = func(ctx context.Context, req *ModelRequest) (*ModelResponse, error) {
			return ic.InterceptModel(ctx, req, inner)
		}
	}
	return s.modelIC[0].InterceptModel(ctx, req, next)
}

func (a *Agent) modelCore(ctx context.Context, s *snapshot, req *ModelRequest, prefix bool) (*ModelResponse, error) {
	for _, m := range s.reqMW {
		if err := safeCall(func() error { return m.BeforeModelRequest(ctx, req) }); err != nil {
			return nil, fmt.Errorf("harness: model request middleware %T: %w", m, err)
		}
	}
	if prefix && a.readsPrefixKey(s) {
		a.prefix.compute(req)
	}
	// One clock read is the start event's Time and the origin of the end
	// event's Duration; the end event's Time is the start's plus Duration,
	// read from the monotonic clock alone (time.Now reads two clocks). The
	// clock is read only when a hook receives one of them.
	hookStart, hookEnd := len(s.hooks[EventModelRequestStart]) > 0, len(s.hooks[EventModelRequestEnd]) > 0
	var evs *[2]Event
	var start time.Time
	if hookStart || hookEnd {
		evs, start = getEvents(), time.Now()
	}
	if hookStart {
		evs[0] = Event{Type: EventModelRequestStart, Time: start, RunID: req.RunID, Step: req.Step, Request: req}
		a.emit(ctx, s, &evs[0])
	}
	resp, err := a.cfg.provider.Generate(ctx, req)
	if err == nil && resp == nil {
		err = errors.New("provider returned no response")
	}
	if err != nil {
		err = &ProviderError{Step: req.Step, Attempt: req.Attempt, Err: err}
	}
	if hookEnd {
		d := time.Since(start)
		evs[1] = Event{Type: EventModelRequestEnd, Time: start.Add(d), RunID: req.RunID, Step: req.Step, Request: req,
			Response: resp, Err: err, Duration: d}
		a.emit(ctx, s, &evs[1])
	}
	if evs != nil {
		putEvents(evs)
	}
	if err != nil {
		return nil, err
	}
	if resp.Message.Role == "" {
		resp.Message.Role = RoleAssistant
	}
	for i := len(s.respMW) - 1; i >= 0; i-- {
		m := s.respMW[i]
		if err := safeCall(func() error { return m.AfterModelResponse(ctx, req, resp) }); err != nil {
			return nil, fmt.Errorf("harness: model response middleware %T: %w", m, err)
		}
	}
	return resp, nil
}

// readsPrefixKey reports whether anything reads the prefix key of a run's
// model request: the provider (see [PrefixKeyUser]), a model interceptor,
// a model response middleware or a model request hook. A request whose key
// nobody reads is not hashed; the next key that is computed reports the
// parts changed since the previous key that was.
func (a *Agent) readsPrefixKey(s *snapshot) bool {
	return a.keyUser == nil || a.keyUser.UsesPrefixKey() || len(s.modelIC) > 0 || len(s.respMW) > 0 ||
		len(s.hooks[EventModelRequestStart]) > 0 || len(s.hooks[EventModelRequestEnd]) > 0
}

// ---- tool calls ----

// runTools runs calls and fills results in call order. Entries already set
// (on resume) are kept. Consecutive calls of concurrent tools run in
// parallel; the others run one at a time, in order. With a step runner,
// each group (consecutive concurrent calls, or one call) goes through
// StepRunner.Tools instead.
func (a *Agent) runTools(ctx context.Context, res *RunResult, calls []ToolCall, results []*ToolResult, decisions map[string]*Decision) {
	s := a.snap.Load()
	for i := 0; i < len(calls); {
		if results[i] != nil {
			i++
			continue
		}
		j := i + 1
		if t := s.lookup(calls[i].Name); t != nil && t.Concurrent {
			for j < len(calls) && results[j] == nil {
				if t := s.lookup(calls[j].Name); t == nil || !t.Concurrent {
					break
				}
				j++
			}
		}
		if a.cfg.steps != nil {
			a.toolSteps(ctx, s, res, calls, results, decisions, i, j)
		} else if j-i == 1 {
			results[i] = a.call(ctx, s, res, calls, i, decisions, nil, a.cur.toolScope())
		} else {
			var wg sync.WaitGroup
			for k := i; k < j; k++ {
				wg.Go(func() { results[k] = a.call(ctx, s, res, calls, k, decisions, nil, nil) })
			}
			wg.Wait()
		}
		i = j
	}
	a.applyActivations(results)
}

// toolSteps runs calls[i:j], one group, through the step runner.
func (a *Agent) toolSteps(ctx context.Context, s *snapshot, res *RunResult, calls []ToolCall, results []*ToolResult, decisions map[string]*Decision, i, j int) {
	steps := make([]*Step, j-i)
	for k := range steps {
		c := &calls[i+k]
		st := &Step{Kind: StepTool, RunID: res.RunID, Key: toolKey(res.RunID, res.Steps, c.ID, i+k), Index: res.Steps,
			Call: c, Tool: s.lookup(c.Name), Resumed: decisions[c.ID] != nil}
		if st.Tool != nil {
			st.Replay = st.Tool.ReplayPolicy
		}
		steps[k] = st
	}
	out := a.cfg.steps.Tools(ctx, steps, func(ctx context.Context, k int) *ToolResult {
		return a.call(ctx, s, res, calls, i+k, decisions, steps[k], nil)
	})
	for k := range steps {
		var r *ToolResult
		if k < len(out) {
			r = out[k]
		}
		c := &calls[i+k]
		switch {
		case r == nil:
			r = errorResult(c, ToolMiddlewareErr, "the step runner returned no result for this call")
		case r.CallID == "":
			r.CallID = c.ID
		}
		if r.Name == "" {
			r.Name = c.Name
		}
		results[i+k] = r
	}
}

// call runs calls[i] with its decision, if any, in its context. st is its
// step when a runner runs it. ts is a zero scope for it, from the run's
// bookkeeping, or nil.
func (a *Agent) call(ctx context.Context, s *snapshot, res *RunResult, calls []ToolCall, i int, decisions map[string]*Decision, st *Step, ts *toolScope) *ToolResult {
	if d := decisions[calls[i].ID]; d != nil {
		ctx = context.WithValue(ctx, approvalKey{}, d)
	}
	// The scope holds the call's own copy, for middleware to edit, and is
	// the call's context, for ExecutionKey and Ask.
	if ts == nil {
		ts = new(toolScope)
	}
	ts.Context, ts.call, ts.a, ts.st = ctx, calls[i], a, st
	ts.origID, ts.origName = calls[i].ID, calls[i].Name
	ts.run, ts.step, ts.pos = res.RunID, int32(res.Steps), int32(i)
	return a.tool(ts, s, res, &ts.call)
}

func (a *Agent) tool(ctx context.Context, s *snapshot, res *RunResult, call *ToolCall) *ToolResult {
	if len(s.toolIC) == 0 {
		return a.toolCore(ctx, s, res, call)
	}
	next := ToolFunc(func(ctx context.Context, call *ToolCall) *ToolResult {
		return a.toolCore(ctx, s, res, call)
	})
	for i := len(s.toolIC) - 1; i >= 1; i-- { // the outermost is called directly
		ic, inner := s.toolIC[i], next
		next = func(ctx context.Context, call *ToolCall) *ToolResult {
			return ic.InterceptTool(ctx, call, inner)
		}
	}
	r := s.toolIC[0].InterceptTool(ctx, call, next)
	if r == nil {
		r = errorResult(call, ToolMiddlewareErr, "a tool interceptor returned no result")
	}
	return r
}

func errorResult(call *ToolCall, status ToolStatus, msg string) *ToolResult {
	return &ToolResult{CallID: call.ID, Name: call.Name, Content: msg, IsError: true, Status: status}
}

func (a *Agent) toolCore(ctx context.Context, s *snapshot, res *RunResult, call *ToolCall) *ToolResult {
	// The start event's Time is the origin of the end event's Duration,
	// whose end is the end event's Time (see modelCore).
	hookStart, hookEnd := len(s.hooks[EventToolCallStart]) > 0, len(s.hooks[EventToolCallEnd]) > 0
	var evs *[2]Event
	var start time.Time
	if hookStart || hookEnd {
		evs, start = getEvents(), time.Now()
	}
	if hookStart {
		evs[0] = Event{Type: EventToolCallStart, Time: start, RunID: res.RunID, Step: res.Steps, ToolCall: call}
		a.emit(ctx, s, &evs[0])
	}
	r := a.toolExec(ctx, s, res, call)
	if a.cfg.steps != nil {
		if ts, _ := ctx.Value(scopeKey{}).(*toolScope); ts != nil && ts.suspended.Load() {
			// Whatever the tool made of AskUser's ErrSuspended.
			r = &ToolResult{CallID: call.ID, Name: call.Name, Content: "waiting for an answer", Status: ToolSuspended}
		}
	}
	for i := len(s.resultMW) - 1; i >= 0 && r.Status != ToolPending && r.Status != ToolSuspended; i-- {
		m := s.resultMW[i]
		if err := safeCall(func() error { return m.AfterToolExecution(ctx, call, r) }); err != nil {
			r = errorResult(call, ToolMiddlewareErr, fmt.Sprintf("tool result middleware failed: %v", err))
		}
	}
	if len(r.Parts) > 0 {
		r = a.checkResultParts(call, r)
	}
	if r.CallID == "" {
		r.CallID = call.ID
	}
	if r.Name == "" {
		r.Name = call.Name
	}
	if hookEnd {
		d := time.Since(start)
		evs[1] = Event{Type: EventToolCallEnd, Time: start.Add(d), RunID: res.RunID, Step: res.Steps, ToolCall: call,
			ToolResult: r, Duration: d}
		a.emit(ctx, s, &evs[1])
	}
	if evs != nil {
		putEvents(evs)
	}
	return r
}

// checkResultParts returns r, or an error result in its place when one of
// its parts is malformed or over the inline limit: the point where a
// tool's parts enter the conversation is after the result middleware, so
// that a middleware may first replace a large part with a reference.
func (a *Agent) checkResultParts(call *ToolCall, r *ToolResult) *ToolResult {
	for i := range r.Parts {
		if err := checkContentPart(&r.Parts[i]); err != nil {
			e := errorResult(call, ToolError, fmt.Sprintf("harness: %v: part %d of the result of tool %q: %v", ErrInvalidPart, i, call.Name, err))
			e.ErrorType = "invalid_part"
			return e
		}
	}
	if err := checkInline(r.Parts, a.cfg.inlineLimit, fmt.Sprintf("result of tool %q", call.Name)); err != nil {
		e := errorResult(call, ToolError, err.Error())
		e.ErrorType = "part_too_large"
		return e
	}
	return r
}

func (a *Agent) toolExec(ctx context.Context, s *snapshot, res *RunResult, call *ToolCall) *ToolResult {
	t := s.lookup(call.Name)
	if t == nil {
		names := make([]string, len(s.defs))
		for i, d := range s.defs {
			names[i] = d.Name
		}
		return errorResult(call, ToolUnknown, fmt.Sprintf("unknown tool %q; available tools: %s", call.Name, strings.Join(names, ", ")))
	}
	if a.cfg.steps != nil && ctx.Value(interruptedKey{}) != nil {
		return InterruptedResult(call)
	}
	if err := ctx.Err(); err != nil {
		return errorResult(call, ToolCancelled, "tool call cancelled: "+err.Error())
	}
	decision, _ := ctx.Value(approvalKey{}).(*Decision)
	if decision != nil && !decision.Approve {
		msg := "tool call denied by the approver"
		if decision.Reason != "" {
			msg += ": " + decision.Reason
		}
		return errorResult(call, ToolDenied, msg)
	}
	perm, reason := t.Permission, ""
	if perm == PermissionInherit {
		perm, reason = a.cfg.perm.Permission(ctx, t, call)
	}
	switch perm {
	case PermissionDeny:
		msg := fmt.Sprintf("tool %q is not permitted", call.Name)
		if reason != "" {
			msg += ": " + reason
		}
		return errorResult(call, ToolDenied, msg)
	case PermissionAsk:
		if decision == nil {
			return a.ask(ctx, s, res, call, reason)
		}
	}
	for _, m := range s.callMW {
		var act ToolAction
		err := safeCall(func() (err error) { act, err = m.BeforeToolExecution(ctx, call); return err })
		if err != nil {
			return errorResult(call, ToolMiddlewareErr, fmt.Sprintf("tool call middleware failed: %v", err))
		}
		switch act.Kind {
		case ToolBlock:
			msg := "tool call blocked"
			if act.Reason != "" {
				msg += ": " + act.Reason
			}
			return errorResult(call, ToolBlocked, msg)
		case ToolAsk:
			if decision == nil {
				return a.ask(ctx, s, res, call, act.Reason)
			}
		}
	}
	input, err := t.validate(call.Input)
	if err != nil {
		return errorResult(call, ToolInvalid, fmt.Sprintf("invalid arguments for tool %q: %v", call.Name, err))
	}
	call.Input = input
	return a.execute(ctx, t, call)
}

func (a *Agent) ask(ctx context.Context, s *snapshot, res *RunResult, call *ToolCall, reason string) *ToolResult {
	if len(s.hooks[EventApprovalRequested]) > 0 {
		req := &ApprovalRequest{ID: call.ID, ToolCall: *call, Reason: reason}
		a.emit(ctx, s, &Event{Type: EventApprovalRequested, RunID: res.RunID, Step: res.Steps, ToolCall: call, Approval: req})
	}
	return &ToolResult{CallID: call.ID, Name: call.Name, Content: reason, Status: ToolPending}
}

type outcome struct {
	content string
	err     error
	panicV  any
	stack   []byte
}

// execute runs the handler with the tool's timeout, recovering a panic.
func (a *Agent) execute(ctx context.Context, t *Tool, call *ToolCall) *ToolResult {
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, t.Timeout, errToolTimeout)
		defer cancel()
	}
	var o outcome
	if ctx.Done() == nil {
		o = invoke(ctx, t, call.Input)
	} else {
		ch := make(chan outcome, 1)
		go func() { ch <- invoke(ctx, t, call.Input) }()
		select {
		case o = <-ch:
		case <-ctx.Done():
			// The handler did not return in time; it is abandoned.
			o.err = context.Cause(ctx)
		}
	}
	switch {
	case o.panicV != nil:
		a.logger.Error("harness: tool panicked", "tool", call.Name, "call_id", call.ID, "panic", o.panicV, "stack", string(o.stack))
		return errorResult(call, ToolPanicked, fmt.Sprintf("tool %q panicked: %v", call.Name, o.panicV))
	case o.err != nil && errors.Is(context.Cause(ctx), errToolTimeout):
		return errorResult(call, ToolTimedOut, fmt.Sprintf("tool %q timed out after %s", call.Name, t.Timeout))
	case o.err != nil && ctx.Err() != nil:
		return errorResult(call, ToolCancelled, fmt.Sprintf("tool %q cancelled: %v", call.Name, ctx.Err()))
	case o.err != nil:
		var ie *InputError
		if errors.As(o.err, &ie) {
			return errorResult(call, ToolInvalid, fmt.Sprintf("invalid arguments for tool %q: %v", call.Name, ie.Err))
		}
		r := errorResult(call, ToolError, o.err.Error())
		if et, ok := errors.AsType[ErrorTyper](o.err); ok {
			r.ErrorType = et.ErrorType()
		}
		return r
	}
	act, parts := takeResult(ctx)
	return &ToolResult{CallID: call.ID, Name: call.Name, Content: o.content, Status: ToolOK, Activate: act, Parts: parts}
}

func invoke(ctx context.Context, t *Tool, input json.RawMessage) (o outcome) {
	defer func() {
		if r := recover(); r != nil {
			o = outcome{panicV: r, stack: debug.Stack()}
		}
	}()
	o.content, o.err = t.Handler(ctx, input)
	return o
}

// ---- hooks ----

// emit calls the hooks of ev.Type in order, recovering panics. Failures are
// logged and reported as EventHookFailed.
func (a *Agent) emit(ctx context.Context, s *snapshot, ev *Event) {
	ev.Agent = a.cfg.name
	ev.SessionID = a.cfg.sessionID
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	for _, h := range s.hooks[ev.Type] {
		err := safeCall(func() error { return h(ctx, ev) })
		if err == nil {
			continue
		}
		a.logger.Warn("harness: hook failed; ignored", "event", ev.Type.String(), "err", err)
		if ev.Type != EventHookFailed && len(s.hooks[EventHookFailed]) > 0 {
			a.emit(ctx, s, &Event{Type: EventHookFailed, RunID: ev.RunID, Step: ev.Step, Err: err, FailedEvent: ev.Type})
		}
	}
}

// eventPool holds room for the events of the hooks on every run's path:
// its start and end, and its model requests' and tool calls' start and
// end (a pair each). A hook does not keep its event (see [Hook]), so the
// room of one serves the next: with the hooks of an observer such as the
// flight recorder, a run allocates no event.
var eventPool = sync.Pool{New: func() any { return new([2]Event) }}

// emitPooled emits ev from eventPool's room (see emit).
func (a *Agent) emitPooled(ctx context.Context, s *snapshot, ev Event) {
	evs := getEvents()
	evs[0] = ev
	a.emit(ctx, s, &evs[0])
	putEvents(evs)
}

// getEvents returns room for two events from eventPool.
func getEvents() *[2]Event { return eventPool.Get().(*[2]Event) }

// putEvents clears p, so that it keeps nothing of the run alive, and
// returns it to eventPool. Its events' hooks have all returned.
func putEvents(p *[2]Event) {
	*p = [2]Event{}
	eventPool.Put(p)
}

// addCost adds the cost of resp, as the WithPricing function prices it
// (by the response's model, else the agent's), to res.Cost.
func (a *Agent) addCost(res *RunResult, resp *ModelResponse) {
	model := resp.Model
	if model == "" {
		model = a.cfg.model
	}
	if usd, ok := a.cfg.pricing(model, resp.Usage); ok {
		res.Cost += usd
	}
}
