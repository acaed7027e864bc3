package harness

import "context"

// sessionStarted announces the agent's session to EventSessionStart hooks.
func (a *Agent) sessionStarted(ctx context.Context, restored bool) {
	if s := a.snap.Load(); len(s.hooks[EventSessionStart]) > 0 {
		a.emit(ctx, s, &Event{Type: EventSessionStart, Restored: restored})
	}
}

// addMessage adds m to the conversation and announces it to EventMessage
// hooks.
func (a *Agent) addMessage(ctx context.Context, res *RunResult, m Message) {
	a.appendMessage(m)
	if s := a.snap.Load(); len(s.hooks[EventMessage]) > 0 {
		msg := &a.messages[len(a.messages)-1]
		a.emit(ctx, s, &Event{Type: EventMessage, RunID: res.RunID, Step: res.Steps, Message: msg})
	}
}

// UpdatesObserved reports whether [Update] in ctx reaches anyone: ctx is
// a tool call's and its agent has [EventToolUpdate] hooks (the tracing
// extension's, a UI's). A tool may skip preparing updates that nobody
// observes: the MCP adapter asks a server for progress notifications only
// then.
func UpdatesObserved(ctx context.Context) bool {
	s, _ := ctx.Value(scopeKey{}).(*toolScope)
	return s != nil && len(s.a.snap.Load().hooks[EventToolUpdate]) > 0
}

// Update publishes metadata about a running tool call — progress, a
// partial count, the URL being fetched — to [EventToolUpdate] hooks, from
// inside the tool's handler: tracing can add it to the call's span as an
// event, a UI can show it. It runs the hooks synchronously and returns
// when they have. metadata is not copied: do not change it afterwards.
// Updates are observation: a tool that runs again after a crash publishes
// them again. Outside a tool call it returns [ErrNotInToolCall].
func Update(ctx context.Context, metadata map[string]any) error {
	s, _ := ctx.Value(scopeKey{}).(*toolScope)
	if s == nil {
		return ErrNotInToolCall
	}
	if snap := s.a.snap.Load(); len(snap.hooks[EventToolUpdate]) > 0 {
		s.a.emit(ctx, snap, &Event{Type: EventToolUpdate, RunID: s.run, Step: int(s.step), ToolCall: &s.call, Metadata: metadata})
	}
	return nil
}
