package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/apierr"
)

// reply is a message being assembled, from a whole Message or from stream
// events.
type reply struct {
	id, model  string
	stopReason string
	blocks     []*block
	usage      usage
	firstChunk time.Time
}

type usage struct {
	input, output, cacheRead, cacheCreation, thinking int64
}

type block struct {
	typ            string
	text, thinking strings.Builder
	signature      strings.Builder
	data           string
	id, name       string
	input          strings.Builder
	startInput     json.RawMessage
	stopped        bool
}

func newReply() *reply { return &reply{} }

// fromMessage fills r from a complete, non-streamed message.
func (r *reply) fromMessage(m *sdk.Message) error {
	if m == nil {
		return fmt.Errorf("%s: %w: empty message", Name, ErrResponse)
	}
	r.id, r.model, r.stopReason = m.ID, string(m.Model), string(m.StopReason)
	u := &m.Usage
	r.usage = usage{u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokensDetails.ThinkingTokens}
	for i := range m.Content {
		c := &m.Content[i]
		b := &block{typ: c.Type, data: c.Data, id: c.ID, name: c.Name, stopped: true}
		b.text.WriteString(c.Text)
		b.thinking.WriteString(c.Thinking)
		b.signature.WriteString(c.Signature)
		b.input.Write(c.Input)
		r.blocks = append(r.blocks, b)
	}
	return nil
}

// stream sends a streaming request and assembles the events. The reply
// counts only if message_start, every block's stop and message_stop
// arrived; anything less is a *StreamError.
func (p *Provider) stream(ctx context.Context, params sdk.MessageNewParams, opts ...option.RequestOption) (*harness.ModelResponse, error) {
	s := p.client.Messages.NewStreaming(ctx, params, opts...)
	defer s.Close()
	r := newReply()
	var started, stopped bool
	var firstEvent time.Time
	for s.Next() {
		ev := s.Current()
		if firstEvent.IsZero() {
			firstEvent = time.Now()
		}
		if stopped {
			continue
		}
		var err error
		switch ev.Type {
		case "message_start":
			if started {
				err = errors.New("second message_start")
				break
			}
			started = true
			m := &ev.Message
			r.id, r.model = m.ID, string(m.Model)
			u := &m.Usage
			r.usage = usage{u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokensDetails.ThinkingTokens}
		case "content_block_start":
			err = r.start(started, &ev)
		case "content_block_delta":
			err = r.delta(&ev)
		case "content_block_stop":
			err = r.stop(ev.Index)
		case "message_delta":
			if !started {
				err = errors.New("message_delta before message_start")
				break
			}
			r.stopReason = string(ev.Delta.StopReason)
			u := &ev.Usage
			r.usage.output = u.OutputTokens
			if u.JSON.InputTokens.Valid() {
				r.usage.input = u.InputTokens
			}
			if u.JSON.CacheReadInputTokens.Valid() {
				r.usage.cacheRead = u.CacheReadInputTokens
			}
			if u.JSON.CacheCreationInputTokens.Valid() {
				r.usage.cacheCreation = u.CacheCreationInputTokens
			}
			if u.JSON.OutputTokensDetails.Valid() {
				r.usage.thinking = u.OutputTokensDetails.ThinkingTokens
			}
		case "message_stop":
			if !started {
				err = errors.New("message_stop before message_start")
				break
			}
			stopped = true
		}
		if err != nil {
			return nil, &StreamError{Provider: Name, Reason: err.Error()}
		}
	}
	if err := s.Err(); err != nil {
		if ctx.Err() != nil {
			return nil, apierr.Canceled(Name, ctx)
		}
		var ae *sdk.Error
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &ae):
			return nil, p.wrapErr(ctx, err)
		case errors.As(err, &se), errors.As(err, &te):
			return nil, &StreamError{Provider: Name, Reason: "malformed event data", Err: err}
		case !started && firstEvent.IsZero():
			// The request itself failed before any event.
			return nil, p.wrapErr(ctx, err)
		}
		return nil, &StreamError{Provider: Name, Reason: "stream interrupted", Err: err}
	}
	if ctx.Err() != nil {
		return nil, apierr.Canceled(Name, ctx)
	}
	if !stopped {
		reason := "stream ended without message_stop"
		if !started {
			reason = "stream ended without message_start"
		}
		return nil, &StreamError{Provider: Name, Reason: reason}
	}
	for i, b := range r.blocks {
		if !b.stopped {
			return nil, &StreamError{Provider: Name, Reason: fmt.Sprintf("content block %d has no content_block_stop", i)}
		}
	}
	if r.firstChunk.IsZero() {
		r.firstChunk = firstEvent
	}
	return p.response(r), nil
}

