package harness

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
)

// DefaultPriority is the priority of an extension that does not implement
// [Prioritizer].
const DefaultPriority = 100

// Extension packages a feature: tools, middleware, hooks, prompt text,
// saved state and cleanup, enabled in one place with [WithExtensions].
//
// Name must be unique among an agent's extensions and non-empty. Install
// runs synchronously during [New]; it registers capabilities through the
// [ExtensionContext] and must not acquire resources that need a teardown
// (do that lazily in OnTurnStart). Its registrations take effect together
// when it returns (the tool catalog is rebuilt once for all of them;
// reading the catalog during Install shows them). The agent is not built
// yet: [Agent.Run], [Agent.Resume] and [Agent.Close] called during Install
// fail with [ErrInstalling]. If Install fails or panics, every
// registration it made through the context is removed.
//
// An extension may also implement [Prioritizer] and the lifecycle
// interfaces [TurnStarter], [TurnEnder], [TurnCompleter], [SessionSaver],
// [SessionLoader] and [TearDowner].
type Extension interface {
	Name() string
	Install(ec *ExtensionContext) error
}

// Prioritizer sets an extension's install priority: lower installs first;
// equal priorities keep the order given to WithExtensions. The default is
// [DefaultPriority].
type Prioritizer interface{ Priority() int }

// TurnStarter is called at the start of each user turn ([Agent.Run]; not
// on Resume), in install order. An error fails the turn before the user
// message is added. It may run many times: initialize lazily and
// idempotently.
type TurnStarter interface {
	OnTurnStart(ctx context.Context, ec *ExtensionContext, userMessage string) error
}

// TurnEnder is called on the successful finish path of a turn, in install
// order, with the final text. An error fails the run.
type TurnEnder interface {
	OnTurnEnd(ctx context.Context, ec *ExtensionContext, finalText string) error
}

// TurnCompleter observes the terminal result of a turn: completed, failed
// or cancelled, never paused. It runs in reverse install order, best
// effort: a panic is recovered and logged.
type TurnCompleter interface {
	OnTurnComplete(ctx context.Context, ec *ExtensionContext, result *RunResult)
}

// SessionSaver returns the extension's state for [Agent.SaveSession], in
// install order. The state must be JSON-compatible (no NaN or Inf, no
// functions or channels); it is stored under the extension's name. Keep it
// fast and free of side effects: it can run many times in a turn.
type SessionSaver interface {
	OnSaveSession(ctx context.Context, ec *ExtensionContext) (any, error)
}

// StateVersioner is implemented by a [SessionSaver] whose state changes
// rarely and costs much to encode (a list of every stored result): it
// returns a number that changes whenever the state OnSaveSession would
// return changes. [Agent.SaveExtensionState] and [Agent.SaveSession] then
// reuse the state encoded last, without calling OnSaveSession, for a
// snapshot ([AsSnapshot]) taken while the number stays the same; a save
// that is not a snapshot always calls OnSaveSession.
type StateVersioner interface {
	StateVersion() uint64
}

// SessionLoader restores the state saved under the extension's name by
// [LoadSession], in install order. Validate its version and shape.
type SessionLoader interface {
	OnLoadSession(ctx context.Context, ec *ExtensionContext, state json.RawMessage) error
}

// TearDowner releases the extension's resources at [Agent.Close], in
// reverse install order, before its registrations are removed.
type TearDowner interface {
	Teardown(ctx context.Context) error
}

// ExtensionContext is an extension's access to its agent. The registration
// methods track ownership: at Close the registrations are removed in
// reverse order, and a failed Install rolls them back. The context is a
// convenience, not a sandbox: extensions are trusted code. Its methods are
// safe for concurrent use.
type ExtensionContext struct {
	agent   *Agent
	ext     Extension
	name    string
	handles []*Handle // guarded by agent.regMu

	// snapVer and snapRaw are the state SaveExtensionState encoded last
	// for a snapshot and its StateVersion; guarded by Agent.snapMu.
	snapVer uint64
	snapRaw json.RawMessage

	mu         sync.Mutex
	installing bool                // Install is running
	checked    map[Feature]bool    // features asked about with Supports
	unmet      []*UnsupportedError // missing features used during Install
}

