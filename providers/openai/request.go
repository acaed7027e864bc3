package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"

	"github.com/harnessx/harnessx/harness"
)

// errorPrefix marks the content of a failed tool call: Chat Completions
// tool messages have no is_error field.
const errorPrefix = "Error: "

// params maps a harness request onto the SDK's ChatCompletionNewParams.
//
//   - System becomes a leading system message.
//   - User messages become user messages (one text, or text parts);
//     assistant messages carry their text and tool calls; reasoning parts
//     are not sent (the API does not take them back).
//   - A harness tool message becomes one "tool" message per result; an
//     error result's content starts with "Error: ".
//   - MaxTokens goes out as max_completion_tokens, Temperature as
//     temperature; with Stream, stream_options.include_usage is set.
func (p *Provider) params(req *harness.ModelRequest) (sdk.ChatCompletionNewParams, error) {
	var params sdk.ChatCompletionNewParams
	if req.Model == "" {
		return params, fmt.Errorf("%s: %w: no model (use harness.WithModel)", Name, ErrInvalidRequest)
	}
	params.Model = req.Model
	if req.MaxTokens > 0 {
		params.MaxCompletionTokens = sdk.Int(int64(req.MaxTokens))
	}
	if req.Temperature != nil {
		params.Temperature = sdk.Float(*req.Temperature)
	}
	if req.Stream {
		params.StreamOptions.IncludeUsage = sdk.Bool(true)
	}
	if p.cfg.cacheKey && !req.PrefixKey.Key.IsZero() {
		params.PromptCacheKey = sdk.String(req.PrefixKey.Key.String())
	}
	params.ReasoningEffort = p.cfg.effort

	if len(req.Tools) > 0 {
		params.Tools = make([]sdk.ChatCompletionToolUnionParam, len(req.Tools))
		for i := range req.Tools {
			t := &req.Tools[i]
			fn := sdk.FunctionDefinitionParam{Name: t.Name}
			if t.Description != "" {
				fn.Description = sdk.String(t.Description)
			}
			if len(t.InputSchema) > 0 {
				var schema map[string]json.RawMessage
				if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
					return params, fmt.Errorf("%s: %w: tool %q: input schema: %v", Name, ErrInvalidRequest, t.Name, err)
				}
				fn.Parameters = make(sdk.FunctionParameters, len(schema))
				for k, v := range schema {
					fn.Parameters[k] = v
				}
			}
			params.Tools[i] = sdk.ChatCompletionToolUnionParam{OfFunction: &sdk.ChatCompletionFunctionToolParam{Function: fn}}
		}
	}

	params.Messages = make([]sdk.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1)
	if req.System != "" {
		params.Messages = append(params.Messages, sdk.SystemMessage(req.System))
	}
	n := len(params.Messages)
	for i := range req.Messages {
		m := &req.Messages[i]
		switch m.Role {
		case harness.RoleUser:
			if u, ok := userMessage(m); ok {
				params.Messages = append(params.Messages, u)
			}
		case harness.RoleAssistant:
			if a, ok := assistantMessage(m); ok {
				params.Messages = append(params.Messages, a)
			}
		case harness.RoleTool:
		default:
			return params, fmt.Errorf("%s: %w: message %d has unknown role %q", Name, ErrInvalidRequest, i, m.Role)
		}
		// Tool results, wherever they are, become tool messages.
		for _, part := range m.Content {
			if tr := part.ToolResult; part.Type == harness.PartToolResult && tr != nil {
				content := tr.Content
				if tr.IsError {
					content = errorPrefix + content
				}
				params.Messages = append(params.Messages, sdk.ToolMessage(content, tr.CallID))
			}
		}
	}
	if len(params.Messages) == n {
		return params, fmt.Errorf("%s: %w: no messages with content", Name, ErrInvalidRequest)
	}
	return params, nil
}

// sentParams reports the invocation parameters of params, as
// [harness.ModelResponse.Sent]: the model, max_completion_tokens and
// temperature when set, and streaming.
func sentParams(params *sdk.ChatCompletionNewParams, stream bool) harness.RequestParams {
	return harness.RequestParams{
		Model:          params.Model,
		MaxTokens:      int(params.MaxCompletionTokens.Or(0)),
		Temperature:    params.Temperature.Or(0),
		HasTemperature: params.Temperature.Valid(),
		Stream:         stream,
	}
}

func userMessage(m *harness.Message) (sdk.ChatCompletionMessageParamUnion, bool) {
	var texts []string
	for _, part := range m.Content {
		if part.Type == harness.PartText && part.Text != "" {
			texts = append(texts, part.Text)
		}
	}
	switch len(texts) {
	case 0:
		return sdk.ChatCompletionMessageParamUnion{}, false
	case 1:
		return sdk.UserMessage(texts[0]), true
	}
	parts := make([]sdk.ChatCompletionContentPartUnionParam, len(texts))
	for i, t := range texts {
		parts[i] = sdk.TextContentPart(t)
	}
	return sdk.UserMessage(parts), true
}

func assistantMessage(m *harness.Message) (sdk.ChatCompletionMessageParamUnion, bool) {
	var a sdk.ChatCompletionAssistantMessageParam
	var text strings.Builder
	for _, part := range m.Content {
		switch part.Type {
		case harness.PartText:
			text.WriteString(part.Text)
		case harness.PartToolCall:
			if tc := part.ToolCall; tc != nil {
				args := toolArguments(tc.Input)
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
					},
				})
			}
		}
	}
	if text.Len() > 0 {
		a.Content.OfString = sdk.String(text.String())
	}
	if text.Len() == 0 && len(a.ToolCalls) == 0 {
		return sdk.ChatCompletionMessageParamUnion{}, false
	}
	return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}, true
}

// toolArguments returns the arguments string of a call as the model wrote
// it: a JSON string input is what the provider made of malformed arguments
// (see apierr.ToolInput), so its text goes back unchanged.
func toolArguments(in json.RawMessage) string {
	var s string
	if len(in) > 0 && in[0] == '"' && json.Unmarshal(in, &s) == nil {
		return s
	}
	if len(in) == 0 {
		return "{}"
	}
	return string(in)
}
