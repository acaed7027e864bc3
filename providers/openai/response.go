package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/apierr"
)

// reply is a completion being assembled, from a whole ChatCompletion or
// from stream chunks.
type reply struct {
	id, model  string
	text       strings.Builder
	refusal    strings.Builder
	reasoning  strings.Builder
	calls      []*toolCall
	finish     string
	usage      sdk.CompletionUsage
	hasUsage   bool
	firstChunk time.Time
}

type toolCall struct {
	id, name string
	args     strings.Builder
}

// reasoningField is the message field that OpenAI-compatible servers
// (DeepSeek, vLLM and others) use for reasoning text; OpenAI itself does
// not return reasoning in Chat Completions.
const reasoningField = "reasoning_content"

func fromCompletion(c *sdk.ChatCompletion) (*reply, error) {
	if c == nil || len(c.Choices) == 0 {
		return nil, fmt.Errorf("%s: %w: completion has no choices", Name, ErrResponse)
	}
	r := &reply{id: c.ID, model: c.Model, usage: c.Usage, hasUsage: c.JSON.Usage.Valid()}
	ch := &c.Choices[0]
	m := &ch.Message
	r.finish = ch.FinishReason
	r.text.WriteString(m.Content)
	r.refusal.WriteString(m.Refusal)
	if f, ok := m.JSON.ExtraFields[reasoningField]; ok {
		r.reasoning.WriteString(jsonString(f.Raw()))
	}
	for _, tc := range m.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		t := &toolCall{id: tc.ID, name: tc.Function.Name}
		t.args.WriteString(tc.Function.Arguments)
		r.calls = append(r.calls, t)
	}
	return r, nil
}

// jsonString decodes a raw JSON string value; anything else is "".
func jsonString(raw string) string {
	var s string
	if json.Unmarshal([]byte(raw), &s) != nil {
		return ""
	}
	return s
}

// stream sends a streaming request and assembles the chunks. The reply
// counts only if the first choice finished (finish_reason) and the stream
// ended with data: [DONE]; anything less is a *StreamError.
func (p *Provider) stream(ctx context.Context, params sdk.ChatCompletionNewParams, opts ...option.RequestOption) (*harness.ModelResponse, error) {
	var watch *doneWatcher
	mw := option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		if err == nil && res != nil && res.Body != nil && res.StatusCode < 300 {
			watch = newDoneWatcher(res.Body)
			res.Body = watch
		}
		return res, err
	})
	s := p.client.Chat.Completions.NewStreaming(ctx, params, append(opts, mw)...)
	defer s.Close()
	r := &reply{}
	chunks := 0
	for s.Next() {
		c := s.Current()
		chunks++
		if err := r.chunk(&c); err != nil {
			return nil, &StreamError{Provider: Name, Reason: err.Error()}
		}
	}
	if err := s.Err(); err != nil {
		if ctx.Err() != nil {
			return nil, apierr.Canceled(Name, ctx)
		}
		var ae *sdk.Error
		var ee *ssestream.StreamError
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &ae), errors.As(err, &ee):
			// An error response, or an error event in the stream.
			return nil, p.wrapErr(ctx, err)
		case errors.As(err, &se), errors.As(err, &te):
			return nil, &StreamError{Provider: Name, Reason: "malformed chunk data", Err: err}
		case chunks == 0 && watch == nil:
			// The request itself failed.
			return nil, p.wrapErr(ctx, err)
		}
		return nil, &StreamError{Provider: Name, Reason: "stream interrupted", Err: err}
	}
	if ctx.Err() != nil {
		return nil, apierr.Canceled(Name, ctx)
	}
	switch {
	case watch == nil || !watch.done:
		return nil, &StreamError{Provider: Name, Reason: "stream ended without data: [DONE]"}
	case r.finish == "":
		return nil, &StreamError{Provider: Name, Reason: "stream ended without a finish_reason"}
	}
	if !r.hasUsage {
		p.log.Debug("openai: stream carried no usage chunk; usage left at zero")
	}
	return r.response(), nil
}