// Name returns the extension's name.
func (ec *ExtensionContext) Name() string { return ec.name }

// Agent returns the agent, for advanced access. Changes made through it
// are not tracked.
func (ec *ExtensionContext) Agent() *Agent { return ec.agent }

// SessionID returns the agent's session ID.
func (ec *ExtensionContext) SessionID() string { return ec.agent.cfg.sessionID }

// Logger returns the agent's logger, with the extension's name.
func (ec *ExtensionContext) Logger() *slog.Logger {
	return ec.agent.logger.With("extension", ec.name)
}

// RegisterTool registers t. A tool of the same name is an error
// ([ErrDuplicateTool]); use ReplaceTool to replace one deliberately.
func (ec *ExtensionContext) RegisterTool(t *Tool) (*Handle, error) {
	return ec.agent.registerTool(t, false, ec)
}

// ReplaceTool registers t in place of the active tool of the same name, if
// any. Closing the handle restores the previous binding when this one is
// still active; if another registration replaced it since, that one stays.
func (ec *ExtensionContext) ReplaceTool(t *Tool) (*Handle, error) {
	return ec.agent.registerTool(t, true, ec)
}

// AddMiddleware adds m after the middleware registered so far.
func (ec *ExtensionContext) AddMiddleware(m Middleware) (*Handle, error) {
	return ec.agent.addMiddleware(m, ec)
}

// OnHook subscribes fn to event.
func (ec *ExtensionContext) OnHook(event HookEvent, fn Hook) (*Handle, error) {
	return ec.agent.onHook(event, fn, ec)
}

// RegisterPromptProvider appends fn's text to the system prompt of every
// model request, after the base prompt and earlier providers, separated by
// a blank line. fn runs synchronously while the request is built; an empty
// text adds nothing, and a panic is recovered and ignored, so a prompt
// provider is no place for mandatory checks.
func (ec *ExtensionContext) RegisterPromptProvider(fn func() string) (*Handle, error) {
	return ec.agent.addPrompt(fn, ec)
}

// GetState returns the shared metadata value under key. The metadata is
// shared by all extensions of the agent: prefix keys with your extension's
// name. It is not saved with the session; use [SessionSaver] for that.
func (ec *ExtensionContext) GetState(key string) (any, bool) { return ec.agent.getState(key) }

// SetState sets the shared metadata value under key.
func (ec *ExtensionContext) SetState(key string, v any) { ec.agent.setState(key, v) }

// closeAll removes the extension's registrations in reverse order, with
// one rebuild of the snapshot.
func (ec *ExtensionContext) closeAll() {
	a := ec.agent
	if err := a.lockReg(); err != nil {
		a.logger.Error("harness: an extension's registrations cannot be removed from inside a tool transform", "extension", ec.name, "err", err)
		return
	}
	hs := ec.handles
	ec.handles = nil
	a.unlockReg()
	a.beginBatch()
	defer a.endBatch()
	for i := len(hs) - 1; i >= 0; i-- {
		hs[i].Close()
	}
}

// Artifact is a file that an extension keeps and can hand to an incident
// bundle, such as a spilled tool result.
type Artifact struct {
	// Name is unique among the extension's artifacts and a valid relative
	// path with forward slashes (no "..", not absolute).
	Name string `json:"name"`
	// Path is where the file is on disk.
	Path string `json:"path"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// SHA256 is the file's SHA-256 in hex.
	SHA256 string `json:"sha256"`
}

// ArtifactSource is implemented by extensions that keep artifacts. The
// flight recorder finds them through [Agent.Extensions] and includes their
// artifacts in a bundle only when asked. Artifacts must be safe to call
// from any goroutine, during a run too.
type ArtifactSource interface {
	Artifacts(ctx context.Context) ([]Artifact, error)
}
