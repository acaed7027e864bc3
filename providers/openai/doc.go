// Package openai is a harness.Provider for OpenAI's Chat Completions API,
// built on the official SDK github.com/openai/openai-go/v3. It also works
// with servers that speak the same API (set [WithBaseURL]).
//
//	p, err := openai.New() // OPENAI_API_KEY from the environment
//	agent, err := harness.New(
//		harness.WithProvider(p),
//		harness.WithModel("gpt-5.4-mini"),
//		harness.WithTools(tools...),
//	)
//
// # Mapping
//
// The system prompt becomes a leading system message; harness user and
// assistant messages map onto user and assistant messages (assistant tool
// calls as function tool calls); a harness tool message becomes one "tool"
// message per result. Chat Completions has no is_error field, so an error
// result's content starts with "Error: ". Tool definitions keep their JSON
// schema as function parameters. MaxTokens is sent as
// max_completion_tokens, Temperature as temperature, each only when set;
// the response's Sent says what was sent. Reasoning parts are
// not sent back, whatever their ProviderData: the API does not accept them. Replies with a
// reasoning_content field (OpenAI-compatible servers) give a reasoning part.
//
// # Media
//
// Media parts of user messages become Chat Completions content parts: an
// image as image_url (its URI, or its bytes as a data URL), a PDF as a
// file (its bytes as a data URL with the part's name as filename, default
// "document.pdf", or its file ID), a text/plain document as text, and
// audio as input_audio (WAV or MP3 bytes, base64). Tool messages take only
// text, so a tool result's text parts join its content and its media
// parts follow the step's tool messages in one user message, after a text
// part naming the call they belong to ("Attachments of the result of tool
// call <id> (<tool>):"). Parts of 16 KiB and more are not encoded into
// the request's JSON, which the SDK copies at every level of nesting: the
// request carries a token in their place, and the provider's SDK
// middleware streams their base64 into the body as it is sent, from the
// part's own bytes (again on a retry).
//
// A part the API cannot take (an image by file ID, a document by URL,
// audio other than WAV and MP3 or by reference, media in an assistant
// message) or that the model does not take fails the request before
// anything is sent, with a *harness.UnsupportedPartError
// (harness.ErrUnsupportedPart) naming the message, the part, its MIME type
// and the model. Which model takes what is [DefaultPartSupport]'s guess
// from the model's name — audio only for audio models, images and PDFs
// for all but gpt-3.5, o1-mini and o3-mini — and [WithPartSupport]
// replaces it, for new models and for other servers that speak the API.
// [Provider.AcceptsURL] (harness.URLAccepter) says which parts go by URL:
// images, to a model that takes them; no documents or audio.
//
// finish_reason maps onto harness.StopReason (stop → end_turn, tool_calls →
// tool_use, length → max_tokens, content_filter → content_filter; a
// refusal → refusal) with the API's value in RawStopReason.
//
// The provider names itself "openai" ([Provider.ProviderName], for
// harness.ProviderNamer), so the engine fills ModelRequest.Provider and
// observers can name it even for a request that fails.
//
// # Usage and prompt caching
//
// prompt_tokens already counts cached tokens, so it is InputTokens as is;
// prompt_tokens_details.cached_tokens is CacheReadInputTokens,
// cache_write_tokens CacheCreationInputTokens,
// prompt_tokens_details.image_tokens and audio_tokens ImageInputTokens and
// AudioInputTokens (parts of InputTokens, as the API counts them), and
// completion_tokens_details.reasoning_tokens ReasoningTokens.
// [WithPromptCacheKey] sends the harness's prefix key as prompt_cache_key.
//
// # Streaming
//
// With ModelRequest.Stream the provider streams with
// stream_options.include_usage and assembles content, refusal and tool-call
// argument deltas into the same response; FirstChunkAt is the arrival of
// the first chunk that carries output. A stream that ends without a
// finish_reason or without the final data: [DONE] line, or carries
// malformed JSON, fails with a [*StreamError]: a partial answer is never
// returned.
//
// # Errors
//
// The SDK retries rate limits, server errors and connection failures
// ([WithMaxRetries]). What remains comes back as [*APIError] (401/403 match
// [ErrAuthentication], 400 [ErrInvalidRequest], 429 [ErrRateLimited], 5xx
// [ErrServer]), [*ConnectionError] or [*StreamError]; the retryable ones
// implement harness.RetryableError for harness.WithRetry. A cancelled
// context gives an error for which errors.Is(err, context.Canceled) holds.
package openai