// chunk applies one stream chunk; only the first choice counts.
func (r *reply) chunk(c *sdk.ChatCompletionChunk) error {
	if r.id == "" {
		r.id = c.ID
	}
	if c.Model != "" {
		r.model = c.Model
	}
	if c.JSON.Usage.Valid() && c.JSON.Usage.Raw() != "null" {
		r.usage, r.hasUsage = c.Usage, true
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue
		}
		d := &ch.Delta
		out := d.Content != "" || d.Refusal != "" || len(d.ToolCalls) > 0
		r.text.WriteString(d.Content)
		r.refusal.WriteString(d.Refusal)
		if f, ok := d.JSON.ExtraFields[reasoningField]; ok {
			if s := jsonString(f.Raw()); s != "" {
				r.reasoning.WriteString(s)
				out = true
			}
		}
		for _, tc := range d.ToolCalls {
			if tc.Index < 0 || tc.Index > int64(len(r.calls)) {
				return fmt.Errorf("tool call index %d out of order (%d calls so far)", tc.Index, len(r.calls))
			}
			if tc.Index == int64(len(r.calls)) {
				r.calls = append(r.calls, &toolCall{})
			}
			t := r.calls[tc.Index]
			if tc.ID != "" {
				t.id = tc.ID
			}
			if tc.Function.Name != "" {
				t.name = tc.Function.Name
			}
			t.args.WriteString(tc.Function.Arguments)
		}
		if ch.FinishReason != "" {
			r.finish = ch.FinishReason
		}
		if out && r.firstChunk.IsZero() {
			r.firstChunk = time.Now()
		}
	}
	return nil
}

// response maps an assembled reply onto the harness response.
func (r *reply) response() *harness.ModelResponse {
	var parts []harness.Part
	if s := r.reasoning.String(); s != "" {
		parts = append(parts, harness.Part{Type: harness.PartReasoning, Text: s})
	}
	if s := r.text.String(); s != "" {
		parts = append(parts, harness.Part{Type: harness.PartText, Text: s})
	}
	refusal := r.refusal.String()
	if refusal != "" {
		parts = append(parts, harness.Part{Type: harness.PartText, Text: refusal})
	}
	for _, t := range r.calls {
		parts = append(parts, harness.Part{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{
			ID: t.id, Name: t.name, Input: apierr.ToolInput(t.args.String()),
		}})
	}
	stop := stopReason(r.finish)
	if refusal != "" {
		stop = harness.StopRefusal
	}
	u := &r.usage
	return &harness.ModelResponse{
		Message:       harness.Message{Role: harness.RoleAssistant, Content: parts},
		StopReason:    stop,
		RawStopReason: r.finish,
		Usage: harness.Usage{
			InputTokens:              u.PromptTokens,
			OutputTokens:             u.CompletionTokens,
			CacheReadInputTokens:     u.PromptTokensDetails.CachedTokens,
			CacheCreationInputTokens: u.PromptTokensDetails.CacheWriteTokens,
			ReasoningTokens:          u.CompletionTokensDetails.ReasoningTokens,
			ImageInputTokens:         u.PromptTokensDetails.ImageTokens,
			AudioInputTokens:         u.PromptTokensDetails.AudioTokens,
		},
		Model:        r.model,
		ID:           r.id,
		Provider:     Name,
		FirstChunkAt: r.firstChunk,
	}
}

// stopReason maps a finish_reason onto the harness's stop reasons.
func stopReason(s string) harness.StopReason {
	switch s {
	case "stop":
		return harness.StopEndTurn
	case "tool_calls", "function_call":
		return harness.StopToolUse
	case "length":
		return harness.StopMaxTokens
	case "content_filter":
		return harness.StopContentFilter
	}
	return harness.StopOther
}
