// Package harness is the harnessx agent engine: an [Agent] runs a
// conversation with a model [Provider] and the [Tool]s it may call, and
// extensions add features to it through middleware, interceptors, hooks,
// prompt providers and saved state.
//
// # A traced agent
//
// A tool, a model, the tracing extension and one run; the program runs as
// Example_agent of github.com/harnessx/harnessx/extensions/tracing, whose
// imports are context, bytes, fmt, and the harnessx packages harness,
// harness/harnesstest, exporters and extensions/tracing:
//
//	ctx := context.Background()
//
//	// A tool: its input schema is inferred from the struct.
//	weather := harness.MustTool(harness.NewTool("get_weather", "Report the weather of a city.",
//		func(ctx context.Context, in struct {
//			City string `json:"city"`
//		}) (string, error) {
//			return in.City + ": 18°C, light rain", nil
//		}))
//
//	// A model: scripted here; providers/anthropic or providers/openai for real.
//	model := harnesstest.NewScriptedProvider(
//		harnesstest.CallTool("call_1", "get_weather", `{"city":"Lisbon"}`),
//		harnesstest.Reply("Lisbon: 18°C with light rain."),
//	)
//
//	// Spans: OTLP JSON lines into a buffer here; exporters.FromEnv(ctx)
//	// sends them to Jaeger, LangSmith or .harnessx/traces.jsonl, as the
//	// environment says.
//	var spans bytes.Buffer
//	tp, err := exporters.NewFile(ctx, exporters.WithFileWriter(&spans))
//	if err != nil {
//		panic(err)
//	}
//
//	agent, err := harness.New(
//		harness.WithName("weather"),
//		harness.WithProvider(model),
//		harness.WithModel("claude-haiku-5-5"),
//		harness.WithSystemPrompt("You are a concise weather assistant."),
//		harness.WithTools(weather),
//		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))),
//	)
//	if err != nil {
//		panic(err)
//	}
//	res, err := agent.Run(ctx, "What's the weather in Lisbon?")
//	if err != nil {
//		panic(err)
//	}
//	fmt.Println(res.Status, res.Steps, res.Text)
//
//	_ = agent.Close(ctx)
//	_ = tp.Shutdown(ctx) // flushes the spans
//	fmt.Println("spans:", tp.Stats().Exported)
//
// It prints "completed 2 Lisbon: 18°C with light rain." and "spans: 4":
// the agent span, two chat spans and the tool's span. The rest of this
// documentation is the engine's contract: the run loop, tools, the order
// of middleware, interceptors and hooks, extensions, sessions, durable
// execution and subagents.
//
// # Runs
//
// [New] builds an agent from options; [Agent.Run] runs one user turn: a
// model request, the tools it calls, another model request with their
// results, and so on until the model answers without calling a tool, or
// [WithMaxSteps] model requests were made. The [RunResult] carries the final
// text, the messages the turn added, the summed [Usage], the [Status]
// (completed, failed, cancelled, paused) and the error. Repeated runs
// continue the same conversation. Cancelling the context stops the model
// request and the running tools; the run ends as cancelled, and the calls
// it interrupted get error results so that the conversation stays valid.
//
// A tool whose permission is ask (from the tool, the [PermissionManager] or
// a [ToolCallMiddleware]) pauses the run: the result has status paused and
// the pending [ApprovalRequest]s. [Agent.Resume] with a [Decision] for each
// continues the same turn. A pause is not a completion: no turn-end or
// turn-complete callback runs for it.
//
// # Tools
//
// [NewTool] builds a tool from a typed function and infers its input schema
// from the input type with github.com/google/jsonschema-go; a [Tool]
// literal takes an explicit schema. Arguments are validated against the
// schema before the tool runs. Bad input never crashes a run: invalid
// arguments, an unknown tool, a denied or blocked call, a panic and a
// timeout each come back to the model as an error result naming the
// problem, with a [ToolStatus] for observers. Calls of one step to tools
// marked Concurrent run in parallel; results keep the order of the calls.
//
// # Order of middleware, interceptors and hooks
//
// Middleware runs in registration order: first the agent's own (the
// options given to New), then each extension's, extensions in install
// order. Within each stage:
//
//   - Interceptors nest: the first registered is outermost, as with
//     net/http handlers wrapped in order. Each may derive the
//     context.Context that everything inside it sees.
//   - "Before" stages (model request, tool call) run in registration order.
//   - "After" stages (model response, tool result) run in reverse
//     registration order, so the first registered middleware sees the
//     final value, as it would around a wrapped call.
//
// One model request attempt runs as
//
//	ModelInterceptors( BeforeModelRequest… → PrefixKey → EventModelRequestStart
//	    → Provider.Generate → EventModelRequestEnd → AfterModelResponse… (reversed) )
//
// One tool call runs as
//
//	ToolInterceptors( EventToolCallStart → lookup → permission → BeforeToolExecution…
//	    → schema validation → tool (timeout, panic recovery)
//	    → AfterToolExecution… (reversed) → EventToolCallEnd )
//
// and one run as
//
//	RunInterceptors( EventRunStart → OnTurnStart… → steps → OnTurnEnd…
//	    → OnTurnComplete… (reversed) → EventRunEnd )
//
// After-tool middleware also sees the error results the engine made for
// denied, blocked, invalid and unknown calls, so a result transform (such as
// spilling) applies to every result the model reads.
//
// Hooks observe; they do not change anything. They run synchronously with
// the context of the step they belong to. A hook that returns an error or
// panics is logged through log/slog and reported as [EventHookFailed]; it
// never fails the run. A hook's event is its own until it returns: the
// engine reuses the memory of the events every run has (see [Hook]), so a
// hook that keeps one keeps a copy.
//
// # Extensions
//
// An [Extension] has a unique, non-empty name and installs through an
// [ExtensionContext], whose registrations return a [Handle] that removes
// them. Install order is by [Prioritizer] priority (default 100, lower
// first; ties keep the given order). Name collisions are rejected before
// any install; a failed install rolls back that extension's registrations.
// The lifecycle follows the harnessx extension guide:
//
//	callback         when                                   order
//	Install          during New                             install order
//	OnTurnStart      start of Run; error fails the turn     install order
//	OnTurnEnd        successful finish; error fails it      install order
//	OnTurnComplete   completed, failed or cancelled         reverse
//	OnSaveSession    Agent.SaveSession, SaveExtensionState  install order
//	OnLoadSession    LoadSession, LoadExtensionState        install order
//	Teardown         Agent.Close                            reverse
//
// As the guide says, OnSaveSession also serves engine snapshots and may
// run many times in a turn: a durable runtime takes
// [Agent.SaveExtensionState] after every step, under [AsSnapshot], and on
// recovery gives the last one to [Agent.LoadExtensionState], so
// OnLoadSession runs during recovery too. Neither is a one-time signal.
// An extension whose state is costly to encode implements
// [StateVersioner], and a snapshot reuses its last encoding while its
// version stays the same.
//
// # Portable extension features
//
// Beyond tools, middleware, hooks and prompt providers, an
// [ExtensionContext] offers what a portable extension (an MCP adapter, web
// access, subagents) needs:
//
//   - Storage: [ExtensionContext.Storage] is a synchronous key-value store
//     of JSON values (Get, Put, Delete, List by prefix) per namespace, with
//     [Storage.Session] for one session's values. By default it is a file
//     store under the state directory ([WithStateDir], default .harnessx),
//     written atomically (temporary file, sync, rename), so values survive
//     a restart and a [LoadSession]; a durable runtime plugs its database
//     in with [WithStorage] (any [StorageBackend]; harnesstest has the
//     conformance suite).
//   - Deferred tools: a [Tool] with Deferred set is in the catalog but not
//     offered to the model until the session activates it — from a tool's
//     result ([ActivateTools] in a handler, or [ToolResult.Activate]) or
//     with [Agent.Tools] (Activate, Deactivate, Offered). An agent is one
//     session, so Agent.Tools is that session's set. Activations are saved
//     with the session, and a change of the offered tools shows in the
//     [PrefixKey] as a cache break caused by "tools".
//   - Tool transforms: [ExtensionContext.TransformTools] adds a
//     [ToolTransform], which sees the base catalog (tools from WithTools and
//     registrations, or the previous transform's output) and returns the
//     catalog. The catalog is rebuilt from the base at every registration
//     change (all of one Install's registrations are one change) and
//     [ExtensionContext.RefreshTools], so a refresh cannot undo a policy,
//     an edit never applies twice, and a removed source's tools
//     disappear. Deferral applies after the transforms. A transform must
//     not change registrations ([ErrInTransform]); one that panics is
//     skipped and reported to [EventHookFailed] hooks.
//   - Instructions: [ExtensionContext.Instructions] sets named sections of
//     the system prompt, in key order, between the base prompt and the
//     prompt providers' texts.
//   - Commands: [ExtensionContext.RegisterCommand]; [Agent.Run] resolves
//     "/name args" input before anything is stored or sent to the model. A
//     command's output comes back in [RunResult.Command] (and as Text); a
//     prompt it returns becomes an ordinary run. Under a run ID from
//     [ContextWithRunID] the command run is recorded, so a retried
//     submission does not run it twice, nor submit its prompt twice: a
//     plain agent records the prompt's run's outcome and returns it, a
//     durable runtime replays the run's recorded steps. An unknown command
//     fails with [ErrUnknownCommand], listing the available ones.
//   - Features: [ExtensionContext.Supports] tells what this engine offers
//     ([FeatureStorage], [FeatureDurableAsks], …). An extension that uses
//     a missing feature during Install without asking first — or declares
//     it with [ExtensionContext.Require] — fails its install with an
//     [*UnsupportedError] naming the feature.
//   - In a tool: [Update] publishes live metadata to [EventToolUpdate]
//     hooks ([UpdatesObserved] tells whether any listens); [AskUser] asks the user a question (durable with a durable
//     runtime, else through the application's [WithAsker]);
//     [ToolCallID] and [ExecutionKey] name the call.
//   - The agent's model: [Agent.Generate] sends one model request with
//     the agent's provider outside the conversation (an MCP server's
//     sampling request, say). It goes through the model interceptors and
//     middleware, so a tracer's chat span is a child of the span in its
//     context, and gets the agent's model, max tokens and temperature
//     where it sets none; it adds nothing to the conversation, the run's
//     steps, usage or the session, is not recorded by a durable runtime,
//     and fires the model-request hooks with Step 0. It is safe for
//     concurrent use, from a running tool too, so the provider may be
//     called from several goroutines at once.
//   - Before-execution middleware edits the input ([ToolCall.SetInput]),
//     blocks ([Block]) or asks for a durable approval ([Ask]); after-execution
//     middleware replaces the result. [ToolCallFunc] and [ToolResultFunc]
//     make middleware of functions.
//
// The events of the portable-extension design map onto hooks:
//
//	session created   EventSessionStart (New; LoadSession with Event.Restored)
//	message end       EventMessage (each message added to the conversation)
//	tool end          EventToolCallEnd
//	turn end          EventRunEnd (paused runs included; Result.Status says)
//	tool update       EventToolUpdate
//	command           EventCommand
//
// Delivery is at least once: a durable runtime that recovers a run executes
// it again, and the hooks of the steps it did not record — messages, tool
// updates, run start and end — fire again, as does EventSessionStart for
// the rebuilt agent. A hook that counts or writes must tolerate repeats
// (key them by [Event.RunID] and [ExecutionKey]).
//
// # Deliberate differences from the portable-extension design
//
// The portable-extension design (one extension format for several
// harnesses) is the model of the features above; where this engine
// differs, it is on purpose:
//
//   - An extension is a value with a name and an Install method, not a
//     function of its context: the harnessx extension guide's lifecycle
//     (priorities, turn callbacks, saved state, teardown, rollback of a
//     failed install) needs methods, and registrations return a [Handle].
//   - An agent is one session. The design's session(id) API — submit,
//     tools.activate, deactivate, offered — is [Agent.Run] and
//     [Agent.Tools]; a session's storage is [Storage.Session] with
//     [ExtensionContext.SessionID]. There is no "note" (a message added
//     without a turn), and no skills source.
//   - Storage is synchronous, as designed, but Go's: each method takes a
//     context and returns an error, and a store that cannot work (a bad
//     name, no storage, a nested session) reports it at every call and
//     from [Storage.Err]. Sessions do not nest: Session on a session's
//     store fails with [ErrNestedSession] instead of re-scoping.
//   - execute.before and execute.after hooks are middleware stages
//     ([ToolCallMiddleware], [ToolResultMiddleware]); hooks only observe.
//     An ask from execute.before pauses the run for an approval that
//     [Agent.Resume] decides (durable with a durable runtime).
//   - The catalog is rebuilt from its base when registrations change or
//     an extension calls [ExtensionContext.RefreshTools] (a source whose
//     tools changed calls it); the registrations of one Install are one
//     change, so its transforms run once for them. A transform must not
//     change registrations ([ErrInTransform], where the design leaves it
//     open), and a transform that panics is skipped and reported
//     ([EventHookFailed]) rather than failing the catalog.
//   - call.ask is [AskUser]. A durable runtime parks it and needs the tool
//     to be ReplaySafe, as designed; without one, or for other tools, an
//     application's in-process answerer ([WithAsker]) takes it, and with
//     neither it fails ([ErrAskUnsupported]; [ErrAskNotReplaySafe] when
//     only the tool's replay policy kept a durable runtime from asking).
//   - A command's operation ID is the run ID of [ContextWithRunID]; a
//     plain agent records the outcome of a command's prompt run, since it
//     has no durable submission to dedupe it (see [Agent.Run]).
//   - Feature checks are loud only during Install: afterwards a missing
//     feature's methods return an [*UnsupportedError].
//   - Install is synchronous and the agent is not built until New
//     returns: [Agent.Run], Resume and Close during Install fail with
//     [ErrInstalling].
//   - "session created" fires for every agent that New or LoadSession
//     builds, a durable runtime's rebuilt agents included, not only for
//     sessions created through an API.
//
// # Images, documents and audio
//
// Besides text, tool calls, tool results and reasoning, a [Part] can be an
// image, a document (PDF, plain text) or audio ([PartImage],
// [PartDocument], [PartAudio]), whose [Media] holds the bytes, a URI or a
// provider file ID, with a MIME type and an optional name. [ImagePart],
// [ImageURL], [DocumentPart], [DocumentURL], [AudioPart] and [FilePart]
// build them, [Text] builds a text part, and [UserParts] a user message of
// parts, which [Agent.RunMessage] runs as Run runs a string. A tool
// returns parts beside its text: [NewTool] recognises a [ToolOutput]
// result, and a [Tool.Handler] adds them with [AddResultParts]; either
// way they are [ToolResult.Parts].
//
// A part's bytes are held once. Messages share their Media by pointer, so
// the history, every model request of every step and a result middleware
// see the same []byte; the engine never copies it. A provider encodes it
// for its API once per request; providers/anthropic and providers/openai
// stream that base64 into the request body rather than build it. The prompt-cache prefix key covers a
// media part by the SHA-256 of its bytes, computed once per Media and
// cached ([Media.SHA256]), so a 5 MiB image adds 32 bytes to what is
// hashed, and when an image in the prefix changes, [PrefixKey.Break] names
// the message and part (and the tool result's part) that changed, with
// the digests before and after. Sessions, pending approvals and the
// JSON a durable runtime records keep the bytes as base64
// (encoding/json's encoding of a []byte), not a reference.
//
// A part whose inline bytes exceed the inline limit ([WithInlineLimit],
// default [DefaultInlineLimit], 5 MiB) is refused where it enters:
// RunMessage fails with a [*PartSizeError] and stores nothing, and a tool
// result carrying one (checked after the result middleware, which may
// replace the part by a reference) becomes an error result whose text
// names the part and the limit. A part that refers to its content by URI
// or file ID has no inline bytes. A provider that cannot send a part to
// the request's model fails before sending anything, with an
// [*UnsupportedPartError] ([ErrUnsupportedPart]) naming the message, the
// part, its MIME type and the model. [Agent.AcceptsURL] tells whether the
// provider takes a part of a type and MIME type by URL, as the provider's
// [URLAccepter] says (providers/anthropic and providers/openai implement
// it): the spill extension asks before it replaces a large part's bytes
// by a link to a copy in its store.
//
// # Sessions and the prompt-cache prefix key
//
// [Agent.SaveSession] writes versioned JSON with the conversation, pending
// approvals and extension states; [LoadSession] rebuilds an agent from
// options and restores it. [Agent.SaveExtensionState] and
// [Agent.LoadExtensionState] move the extension states alone. Each model request carries a [PrefixKey]: a
// SHA-256 of the model, the tool definitions, the system prompt and the
// stable message prefix, with per-part hashes and the list of parts that
// changed since the previous request, so a broken prompt cache can be
// traced to its cause. The key is computed only when something reads it
// (see [PrefixKeyUser]): a run with a provider that does not, and with no
// model interceptor, response middleware or model request hook, hashes
// nothing.
//
// # Durable execution
//
// The engine knows no durable runtime; it offers a seam that one (the
// durable package) implements. [WithStepRunner] installs a [StepRunner]
// through which the run loop runs each model request (retries,
// interceptors, middleware and hooks included) and each group of tool
// calls: a run of consecutive Concurrent calls, started in call order, or
// a single call. Each [Step] has a key, stable when the same run is run
// again under the same run ID:
//
//	model request   <run id>/model/<step>
//	tool call       <run id>/tool/<step>/<call id>    (step: the model step that made the call)
//	question        <run id>/tool/<step>/<call id>/ask/<n>
//
// A durable runner records each step's outcome under its key and, when a
// crashed run is recovered, returns the recorded outcome instead of doing
// the work again: no second model request, no second span, no second
// tool effect. Without a runner (the default) steps run directly and the
// seam costs nothing.
//
// [ContextWithRunID] makes Run use the runtime's ID (its workflow ID), so
// that a recovered run has the same keys. [ContextRecovered] tells Run (and
// Resume) that the runtime executes the run again after a crash, and which
// attempt this is: run interceptors see [RunInfo.Recovered] and
// [RunInfo.Attempt], run-start hooks [Event.Recovered] and [Event.Attempt].
// [RunIDFromContext] and [RunInfoFromContext] return the run a context
// belongs to, anywhere inside Run or Resume: a tracer's ID generator
// derives the trace ID from the run ID with it, so that the attempts of a
// run share one trace (see the exporters and tracing packages). [ExecutionKey] returns the key
// inside a tool handler or a model request, with or without a runner, for
// use as an idempotency key with external APIs. [Now] returns the runner's
// recorded time when it implements [Clock].
//
// A tool's [ReplayPolicy] tells the runner what to do with a call that
// started but has no recorded outcome: a ReplaySafe call runs again from
// its start; a ReplayUnsafe call does not, and the model gets an error
// result with status [ToolInterrupted] saying that its outcome is unknown
// (the runner calls the step with [InterruptedContext], so interceptors,
// hooks and result middleware see that result like any other).
//
// [AskUser] lets a tool ask the user a question (confirm, select, input).
// A runner that implements [Asker] parks the question and stores the
// answer under the question's ID, which is derived from the execution key
// and so is the same when the tool runs again after a crash; it serves
// ReplaySafe tools only, since the asking tool reruns from its start.
// Instead of waiting, the runner may suspend the run ([ErrSuspended]):
// the asking call ends with status [ToolSuspended] whatever the tool
// makes of the error, the model does not see it, and the run ends with
// [StatusSuspended] (no error); the runner continues the run once the
// question is answered, and the call, run again, gets the answer. A
// durable runtime does so, so that a waiting run holds no worker.
// The questions no runner takes — no durable runtime, a tool that is not
// ReplaySafe, a call outside the runner's durable runs (its Ask then
// returns [ErrAskUnsupported]) — go to the application's answerer,
// installed with [WithAsker], in process; with none, AskUser returns
// ErrAskUnsupported. The runner comes first because its answers survive
// a crash. The answerer is an [AnswerFunc], a function rather than an
// interface such as Asker: an application writes it inline or passes a
// method value (WithAsker(prompter.Answer)), and it has no [Step] to
// deal with, which only a runner needs.
//
// Recorded steps are not run again, but everything around them may be: on
// recovery the turn-start and turn-end callbacks, prompt providers, run
// interceptors, and the middleware and hooks of steps that did not finish
// can run a second time, as the extension guide warns. External effects
// belong in tools, keyed by the execution key; hooks and completion
// callbacks are best-effort observation.
//
// # Subagents
//
// [AgentTool] wraps a child agent as a tool. The child keeps its own
// extensions, and its run's context derives from the tool call's.
//
// # Design notes
//
//   - Middleware stages are small interfaces found by type assertion, not
//     one func(Next) Next chain: the guide's middleware "implements any
//     subset" of four transformation stages, and a transformation that only
//     edits a value needs no next to call. Where a feature must run around
//     a call with a derived context (a span), the interceptors are the
//     wrapping form, first registered outermost.
//   - Registrations are copied into an immutable snapshot on every change
//     (once for a batch: New's options, an Install, a rollback or a
//     Close), so a step reads them without a lock and a run with no hooks,
//     interceptors or prompt providers allocates nothing for them.
//   - [Agent.SaveSession] does not wait for a running turn, because
//     observers (the flight recorder) snapshot sessions from hooks during a
//     turn. [AsSnapshot] marks such observation-only saves, so that savers
//     take no ownership action for them.
//   - A prefix key reports a changed message prefix only when the previous
//     prefix is no longer a prefix of the new one: appending to the
//     conversation keeps a provider's cache and is not a break.
//   - Arguments are validated against the tool's schema with the schema
//     library; a fast path derived from the schema itself accepts the most
//     common shape (an object of scalar properties) without allocating, and
//     leaves every doubtful input to the library, which a fuzz test checks.
package harness
