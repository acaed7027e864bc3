package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/harnessx/harnessx/harness"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaDeclineReason is the _meta key of a declined elicitation result that
// says why the extension declined without asking the user.
const MetaDeclineReason = "io.harnessx/decline_reason"

// elicit answers a server's request for input during a tool call with
// harness.AskUser: a durable question when the agent's step runner parks
// asks (the durable runtime), so the answer survives a crash. When the
// question cannot be asked — no such runner, a tool that is not replay
// safe, a request outside a tool call — it declines, with the reason in
// _meta and in the log.
func (s *server) elicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	p := req.Params
	if p == nil {
		p = &sdk.ElicitParams{}
	}
	q, err := question(s.name, p)
	if err != nil {
		return s.decline(fmt.Sprintf("mcp: server %q asked for input the agent cannot ask for: %v", s.name, err)), nil
	}
	info, _ := ctx.Value(callInfoKey{}).(*callInfo)
	if info == nil {
		// A server-initiated elicitation/create (protocol versions before
		// 2026-07-28) arrives on its own request, not on the call's
		// context. Over streamable HTTP, one that came on the response
		// stream of a call is marked with the call; otherwise it belongs
		// to the server's running call when there is exactly one.
		n := 1
		if token, ok := p.Meta[metaCall].(string); ok {
			info = s.callByToken(token)
			delete(p.Meta, metaCall)
		}
		if info == nil {
			info, n = s.runningCall()
		}
		if info == nil || n != 1 {
			return s.decline(fmt.Sprintf("mcp: server %q asked for input (%q) while %d of its tool calls were running; the agent cannot tell which call asks", s.name, clip(p.Message, 200), n)), nil
		}
		var cancel context.CancelFunc
		ctx, cancel = withCancelOf(info.ctx, ctx)
		defer cancel()
	}
	// The time the user takes to answer does not count against the call
	// timeout.
	if info.timer != nil {
		info.timer.pause()
		defer info.timer.resume()
	}
	ans, err := harness.AskUser(ctx, q.ask)
	if err != nil {
		return s.decline(fmt.Sprintf("mcp: server %q asked for input (%q) and the agent cannot ask the user: %v", s.name, clip(p.Message, 200), err)), nil
	}
	content, ok, why := q.answer(ans)
	if !ok {
		if why != "" {
			return s.decline(fmt.Sprintf("mcp: the answer to server %q does not fit its request: %s", s.name, why)), nil
		}
		return &sdk.ElicitResult{Action: "decline"}, nil
	}
	return &sdk.ElicitResult{Action: "accept", Content: content}, nil
}

// withCancelOf returns a context with the values of call that is done when
// call or req is.
func withCancelOf(call, req context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(call)
	stop := context.AfterFunc(req, cancel)
	return ctx, func() { stop(); cancel() }
}

// decline declines an elicitation and logs why: at most logBurst times per
// logWindow and server, so that a server that floods the agent with
// elicitations does not flood the log.
func (s *server) decline(reason string) *sdk.ElicitResult {
	reason = redacted(reason)
	if ok, suppressed := s.elicitLog.allow(time.Now()); ok {
		args := []any{"server", s.name, "reason", reason}
		if suppressed > 0 {
			args = append(args, "suppressed", suppressed)
		}
		s.ext.log.Warn("mcp: elicitation declined", args...)
	}
	return &sdk.ElicitResult{Action: "decline", Meta: sdk.Meta{MetaDeclineReason: reason}}
}

// elicitation is one question for the user and how its answer becomes the
// content of an accepted elicitation. answer returns ok false for a
// decline, with why when the answer did not fit.
type elicitation struct {
	ask    harness.AskRequest
	answer func(harness.Answer) (content map[string]any, ok bool, why string)
}

