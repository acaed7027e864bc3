package harness

import (
	"errors"
	"fmt"
)

// Sentinel errors. Match them with [errors.Is].
var (
	// ErrClosed is returned by methods of an agent after Close.
	ErrClosed = errors.New("harness: agent is closed")
	// ErrNoProvider is returned by New without WithProvider.
	ErrNoProvider = errors.New("harness: no provider")
	// ErrPaused is returned by Run while earlier approvals are pending.
	ErrPaused = errors.New("harness: run is paused awaiting approvals; call Resume")
	// ErrNotPaused is returned by Resume when nothing is pending.
	ErrNotPaused = errors.New("harness: no run is paused")
	// ErrMaxSteps ends a run that made more model requests than allowed.
	ErrMaxSteps = errors.New("harness: max steps exceeded")
	// ErrDuplicateTool is returned when a tool name is already registered.
	ErrDuplicateTool = errors.New("harness: duplicate tool")
	// ErrInvalidTool is returned for a tool without a name, handler or valid schema.
	ErrInvalidTool = errors.New("harness: invalid tool")
	// ErrInvalidMiddleware is returned for a value that implements no middleware stage.
	ErrInvalidMiddleware = errors.New("harness: invalid middleware")
	// ErrExtension is wrapped by every extension failure ([ExtensionError]).
	ErrExtension = errors.New("harness: extension failed")
	// ErrSession is wrapped by every session save and load failure.
	ErrSession = errors.New("harness: session")
	// ErrUnknownApproval is returned by Resume for a decision that names no pending request.
	ErrUnknownApproval = errors.New("harness: unknown approval request")
	// ErrInvalidRunID is returned by Run and Resume for a run ID given with
	// [ContextWithRunID] that is empty, too long or not printable, and by
	// Resume for one that is not the paused run's.
	ErrInvalidRunID = errors.New("harness: invalid run ID")
	// ErrAskUnsupported is returned by [AskUser] outside a tool call, or when
	// no one can answer: no answerer ([WithAsker]) and no step runner
	// implementing [Asker] that can serve the call. An Asker returns it
	// (wrapped) for a call outside its durable runs.
	ErrAskUnsupported = errors.New("harness: ask unsupported")
	// ErrAskNotReplaySafe is returned by [AskUser] called from a tool that is not
	// ReplaySafe.
	ErrAskNotReplaySafe = errors.New("harness: ask from a tool that is not replay-safe")
	// ErrSuspended is returned (wrapped) by an [Asker] that parks the run
	// instead of waiting for the answer: a durable runtime frees the
	// worker while a question waits. [AskUser] returns it to the tool; the
	// call then ends with status [ToolSuspended] whatever the tool returns,
	// and the run with [StatusSuspended]. The runner continues the run
	// later, and the asking call runs again from its start, when
	// [AskUser] gets the answer.
	ErrSuspended = errors.New("harness: run suspended until a question is answered")
	// ErrInvalidAsk is returned by [AskUser] for a malformed [AskRequest].
	ErrInvalidAsk = errors.New("harness: invalid ask")
	// ErrInstalling is returned by [Agent.Run], [Agent.Resume] and
	// [Agent.Close] called while [New] (or [LoadSession]) installs the
	// extensions, from an Install for instance: the agent is not built yet.
	ErrInstalling = errors.New("harness: the agent's extensions are being installed")
	// ErrInTransform is returned by the methods that change an agent's
	// registrations (RegisterTool, AddMiddleware, OnHook, TransformTools,
	// RefreshTools, Handle.Close, …) when a [ToolTransform] calls them:
	// a transform computes a catalog, it does not change the registry it
	// is computed from.
	ErrInTransform = errors.New("harness: called from inside a tool transform")

	// ErrInvalidPart is returned for a malformed content part: a media part
	// without media, with no source or more than one (data, URI, file ID),
	// or inline data without a MIME type.
	ErrInvalidPart = errors.New("harness: invalid part")
	// ErrPartTooLarge is matched by a [*PartSizeError]: a part's inline
	// bytes exceed the agent's inline limit ([WithInlineLimit]).
	ErrPartTooLarge = errors.New("harness: part too large")
	// ErrUnsupportedPart is matched by an [*UnsupportedPartError]: a
	// provider cannot send a part to the request's model (audio to a model
	// that takes no audio, an image type it does not read), found before
	// anything is sent.
	ErrUnsupportedPart = errors.New("harness: unsupported part")

	errInvalidHash = errors.New("harness: invalid hash")
)

// ExtensionError reports a failure of one extension: its install, a
// lifecycle callback or its teardown.
type ExtensionError struct {
	Extension string // the extension's name
	Op        string // "install", "turn_start", "turn_end", "save_session", "load_session", "teardown", "name", "tool_transform"
	Err       error
}

func (e *ExtensionError) Error() string {
	return fmt.Sprintf("harness: extension %q: %s: %v", e.Extension, e.Op, e.Err)
}

// Unwrap returns the cause and ErrExtension.
func (e *ExtensionError) Unwrap() []error { return []error{ErrExtension, e.Err} }

// MaxStepsError reports a run stopped by [WithMaxSteps].
type MaxStepsError struct{ Steps int }

func (e *MaxStepsError) Error() string {
	return fmt.Sprintf("harness: max steps exceeded: the model was called %d times without finishing", e.Steps)
}

// Is reports ErrMaxSteps.
func (e *MaxStepsError) Is(target error) bool { return target == ErrMaxSteps }

// SessionError reports a session that cannot be saved or loaded.
type SessionError struct {
	Op     string // "save" or "load"
	Reason string
	Err    error
}

func (e *SessionError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("harness: session %s: %s: %v", e.Op, e.Reason, e.Err)
	}
	return fmt.Sprintf("harness: session %s: %s", e.Op, e.Reason)
}

// Unwrap returns the cause and ErrSession.
func (e *SessionError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrSession}
	}
	return []error{ErrSession, e.Err}
}

// ProviderError wraps an error from [Provider.Generate] with the step it
// happened in.
type ProviderError struct {
	Step    int
	Attempt int
	Err     error
}

func (e *ProviderError) Error() string {
	return fmt.Sprintf("harness: model request %d (attempt %d): %v", e.Step, e.Attempt, e.Err)
}

func (e *ProviderError) Unwrap() error { return e.Err }

// ErrorTyper is an error that names its class for observers: a tool
// handler's error that implements it sets the result's
// [ToolResult.ErrorType].
type ErrorTyper interface {
	error
	ErrorType() string
}
