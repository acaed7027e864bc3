// Package anthropic is a harness.Provider for Anthropic's Messages API,
// built on the official SDK github.com/anthropics/anthropic-sdk-go/v2 (API
// version 2026-10-21).
//
//	p, err := anthropic.New() // ANTHROPIC_API_KEY from the environment
//	agent, err := harness.New(
//		harness.WithProvider(p),
//		harness.WithModel("claude-sonnet-5-5"),
//		harness.WithTools(tools...),
//	)
//
// # Mapping
//
// The system prompt becomes the system block; harness user and assistant
// messages map onto user and assistant messages; a harness tool message
// becomes a user message of tool_result blocks, with is_error. Tool
// definitions keep their JSON schema. max_tokens is required by the API:
// the request's MaxTokens, else [WithDefaultMaxTokens], else
// [DefaultMaxTokens]. Temperature is not sent, because the API version the
// SDK speaks rejects sampling parameters. The response's Sent says what
// was sent (the max_tokens default included, no temperature), so traces
// show the parameters the model really had.
//
// Thinking ([WithThinking], [WithAdaptiveThinking]) comes back as reasoning
// parts. The API requires the thinking blocks of a tool-use turn to be sent
// back unchanged and signed, so the provider keeps what the text cannot
// hold in the part's ProviderData, a small JSON object:
// {"provider":"anthropic","signature":"..."} for a thinking block and
// {"provider":"anthropic","redacted_data":"..."} for a redacted_thinking
// block, whose part text is the placeholder "[redacted thinking]". The
// provider keeps no state of its own: ProviderData is saved with sessions,
// so a conversation loaded into a new process, with a new Provider, sends
// its thinking back as it came. A reasoning part without this provider's
// ProviderData (from another provider, or with the data stripped) is left
// out of the request, since the API rejects unsigned thinking.
//
// # Media
//
// Image and document parts (harness.ImagePart, DocumentPart, ImageURL,
// DocumentURL, FilePart), in user messages and in tool results'
// [harness.ToolResult.Parts], become image and document blocks: inline
// bytes as a base64 source (images of type image/jpeg, image/png,
// image/gif and image/webp; documents of type application/pdf, and
// text/plain as a text source), a URI as a url source, a file ID as a file
// source (the Files API is a beta: add its anthropic-beta header with
// [WithRequestOptions]). A document's name is its title. Parts of 16
// KiB and more are not encoded into the request's JSON, which the SDK
// copies at every level of nesting: the request carries a token in their
// place, and the provider's SDK middleware streams their base64 into the
// body as it is sent, from the part's own bytes (again on a retry), so a
// 5 MiB image costs no copy of itself per request. The API takes no audio, other image or document types, or media
// in assistant messages: such a part fails the request before anything is
// sent, with a *harness.UnsupportedPartError (harness.ErrUnsupportedPart)
// naming the message, the part, its MIME type and the model.
// [Provider.AcceptsURL] (harness.URLAccepter) says which parts go by URL:
// images of the four types and PDF documents.
//
// Stop reasons map onto harness.StopReason (end_turn, tool_use, max_tokens,
// stop_sequence, refusal, pause_turn; model_context_window_exceeded counts
// as max_tokens) with the API's value in RawStopReason.
//
// The provider names itself "anthropic" ([Provider.ProviderName], for
// harness.ProviderNamer), so the engine fills ModelRequest.Provider and
// observers can name it even for a request that fails.
//
// # Usage and prompt caching
//
// The API reports cache reads and writes apart from input_tokens, so the
// harness InputTokens, which is inclusive, is input_tokens +
// cache_read_input_tokens + cache_creation_input_tokens; thinking tokens are
// ReasoningTokens. The API does not report the tokens of images and
// documents apart: they are in input_tokens, and ImageInputTokens and
// AudioInputTokens stay zero. [WithPromptCaching] puts cache_control breakpoints on the
// last tool definition, the system prompt and the last stable message (the
// one before the newest), the prefix that harness.PrefixKey identifies.
//
// # Streaming
//
// With ModelRequest.Stream the provider streams and assembles text, tool
// input JSON and thinking deltas into the same response; FirstChunkAt is the
// arrival of the first content delta. A stream that ends before
// message_stop, leaves a block open or carries malformed JSON fails with a
// [*StreamError]: a partial answer is never returned.
//
// # Errors
//
// The SDK retries rate limits, server errors and connection failures
// ([WithMaxRetries]). What remains comes back as [*APIError] (401/403 match
// [ErrAuthentication], 400 [ErrInvalidRequest], 429 [ErrRateLimited], 5xx
// [ErrServer]), [*ConnectionError] or [*StreamError]; the retryable ones
// implement harness.RetryableError for harness.WithRetry. A cancelled
// context gives an error for which errors.Is(err, context.Canceled) holds.
package anthropic
