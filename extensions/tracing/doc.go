// Package tracing is the harnessx tracing extension: it turns every run of
// an agent into a tree of OpenTelemetry spans that reads correctly in
// Jaeger (or any OTLP backend) and in LangSmith.
//
//	invoke_agent <agent>          langsmith.span.kind=chain  (root, or child of the caller's span)
//	├── chat <model>              langsmith.span.kind=llm    kind CLIENT, one per request attempt
//	├── execute_tool <tool>       langsmith.span.kind=tool   one per tool call
//	│   └── invoke_agent <child>  a subagent traced by its own extension
//	└── chat <model>
//
// Add it with one option:
//
//	agent, err := harness.New(
//		harness.WithProvider(p),
//		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))),
//	)
//
// The extension uses the OpenTelemetry API only; the application chooses
// the SDK and the backend (see the exporters package). Without
// [WithTracerProvider] it uses otel.GetTracerProvider() at install time; it
// never sets the global provider.
//
// # What the spans carry
//
// Attribute keys follow the OpenTelemetry GenAI semantic conventions
// (go.opentelemetry.io/otel/semconv/v1.41.0) plus the keys LangSmith reads
// over OTLP. Every span has langsmith.span.kind, langsmith.trace.name,
// gen_ai.conversation.id and langsmith.metadata.session_id (the agent's
// session ID, which LangSmith uses to group a thread). The langsmith.*
// keys repeat what the GenAI keys say, for LangSmith, so they are set only
// when LangSmith may read the spans: a provider from the exporters package
// says whether one of its backends is LangSmith ([LangSmithReporter]), any
// other provider gets them, and [WithLangSmithMirror] decides over both
// (give it when a collector forwards the spans to LangSmith).
//
// A chat span records the request (gen_ai.request.model, max_tokens,
// temperature, stream, gen_ai.system_instructions, gen_ai.input.messages,
// gen_ai.tool.definitions), the prompt-cache prefix key (harnessx.prefix_key,
// langsmith.metadata.prefix_key) and, when a part of the prefix changed
// since the session's previous request, which part broke the cache
// (harnessx.prefix_key.changed and a prompt_cache_break event). The
// hashes of the four parts (harnessx.prefix_key.model|tools|system|messages)
// go on the session's first request and on each cache break; a request
// that keeps or grows the previous prefix carries the key alone, its
// parts being those of the nearest earlier span of the session that
// records them.
// On completion it records the response (gen_ai.response.model, id,
// finish_reasons, gen_ai.output.messages), the usage with cache-read,
// cache-creation and reasoning tokens (and, when the provider reports
// them apart, the image and audio input tokens:
// harnessx.usage.image.input_tokens and harnessx.usage.audio.input_tokens,
// parts of gen_ai.usage.input_tokens, for which the conventions have no
// key), langsmith.usage_metadata (with input_token_details audio and
// image when reported), and
// langsmith.metadata.ls_model_name / ls_provider so that LangSmith can price
// the run. A streamed reply adds a new_token event at its first chunk.
// Each retry of a request is its own chat span with harnessx.attempt.
// A request made with [harness.Agent.Generate] (an MCP server's sampling,
// say) is a chat span too, a child of the span in its context (the
// execute_tool span of the tool that asked), with harnessx.step 0 and no
// prefix key; its messages are encoded apart from the conversation's.
// A tool that publishes live metadata with [harness.Update] adds a
// harnessx.tool.update event ([EventToolUpdate]) to its execute_tool span.
//
// [WithLangSmithPromptKeys] also sets the captured inputs and outputs
// under gen_ai.prompt and gen_ai.completion, the keys LangSmith's OTel
// ingestion documents for a run's inputs and outputs.
//
// Messages are JSON in the GenAI parts schema: a list of {role, parts} with
// parts of type text, reasoning, tool_call (id, name, arguments),
// tool_call_response (id, response, and parts: see Media parts) and the
// media parts blob, uri and file.
//
// An execute_tool span records the tool name, call ID, arguments, result
// (the text; the parts a tool returned after it are
// harnessx.tool.call.result.parts) and harnessx.tool.status. An
// invoke_agent span records the agent, the run ID (harnessx.run.id),
// harnessx.run.status, the usage totals and the user input (the message of
// harness.Agent.RunMessage with its parts) and final text.
//
// The attributes a sampler or an OnStart span processor may need
// (gen_ai.operation.name, the agent, model or tool name, the run or call ID,
// gen_ai.conversation.id) are set when a span starts; the others when it
// ends, in one call.
//
// # Media parts
//
// Images, documents and audio (harness.PartImage, PartDocument, PartAudio)
// in messages, in tool results and in the user message of a run are
// recorded as the parts of gen_ai.input.messages / gen_ai.output.messages
// in semconv v1.41.0's JSON schema (gen-ai-input-messages.json):
//
//   - a part with a URI: {"type":"uri", "modality", "mime_type", "uri"},
//     the URI as it is but for the secret rules, which read it like any
//     text (a query string's api_key=…, a URL's password);
//   - a part with a provider file ID: {"type":"file", "modality",
//     "mime_type", "file_id"};
//   - a part with inline bytes (harness.Media.Data), by default:
//     {"type":"uri", "modality", "mime_type", "uri", "size", "sha256"},
//     whose uri is the part's artifact reference
//     "artifact:sha256:<hex of the bytes' SHA-256>" (the name under which
//     the flight recorder keeps the bytes and the trace viewer finds
//     them), size the number of bytes and sha256 their hex SHA-256 (the
//     schema's parts take further members). No byte is recorded.
//     [WithPartUploader] sets a function that stores the bytes and returns
//     a URI to record instead of the reference; when it fails, the
//     reference is recorded, [Stats].UploadErrors counts it and a Warn line
//     logs it, and the run goes on;
//   - with [WithCaptureMediaBytes], an inline part of at most
//     [WithMaxMediaBytes] bytes (default 32 KiB) is {"type":"blob",
//     "modality", "mime_type", "size", "sha256", "content"} with the bytes
//     in base64, as the conventions say. A larger part is its reference
//     (or uploaded URI) as above with "truncated":true, rather than cut
//     base64, which no one could decode; the value counts as truncated
//     (harnessx.truncated lists its key; [Stats].Truncated counts it and
//     TruncatedBytes adds the part's size).
//
// modality is image, audio or video after the MIME type, else the part's
// kind; a document (a PDF, a text file) is "document": the schema's
// modality is image, video, audio or any other string, and calling a PDF an
// image would mislead a viewer. mime_type is left out when the part has
// none; a part's name (harness.Media.Name) is "name". A data: URI holds
// bytes, so it is recorded as inline bytes, never as a URI. A tool result
// with parts is {"type":"tool_call_response", "id", "response": its text,
// "parts": [its parts]}, and the execute_tool span carries the same list
// under harnessx.tool.call.result.parts.
//
// Parts are captured content: with content capture off, none is recorded,
// reference, URI or file ID, as no text is, and the uploader is not
// called; it is not called for spans that are not recorded either. The
// conventions let an upload hook see whole messages whatever the capture
// setting; this one is narrower: it maps one part's bytes to one URI that
// a recorded value holds. The secret rules do not read base64 (it is no
// text, and a run of it can look like a key); a [WithRedactor] function
// sees the value whole, bytes included. gen_ai.prompt and
// gen_ai.completion ([WithLangSmithPromptKeys]) never carry bytes: when a
// value holds blobs, LangSmith's copy is encoded again with every inline
// part by reference. A message without media parts is encoded as before,
// at no extra cost.
//
// # Statuses
//
// A failed run, a failed model request and a tool call that ended in an
// error result set the span status to Error and error.type (for tools the
// [harness.ToolStatus]; for other errors a short type: the Go type of the
// underlying error, "cancelled", "timeout", "max_steps" or "_OTHER").
// Cancellation and approval pauses are not errors: they are recorded as
// harnessx.run.status=cancelled or paused, and harnessx.tool.status=cancelled
// or pending_approval, with the span status left unset. Neither is a tool
// call that a durable runtime reports as interrupted by a crash (its outcome
// is unknown, and it was not run again): harnessx.tool.status=interrupted.
//
// # Recovery after a crash
//
// A durable runtime (the durable package) executes a run again, under the
// same run ID, when the process that ran it stopped. Steps it recorded are
// replayed without their interceptors, so they get no second chat or
// execute_tool span; the steps that had not finished run, with spans, under
// the new invoke_agent span. That span carries harnessx.recovered=true and
// harnessx.run.attempt (2 and up, from [harness.RunInfo.Attempt]).
//
// One run is one trace across its attempts when the TracerProvider derives
// trace IDs from run IDs: exporters.RunTraceIDs, the default of the
// exporters package's providers, gives the root span of each part of a run
// (the Run, and each Resume after approvals) a trace ID computed from the
// run ID and a span ID computed from the run ID, the attempt and the part.
// The recovered invoke_agent span then has a link, with
// harnessx.link=previous_attempt and the earlier harnessx.run.attempt, to
// the root span of the same part of the previous attempt: that span may
// never have been exported (a crash cuts it short), but the spans it
// finished before the crash name it as their parent, and the link says
// where they belong. With another ID generator the attempts get their own
// traces and the span has no link (the extension uses the OTel API only:
// the generator is the application's choice). An invoke_agent span that is
// not a root (a subagent's, or under the application's span) belongs to
// its parent's trace.
//
// # Metrics
//
// With [WithMeterProvider] the extension also records metrics through the
// OpenTelemetry metrics API (without it, none, at no cost; it never uses
// the global MeterProvider). The names, units and attributes of the GenAI
// conventions come from go.opentelemetry.io/otel/semconv/v1.41.0:
//
//   - gen_ai.client.token.usage ({token}, histogram): the input and output
//     tokens of each model request, with gen_ai.token.type input or output,
//     gen_ai.operation.name=chat, gen_ai.provider.name,
//     gen_ai.request.model and gen_ai.response.model. Input tokens include
//     the cached ones and output tokens the reasoning ones, as
//     harness.Usage counts them;
//   - harnessx.client.token.usage.detail ({token}, histogram): the same
//     requests' cache_read, cache_creation, reasoning, and (when the
//     provider reports them) image and audio tokens, by
//     harnessx.token.type, recorded when not zero. The conventions have no
//     gen_ai.token.type for them, and as parts of the input and output
//     tokens they are a metric of their own, so that a sum of
//     gen_ai.client.token.usage over its token types counts each token once;
//   - gen_ai.client.operation.duration (s, histogram): each model request
//     attempt, with the attributes above and, when it failed, error.type;
//   - gen_ai.client.operation.time_to_first_chunk (s, histogram): for
//     streamed replies, from the start of the request (as the model
//     interceptor sees it) to the first chunk the provider reported
//     (harness.ModelResponse.FirstChunkAt); not recorded for replies that
//     were not streamed;
//   - harnessx.tool.duration (s, histogram): each tool call, with
//     gen_ai.tool.name and harnessx.tool.status;
//   - harnessx.run.duration (s, histogram): each run (a Run, or a Resume
//     after approvals), with gen_ai.agent.name, harnessx.run.status and,
//     for a failed run, error.type;
//   - harnessx.client.cost ({USD}, counter): the cost of the model requests
//     the price table prices (see Cost), with the chat attributes.
//
// Names that the model or the provider choose are bounded on metrics,
// so that a model that invents tool names or a provider that reports
// ever new model strings cannot fill a MeterProvider's series limit
// (and push real series into otel.metric.overflow): gen_ai.tool.name is
// the call's name when the agent's catalog has that tool (registered,
// offered to the model or deferred; see harness.Agent.Tool), else
// _OTHER; gen_ai.response.model is the response's model when it is the
// request's, when the price table has it, or when it is one of the first
// 16 other names the extension saw, else _OTHER. So a tool metric has at
// most one series per catalog tool and status plus _OTHER's, and a model
// metric at most the request models, the priced models, 16 others and
// _OTHER. Spans always carry the real names.
//
// The conventions define no metric for tool calls or agent runs, and
// gen_ai.client.operation.duration is meant for model requests (it
// requires gen_ai.provider.name), hence the harnessx.* names. Durations use
// the conventions' advised buckets (up to about 82 s; runs and tool calls
// up to about 11 minutes), token counts theirs (powers of 4). Metrics do
// not depend on sampling: a run whose spans are not sampled is measured
// too. Recordings carry the span's context, so an SDK that keeps exemplars
// links them to the chat span. The exporters package builds
// MeterProviders (exporters.MetersFromEnv and the others).
//
// # Cost
//
// A chat span whose model has a price carries harnessx.cost.usd and its
// parts harnessx.cost.input_usd (input tokens neither read from nor
// written to the prompt cache, the tokens of images and audio among them:
// the table has no price of their own), cache_read_usd, cache_write_usd,
// output_usd (output tokens other than reasoning) and reasoning_usd, in US
// dollars, with harnessx.cost.prices_as_of, the table's date. The model is
// the response's (gen_ai.response.model), else the request's; names match
// the table exactly (see the pricing package). The invoke_agent span
// carries the same keys with the run's totals (its own model requests;
// a subagent's are on the subagent's span) and, when some requests had no
// price, harnessx.cost.unpriced_requests. A model without a price gets no
// cost attribute, and one Debug line in the agent's log the first time.
// harness.WithPricing(table.USD) puts the same total on
// harness.RunResult.Cost.
//
// The prices come from [WithPricing], else from pricing.FromEnv() at
// Install: the built-in, dated table for current Anthropic and OpenAI
// models, extended by the file that HARNESSX_PRICES names, or no costs
// when HARNESSX_PRICES=off. A price file that cannot be used fails the
// install with a [*ConfigError] naming the file and the line or field.
//
// # Content capture
//
// Prompts, messages, tool arguments and results are recorded by default.
// [WithCaptureContent](false) turns that off, and so does the environment
// variable OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=false (or 0,
// no) when the option is not given; then only structure, usage and keys are
// recorded. Every captured value (system instructions, input and output
// messages, tool definitions, tool call arguments and results, error
// messages) passes through the built-in secret rules, then through the
// [WithRedactor] function, before it is set, then is capped at
// [WithMaxAttributeBytes]: a longer value is cut, and a marker with its full
// length and SHA-256 is appended, so the cut is visible; the span lists the
// cut keys in harnessx.truncated and [Extension.Stats] counts them. Media
// bytes are a separate opt-in ([WithCaptureMediaBytes], see Media parts);
// their base64 counts towards the attribute cap, so raise it with them.
//
// # Secrets
//
// The built-in secret rules are on by default and are the ones the flight
// recorder applies; [WithBuiltinRedaction](false) turns them off. Each
// secret found is replaced by a marker naming its rule:
//
//   - private-key: a whole PEM private key block (-----BEGIN … PRIVATE
//     KEY----- to -----END … PRIVATE KEY-----);
//   - anthropic-key, openai-key: provider API keys (sk-ant-…, sk-…);
//   - jwt, github-token, gitlab-token, slack-token, slack-webhook,
//     google-api-key, stripe-key, npm-token: JSON Web Tokens
//     (eyJ….eyJ….…), GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_,
//     github_pat_), GitLab tokens (glpat-), Slack tokens (xoxb-, xoxp- …)
//     and webhook URLs (hooks.slack.com/services/…, the path), Google API
//     keys (AIza…), Stripe secret and restricted keys (sk_live_, rk_live_,
//     sk_test_, rk_test_) and npm tokens (npm_);
//   - url-password: the password of a URL or connection string
//     (postgres://user:pass@host, mysql://, redis://:pass@host,
//     https://user:pass@host), keeping the user and host;
//   - curl-password: the password of curl -u user:pass (or --user);
//   - bearer-token: the token after "Bearer";
//   - aws-access-key, aws-secret-key: AWS key IDs (AKIA…, ASIA…) and
//     secret keys;
//   - secret-json-field: the string value of a JSON member whose name
//     contains key, token, secret, passw, passphrase or credential, or auth
//     as a word (auth, basic_auth; not author) ("api_key": "…"), also in
//     JSON text inside a JSON string (\"api_key\": \"…\");
//   - secret-assignment: the value, quoted or not, assigned to such a name
//     in env files and shells (DB_PASSWORD=…, export X="…"), YAML
//     (client_secret: …), TOML (api_key = '…'), query strings
//     (?api_key=…&token=…) and HTTP headers (X-Api-Key: …,
//     Authorization: Basic …).
//
// Names of counters (…tokens) and the prompt-cache prefix key are not
// secret. Text without any of the words the rules start from costs one
// pass over its bytes and no allocation; the system instructions and tool
// definitions are redacted once while they do not change, and each message
// of the conversation once, when it is first recorded. For a message, that
// pass reads the strings it holds (texts, tool names, IDs, arguments,
// results), not the JSON the span carries: the member names and
// punctuation of that JSON hold none of those words, so a message whose
// strings have none is left as it is (a control byte whose JSON escape
// could begin one, as a tab before "oken", makes the rules read the JSON).
//
// # Context
//
// Spans travel in context.Context only: each tool call gets its own context,
// so parallel calls each nest under the right agent span, and a subagent
// run (harness.AgentTool) started from a tool call nests under that call's
// execute_tool span when the child agent has its own tracing extension.
//
// # Overhead
//
// The extension is measured against two floors. The first is the same
// spans written by hand: BenchmarkHandOTelRun traces
// harness.BenchmarkRun's workload with plain instrumentation code built
// on the engine's interceptors and raw OpenTelemetry calls, each
// attribute value computed on each call with the standard library
// (encoding/json for the GenAI messages and tool definitions), and
// TestHandOTelMakesTheSameSpans checks, span by span and attribute by
// attribute, that it makes the spans the extension makes without
// LangSmith's mirrors. (TracedRunNoMirror − UntracedRun) /
// (HandOTelRun − UntracedRun) is what tracing with the extension costs
// against tracing by hand; the target is 0.9 (measured by CPU time with
// .ci/benchratios.sh: about 0.7 on a shared 2-core machine): the
// extension writes its JSON without reflection, encodes each message of
// the conversation once and reuses that encoding at the later requests,
// and caches the tool definitions' encoding, where plain code marshals
// the whole conversation and the tool list at every request.
//
// The second floor is the SDK's own cost. BenchmarkOTelFloor creates,
// with the SDK, the four spans of one traced run (their names, kinds,
// parents, attributes and events taken from a real run, the values built
// once, outside the loop); BenchmarkTracedRun is harness.BenchmarkRun's
// workload with the extension on; BenchmarkUntracedRun is that workload
// without it. Since the floor makes the very spans a traced run makes,
// the SDK's share of TracedRun − UntracedRun is the floor itself
// (callgrind shows the SDK's functions within 1% of it), and
// (TracedRun − UntracedRun) / OTelFloor is 1 plus the extension's own
// work (encoding the content, the secret scan, the prefix-key hashes, its
// interceptors) over the floor: it cannot go under 1. The bound is 1.5:
// the extension's own work costs at most half what the SDK spends on the
// spans (measured by CPU time with .ci/benchratios.sh: 1.43 to 1.56 on a
// shared 2-core machine; see
// docs/benchmarking.md). With a MeterProvider, BenchmarkTracedRunWithMetrics has the same
// bound over BenchmarkOTelFloorWithMetrics, which adds the run's metric
// recordings made with the metric SDK directly (the same instruments,
// bucket bounds, attribute sets and counts, in a sampled span's context,
// so that exemplars cost the same). That floor is the fair one for
// metrics: a program that records these metrics pays the SDK for each
// recording whoever makes it, and measured against the span floor alone
// the SDK's own recording cost would count as the extension's.
package tracing
