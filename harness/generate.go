package harness

import (
	"context"
	"errors"
	"fmt"
)

// ErrInvalidRequest is returned by [Agent.Generate] for a request it
// cannot send: nil, or without messages.
var ErrInvalidRequest = errors.New("harness: invalid model request")

// Generate sends one model request with the agent's provider, outside the
// conversation: for an extension that needs the agent's model on behalf
// of someone else, such as an MCP server's sampling request during a tool
// call. The request goes through the agent's model interceptors and model
// middleware as a run's request does, so the tracing extension makes a
// chat span for it, a child of the span in ctx (the execute_tool span of
// the calling tool, say).
//
// Generate sends a copy of *req, with the defaults a run's request gets
// where req leaves them unset: the agent's model ([WithModel]) when Model
// is empty, its max tokens ([WithMaxTokens]) when MaxTokens is 0, its
// temperature ([WithTemperature]) when Temperature is nil, streaming when
// [WithStreaming] is on; Provider is the provider's name, Attempt 1, and
// RunID the run ctx belongs to ([RunIDFromContext]), if any. System and
// Tools are sent as given: the agent's system prompt and tools are not
// added. Step is 0, which tells observers that the request is not one of
// a run's steps. The request has no [PrefixKey]: it is not the
// conversation's prefix, and the run's cache-break tracking does not see
// it. *req itself is not modified, and neither are the messages.
//
// Generate does not touch the conversation, the pending approvals, the
// run's steps, usage or cost ([RunResult]), nor the session; there is no
// retry ([WithRetry] applies to runs) and no [StepRunner]: a durable
// runtime does not record it. The model-request hooks fire
// ([EventModelRequestStart], [EventModelRequestEnd], with Step 0), so
// observers such as the flight recorder see every request the agent's
// provider gets. Inside the provider, [ExecutionKey] is that of ctx.
//
// It blocks until the provider answers or ctx ends, and is safe for
// concurrent use, with itself and with a run — from a tool handler of the
// running turn included: it takes no lock that Run holds. The provider may
// therefore be called from several goroutines at once. It fails with
// [ErrInvalidRequest] for a nil request or one without messages,
// [ErrInvalidPart] or a [*PartSizeError] for a malformed media part or
// one over the inline limit ([WithInlineLimit]), [ErrInstalling] during an extension's Install and [ErrClosed]
// after [Agent.Close]; a provider's failure is a [*ProviderError].
func (a *Agent) Generate(ctx context.Context, req *ModelRequest) (*ModelResponse, error) {
	if a.installing.Load() {
		return nil, fmt.Errorf("%w: Generate during an extension's Install", ErrInstalling)
	}
	if a.closed.Load() {
		return nil, ErrClosed
	}
	if req == nil {
		return nil, fmt.Errorf("%w: nil request", ErrInvalidRequest)
	}
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("%w: no messages", ErrInvalidRequest)
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		for j := range m.Content {
			if !m.Content[j].IsMedia() {
				continue
			}
			if err := checkContentPart(&m.Content[j]); err != nil {
				return nil, fmt.Errorf("%w: part %d of message %d: %v", ErrInvalidPart, j, i, err)
			}
		}
		if err := checkInline(m.Content, a.cfg.inlineLimit, fmt.Sprintf("message %d", i)); err != nil {
			return nil, err
		}
	}
	r := *req
	if r.Model == "" {
		r.Model = a.cfg.model
	}
	if r.MaxTokens == 0 {
		r.MaxTokens = a.cfg.maxTokens
	}
	if r.Temperature == nil && a.cfg.temperature != nil {
		t := *a.cfg.temperature
		r.Temperature = &t
	}
	r.Stream = r.Stream || a.cfg.stream
	r.Provider = a.providerName
	r.Attempt = 1
	if r.RunID == "" {
		r.RunID = RunIDFromContext(ctx)
	}
	r.Step = 0
	r.PrefixKey = PrefixKey{}
	// Messages are shared, as in a run's request; the slice is capped so
	// that a middleware's append cannot write into the caller's array.
	r.Messages = r.Messages[:len(r.Messages):len(r.Messages)]
	return a.modelAttempt(ctx, a.current(), &r, false)
}
