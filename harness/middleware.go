package harness

import (
	"context"
)

// Middleware is a value that implements one or more of the stage interfaces
// below. The engine finds the stages by type assertion, as net/http finds
// [net/http.Flusher]; a value that implements none is rejected with
// [ErrInvalidMiddleware].
//
// Transformation stages:
//   - [ModelRequestMiddleware]: before each model request;
//   - [ModelResponseMiddleware]: after each model response;
//   - [ToolCallMiddleware]: before each tool execution (edit, block, ask);
//   - [ToolResultMiddleware]: after each tool execution (replace the result).
//
// Interceptors, which run around a call and may derive the context.Context
// that everything inside it sees:
//   - [RunInterceptor], [ModelInterceptor], [ToolInterceptor].
//
// See the package documentation for the order in which they run.
type Middleware any

// ModelRequestMiddleware changes a model request before it is sent.
// Returning an error fails the run.
type ModelRequestMiddleware interface {
	BeforeModelRequest(ctx context.Context, req *ModelRequest) error
}

// ModelResponseMiddleware changes a model response before the engine acts
// on it. Returning an error fails the run.
type ModelResponseMiddleware interface {
	AfterModelResponse(ctx context.Context, req *ModelRequest, resp *ModelResponse) error
}

// ToolAction is a [ToolCallMiddleware]'s verdict on a call.
type ToolAction struct {
	// Kind says what to do with the call.
	Kind ToolActionKind
	// Reason explains a block (shown to the model) or an ask (shown to the
	// approver).
	Reason string
}

// ToolActionKind is what a [ToolCallMiddleware] decides.
type ToolActionKind uint8

const (
	// ToolContinue lets the call go on to the next middleware and the tool.
	ToolContinue ToolActionKind = iota
	// ToolBlock refuses the call; the model receives an error result with Reason.
	ToolBlock
	// ToolAsk pauses the run until the call is approved. On an approved
	// resume the call passes through the middleware again and an ask counts
	// as approved.
	ToolAsk
)

// Continue is the ToolAction that lets a call go on.
func Continue() ToolAction { return ToolAction{} }

// Block returns the ToolAction that refuses a call with reason.
func Block(reason string) ToolAction { return ToolAction{Kind: ToolBlock, Reason: reason} }

// Ask returns the ToolAction that asks for approval with reason.
func Ask(reason string) ToolAction { return ToolAction{Kind: ToolAsk, Reason: reason} }

// ToolCallMiddleware runs before a tool executes. It may edit call.Input in
// place (replace the slice; do not write into it: [ToolCall.DecodeInput]
// and [ToolCall.SetInput] do it), block the call, or ask for approval.
// Returning an error gives the model an error result. [ToolCallFunc]
// makes one of a function.
type ToolCallMiddleware interface {
	BeforeToolExecution(ctx context.Context, call *ToolCall) (ToolAction, error)
}

// ToolResultMiddleware runs after a tool executes, or after the engine
// produced an error result for it (blocked, denied, invalid). It may
// replace *result. Returning an error gives the model an error result.
// [ToolResultFunc] makes one of a function.
type ToolResultMiddleware interface {
	AfterToolExecution(ctx context.Context, call *ToolCall, result *ToolResult) error
}

// RunInfo describes a run to a [RunInterceptor].
type RunInfo struct {
	Agent     string // the agent's name
	RunID     string
	SessionID string
	// Input is the user message, or empty on Resume.
	Input string
	// Message is the user message of [Agent.RunMessage], with its parts
	// (Input is its text); nil for Run and Resume. Observers must not
	// modify it.
	Message *Message
	// Resumed is true when the run continues after approvals.
	Resumed bool
	// Steps counts the model requests the turn made before this run
	// began: 0 for Run; on Resume, those before the pause. With RunID,
	// Resumed and Attempt it names this part of the turn uniquely.
	Steps int
	// Attempt counts the executions of the run from 1: a durable runtime
	// that executes the run again after a crash marks its context with
	// [ContextRecovered], and the run sees 2, 3….
	Attempt int
	// Recovered is Attempt > 1: the run is executed again after the
	// process that ran it stopped. Steps recorded by the earlier attempts
	// are replayed by the [StepRunner], not run again.
	Recovered bool
}

// RunFunc continues a run with ctx.
type RunFunc func(ctx context.Context) *RunResult

// RunInterceptor runs around a whole run: the turn-start callbacks, every
// model request and tool call, and the turn-end callbacks. It must call
// next exactly once and return its result (it may change it).
type RunInterceptor interface {
	InterceptRun(ctx context.Context, info *RunInfo, next RunFunc) *RunResult
}

// ModelFunc continues a model request with ctx.
type ModelFunc func(ctx context.Context, req *ModelRequest) (*ModelResponse, error)

// ModelInterceptor runs around one model request attempt, outside the
// request and response middleware: req holds the final request, PrefixKey
// included, once next has returned. It must call next at most once.
type ModelInterceptor interface {
	InterceptModel(ctx context.Context, req *ModelRequest, next ModelFunc) (*ModelResponse, error)
}

// ToolFunc continues a tool call with ctx.
type ToolFunc func(ctx context.Context, call *ToolCall) *ToolResult

// ToolInterceptor runs around one tool call: the lookup, validation,
// permission check, the tool-call middleware, the tool itself and the
// tool-result middleware. It must call next at most once and return a
// non-nil result. Calls of one step may run concurrently, each with its own
// context.
type ToolInterceptor interface {
	InterceptTool(ctx context.Context, call *ToolCall, next ToolFunc) *ToolResult
}

// isMiddleware reports whether m implements at least one stage.
func isMiddleware(m Middleware) bool {
	switch m.(type) {
	case ModelRequestMiddleware, ModelResponseMiddleware, ToolCallMiddleware, ToolResultMiddleware,
		RunInterceptor, ModelInterceptor, ToolInterceptor:
		return true
	}
	return false
}
