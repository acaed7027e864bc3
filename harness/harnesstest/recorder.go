package harnesstest

import (
	"context"
	"slices"
	"sync"

	"github.com/harnessx/harnessx/harness"
)

// HookRecorder records lifecycle events. It is safe for concurrent use.
// The zero value is ready.
type HookRecorder struct {
	mu     sync.Mutex
	events []harness.Event
}

// Option subscribes the recorder to every event of an agent.
func (r *HookRecorder) Option() harness.Option { return harness.WithHooks(r.Hook) }

// Hook records ev; pass it to harness.WithHook or ExtensionContext.OnHook.
func (r *HookRecorder) Hook(_ context.Context, ev *harness.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, *ev)
	return nil
}

// Events returns the recorded events, in order.
func (r *HookRecorder) Events() []harness.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Types returns the recorded event types, in order.
func (r *HookRecorder) Types() []harness.HookEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	types := make([]harness.HookEvent, len(r.events))
	for i, e := range r.events {
		types[i] = e.Type
	}
	return types
}

// Of returns the recorded events of type t, in order.
func (r *HookRecorder) Of(t harness.HookEvent) []harness.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []harness.Event
	for _, e := range r.events {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

// Reset forgets the recorded events.
func (r *HookRecorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = nil
}
