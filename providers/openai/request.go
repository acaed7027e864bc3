package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/media"
)

// errorPrefix marks the content of a failed tool call: Chat Completions
// tool messages have no is_error field.
const errorPrefix = "Error: "

// params maps a harness request onto the SDK's ChatCompletionNewParams.
//
//   - System becomes a leading system message.
//   - User messages become user messages (one text, or text parts; with
//     media, content parts: see contentPart);
//     assistant messages carry their text and tool calls; reasoning parts
//     are not sent (the API does not take them back).
//   - A harness tool message becomes one "tool" message per result; an
//     error result's content starts with "Error: ". Text parts of a result
//     join its content; media parts follow in a user message (see
//     resultParts).
//   - MaxTokens goes out as max_completion_tokens, Temperature as
//     temperature; with Stream, stream_options.include_usage is set.
//
// Inline bytes of 16 KiB and more go through in (see media.Inliner): the
// request carries tokens that its middleware replaces by the base64
// streamed from the part's bytes.
func (p *Provider) params(req *harness.ModelRequest, in *media.Inliner) (sdk.ChatCompletionNewParams, error) {
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
			u, ok, err := p.userMessage(req.Model, i, m, in)
			if err != nil {
				return params, err
			}
			if ok {
				params.Messages = append(params.Messages, u)
			}
		case harness.RoleAssistant:
			for j := range m.Content {
				if part := &m.Content[j]; part.IsMedia() {
					return params, media.Unsupported(Name, req.Model, media.Loc{Message: i, Part: j, ResultPart: -1}, part, "an assistant message cannot carry media")
				}
			}
			if a, ok := assistantMessage(m); ok {
				params.Messages = append(params.Messages, a)
			}
		case harness.RoleTool:
		default:
			return params, fmt.Errorf("%s: %w: message %d has unknown role %q", Name, ErrInvalidRequest, i, m.Role)
		}
		// Tool results, wherever they are, become tool messages; their
		// media follow in one user message.
		var attached []sdk.ChatCompletionContentPartUnionParam
		for j := range m.Content {
			part := &m.Content[j]
			if tr := part.ToolResult; part.Type == harness.PartToolResult && tr != nil {
				content := tr.Content
				if tr.IsError {
					content = errorPrefix + content
				}
				var err error
				if content, attached, err = p.resultParts(req.Model, i, j, tr, content, attached, in); err != nil {
					return params, err
				}
				params.Messages = append(params.Messages, sdk.ToolMessage(content, tr.CallID))
			}
		}
		if len(attached) > 0 {
			params.Messages = append(params.Messages, sdk.UserMessage(attached))
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

// userMessage converts user message i: one string for one text, parts
// otherwise.
func (p *Provider) userMessage(model string, i int, m *harness.Message, in *media.Inliner) (sdk.ChatCompletionMessageParamUnion, bool, error) {
	var texts []string
	hasMedia := false
	for j := range m.Content {
		part := &m.Content[j]
		if part.Type == harness.PartText && part.Text != "" {
			texts = append(texts, part.Text)
		}
		hasMedia = hasMedia || part.IsMedia()
	}
	if hasMedia {
		parts := make([]sdk.ChatCompletionContentPartUnionParam, 0, len(m.Content))
		for j := range m.Content {
			part := &m.Content[j]
			switch {
			case part.Type == harness.PartText && part.Text != "":
				parts = append(parts, sdk.TextContentPart(part.Text))
			case part.IsMedia():
				c, err := p.contentPart(model, media.Loc{Message: i, Part: j, ResultPart: -1}, part, in)
				if err != nil {
					return sdk.ChatCompletionMessageParamUnion{}, false, err
				}
				parts = append(parts, c)
			}
		}
		return sdk.UserMessage(parts), true, nil
	}
	u, ok := textMessage(texts)
	return u, ok, nil
}

// textMessage is a user message of texts.
func textMessage(texts []string) (sdk.ChatCompletionMessageParamUnion, bool) {
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

// resultParts adds the parts of tool result tr (in part j of message i)
// to a request: text parts join the tool message's content, after a blank
// line; media parts go to attached, the content of the user message that
// follows the tool messages (tool messages take only text), after a text
// part naming the call they belong to.
func (p *Provider) resultParts(model string, i, j int, tr *harness.ToolResult, content string, attached []sdk.ChatCompletionContentPartUnionParam, in *media.Inliner) (string, []sdk.ChatCompletionContentPartUnionParam, error) {
	named := false
	for k := range tr.Parts {
		part := &tr.Parts[k]
		if part.Type == harness.PartText {
			if part.Text != "" {
				if content != "" {
					content += "\n\n"
				}
				content += part.Text
			}
			continue
		}
		c, err := p.contentPart(model, media.Loc{Message: i, Part: j, ResultPart: k}, part, in)
		if err != nil {
			return "", nil, err
		}
		if !named {
			attached = append(attached, sdk.TextContentPart(fmt.Sprintf("Attachments of the result of tool call %s (%s):", tr.CallID, tr.Name)))
			named = true
		}
		attached = append(attached, c)
	}
	return content, attached, nil
}

// audioFormats maps audio MIME types onto input_audio formats.
var audioFormats = map[string]string{
	"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/vnd.wave": "wav",
	"audio/mpeg": "mp3", "audio/mp3": "mp3",
}

// contentPart converts a media part into a Chat Completions content part:
// an image as image_url (a URL, or the bytes as a data URL), a PDF as a
// file (the bytes as a data URL with a file name, or a file ID), a
// plain-text document as text, and audio as input_audio (WAV or MP3
// bytes). What the API or the model cannot take is an
// *harness.UnsupportedPartError.
func (p *Provider) contentPart(model string, at media.Loc, part *harness.Part, in *media.Inliner) (sdk.ChatCompletionContentPartUnionParam, error) {
	var none sdk.ChatCompletionContentPartUnionParam
	md := part.Media
	if md == nil {
		return none, media.Unsupported(Name, model, at, part, "a media part without media")
	}
	if !p.cfg.supports(model, part.Type) {
		return none, media.Unsupported(Name, model, at, part, fmt.Sprintf("the model takes no %s input (see WithPartSupport)", part.Type))
	}
	switch part.Type {
	case harness.PartImage:
		switch {
		case len(md.Data) > 0:
			if !strings.HasPrefix(md.MIME, "image/") {
				return none, media.Unsupported(Name, model, at, part, "an image part needs an image/* MIME type")
			}
			return sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: in.DataURL(md.MIME, md.Data)}), nil
		case md.URI != "":
			return sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: md.URI}), nil
		}
		return none, media.Unsupported(Name, model, at, part, "Chat Completions takes images by URL or inline, not by file ID")
	case harness.PartDocument:
		switch {
		case len(md.Data) > 0 && (md.MIME == "text/plain" || strings.HasPrefix(md.MIME, "text/plain;")):
			return sdk.TextContentPart(string(md.Data)), nil
		case len(md.Data) > 0 && md.MIME == "application/pdf":
			name := md.Name
			if name == "" {
				name = "document.pdf"
			}
			return sdk.FileContentPart(sdk.ChatCompletionContentPartFileFileParam{
				FileData: sdk.String(in.DataURL(md.MIME, md.Data)), Filename: sdk.String(name)}), nil
		case len(md.Data) > 0:
			return none, media.Unsupported(Name, model, at, part, "Chat Completions takes inline documents of type application/pdf and text/plain")
		case md.FileID != "":
			f := sdk.ChatCompletionContentPartFileFileParam{FileID: sdk.String(md.FileID)}
			if md.Name != "" {
				f.Filename = sdk.String(md.Name)
			}
			return sdk.FileContentPart(f), nil
		}
		return none, media.Unsupported(Name, model, at, part, "Chat Completions takes documents inline or by file ID, not by URL")
	case harness.PartAudio:
		format, ok := audioFormats[md.MIME]
		switch {
		case len(md.Data) == 0:
			return none, media.Unsupported(Name, model, at, part, "Chat Completions takes audio inline only")
		case !ok:
			return none, media.Unsupported(Name, model, at, part, "Chat Completions takes audio of type audio/wav and audio/mpeg")
		}
		return sdk.InputAudioContentPart(sdk.ChatCompletionContentPartInputAudioInputAudioParam{Data: in.Base64(md.Data), Format: format}), nil
	}
	return none, media.Unsupported(Name, model, at, part, "not a media part")
}
