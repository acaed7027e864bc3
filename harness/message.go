package harness

import (
	"encoding/json"
	"strings"
)

// Role names the author of a [Message].
type Role string

// The roles of a conversation.
const (
	// RoleUser marks a message written by the user of the agent.
	RoleUser Role = "user"
	// RoleAssistant marks a message produced by the model.
	RoleAssistant Role = "assistant"
	// RoleTool marks a message that carries tool results back to the model.
	RoleTool Role = "tool"
)

func (r Role) valid() bool {
	return r == RoleUser || r == RoleAssistant || r == RoleTool
}

// PartType names the kind of a [Part].
type PartType string

// The kinds of message parts.
const (
	PartText       PartType = "text"
	PartToolCall   PartType = "tool_call"
	PartToolResult PartType = "tool_result"
	// PartReasoning is model reasoning text returned by some providers.
	PartReasoning PartType = "reasoning"
	// PartImage, PartDocument and PartAudio are media parts: their
	// [Media] holds the bytes, a URI or a provider file ID. Build them
	// with [ImagePart], [ImageURL], [DocumentPart], [DocumentURL],
	// [AudioPart] and [FilePart].
	PartImage    PartType = "image"
	PartDocument PartType = "document" // a PDF or plain-text document
	PartAudio    PartType = "audio"
)

// Message is one entry of a conversation. It is plain data and
// JSON-compatible; sessions store messages as they are.
type Message struct {
	Role    Role   `json:"role"`
	Content []Part `json:"content"`
}

// Part is one piece of a [Message]: text, a tool call, a tool result,
// reasoning, or media (an image, a document, audio). Exactly one of Text,
// ToolCall, ToolResult and Media is set, as Type says.
type Part struct {
	Type       PartType    `json:"type"`
	Text       string      `json:"text,omitempty"`
	ToolCall   *ToolCall   `json:"tool_call,omitempty"`
	ToolResult *ToolResult `json:"tool_result,omitempty"`
	// Media is the content of an image, document or audio part. It is
	// shared by every copy of the part (see [Media]).
	Media *Media `json:"media,omitempty"`
	// ProviderData is opaque data a provider needs to send this part back
	// unchanged, such as the signature of an Anthropic thinking block or
	// the data of a redacted one. It is saved with sessions and is part of
	// the prompt-cache prefix.
	ProviderData json.RawMessage `json:"provider_data,omitempty"`
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	// ID is the provider's identifier of the call; results quote it.
	ID string `json:"id"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Input is the JSON object of arguments.
	Input json.RawMessage `json:"input"`
}

// ToolStatus classifies the outcome of a tool call. The model sees only
// [ToolResult.Content] and [ToolResult.IsError]; the status is for
// observers (tracing, the flight recorder) and for tests.
type ToolStatus string

// The outcomes of a tool call.
const (
	ToolOK            ToolStatus = "ok"
	ToolError         ToolStatus = "error"             // the tool returned an error
	ToolInvalid       ToolStatus = "invalid_arguments" // the input failed the schema or did not decode
	ToolUnknown       ToolStatus = "unknown_tool"      // no tool of that name
	ToolDenied        ToolStatus = "denied"            // the permission manager or an approver said no
	ToolBlocked       ToolStatus = "blocked"           // a middleware blocked the call
	ToolPanicked      ToolStatus = "panic"             // the tool panicked
	ToolTimedOut      ToolStatus = "timeout"           // the tool exceeded its Timeout
	ToolCancelled     ToolStatus = "cancelled"         // the run was cancelled
	ToolPending       ToolStatus = "pending_approval"  // waiting for an approval; the run pauses
	ToolMiddlewareErr ToolStatus = "middleware_error"  // a middleware failed
	// ToolInterrupted: the process stopped while the call ran, and a durable
	// runtime did not run it again because its tool is not ReplaySafe; the
	// outcome is unknown (see [InterruptedResult]).
	ToolInterrupted ToolStatus = "interrupted"
	// ToolSuspended: the tool asked a question that its step runner parks
	// ([ErrSuspended]); the run suspends and the call runs again once the
	// question is answered. Not an outcome: the model never sees it.
	ToolSuspended ToolStatus = "suspended"
)

// ToolResult is the answer to a [ToolCall].
type ToolResult struct {
	// CallID is the ID of the call this result answers.
	CallID string `json:"call_id"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Content is what the model reads.
	Content string `json:"content"`
	// Parts are what the model reads after Content: text and media parts
	// (an image a tool made, a document it fetched). A tool returns them
	// with [ToolOutput] or [AddResultParts]; a result middleware may set
	// them too. Media parts over the agent's inline limit turn the result
	// into an error result (see [WithInlineLimit]).
	Parts []Part `json:"parts,omitempty"`
	// IsError tells the model the call failed; Content says why.
	IsError bool `json:"is_error,omitempty"`
	// Status classifies the outcome for observers.
	Status ToolStatus `json:"status,omitempty"`
	// ErrorType is a short, low-cardinality class of a failure for
	// observers (the tracing extension's error.type), when the status
	// alone says too little: "tool_error" for an MCP server's isError
	// result, for instance. The engine sets it from a handler's error
	// that has an ErrorType() string method ([ErrorTyper]); empty means
	// the status.
	ErrorType string `json:"error_type,omitempty"`
	// Activate names deferred tools that the session offers to the model
	// from the next request on (see [SessionTools]). The engine sets it
	// from [ActivateTools]; a result middleware may set it too. It is
	// applied once the call's step is done, from the result a durable
	// runtime recorded as well, so a recovered run activates the same
	// tools.
	Activate []string `json:"activate,omitempty"`
}

