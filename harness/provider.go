package harness

import (
	"context"
	"encoding/json"
	"time"
)

// Provider is a model backend. The providers/anthropic and providers/openai
// packages implement it; harnesstest.ScriptedProvider implements it for tests.
type Provider interface {
	// Generate sends req and returns the model's reply. It blocks until the
	// reply is complete (a streaming provider assembles the stream) and must
	// return promptly with ctx's error when ctx is cancelled. It must not
	// keep or modify req after it returns. A run calls Generate from one
	// goroutine at a time; [Agent.Generate] may call it at the same time,
	// from other goroutines (a tool of the run asking for a sampling, for
	// instance), so a provider used with Agent.Generate, or shared by
	// several agents, must be safe for concurrent use.
	Generate(ctx context.Context, req *ModelRequest) (*ModelResponse, error)
}

// ProviderNamer is implemented by providers that know their name before
// answering ("anthropic", "openai"). The engine copies it into
// [ModelRequest.Provider], so observers can name the provider of a request
// that fails before any response.
type ProviderNamer interface {
	ProviderName() string
}

// PrefixKeyUser is implemented by providers that say whether they read
// [ModelRequest.PrefixKey] (the OpenAI provider sends it as the prompt
// cache key when asked to). The engine computes a request's prefix key
// only when something reads it: the provider, unless it implements
// PrefixKeyUser and UsesPrefixKey returns false, or, whatever the
// provider, a model interceptor (the tracing extension), a model response
// middleware or a model request hook. A provider that does not implement
// it gets the key on every request.
type PrefixKeyUser interface {
	UsesPrefixKey() bool
}

// ProviderFunc adapts a function to [Provider].
type ProviderFunc func(ctx context.Context, req *ModelRequest) (*ModelResponse, error)

// Generate calls f.
func (f ProviderFunc) Generate(ctx context.Context, req *ModelRequest) (*ModelResponse, error) {
	return f(ctx, req)
}

// ToolDefinition is what the model is told about a tool.
type ToolDefinition struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// ModelRequest is one request to a [Provider]. The engine builds it; the
// before-model-request middleware may change it; the engine then computes
// PrefixKey over the final request.
type ModelRequest struct {
	// Model is the model name, from [WithModel].
	Model string
	// System is the system prompt: [WithSystemPrompt] followed by the
	// extensions' prompt providers, separated by blank lines.
	System string
	// Messages is the conversation so far, oldest first. Middleware may
	// replace the slice but must not modify the messages it holds: they are
	// shared with the agent's history.
	Messages []Message
	// Tools defines the tools the model may call, in registration order.
	Tools []ToolDefinition
	// MaxTokens bounds the reply; 0 leaves the provider's default.
	MaxTokens int
	// Temperature, when non-nil, sets the sampling temperature.
	Temperature *float64
	// Stream asks the provider to stream the reply.
	Stream bool
	// PrefixKey identifies the cacheable prefix of this request. The
	// engine leaves it zero when nothing reads it (see [PrefixKeyUser]).
	PrefixKey PrefixKey
	// Attempt counts tries of this request from 1; it grows when the engine
	// retries after a retryable error (see [WithRetry]).
	Attempt int
	// Provider names the provider when it implements [ProviderNamer];
	// empty otherwise.
	Provider string
	// RunID and Step locate the request: Step counts model requests of the
	// run from 1.
	RunID string
	Step  int
}

// ModelResponse is a [Provider]'s reply.
type ModelResponse struct {
	// Message is the assistant message: text, tool calls, reasoning.
	Message Message
	// StopReason is the reason mapped onto the harness's set.
	StopReason StopReason
	// RawStopReason is the provider's own value, when it differs.
	RawStopReason string
	// Usage is the token usage of this request.
	Usage Usage
	// Model is the model that answered, as the provider reports it.
	Model string
	// ID is the provider's response ID.
	ID string
	// Provider names the provider ("anthropic", "openai", "scripted").
	Provider string
	// FirstChunkAt is when the first streamed chunk arrived; zero when the
	// reply was not streamed.
	FirstChunkAt time.Time
	// Sent holds the parameters the provider actually sent, which may
	// differ from the request's: a default the provider filled in, a
	// parameter it left out. The zero value means the provider did not
	// say; observers then fall back to the [ModelRequest].
	Sent RequestParams
}

// RequestParams are the invocation parameters a provider sent with one
// request (see [ModelResponse.Sent]). They are plain values, so that
// reporting them costs no allocation. A provider that reports them sets
// Model; a zero RequestParams means the provider did not say.
type RequestParams struct {
	// Model is the model name sent.
	Model string
	// MaxTokens is the bound on the reply sent; 0 when none was sent.
	MaxTokens int
	// Temperature is the sampling temperature sent, when HasTemperature.
	Temperature float64
	// HasTemperature says whether a temperature was sent.
	HasTemperature bool
	// Stream says whether the reply was requested as a stream.
	Stream bool
}

// IsZero reports whether p is the zero RequestParams: the provider did not
// report what it sent.
func (p RequestParams) IsZero() bool { return p == RequestParams{} }

// RetryableError is implemented by provider errors that may succeed when
// the request is sent again. See [WithRetry].
type RetryableError interface {
	error
	Retryable() bool
}
