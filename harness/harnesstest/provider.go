package harnesstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/harnessx/harnessx/harness"
)

// ErrScriptExhausted is returned by a ScriptedProvider asked for more
// responses than its script holds.
var ErrScriptExhausted = errors.New("harnesstest: script exhausted")

// Response is one scripted model response.
type Response struct {
	// Text is the assistant text, if any.
	Text string
	// Reasoning is reasoning text, if any; it comes before Text.
	Reasoning string
	// ToolCalls are the calls the model makes, after the text.
	ToolCalls []harness.ToolCall
	// Usage is reported as is.
	Usage harness.Usage
	// StopReason defaults to tool_use when there are tool calls, end_turn
	// otherwise.
	StopReason harness.StopReason
	// Model is the response model; default the request's model.
	Model string
	// Err, when set, is returned instead of a response.
	Err error
	// Delay is waited before answering; cancelling the request's context
	// ends the wait with the context's error.
	Delay time.Duration
}

// Reply returns a response holding text.
func Reply(text string) Response { return Response{Text: text} }

// CallTool returns a response that calls one tool with input, which is
// encoded as JSON (a json.RawMessage or string of JSON is used as is).
func CallTool(id, name string, input any) Response {
	return Response{ToolCalls: []harness.ToolCall{Call(id, name, input)}}
}

// Call returns a tool call with input encoded as JSON. It panics if input
// cannot be encoded: it is for test scripts.
func Call(id, name string, input any) harness.ToolCall {
	var raw json.RawMessage
	switch v := input.(type) {
	case json.RawMessage:
		raw = v
	case string:
		raw = json.RawMessage(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("harnesstest.Call: %v", err))
		}
		raw = b
	}
	return harness.ToolCall{ID: id, Name: name, Input: raw}
}

// Fail returns a response that fails with err.
func Fail(err error) Response { return Response{Err: err} }

// RetryableError is an error that harness.WithRetry retries.
type RetryableError struct{ Msg string }

func (e *RetryableError) Error() string   { return e.Msg }
func (e *RetryableError) Retryable() bool { return true }

// ScriptedProvider answers model requests from a script, in order. It is
// safe for concurrent use.
type ScriptedProvider struct {
	// Loop restarts the script when it is exhausted, for benchmarks.
	Loop bool
	// DiscardRequests stops recording requests, for benchmarks.
	DiscardRequests bool
	// Name is the provider name reported in responses; default "scripted".
	Name string

	mu       sync.Mutex
	script   []Response
	next     int
	requests []harness.ModelRequest
	msgs     []harness.Message // one backing array per recorded request
}

// NewScriptedProvider returns a provider that answers with script.
func NewScriptedProvider(script ...Response) *ScriptedProvider {
	return &ScriptedProvider{script: script}
}

var _ harness.Provider = (*ScriptedProvider)(nil)

// ProviderName returns Name, or "scripted".
func (p *ScriptedProvider) ProviderName() string {
	if p.Name == "" {
		return "scripted"
	}
	return p.Name
}

// UsesPrefixKey implements [harness.PrefixKeyUser]: the recorded requests
// carry their prefix keys, so a provider that discards its requests does
// not read them, and the engine skips hashing the prefix for it when
// nothing else reads the key.
func (p *ScriptedProvider) UsesPrefixKey() bool { return !p.DiscardRequests }

// Push appends responses to the script.
func (p *ScriptedProvider) Push(rs ...Response) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.script = append(p.script, rs...)
}

// Remaining returns how many responses are left.
func (p *ScriptedProvider) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.script) - p.next
}

// Requests returns copies of the requests received so far, in order.
func (p *ScriptedProvider) Requests() []harness.ModelRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requests)
}

// Generate answers req with the next scripted response.
func (p *ScriptedProvider) Generate(ctx context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
	p.mu.Lock()
	if p.next >= len(p.script) && p.Loop && len(p.script) > 0 {
		p.next = 0
	}
	if !p.DiscardRequests {
		r := *req
		r.Messages = slices.Clone(req.Messages)
		r.Tools = slices.Clone(req.Tools)
		p.requests = append(p.requests, r)
	}
	if p.next >= len(p.script) {
		n := len(p.requests)
		p.mu.Unlock()
		return nil, fmt.Errorf("%w: request %d has no response", ErrScriptExhausted, n)
	}
	s := &p.script[p.next]
	p.next++
	n := p.next
	p.mu.Unlock()
	name := p.ProviderName()

	if s.Delay > 0 {
		t := time.NewTimer(s.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	} else if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.Err != nil {
		return nil, s.Err
	}
	resp := &harness.ModelResponse{
		Message:    harness.Message{Role: harness.RoleAssistant, Content: s.parts()},
		StopReason: s.StopReason,
		Usage:      s.Usage,
		Model:      s.Model,
		ID:         "resp_" + strconv.Itoa(n),
		Provider:   name,
	}
	if resp.Model == "" {
		resp.Model = req.Model
	}
	if resp.StopReason == "" {
		resp.StopReason = harness.StopEndTurn
		if len(s.ToolCalls) > 0 {
			resp.StopReason = harness.StopToolUse
		}
	}
	if req.Stream {
		resp.FirstChunkAt = time.Now()
	}
	return resp, nil
}

// parts builds the message content of a response.
func (s *Response) parts() []harness.Part {
	n := len(s.ToolCalls)
	if s.Text != "" {
		n++
	}
	if s.Reasoning != "" {
		n++
	}
	parts := make([]harness.Part, 0, n)
	if s.Reasoning != "" {
		parts = append(parts, harness.Part{Type: harness.PartReasoning, Text: s.Reasoning})
	}
	if s.Text != "" {
		parts = append(parts, harness.Part{Type: harness.PartText, Text: s.Text})
	}
	for i := range s.ToolCalls {
		parts = append(parts, harness.Part{Type: harness.PartToolCall, ToolCall: &s.ToolCalls[i]})
	}
	return parts
}
