package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/media"
)

// params maps a harness request onto the SDK's MessageNewParams.
//
//   - System becomes one system text block.
//   - User messages become user messages; assistant messages keep their
//     order of thinking, text and tool_use blocks; a harness tool message
//     becomes a user message of tool_result blocks (is_error kept).
//   - Reasoning parts of assistant messages go back as the thinking (or
//     redacted_thinking) blocks they came from, with the signature (or
//     data) kept in the part's ProviderData. A part without this
//     provider's ProviderData (from another provider, or stripped) is left
//     out, since the API rejects unsigned thinking.
//   - Empty text parts and messages left empty are dropped: the API rejects
//     empty text blocks.
//   - Image and document parts, of user messages and of tool results,
//     become image and document blocks (see mediaBlock); audio, and media
//     in an assistant message, are an *harness.UnsupportedPartError before
//     anything is sent.
//   - Temperature is not sent: API version 2026-10-21, which SDK v2 speaks,
//     rejects sampling parameters.
//
// Inline bytes of 16 KiB and more go through in (see media.Inliner): the
// request carries tokens that its middleware replaces by the base64
// streamed from the part's bytes.
func (p *Provider) params(req *harness.ModelRequest, in *media.Inliner) (sdk.MessageNewParams, error) {
	var params sdk.MessageNewParams
	if req.Model == "" {
		return params, fmt.Errorf("%s: %w: no model (use harness.WithModel)", Name, ErrInvalidRequest)
	}
	params.Model = sdk.Model(req.Model)
	params.MaxTokens = p.cfg.maxTokens
	if req.MaxTokens > 0 {
		params.MaxTokens = int64(req.MaxTokens)
	}
	if req.Temperature != nil {
		p.log.Debug("anthropic: temperature is not supported by API version 2026-10-21; not sent", "temperature", *req.Temperature)
	}
	params.Thinking = p.cfg.thinking
	cache := sdk.NewCacheControlEphemeralParam()

	if req.System != "" {
		sys := sdk.TextBlockParam{Text: req.System}
		if p.cfg.caching {
			sys.CacheControl = cache
		}
		params.System = []sdk.TextBlockParam{sys}
	}

	if len(req.Tools) > 0 {
		params.Tools = make([]sdk.ToolUnionParam, len(req.Tools))
		for i := range req.Tools {
			t, err := toolParam(&req.Tools[i])
			if err != nil {
				return params, err
			}
			if p.cfg.caching && i == len(req.Tools)-1 {
				t.CacheControl = cache
			}
			params.Tools[i] = sdk.ToolUnionParam{OfTool: t}
		}
	}

	// The stable prefix is every message but the last; its last message
	// carries the breakpoint.
	stable := len(req.Messages) - 2
	params.Messages = make([]sdk.MessageParam, 0, len(req.Messages))
	for i := range req.Messages {
		m := &req.Messages[i]
		blocks, err := p.blocks(req.Model, i, m, in)
		if err != nil {
			return params, err
		}
		if len(blocks) == 0 {
			continue
		}
		if p.cfg.caching && i == stable {
			setBreakpoint(blocks, cache)
		}
		switch m.Role {
		case harness.RoleAssistant:
			params.Messages = append(params.Messages, sdk.MessageParam{OfAssistant: &sdk.AssistantMessageParam{Content: blocks}})
		case harness.RoleUser, harness.RoleTool:
			params.Messages = append(params.Messages, sdk.MessageParam{OfUser: &sdk.UserMessageParam{Content: blocks}})
		default:
			return params, fmt.Errorf("%s: %w: message %d has unknown role %q", Name, ErrInvalidRequest, i, m.Role)
		}
	}
	if len(params.Messages) == 0 {
		return params, fmt.Errorf("%s: %w: no messages with content", Name, ErrInvalidRequest)
	}
	return params, nil
}

// sentParams reports the invocation parameters of params, as
// [harness.ModelResponse.Sent]: the model, the max_tokens sent (the
// request's or the default) and streaming. The Messages API version the SDK
// speaks takes no temperature, so none is reported.
func sentParams(params *sdk.MessageNewParams, stream bool) harness.RequestParams {
	return harness.RequestParams{
		Model:     string(params.Model),
		MaxTokens: int(params.MaxTokens),
		Stream:    stream,
	}
}

