package harness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

var (
	// ErrUnknownTool is returned by [SessionTools.Activate] for a name
	// that is not in the agent's catalog.
	ErrUnknownTool = errors.New("harness: unknown tool")
	// ErrNotInToolCall is returned by the functions that only work inside
	// a tool handler ([ActivateTools], [Update]) when called elsewhere.
	ErrNotInToolCall = errors.New("harness: not inside a tool call")
)

// ToolTransform turns a tool catalog into another: it may drop, add,
// reorder and edit tools. Register one with
// [ExtensionContext.TransformTools].
//
// The engine rebuilds the catalog from its base — the tools registered
// with WithTools and by extensions — every time the registrations change
// or [ExtensionContext.RefreshTools] is called, and runs every transform
// on it in registration order, each on the previous one's output. So a
// transform never sees its own earlier output: an edit applies once, a
// refresh of one source cannot undo another transform's policy, and when
// a transform is removed what it added is gone. The registrations of one
// Install (and those of New's options, and the removals of a rollback or
// a Close) are one change: the transforms run once for all of them.
//
// tools is a fresh slice that the transform may change and return; the
// *Tool values are shared and must not be modified: to edit one, copy it
// (c := *t; c.Description = ...; return &c). A transform runs under the
// agent's registration lock: it must be fast and deterministic and do no
// I/O (read the state a source keeps). It must not change registrations:
// the methods that do (RegisterTool, TransformTools, RefreshTools,
// Handle.Close, …) return [ErrInTransform] when a transform calls them. A
// tool it returns that is not valid (no name, handler or object schema),
// and a second tool of a name, are dropped and logged.
//
// A transform that panics is skipped: the next transform gets what the
// failed one was given, as if it were not registered, and the failure is
// logged and reported to [EventHookFailed] hooks as an [*ExtensionError]
// with Op "tool_transform" (Event.FailedEvent is 0), at every rebuild
// while it keeps failing. So one extension's bug does not take the other
// extensions' tools away; a policy that must hold even when its code
// fails belongs in tool-call middleware ([Block]), which fails closed.
type ToolTransform func(tools []*Tool) []*Tool

// TransformTools adds fn after the tool transforms registered so far and
// rebuilds the catalog. Closing the handle removes it and rebuilds the
// catalog without it.
func (ec *ExtensionContext) TransformTools(fn ToolTransform) (*Handle, error) {
	if fn == nil {
		return nil, errors.New("harness: nil tool transform")
	}
	return register(ec.agent, &ec.agent.reg.transforms, fn, ec)
}

// RefreshTools rebuilds the catalog from its base, running every
// transform again: call it when the source a transform reads has changed
// (a server's tool list, for instance). The next model request sees the
// result; a model request already sent is not affected. Called from
// inside a transform, it does nothing and returns [ErrInTransform];
// otherwise it returns nil.
func (ec *ExtensionContext) RefreshTools() error {
	a := ec.agent
	if err := a.lockReg(); err != nil {
		return err
	}
	defer a.unlockReg()
	a.changed()
	return nil
}

// catalog builds the tool catalog from the registry: the active binding
// of each name, in first-registration order, through the transforms. The
// caller holds regMu.
func (a *Agent) catalog() []*Tool {
	tools := make([]*Tool, 0, len(a.reg.toolOrder))
	for _, name := range a.reg.toolOrder {
		stack := a.reg.tools[name]
		tools = append(tools, stack[len(stack)-1].tool)
	}
	if len(a.reg.transforms) == 0 {
		return tools
	}
	// Registrations from inside a transform, on this goroutine, fail
	// (see lockReg).
	a.transformG.Store(goroutineID())
	defer a.transformG.Store(0)
	for i, e := range a.reg.transforms {
		out, err := a.transform(e, tools)
		if err != nil {
			a.logger.Error("harness: tool transform panicked; skipped", "extension", e.owner, "transform", i, "panic", err)
			a.reg.failed = append(a.reg.failed, &ExtensionError{Extension: e.owner, Op: "tool_transform", Err: err})
			continue // the next transform gets this one's input
		}
		tools = a.checkTransformed(out, i)
	}
	return tools
}

// transform runs one transform on a copy of tools, which it may change,
// so that tools stays intact when it panics.
func (a *Agent) transform(e *entry[ToolTransform], tools []*Tool) (out []*Tool, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &PanicError{Value: r}
		}
	}()
	return e.v(slices.Clone(tools)), nil
}

// checkTransformed drops invalid and duplicate tools from a transform's
// output.
func (a *Agent) checkTransformed(tools []*Tool, i int) []*Tool {
	out := tools[:0]
	seen := make(map[string]bool, len(tools))
	for _, t := range tools {
		if err := t.prepare(); err != nil {
			a.logger.Error("harness: tool transform returned an invalid tool; dropped", "transform", i, "err", err)
			continue
		}
		if seen[t.Name] {
			a.logger.Error("harness: tool transform returned a tool name twice; the second is dropped", "transform", i, "tool", t.Name)
			continue
		}
		seen[t.Name] = true
		out = append(out, t)
	}
	return out
}