func (r *reply) start(started bool, ev *sdk.MessageStreamEventUnion) error {
	if !started {
		return errors.New("content_block_start before message_start")
	}
	if ev.Index != int64(len(r.blocks)) {
		return fmt.Errorf("content_block_start for index %d, expected %d", ev.Index, len(r.blocks))
	}
	c := &ev.ContentBlock
	b := &block{typ: c.Type, data: c.Data, id: c.ID, name: c.Name}
	b.text.WriteString(c.Text)
	b.thinking.WriteString(c.Thinking)
	b.signature.WriteString(c.Signature)
	if c.JSON.Input.Valid() {
		b.startInput = json.RawMessage(c.JSON.Input.Raw())
	}
	r.blocks = append(r.blocks, b)
	return nil
}

func (r *reply) block(typ string, index int64) (*block, error) {
	if index < 0 || index >= int64(len(r.blocks)) {
		return nil, fmt.Errorf("%s for index %d, but %d blocks started", typ, index, len(r.blocks))
	}
	b := r.blocks[index]
	if b.stopped {
		return nil, fmt.Errorf("%s for index %d after its content_block_stop", typ, index)
	}
	return b, nil
}

func (r *reply) delta(ev *sdk.MessageStreamEventUnion) error {
	b, err := r.block(ev.Type, ev.Index)
	if err != nil {
		return err
	}
	d := &ev.Delta
	switch d.Type {
	case "text_delta":
		b.text.WriteString(d.Text)
	case "input_json_delta":
		b.input.WriteString(d.PartialJSON)
	case "thinking_delta":
		b.thinking.WriteString(d.Thinking)
	case "signature_delta":
		b.signature.WriteString(d.Signature)
		return nil // not output
	default:
		return nil
	}
	if r.firstChunk.IsZero() {
		r.firstChunk = time.Now()
	}
	return nil
}

func (r *reply) stop(index int64) error {
	b, err := r.block("content_block_stop", index)
	if err != nil {
		return err
	}
	b.stopped = true
	if b.typ == "tool_use" || b.typ == "server_tool_use" {
		if b.input.Len() > 0 && !json.Valid([]byte(b.input.String())) {
			return fmt.Errorf("tool_use block %d: input JSON does not parse", index)
		}
	}
	return nil
}

// response maps an assembled reply onto the harness response.
func (p *Provider) response(r *reply) *harness.ModelResponse {
	parts := make([]harness.Part, 0, len(r.blocks))
	for _, b := range r.blocks {
		switch b.typ {
		case "text":
			if t := b.text.String(); t != "" {
				parts = append(parts, harness.Part{Type: harness.PartText, Text: t})
			}
		case "thinking":
			parts = append(parts, harness.Part{Type: harness.PartReasoning, Text: b.thinking.String(),
				ProviderData: signedThinking(b.signature.String())})
		case "redacted_thinking":
			parts = append(parts, harness.Part{Type: harness.PartReasoning, Text: redactedThinkingText,
				ProviderData: redactedThinking(b.data)})
		case "tool_use":
			in := b.input.String()
			if in == "" && len(b.startInput) > 0 {
				in = string(b.startInput)
			}
			parts = append(parts, harness.Part{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{
				ID: b.id, Name: b.name, Input: apierr.ToolInput(in),
			}})
		default:
			p.log.Debug("anthropic: content block type not mapped; skipped", "type", b.typ)
		}
	}
	u := r.usage
	return &harness.ModelResponse{
		Message:       harness.Message{Role: harness.RoleAssistant, Content: parts},
		StopReason:    stopReason(r.stopReason),
		RawStopReason: r.stopReason,
		Usage: harness.Usage{
			InputTokens:              u.input + u.cacheRead + u.cacheCreation,
			OutputTokens:             u.output,
			CacheReadInputTokens:     u.cacheRead,
			CacheCreationInputTokens: u.cacheCreation,
			ReasoningTokens:          u.thinking,
		},
		Model:        r.model,
		ID:           r.id,
		Provider:     Name,
		FirstChunkAt: r.firstChunk,
	}
}

// stopReason maps the API's stop_reason onto the harness's.
func stopReason(s string) harness.StopReason {
	switch sdk.StopReason(s) {
	case sdk.StopReasonEndTurn:
		return harness.StopEndTurn
	case sdk.StopReasonToolUse:
		return harness.StopToolUse
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return harness.StopMaxTokens
	case sdk.StopReasonStopSequence:
		return harness.StopSequence
	case sdk.StopReasonRefusal:
		return harness.StopRefusal
	case sdk.StopReasonPauseTurn:
		return harness.StopPause
	}
	return harness.StopOther
}