// blocks converts the parts of m, message i of a request to model.
func (p *Provider) blocks(model string, i int, m *harness.Message, in *media.Inliner) ([]sdk.ContentBlockParamUnion, error) {
	out := make([]sdk.ContentBlockParamUnion, 0, len(m.Content))
	for j := range m.Content {
		part := &m.Content[j]
		switch part.Type {
		case harness.PartText:
			if part.Text != "" {
				out = append(out, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: part.Text}})
			}
		case harness.PartReasoning:
			if m.Role != harness.RoleAssistant {
				continue
			}
			d, err := decodeThinking(part.ProviderData)
			switch {
			case err != nil:
				p.log.Debug("anthropic: reasoning part cannot be sent back; left out", "reason", err.Error())
			case d.RedactedData != "":
				out = append(out, sdk.ContentBlockParamUnion{OfRedactedThinking: &sdk.RedactedThinkingBlockParam{Data: d.RedactedData}})
			default:
				out = append(out, sdk.ContentBlockParamUnion{OfThinking: &sdk.ThinkingBlockParam{Thinking: part.Text, Signature: d.Signature}})
			}
		case harness.PartToolCall:
			if tc := part.ToolCall; tc != nil {
				input := tc.Input
				if !isObject(input) {
					// The API takes only an object; malformed arguments
					// (kept by the provider as a JSON string) go back empty.
					input = json.RawMessage("{}")
				}
				out = append(out, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{ID: tc.ID, Name: tc.Name, Input: input}})
			}
		case harness.PartToolResult:
			if tr := part.ToolResult; tr != nil {
				b := &sdk.ToolResultBlockParam{ToolUseID: tr.CallID}
				if tr.Content != "" {
					b.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: tr.Content}}}
				}
				for k := range tr.Parts {
					c, err := resultContent(model, media.Loc{Message: i, Part: j, ResultPart: k}, &tr.Parts[k], in)
					if err != nil {
						return nil, err
					}
					if c != nil {
						b.Content = append(b.Content, *c)
					}
				}
				if tr.IsError {
					b.IsError = sdk.Bool(true)
				}
				out = append(out, sdk.ContentBlockParamUnion{OfToolResult: b})
			}
		case harness.PartImage, harness.PartDocument, harness.PartAudio:
			at := media.Loc{Message: i, Part: j, ResultPart: -1}
			if m.Role == harness.RoleAssistant {
				return nil, media.Unsupported(Name, model, at, part, "an assistant message cannot carry media")
			}
			img, doc, err := mediaBlock(model, at, part, in)
			if err != nil {
				return nil, err
			}
			if img != nil {
				out = append(out, sdk.ContentBlockParamUnion{OfImage: img})
			} else {
				out = append(out, sdk.ContentBlockParamUnion{OfDocument: doc})
			}
		}
	}
	return out, nil
}

// resultContent converts a part of a tool result: text, an image or a
// document; nil for empty text.
func resultContent(model string, at media.Loc, part *harness.Part, in *media.Inliner) (*sdk.ToolResultBlockParamContentUnion, error) {
	if part.Type == harness.PartText {
		if part.Text == "" {
			return nil, nil
		}
		return &sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: part.Text}}, nil
	}
	img, doc, err := mediaBlock(model, at, part, in)
	if err != nil {
		return nil, err
	}
	return &sdk.ToolResultBlockParamContentUnion{OfImage: img, OfDocument: doc}, nil
}

// The image types the Messages API takes as base64.
var imageTypes = map[string]sdk.Base64ImageSourceMediaType{
	"image/jpeg": sdk.Base64ImageSourceMediaTypeImageJPEG,
	"image/png":  sdk.Base64ImageSourceMediaTypeImagePNG,
	"image/gif":  sdk.Base64ImageSourceMediaTypeImageGIF,
	"image/webp": sdk.Base64ImageSourceMediaTypeImageWebP,
}