// UserMessage returns a user message holding text.
func UserMessage(text string) Message {
	return Message{Role: RoleUser, Content: []Part{{Type: PartText, Text: text}}}
}

// AssistantMessage returns an assistant message holding text.
func AssistantMessage(text string) Message {
	return Message{Role: RoleAssistant, Content: []Part{{Type: PartText, Text: text}}}
}

// Text returns the concatenated text parts of m.
func (m Message) Text() string {
	n := 0
	var only string
	for _, p := range m.Content {
		if p.Type == PartText {
			n++
			only = p.Text
		}
	}
	if n <= 1 {
		return only
	}
	var b strings.Builder
	for _, p := range m.Content {
		if p.Type == PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// ToolCalls returns the tool calls of m, in order.
func (m Message) ToolCalls() []ToolCall {
	var calls []ToolCall
	for _, p := range m.Content {
		if p.Type == PartToolCall && p.ToolCall != nil {
			calls = append(calls, *p.ToolCall)
		}
	}
	return calls
}

// Usage counts the tokens of one or more model requests.
//
// InputTokens is inclusive: it counts every prompt token, cached or not, so
// CacheReadInputTokens and CacheCreationInputTokens are parts of it.
// Providers whose API reports cached tokens apart (Anthropic) add them in.
// ReasoningTokens is likewise a part of OutputTokens, and
// ImageInputTokens and AudioInputTokens, the prompt tokens of images and
// audio that some providers report apart (OpenAI's
// prompt_tokens_details), are parts of InputTokens; zero when the
// provider does not report them.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens,omitempty"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens,omitempty"`
	ReasoningTokens          int64 `json:"reasoning_tokens,omitempty"`
	ImageInputTokens         int64 `json:"image_input_tokens,omitempty"`
	AudioInputTokens         int64 `json:"audio_input_tokens,omitempty"`
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadInputTokens += o.CacheReadInputTokens
	u.CacheCreationInputTokens += o.CacheCreationInputTokens
	u.ReasoningTokens += o.ReasoningTokens
	u.ImageInputTokens += o.ImageInputTokens
	u.AudioInputTokens += o.AudioInputTokens
}

// TotalTokens returns InputTokens + OutputTokens.
func (u Usage) TotalTokens() int64 { return u.InputTokens + u.OutputTokens }

// StopReason says why the model stopped.
type StopReason string

// The harness's stop reasons. Providers map their own onto these and keep
// the original in [ModelResponse.RawStopReason].
const (
	StopEndTurn       StopReason = "end_turn"
	StopToolUse       StopReason = "tool_use"
	StopMaxTokens     StopReason = "max_tokens"
	StopSequence      StopReason = "stop_sequence"
	StopContentFilter StopReason = "content_filter"
	StopRefusal       StopReason = "refusal"
	StopPause         StopReason = "pause_turn"
	StopOther         StopReason = "other"
)