// question maps an elicitation request onto an AskRequest:
//
//   - no fields (or a URL to visit): confirm; yes accepts, no declines;
//   - one boolean field: confirm, whose answer is the field's value;
//   - one field with an enum: select among its values;
//   - one string, number or integer field: input;
//   - several fields: input, answered with a JSON object.
func question(server string, p *sdk.ElicitParams) (elicitation, error) {
	prompt := fmt.Sprintf("[MCP server %s] %s", server, clip(p.Message, maxDescription))
	if p.Mode == "url" || p.URL != "" {
		return elicitation{
			ask: harness.AskRequest{Kind: harness.AskConfirm, Prompt: prompt + "\nOpen " + p.URL + " and confirm when done."},
			answer: func(a harness.Answer) (map[string]any, bool, string) {
				return nil, a.Confirmed, ""
			},
		}, nil
	}
	props, err := properties(p.RequestedSchema)
	if err != nil {
		return elicitation{}, err
	}
	if len(props) == 0 {
		return elicitation{
			ask: harness.AskRequest{Kind: harness.AskConfirm, Prompt: prompt},
			answer: func(a harness.Answer) (map[string]any, bool, string) {
				return map[string]any{}, a.Confirmed, ""
			},
		}, nil
	}
	if len(props) > 1 {
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		sort.Strings(names)
		return elicitation{
			ask: harness.AskRequest{Kind: harness.AskInput, Prompt: prompt + "\nAnswer with a JSON object with the fields " + strings.Join(names, ", ") + "."},
			answer: func(a harness.Answer) (map[string]any, bool, string) {
				var m map[string]any
				if err := json.Unmarshal([]byte(a.Text), &m); err != nil {
					return nil, false, "not a JSON object: " + err.Error()
				}
				return m, true, ""
			},
		}, nil
	}
	var name string
	var prop property
	for n, p := range props {
		name, prop = n, p
	}
	if d := prop.Description; d != "" {
		prompt += "\n" + name + ": " + d
	}
	switch {
	case len(prop.Enum) > 0:
		return elicitation{
			ask: harness.AskRequest{Kind: harness.AskSelect, Prompt: prompt, Options: prop.Enum},
			answer: func(a harness.Answer) (map[string]any, bool, string) {
				return map[string]any{name: a.Choice}, true, ""
			},
		}, nil
	case prop.Type == "boolean":
		return elicitation{
			ask: harness.AskRequest{Kind: harness.AskConfirm, Prompt: prompt},
			answer: func(a harness.Answer) (map[string]any, bool, string) {
				return map[string]any{name: a.Confirmed}, true, ""
			},
		}, nil
	case prop.Type == "number" || prop.Type == "integer":
		return elicitation{
			ask: harness.AskRequest{Kind: harness.AskInput, Prompt: prompt},
			answer: func(a harness.Answer) (map[string]any, bool, string) {
				t := strings.TrimSpace(a.Text)
				if prop.Type == "integer" {
					n, err := strconv.ParseInt(t, 10, 64)
					if err != nil {
						return nil, false, fmt.Sprintf("%s wants an integer, got %q", name, t)
					}
					return map[string]any{name: n}, true, ""
				}
				f, err := strconv.ParseFloat(t, 64)
				if err != nil {
					return nil, false, fmt.Sprintf("%s wants a number, got %q", name, t)
				}
				return map[string]any{name: f}, true, ""
			},
		}, nil
	default:
		return elicitation{
			ask: harness.AskRequest{Kind: harness.AskInput, Prompt: prompt},
			answer: func(a harness.Answer) (map[string]any, bool, string) {
				return map[string]any{name: a.Text}, true, ""
			},
		}, nil
	}
}

// property is the part of a requested field's schema the questions use.
type property struct {
	Type        string   `json:"type"`
	Description string   `json:"description"`
	Enum        []string `json:"enum"`
}

func properties(schema any) (map[string]property, error) {
	if schema == nil {
		return nil, nil
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	var s struct {
		Properties map[string]property `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("requested schema: %w", err)
	}
	return s.Properties, nil
}