// mediaBlock converts a media part into an image or a document block.
// Inline bytes go as base64 (a PDF; plain text as a text source), a URI as
// a URL source, a file ID as a file source (the Files API beta, whose
// header the application adds with WithRequestOptions). Audio, image types
// other than JPEG, PNG, GIF and WebP, and documents other than PDF and
// plain text are refused.
func mediaBlock(model string, at media.Loc, part *harness.Part, in *media.Inliner) (*sdk.ImageBlockParam, *sdk.DocumentBlockParam, error) {
	md := part.Media
	if md == nil {
		return nil, nil, media.Unsupported(Name, model, at, part, "a media part without media")
	}
	switch part.Type {
	case harness.PartImage:
		b := &sdk.ImageBlockParam{}
		switch {
		case len(md.Data) > 0:
			mt, ok := imageTypes[md.MIME]
			if !ok {
				return nil, nil, media.Unsupported(Name, model, at, part, "the API takes images of type image/jpeg, image/png, image/gif and image/webp")
			}
			b.Source.OfBase64 = &sdk.Base64ImageSourceParam{Data: in.Base64(md.Data), MediaType: mt}
		case md.URI != "":
			b.Source.OfURL = &sdk.URLImageSourceParam{URL: md.URI}
		case md.FileID != "":
			b.Source.OfFile = &sdk.FileImageSourceParam{FileID: md.FileID}
		default:
			return nil, nil, media.Unsupported(Name, model, at, part, "no data, URI or file ID")
		}
		return b, nil, nil
	case harness.PartDocument:
		b := &sdk.DocumentBlockParam{}
		if md.Name != "" {
			b.Title = sdk.String(md.Name)
		}
		switch {
		case len(md.Data) > 0 && md.MIME == "application/pdf":
			b.Source.OfBase64 = &sdk.Base64PDFSourceParam{Data: in.Base64(md.Data)}
		case len(md.Data) > 0 && (md.MIME == "text/plain" || strings.HasPrefix(md.MIME, "text/plain;")):
			b.Source.OfText = &sdk.PlainTextSourceParam{Data: string(md.Data)}
		case len(md.Data) > 0:
			return nil, nil, media.Unsupported(Name, model, at, part, "the API takes documents of type application/pdf and text/plain")
		case md.URI != "":
			b.Source.OfURL = &sdk.URLPDFSourceParam{URL: md.URI}
		case md.FileID != "":
			b.Source.OfFile = &sdk.FileDocumentSourceParam{FileID: md.FileID}
		default:
			return nil, nil, media.Unsupported(Name, model, at, part, "no data, URI or file ID")
		}
		return nil, b, nil
	case harness.PartAudio:
		return nil, nil, media.Unsupported(Name, model, at, part, "the Messages API takes no audio")
	}
	return nil, nil, media.Unsupported(Name, model, at, part, "not a media part")
}

// setBreakpoint puts cache_control on the last block that can carry one
// (thinking blocks cannot).
func setBreakpoint(blocks []sdk.ContentBlockParamUnion, cc sdk.CacheControlEphemeralParam) {
	for i := len(blocks) - 1; i >= 0; i-- {
		b := &blocks[i]
		switch {
		case b.OfText != nil:
			b.OfText.CacheControl = cc
		case b.OfToolUse != nil:
			b.OfToolUse.CacheControl = cc
		case b.OfToolResult != nil:
			b.OfToolResult.CacheControl = cc
		case b.OfImage != nil:
			b.OfImage.CacheControl = cc
		case b.OfDocument != nil:
			b.OfDocument.CacheControl = cc
		default:
			continue
		}
		return
	}
}

// toolParam converts a tool definition; the schema's properties and
// required list map onto the SDK's fields, every other keyword is kept as an
// extra field.
func toolParam(t *harness.ToolDefinition) (*sdk.ToolParam, error) {
	tp := &sdk.ToolParam{Name: t.Name}
	if t.Description != "" {
		tp.Description = sdk.String(t.Description)
	}
	var schema map[string]json.RawMessage
	if len(t.InputSchema) > 0 {
		dec := json.NewDecoder(bytes.NewReader(t.InputSchema))
		if err := dec.Decode(&schema); err != nil {
			return nil, fmt.Errorf("%s: %w: tool %q: input schema: %v", Name, ErrInvalidRequest, t.Name, err)
		}
	}
	for k, v := range schema {
		switch k {
		case "type":
			// always "object"
		case "properties":
			tp.InputSchema.Properties = v
		case "required":
			if err := json.Unmarshal(v, &tp.InputSchema.Required); err != nil {
				return nil, fmt.Errorf("%s: %w: tool %q: required: %v", Name, ErrInvalidRequest, t.Name, err)
			}
		default:
			if tp.InputSchema.ExtraFields == nil {
				tp.InputSchema.ExtraFields = make(map[string]any)
			}
			tp.InputSchema.ExtraFields[k] = v
		}
	}
	return tp, nil
}

// isObject reports whether b is a JSON object.
func isObject(b json.RawMessage) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}
