package tracing

import "go.opentelemetry.io/otel/attribute"

// Attribute keys the extension sets beyond the OpenTelemetry GenAI keys
// (which come from go.opentelemetry.io/otel/semconv/v1.41.0).
const (
	// KeyLangSmithSpanKind is LangSmith's run type: "chain", "llm" or "tool".
	KeyLangSmithSpanKind = attribute.Key("langsmith.span.kind")
	// KeyLangSmithTraceName is LangSmith's run name; the extension sets the
	// span name.
	KeyLangSmithTraceName = attribute.Key("langsmith.trace.name")
	// KeyLangSmithSessionID is thread-grouping metadata: the agent's session ID.
	KeyLangSmithSessionID = attribute.Key("langsmith.metadata.session_id")
	// KeyLangSmithModelName is the model LangSmith prices a chat span with.
	KeyLangSmithModelName = attribute.Key("langsmith.metadata.ls_model_name")
	// KeyLangSmithProvider is the provider LangSmith prices a chat span with.
	KeyLangSmithProvider = attribute.Key("langsmith.metadata.ls_provider")
	// KeyLangSmithPrefixKey is the request's prefix key, as LangSmith metadata.
	KeyLangSmithPrefixKey = attribute.Key("langsmith.metadata.prefix_key")
	// KeyLangSmithUsage is the JSON usage LangSmith prices from:
	// input_tokens, output_tokens, total_tokens,
	// input_token_details.cache_read|cache_creation,
	// output_token_details.reasoning.
	KeyLangSmithUsage = attribute.Key("langsmith.usage_metadata")

	// KeyPrefixKey is the hex SHA-256 prefix key of a model request.
	KeyPrefixKey = attribute.Key("harnessx.prefix_key")
	// KeyPrefixModel, KeyPrefixTools, KeyPrefixSystem and KeyPrefixMessages
	// are the hex hashes of the parts of the prefix key, set on the chat
	// span of a session's first request and on one whose request broke the
	// cache (beside KeyPrefixChanged).
	KeyPrefixModel    = attribute.Key("harnessx.prefix_key.model")
	KeyPrefixTools    = attribute.Key("harnessx.prefix_key.tools")
	KeyPrefixSystem   = attribute.Key("harnessx.prefix_key.system")
	KeyPrefixMessages = attribute.Key("harnessx.prefix_key.messages")
	// KeyPrefixChanged names the parts that changed since the previous
	// request of the session: the parts that broke the prompt cache.
	KeyPrefixChanged = attribute.Key("harnessx.prefix_key.changed")
	// KeyAttempt counts the attempts of one model request from 1.
	KeyAttempt = attribute.Key("harnessx.attempt")
	// KeyStep counts the model requests of a run from 1; 0 marks a request
	// outside the run's steps (harness.Agent.Generate).
	KeyStep = attribute.Key("harnessx.step")
	// KeyModelStatus is how a model request ended: "ok", "error" or "cancelled".
	KeyModelStatus = attribute.Key("harnessx.model.status")

	// KeyRunID is the run's ID (the same across a pause and its Resume).
	KeyRunID = attribute.Key("harnessx.run.id")
	// KeyRunStatus is how the run ended: completed, failed, cancelled, paused.
	KeyRunStatus = attribute.Key("harnessx.run.status")
	// KeyRunResumed marks a run that continues after approvals.
	KeyRunResumed = attribute.Key("harnessx.run.resumed")
	// KeyRunRecovered marks the invoke_agent span of a run that a durable
	// runtime executes again after a crash (harness.RunInfo.Recovered).
	KeyRunRecovered = attribute.Key("harnessx.recovered")
	// KeyRunAttempt counts the executions of a recovered run from 1, on its
	// invoke_agent span (2 and up) and on the link to the previous attempt.
	KeyRunAttempt = attribute.Key("harnessx.run.attempt")
	// KeyLink says what a span link points at: [LinkPreviousAttempt].
	KeyLink = attribute.Key("harnessx.link")
	// KeyRunSteps counts the model requests of the turn.
	KeyRunSteps = attribute.Key("harnessx.run.steps")
	// KeyRunPending counts the approvals a paused run waits for.
	KeyRunPending = attribute.Key("harnessx.run.pending_approvals")

	// KeyToolStatus is the tool call's harness.ToolStatus.
	KeyToolStatus = attribute.Key("harnessx.tool.status")
	// KeyToolCallResultParts is the JSON list, in the GenAI parts schema,
	// of the parts a tool returned after its text (harness.ToolResult.Parts):
	// text, and media as blob, uri or file parts. Captured content.
	KeyToolCallResultParts = attribute.Key("harnessx.tool.call.result.parts")

	// KeyUsageImageInputTokens and KeyUsageAudioInputTokens are the input
	// tokens of images and audio, when the provider reports them apart
	// (harness.Usage.ImageInputTokens, AudioInputTokens): parts of
	// gen_ai.usage.input_tokens, for which the GenAI conventions have no
	// key. Set when not zero.
	KeyUsageImageInputTokens = attribute.Key("harnessx.usage.image.input_tokens")
	KeyUsageAudioInputTokens = attribute.Key("harnessx.usage.audio.input_tokens")

	// KeyPrompt and KeyCompletion are the older GenAI keys that LangSmith's
	// OTel ingestion documents as a run's inputs and outputs; the extension
	// sets them only with [WithLangSmithPromptKeys].
	KeyPrompt     = attribute.Key("gen_ai.prompt")
	KeyCompletion = attribute.Key("gen_ai.completion")

	// KeyTruncated lists the keys of the span whose values were cut at the
	// attribute cap.
	KeyTruncated = attribute.Key("harnessx.truncated")
)

// LinkPreviousAttempt is the [KeyLink] value of the link from a recovered
// run's invoke_agent span to the root span of the previous attempt.
const LinkPreviousAttempt = "previous_attempt"

// Event names.
const (
	// EventCacheBreak is added to a chat span whose prefix key changed in a
	// way that breaks the prompt cache; its attribute harnessx.prefix_key.changed
	// names the parts.
	EventCacheBreak = "prompt_cache_break"
	// EventNewToken marks the first streamed chunk of a reply.
	EventNewToken = "new_token"
)

// LangSmith span kinds.
const (
	spanKindChain = "chain"
	spanKindLLM   = "llm"
	spanKindTool  = "tool"
)
