package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/harnessx/harnessx/harness"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of the sampling requests a server given [AllowSampling] makes.
const (
	// MaxSamplingTokens caps the maxTokens of one sampling request: a
	// server that asks for more gets at most this many.
	MaxSamplingTokens = 4096
	// MaxConcurrentSamplings is how many sampling requests of one server
	// the agent serves at a time; another one that comes meanwhile is
	// refused.
	MaxConcurrentSamplings = 4
)

const methodCreateMessage = "sampling/createMessage"

// ServerOption configures one server of [WithServer].
type ServerOption func(*serverConfig)

// AllowSampling lets the server ask the agent's model for completions
// (sampling/createMessage): the agent advertises the sampling capability
// to it, and serves its requests with its own provider through
// harness.Agent.Generate, so they pass the agent's model interceptors and
// middleware, and the tracing extension makes a chat span for each, a
// child of the execute_tool span of the call that asked. Without it, the
// capability is not advertised and a sampling request is refused with
// JSON-RPC error -32600, whose message says that sampling is not allowed.
//
// The request's messages (text, image and audio content), system prompt,
// temperature and maxTokens (capped at [MaxSamplingTokens]) are sent; the
// agent's model answers whatever the model preferences say; stop
// sequences are applied to the answer (its text is cut at the first one,
// and the stop reason is "stopSequence"); includeContext is ignored (no
// context is added). The answer's text goes back, with the model's name
// and the stop reason ("endTurn", "maxTokens", "stopSequence", or the
// provider's). A request with no messages is refused, and so is one that
// comes while [MaxConcurrentSamplings] of the server's are served.
// Sampling spends the agent's tokens at the server's request: allow it
// for servers you trust.
func AllowSampling() ServerOption {
	return func(c *serverConfig) { c.sampling = true }
}

// refuseSampling is the receiving middleware of a server not given
// AllowSampling: its sampling requests get a clear JSON-RPC error instead
// of the SDK's.
func (s *server) refuseSampling(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == methodCreateMessage {
			// Not -32601: the SDK replaces the message of that code.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("sampling is not allowed: the client did not enable sampling for server %q", s.name)}
		}
		return next(ctx, method, req)
	}
}

// createMessage serves a sampling request with the agent's provider, in
// the context of the tool call that it belongs to: the call's own
// request's (protocol 2026-07-28), the one whose response stream it came
// on (streamable HTTP), or the server's only running call. A request that
// belongs to no call, or that cannot be told from several, is served in
// the request's own context, without a parent span.
func (s *server) createMessage(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	p := req.Params
	if p == nil || len(p.Messages) == 0 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "sampling/createMessage with no messages"}
	}
	select {
	case s.samplings <- struct{}{}:
		defer func() { <-s.samplings }()
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("too many sampling requests at once: the client serves %d of a server at a time", MaxConcurrentSamplings)}
	}
	mreq, err := samplingRequest(p)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	info, _ := ctx.Value(callInfoKey{}).(*callInfo)
	if info == nil {
		if token, ok := p.Meta[metaCall].(string); ok {
			info = s.callByToken(token)
			delete(p.Meta, metaCall)
		}
		if info == nil {
			if c, n := s.runningCall(); n == 1 {
				info = c
			}
		}
		if info != nil {
			var cancel context.CancelFunc
			ctx, cancel = withCancelOf(info.ctx, ctx)
			defer cancel()
		}
	}
	// The time the model takes does not count against the call timeout:
	// it is the agent's time, not the server's.
	if info != nil && info.timer != nil {
		info.timer.pause()
		defer info.timer.resume()
	}
	resp, err := s.ext.ec.Agent().Generate(ctx, mreq)
	if err != nil {
		err = s.redactErr(err)
		s.ext.log.Warn("mcp: a sampling request failed", "server", s.name, "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "sampling failed: " + clip(err.Error(), maxDescription)}
	}
	text := resp.Message.Text()
	stop := samplingStopReason(resp)
	for _, seq := range p.StopSequences {
		if i := strings.Index(text, seq); seq != "" && i >= 0 {
			text, stop = text[:i], "stopSequence"
		}
	}
	model := resp.Model
	if model == "" {
		model = mreq.Model
		if model == "" {
			model = s.ext.ec.Agent().Model()
		}
	}
	return &sdk.CreateMessageResult{
		Content:    &sdk.TextContent{Text: text},
		Model:      model,
		Role:       "assistant",
		StopReason: stop,
	}, nil
}

// samplingRequest converts a sampling request into the model request the
// agent sends.
func samplingRequest(p *sdk.CreateMessageParams) (*harness.ModelRequest, error) {
	req := &harness.ModelRequest{System: p.SystemPrompt, MaxTokens: MaxSamplingTokens}
	if p.MaxTokens > 0 && p.MaxTokens < MaxSamplingTokens {
		req.MaxTokens = int(p.MaxTokens)
	}
	if p.Temperature != 0 {
		t := p.Temperature
		req.Temperature = &t
	}
	req.Messages = make([]harness.Message, 0, len(p.Messages))
	for i, m := range p.Messages {
		if m == nil {
			return nil, fmt.Errorf("message %d is null", i)
		}
		var role harness.Role
		switch m.Role {
		case "user":
			role = harness.RoleUser
		case "assistant":
			role = harness.RoleAssistant
		default:
			return nil, fmt.Errorf("message %d has role %q, want user or assistant", i, clip(string(m.Role), 64))
		}
		var part harness.Part
		switch c := m.Content.(type) {
		case *sdk.TextContent:
			part = harness.Text(c.Text)
		case *sdk.ImageContent:
			part = harness.ImagePart(c.Data, c.MIMEType)
		case *sdk.AudioContent:
			part = harness.AudioPart(c.Data, c.MIMEType)
		case nil:
			return nil, fmt.Errorf("message %d has no content", i)
		default:
			return nil, fmt.Errorf("message %d has content of type %T, which sampling does not take (text, image, audio)", i, c)
		}
		req.Messages = append(req.Messages, harness.Message{Role: role, Content: []harness.Part{part}})
	}
	return req, nil
}

// samplingStopReason maps the response's stop reason onto MCP's names;
// others are the provider's own.
func samplingStopReason(resp *harness.ModelResponse) string {
	switch resp.StopReason {
	case harness.StopEndTurn:
		return "endTurn"
	case harness.StopMaxTokens:
		return "maxTokens"
	case harness.StopSequence:
		return "stopSequence"
	case harness.StopToolUse:
		return "toolUse"
	}
	if resp.RawStopReason != "" {
		return resp.RawStopReason
	}
	return string(resp.StopReason)
}
