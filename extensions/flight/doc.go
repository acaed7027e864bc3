// Package flight is the harnessx flight recorder: an extension that keeps
// a bounded, crash-safe record of what an agent did and exports incident
// bundles that the flightrec command lists, shows, verifies and pushes to
// a tracing backend.
//
// The package has two sides, documented apart:
//
//   - recording, in the agent's process: [New] returns the extension,
//     configured by [Option]s, which keeps the journal and snapshots and
//     writes incident bundles (the sections "Recording: …" below);
//   - reading, anywhere and after the fact: [ReadBundle] and
//     [ReadBundleFile] read and verify a bundle ([Bundle]), [ExportJournal]
//     builds one from a recording left on disk, [ReadJournal] reads its
//     events (the section "Reading: bundles and journals"). The
//     flightrec command is built on this side, and needs no agent.
//
// # Recording: the extension
//
// [New] returns the extension; install it with harness.WithExtensions. It
// subscribes to every hook event and records runs, model requests and
// responses (with usage), tool calls and results (status, duration),
// approvals, errors, hook failures and extension failures as [Event]s,
// each with the trace and span IDs of the hook's context when tracing is
// on, the run and session IDs, the agent, the step and the time. A run
// that a durable runtime executes again after a crash
// ([harness.ContextRecovered]) is recorded with a [KindRecovered] event,
// before its run_start, both carrying the attempt (2 and up): the journal
// of a session shows where a run was recovered and, with the tracing
// extension and a run-derived trace ID (exporters.RunTraceIDs), in which
// trace — the same as the crashed attempt's. A recovery is not a failure
// and triggers no incident bundle.
//
// Events go to two places: a bounded in-memory ring, and an append-only
// journal of binary event lines ([Event] encoded, [ParseEvent] decodes
// them) in size-capped segment files
// (seg-00000001.events, …, mode 0600) under <dir>/<session ID>/, where dir
// comes from [WithDir], else $HARNESSX_FLIGHT_DIR, else .harnessx/flight.
// Past the journal's total cap the oldest segments are deleted
// ([WithJournalOptions] sets the caps). An append
// only encodes the event into preallocated buffers; a writer goroutine
// that does nothing but write writes each batch a few milliseconds later
// with plain write(2) calls (on a processor the agent keeps busy, the
// recorder yields it to that goroutine once a batch is late, rather than
// leave it waiting for the scheduler to preempt the agent; and when that
// goroutine is starved of CPU, the next append writes the batch
// itself), so a process killed with
// SIGKILL leaves on disk everything accepted more than a few tens of
// milliseconds before, and readers skip a torn last line.
//
// A journal line is binary: the event's fields as tags and varints, its
// IDs raw, a CRC-32C; its newlines, carriage returns and escape bytes
// escaped, so that a line is still a line and a torn last line has no
// newline. It is about a third of the bytes of the event's JSON line and
// takes about half the instructions to encode, and a damaged line fails
// its checksum instead of reading as another event. Recordings written
// before format 2 of recording.json hold JSON lines (seg-00000001.jsonl,
// …), which every reader here still reads. To read a journal by eye,
// flightrec events prints its events as whole JSON lines
// ([Event.AppendJSON], as a bundle's events.jsonl holds them).
//
// A journal line also leaves out what the recording or an earlier line
// already says: fewer bytes kept and written, more events within the
// caps. The ring holds the same lines, so that an event is
// encoded once, and [Extension.Events] and bundles put back what they
// leave out. The agent and session ID are left out when they are the
// recording's (recording.json holds them); the run ID and trace ID are
// left out when the last line that carried them, at most 64 lines
// before, carried the same ones, and "ref" gives that line's seq instead
// (a run's first line carries them, so do the lines after a failed
// write). [ReadJournal], [ExportJournal] and flightrec put them back; a
// line whose named line is gone (a lost write, a deleted segment, so at
// most the first lines of the oldest segment left) reads without run and
// trace ID, never with another run's.
//
// A write that fails (disk full, file size limit) loses its batch: the
// events are counted in [Stats].Lost, the first failure is logged through
// the agent's logger (then at most once a minute), and Flush returns the
// error; a cut line is removed, and writing resumes by itself as soon as
// the disk takes data again, which clears the error.
//
// Beside the journal the recorder keeps the latest session snapshot
// (session.json), the spans of its most recent traces and, with
// [WithIncludeArtifacts], its own copies of
// the agent's artifacts with their index (artifacts.json), so that an
// export after a crash has them. A snapshotter goroutine writes them, so
// that neither runs nor journal writes wait for them: the session and the
// spans at most once per snapshot interval ([WithSnapshotInterval]),
// backing off when snapshots are slow so that span and session snapshots
// together take at most a twentieth of a CPU (span snapshots at least
// every 30 seconds, or every interval when that is longer). A session
// snapshot of a session that did not change since the last one writes
// nothing, and one of a session that changed redacts again only the
// top-level members of the saved session (the messages, the extensions'
// states, …) whose JSON changed. Of the session the recorder keeps its
// last redaction alone, about the session's size; it knows the saved
// JSON of the last snapshot and of each member by length and hash. A span snapshot costs what the spans
// that ended since the previous one cost: it appends them as one OTLP
// JSON line (hex IDs) to spans.jsonl, and rewrites spans.json with the
// whole span buffer only when the log passes 8 MiB, at Close, and when
// the log is not empty and the new spans are the whole buffer (spans end
// faster than the buffer holds them: the snapshot replaces the log);
// readers merge the two, each span once, and skip a torn last line. A turn's
// completion writes the session itself only while that is cheap (see
// [Extension.OnTurnComplete]). Artifacts are copied as each tool call ends
// (hard links when on the same file system, copies otherwise) into
// <recording>/artifacts/<extension>/<name>, only the new ones, within
// [WithArtifactLimit]; past it new artifacts are skipped, named in the
// index and exports with the reason, and counted. A turn's completion
// makes sure its artifacts are copied, so they survive the extension that
// removes them at Close, and [ExportJournal] includes them after the
// process is gone.
//
// When the journal opens, the oldest other recordings under the root
// directory are deleted past [WithRecordingLimits] (50 recordings, 2 GiB
// by default); a recording in use, by this process or another, is locked
// and never deleted. Close the agent to flush the journal and stop the
// goroutines.
//
// # Recording: media parts
//
// Events name the media parts with inline bytes (images, documents,
// audio) by reference, never by their bytes: [Event].Parts holds each
// part's type, MIME type, name (redacted), size and URI,
// "artifact:sha256:<hex>" (the SHA-256 of the bytes, the reference the
// tracing extension records in spans too). A model_request names the
// parts of the messages it sent that no earlier event of the run named
// (the user message's parts appear there: run_start holds its text); a
// model_response and a tool_result name their own parts. The session
// snapshot names them the same way: each inline part's base64 "data" is
// replaced by "uri" and "size" before the snapshot is written (and in
// bundles, whatever recorder wrote the snapshot), so a 5 MiB image costs
// the journal and session.json about a hundred bytes.
//
// With [WithIncludeArtifacts] the recorder also keeps the bytes, so that a
// bundle can hold them after the process is gone. The hook only queues
// the part (its own bytes, which the conversation holds anyway: no copy);
// the snapshotter writes each part once, content-addressed, to
// <recording>/parts/sha256-<hex> (mode 0600), through a temporary file
// renamed into place, so a part file is whole or absent; a turn's
// completion writes its parts before it returns, and a kill loses at most
// the parts of the last milliseconds. The bytes are checked against the
// digest when written. Parts share the recording's artifact limit
// ([WithArtifactLimit]) with the artifact copies: to make room, the parts
// named least recently are deleted first ([Stats].PartsEvicted); a part
// that cannot fit is not kept ([Stats].PartsSkipped). The part store is
// part of the recording: it counts in [WithRecordingLimits] and goes with
// the recording when that is evicted, and a process that records the same
// session again adopts it. Without [WithIncludeArtifacts] no part byte is
// written anywhere.
//
// A bundle made with its artifacts (automatic and explicit bundles of a
// recorder with [WithIncludeArtifacts], [ExportOptions].IncludeArtifacts)
// holds under [PartsDir] the bytes of every part that its events, spans
// and session refer to, once each (parts/sha256-<hex>), as they are: part
// bytes are not redacted. It says so in [Manifest].IncludedArtifacts, and
// names in [Manifest].MissingParts each part it cannot hold, with the
// reason. A bundle made without its artifacts holds no part byte.
//
// # Recording: spans
//
// [Extension.SpanProcessor] is an OpenTelemetry SDK span processor that
// keeps the recent ended spans (2,048 by default, [WithSpanCapacity]), so
// that bundles carry the run's spans as OTLP JSON without any tracing
// backend. It keeps them encoded in one byte arena, not as the SDK's span
// objects: a full buffer is a few objects to the garbage collector
// instead of tens of thousands to mark at every cycle (in
// BenchmarkFullStack that was ~5 µs a run), for a copy of each span's
// values when it ends (~0.3 µs for a span of 21 attributes). Attribute
// keys are kept as numbers, and string values of 512 bytes or more (tool
// definitions, system instructions, message histories) as references to
// the strings themselves, up to four a span: the same tool definitions
// on every chat span are held once. The processor reads the SDK's own
// ended spans in place, not through their getters, each of which copies
// the whole span: only when the linked SDK's span type has exactly the
// layout the processor knows (each field's name, type and offset, checked
// once with reflect); any other span, or another SDK's, goes through the
// getters. Reading spans back decodes them. At the first run the recorder
// registers it on the TracerProvider of the agent's tracing extension
// (found through its TracerProvider method) when that is an SDK provider,
// *sdktrace.TracerProvider or exporters.Provider, and unregisters it at
// Teardown; [WithSpanRegistration] turns that off. A provider of another
// kind cannot give spans back: register the processor on the SDK provider
// behind it. A bundle whose events carry trace IDs but which holds no span
// says why in [Manifest].SpansNote. The manifest names the spans' service
// ([Manifest].Service: their resource's service.name, else the agent's
// name). The conversion is the OTLP exporter's own (otlptrace.New with a
// capturing client).
//
// # Recording: incident bundles
//
// A failed run, a tool panic, a cancelled run ([WithTriggers] selects
// them) or a call of [Extension.Trigger] exports a bundle into
// <recording>/incidents/: a .tar.gz holding manifest.json ([Manifest]:
// format version, times, agent, run and session IDs, counts by kind,
// SHA-256 and size of every other member, redaction summary, missing
// artifacts with the reason), events.jsonl, spans.json, session.json and,
// only when asked, artifacts/<extension>/<name> and the media parts'
// bytes, parts/sha256-<hex> (see Media parts). Automatic bundles are
// written by a background goroutine from copies taken when the trigger
// fires, so a failed run does not wait for its bundle; they are limited to
// [WithIncidentRate] (10 a minute by default; the others are counted in
// [Stats].IncidentsSuppressed). Trigger waits for its bundle; Flush and
// Close wait for the pending ones. After each bundle the oldest are
// deleted past [WithIncidentLimits] (100 bundles, 1 GiB by default). To
// read a bundle, or build one from a journal after a crash, see Reading.
//
// # Recording: the Go execution trace
//
// [WithExecutionTrace] gives the recorder the process's
// runtime/trace.FlightRecorder, which the application creates, starts and
// stops (there is one per process; the recorder never starts one). Each
// bundle made while it runs gains the member [ExecutionTraceName]
// (runtime/flight.trace): fr's window of the last seconds, written by
// FlightRecorder.WriteTo when the bundle is made, with its SHA-256 in the
// manifest. Open it with
//
//	tar -xzf BUNDLE runtime/flight.trace && go tool trace runtime/flight.trace
//
// When the recorder is not running, or the snapshot fails, the bundle has
// no trace and [Manifest].ExecutionTraceNote says why.
//
// Whenever an execution trace is being recorded (a flight recorder or
// trace.Start), each run is a task of type [RunTaskType] that logs its run
// ID ([LogRunID]) and the OpenTelemetry trace ID of its spans
// ([LogTraceID]), and each tool call is a region named [ToolRegionPrefix]
// + the tool's name, so that `go tool trace` shows the goroutines, the
// scheduler and the garbage collector around one run and leads to its
// spans. When no trace is being recorded (runtime/trace.IsEnabled is
// false) the annotations cost a branch and no allocation.
//
// # Recording: redaction
//
// Secrets are redacted before anything the recorder encodes is written,
// journal, snapshots and bundles alike (artifact copies are kept as the
// extension stored them, and redacted when they go into a bundle), by the
// rules the tracing extension also applies to span content: provider API
// keys (sk-ant-…, sk-…), JWTs, GitHub (ghp_, gho_, ghu_, ghs_, ghr_,
// github_pat_), GitLab (glpat-), Slack (xoxb-, xoxp- …), Google (AIza…),
// Stripe (sk_live_, rk_live_, _test_) and npm (npm_) tokens, Slack webhook
// URLs, Bearer tokens, AWS access and secret keys, whole PEM private key
// blocks, the password of URLs and connection strings
// (postgres://user:pass@host, redis://:pass@host; user and host stay) and
// of curl -u user:pass, and the value, quoted or not, assigned to a name
// containing KEY, TOKEN, SECRET, PASSW, PASSPHRASE or CREDENTIAL, or AUTH
// as a word (case-insensitive) in env files and shells
// (export DB_PASSWORD="…"), YAML (client_secret: "…"), TOML
// (api_key = '…'), JSON ("api_key": "…", "auth": "…", also inside
// strings), query strings (?api_key=…&token=…) and HTTP headers
// (X-Api-Key: …, Authorization: Basic …); plus the rules and functions
// given with [WithRedactRules] and [WithRedactor]. Each redaction leaves a
// marker such as [REDACTED:url-password] (rules: private-key,
// anthropic-key, openai-key, jwt, github-token, gitlab-token, slack-token,
// slack-webhook, google-api-key, stripe-key, npm-token, url-password,
// curl-password, bearer-token, aws-access-key, aws-secret-key,
// secret-json-field, secret-assignment); the manifest counts them by rule.
//
// # Recording: what it costs in memory
//
// A recorder keeps its buffers for as long as it records: the event ring
// (4,096 slots of 512 bytes, 2 MiB), the span buffer's records (an arena
// of about twice the kept records, 2 MiB for 2,048 spans of a traced
// agent), the journal's two batch buffers (256 KiB each) and the span
// snapshot's encoding buffer (8 MB for 2,048 such spans): 13–15 MB in
// BenchmarkFullStack, nearly all of it without pointers, so that the
// garbage collector marks it at almost no cost. In a process whose own
// live heap is small, it raises the heap goal, so that collections come
// less often. It also lets the goal swing from one cycle to the next by
// what is allocated while a collection marks, and the runtime's
// background scavenger then returns pages to the system that the next
// allocations fault back in: 0.25–0.5 page faults and 0.5–1.5 µs of system
// time a run in that benchmark (docs/benchmarking.md). A process that
// would rather keep those pages can run with GODEBUG=madvdontneed=0,
// which returns them with MADV_FREE: the kernel takes them back only
// under memory pressure, and the process's resident size reads higher
// meanwhile.
//
// # Reading: bundles and journals
//
// This side needs no agent and no extension: it works on files, in the
// flightrec command, a test or an on-call tool.
//
// [ReadBundle] (from a reader) and [ReadBundleFile] (from a path) read a
// bundle within [ReadOptions]' caps, hashing every member and keeping in
// memory all but the artifacts and media parts (unless asked), and reject
// hostile archives: unsafe member paths, links, duplicate or oversized
// members, truncated or corrupt compression, a bad manifest ([ErrBundle],
// [BundleError]). They extract nothing to disk. On the [Bundle]:
//
//   - [Bundle.Verify] checks every member's size and SHA-256 against the
//     manifest, each parts/sha256-<hex> member against the digest its name
//     says ([ParsePartMemberName]), in a bundle made with its artifacts
//     that each part reference has its member or is named missing, and that
//     runtime/flight.trace, when present, is a Go execution trace; its
//     [VerifyError] lists each [Problem];
//   - [Bundle.Events] decodes the events; [Bundle.Member] returns a
//     member's bytes, such as the spans ([SpansName]: an OTLP/JSON export
//     request, which an OTLP/HTTP receiver takes as it is);
//     [Bundle.Artifacts] and [Bundle.Parts] name the artifact and part
//     members; the [Manifest] says what the bundle holds and misses.
//
// [ExportJournal] builds the bundle of a recording directory from what is
// on disk — its journal segments (a torn last line is skipped and
// counted), its snapshots and, when [ExportOptions] asks, its artifact and
// part copies — for instance after the process crashed: the same bundle
// the recorder writes on a trigger. [ReadJournal] reads a recording's
// journal event by event, whole; [ParseEvent] decodes one line as it is.
package flight