// SessionTools is the tool set of an agent's session: which of the
// catalog's tools the model is offered. An [Agent] is one session, so
// each agent has one; get it with [Agent.Tools]. Its methods are safe for
// concurrent use, during a run too: a change applies from the next model
// request.
//
// A tool marked [Tool.Deferred] is in the catalog but is offered only
// once the session activates it: with Activate, or from a tool's result
// ([ActivateTools], [ToolResult.Activate]). The activated names are saved
// with the session and restored by [LoadSession]. Changing the offered
// tools changes the tools part of the [PrefixKey], so a trace shows the
// cache break and its cause.
type SessionTools struct{ a *Agent }

// Tools returns the session's tool set.
func (a *Agent) Tools() *SessionTools { return &SessionTools{a} }

// Activate offers the named deferred tools to the model from the next
// request on. Every name must be in the catalog ([ErrUnknownTool]
// otherwise, and nothing changes); activating a tool that is not deferred,
// or already active, changes nothing.
func (st *SessionTools) Activate(names ...string) error {
	a := st.a
	if err := a.lockReg(); err != nil {
		return err
	}
	defer a.unlockReg()
	if a.reg.dirty { // a batch's changes: the catalog must show them
		a.rebuild()
	}
	s := a.snap.Load()
	var unknown []string
	for _, n := range names {
		if s.tools[n] == nil {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%w: %s (the catalog has %s)", ErrUnknownTool, strings.Join(unknown, ", "), strings.Join(catalogNames(s), ", "))
	}
	a.activate(names)
	return nil
}

// Deactivate stops offering the named deferred tools. Names that are not
// active are ignored. It returns nil, or [ErrInTransform] (and changes
// nothing) when a tool transform calls it.
func (st *SessionTools) Deactivate(names ...string) error {
	a := st.a
	if err := a.lockReg(); err != nil {
		return err
	}
	defer a.unlockReg()
	changed := false
	for _, n := range names {
		if a.reg.active[n] {
			delete(a.reg.active, n)
			changed = true
		}
	}
	if changed {
		a.changed()
	}
	return nil
}

// Offered returns the definitions of the tools the model is offered now,
// in catalog order: what the next model request carries.
func (st *SessionTools) Offered() []ToolDefinition {
	return slices.Clone(st.a.current().defs)
}

// Active returns the names the session has activated, sorted. Called from
// inside a tool transform, it returns nil: a transform reads the catalog
// it is given, not the session.
func (st *SessionTools) Active() []string {
	a := st.a
	if a.lockReg() != nil {
		return nil
	}
	defer a.unlockReg()
	return slices.Sorted(maps.Keys(a.reg.active))
}

// activate adds names to the active set and rebuilds when it changed. The
// caller holds regMu.
func (a *Agent) activate(names []string) {
	changed := false
	for _, n := range names {
		if n != "" && !a.reg.active[n] {
			if a.reg.active == nil {
				a.reg.active = map[string]bool{}
			}
			a.reg.active[n] = true
			changed = true
		}
	}
	if changed {
		a.changed()
	}
}

// applyActivations activates the tools that results name. Names not in
// the catalog are logged and skipped.
func (a *Agent) applyActivations(results []*ToolResult) {
	for _, r := range results {
		if r == nil || len(r.Activate) == 0 || r.Status == ToolPending {
			continue
		}
		a.regMu.Lock()
		if a.reg.dirty {
			a.rebuild()
		}
		s := a.snap.Load()
		names := make([]string, 0, len(r.Activate))
		for _, n := range r.Activate {
			if s.tools[n] == nil {
				a.logger.Warn("harness: a tool result activates a tool that is not in the catalog; skipped", "tool", r.Name, "activate", n)
				continue
			}
			names = append(names, n)
		}
		a.activate(names)
		a.unlockReg()
	}
}

// ActivateTools asks, from inside a tool handler, that the named deferred
// tools be offered to the model once the call returns: the engine puts
// the names on the call's [ToolResult.Activate] (so a durable runtime
// records them with the result) and activates them for the session before
// the next model request. A call whose handler fails activates nothing.
// Outside a tool call it returns [ErrNotInToolCall].
func ActivateTools(ctx context.Context, names ...string) error {
	s, _ := ctx.Value(scopeKey{}).(*toolScope)
	if s == nil {
		return fmt.Errorf("%w: ActivateTools is called from a tool handler", ErrNotInToolCall)
	}
	for _, n := range names {
		if n == "" {
			return fmt.Errorf("%w: ActivateTools with an empty name", ErrUnknownTool)
		}
	}
	s.mu.Lock()
	s.activate = append(s.activate, names...)
	s.mu.Unlock()
	return nil
}

// takeResult returns the names ActivateTools and the parts AddResultParts
// collected for the call ctx belongs to.
func takeResult(ctx context.Context) (names []string, parts []Part) {
	s, _ := ctx.Value(scopeKey{}).(*toolScope)
	if s == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	names, parts = s.activate, s.parts
	s.activate, s.parts = nil, nil
	return names, parts
}

// lookup returns the offered tool of that name: nil for a name the
// catalog lacks or a deferred tool the session has not activated.
func (s *snapshot) lookup(name string) *Tool {
	if s.hidden[name] {
		return nil
	}
	return s.tools[name]
}

func catalogNames(s *snapshot) []string {
	names := make([]string, len(s.catalog))
	for i, t := range s.catalog {
		names[i] = t.Name
	}
	return names
}
