// Flightrec reads the recordings of the harnessx flight recorder
// (github.com/harnessx/harnessx/extensions/flight): it lists them, exports
// incident bundles from their journals (after a crash too), shows a
// bundle's timeline, verifies its checksums and pushes its spans to an
// OTLP/HTTP endpoint such as Jaeger, an OpenTelemetry Collector or
// LangSmith. It is also a local trace viewer: it lists the runs of the
// local trace file and of the recordings, prints a run's span tree, and
// serves a web page with a waterfall of each run's spans.
//
// Usage:
//
//	flightrec list    [--dir DIR] [--json]
//	flightrec export  [--dir DIR] [--run ID | --last] [--recording NAME] [--include-artifacts] -o FILE|DIR|s3://BUCKET/PREFIX/NAME
//	flightrec events  [--dir DIR] [--run ID | --last] [--recording NAME]
//	flightrec show    [--json] FILE
//	flightrec verify  FILE
//	flightrec push    [--endpoint URL | --langsmith] [--timeout D] [--service NAME] FILE
//	flightrec runs    [--traces FILE] [--dir DIR] [-n N] [--json]
//	flightrec trace   [--traces FILE] [--dir DIR] [--attrs] [RUN-ID | TRACE-ID | --last] [--follow]
//	flightrec ui      [--addr HOST:PORT] [--listen-any] [--traces FILE] [--dir DIR]
//
// Every command prints its flags with -h or --help (and exits with 0).
//
// The recording directory is --dir, else $HARNESSX_FLIGHT_DIR, else
// .harnessx/flight. It holds one subdirectory per agent session: the
// journal segments (seg-00000001.events, …, or seg-00000001.jsonl, … in
// recordings written before the journal's lines were binary),
// recording.json, the latest
// session and span snapshots, and incidents/ with the bundles the
// recorder exported by itself.
//
// The trace file is --traces, else $HARNESSX_TRACES_FILE, else
// .harnessx/traces.jsonl: the OTLP JSON lines that the file exporter of
// github.com/harnessx/harnessx/exporters writes (exporters.NewFile), the
// offline default of the tracing extension.
//
// # list
//
// List prints each recording (agent, session, event count, time span),
// its runs (status, events, start, duration, tool calls, tokens,
// failures; "running" for a run without an end, as after a crash) and its
// incident bundles. A run without an end counts the tokens of its model
// responses. Failures are distinct failures: a failed model request
// recorded as a failed response, an error and a failed run end is one.
// With --json it prints the same as JSON.
//
// # export
//
// Export builds an incident bundle from a journal and writes it to FILE
// (- for standard output; given a directory, it writes
// incident-<recording>[-<run>].tar.gz in it). It exports the run given by --run, the run that
// started last with --last, or else the whole recording given by
// --recording (default: the one with the latest event). A torn last line
// left by a killed process is skipped and counted in the manifest.
// --include-artifacts adds the artifacts (such as spilled tool results)
// that the recorder kept a copy of (flight.WithIncludeArtifacts), or that
// still exist unchanged where they were; each one that cannot be
// included is named on standard error with the reason. A bundle whose
// events were traced but that holds no span says why, on standard error
// too. Results that the spill extension stored in an S3 artifact store
// (github.com/harnessx/harnessx/extensions/spill/s3store) have no local
// file: with --include-artifacts and HARNESSX_ARTIFACTS set (with the
// AWS_* variables the store reads), export fetches the results that the
// recording's session snapshot lists from that store, checks their size
// and SHA-256, and includes them; one that cannot be fetched is named
// with the reason. Everything is
// redacted again on the way. Fetching from S3, and -o s3://, need a
// flightrec built with -tags s3 (see S3 below).
//
// Events name the media parts (images, documents, audio) a run sent or
// received by reference, "artifact:sha256:<hex>", and the session
// snapshot does too: no bundle carries a part's bytes as base64. With
// --include-artifacts the bundle also holds the bytes of every part it
// refers to, once each, as parts/sha256-<hex>, from the copies the
// recorder kept (flight.WithIncludeArtifacts); export prints how many,
// and names on standard error each part it could not include, with the
// reason. Part bytes are included as they are, not redacted. Without
// --include-artifacts a bundle holds no part bytes.
//
// With -o s3://bucket/prefix/name.tar.gz the bundle is written to that
// object, once (an existing object is not replaced), with the
// credentials, region and endpoint of AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_REGION and AWS_ENDPOINT_URL_S3; they never
// go into the bundle.
//
// S3: the default build of flightrec leaves the S3 client (minio-go and
// its dependencies, about 40 packages) out, so that a first build is
// quicker; given s3://, it fails at once saying so, and names the results
// held in S3 as not included. A build with S3 support:
//
//	go install -tags s3 ./cmd/flightrec      # in a clone of harnessx
//	go run -tags s3 ./cmd/flightrec export …
//
// An export that takes more than a second
// shows its progress on standard error: bytes and events read of the
// journal's total, and the rate since the start (rewritten in place on a
// terminal, a line every two seconds elsewhere). A missing output
// directory is reported as such.
//
// # events
//
// Events prints the events of a recording's journal on standard output,
// one JSON object a line, whole (the agent, session, run and trace IDs
// that a journal line leaves out put back), oldest first: a journal's
// lines are binary, and this is how to read one by eye or with jq. It
// prints the run given by --run, the run that started last with --last,
// or else the whole recording given by --recording (default: the one
// with the latest event). Torn and corrupt lines are skipped and counted
// on standard error. The recorder redacted the events when it recorded
// them; events redacts them again with the built-in rules, as export
// does.
//
// # show
//
// Show prints a bundle's timeline for people: the manifest's facts, the
// verification result, token and tool totals, each run's cost (its model
// responses priced with the tracing extension's price table: the built-in
// one, or the one HARNESSX_PRICES names; models without a price are
// named, and HARNESSX_PRICES=off leaves costs out), then one line per event
// with its offset from the first event, its step, its duration and a
// summary. The first failure is marked with ">>>" and repeated at the end;
// later failure events are marked with "!". The header counts distinct
// failures and the events that record them. With --json it prints the
// same timeline as JSON (durations in milliseconds). Given a recording
// directory instead of a bundle, show says so and points to export. A
// bundle from a recorder given flight.WithExecutionTrace holds the Go
// execution trace of its last seconds (runtime/flight.trace: runs as
// tasks, tool calls as regions, the OpenTelemetry trace ID logged); show
// prints its size and the command that opens it:
//
//	tar -xzf BUNDLE runtime/flight.trace && go tool trace runtime/flight.trace
//
// or why the recorder could not include it.
//
// # verify
//
// Verify reads a bundle, rejecting hostile archives (paths with "..",
// absolute paths, links, oversized members, truncated compression), and
// compares every member's size and SHA-256 with the manifest, and checks
// that runtime/flight.trace, when present, is a Go execution trace. It
// checks the media parts too: each parts/sha256-<hex> member's SHA-256
// must be the one its name says, and in a bundle exported with
// --include-artifacts every part reference of its events, spans and
// session must have its member, unless the manifest names it missing
// (printed as "missing", with the reason, which is no failure). It
// prints one line per member and exits with status 1 on any mismatch,
// naming the members at fault (a part referenced but absent is named by
// its member name).
//
// # push
//
// Push verifies a bundle and sends its spans (spans.json, OTLP JSON) with
// the OTLP/HTTP exporter. The endpoint is --endpoint (a full traces URL;
// one without a path gets /v1/traces), else what the OTLP exporter reads
// from OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT,
// else http://localhost:4318/v1/traces. An http:// endpoint is sent
// plain HTTP, an https:// one TLS. With --langsmith it sends to
// {LANGSMITH_ENDPOINT or https://api.smith.langchain.com}/otel/v1/traces
// with the headers x-api-key: $LANGSMITH_API_KEY and Langsmith-Project:
// $LANGSMITH_PROJECT. A refused or reset connection, a timeout and a 5xx
// or 429 answer are retried with backoff (100ms doubling to 2s) until
// --timeout (default 30s) has passed; push then fails naming the last
// error. While it waits it is not silent: when an attempt fails and will
// be retried, or nothing has answered within half a second, it says once
// on standard error what it waits for (the endpoint), why (connection
// refused, still sending) and until when (--timeout). Other answers (such as 400 or 401) fail at once. Spans whose
// resource names no service (none, or the SDK's "unknown_service:…"
// default) are sent under --service, else the bundle's service (the
// manifest's: the recorded spans' service name, else the agent's name),
// so that an incident shows under its agent in Jaeger. A bundle without
// spans is refused, with the reason the recorder gave when it knew one.
//
// # runs
//
// Runs lists the most recent agent runs (-n, default 20; 0 for all),
// oldest first, found in the trace file and in the recordings' span
// snapshots and incident bundles (a span found in several places counts
// once): start time, run ID, agent, status (ok or error; paused,
// cancelled and the like as they are), duration, spans, tokens in and out
// and cost summed over the model calls, and the spans that record an
// error, with the error type by name (an error without a Go type, which
// the tracing extension records as _OTHER, by a type another span of the
// run names, else by its text). The cost is the tracing extension's
// harnessx.cost.usd (see its Cost section), shown with four significant
// digits below a dollar ($0.00412) and in cents from a dollar up; "-"
// for a run without one. A run is a root invoke_agent span with its
// descendants; a subagent's spans belong to the run that called it. With
// --json it prints the runs' summaries as JSON (cost_usd, cost, state,
// error_label among them). A --traces or --dir that does not exist is an
// error, for runs and trace alike, and "no runs" names the default paths
// that do not exist.
//
// The trace file is indexed, not loaded: runs, trace and ui read each
// line once, keeping only what the summaries need and where each run's
// spans are, and trace and ui then read a run's spans from its lines
// alone, so a trace file of hundreds of MB lists its runs in seconds. A
// line longer than 64 MiB is skipped and named ("line N is longer than
// the limit"). Under --dir, recordings, span snapshots and bundles that
// resolve through symbolic links outside it are refused, with a warning.
//
// # trace
//
// Trace prints one run as a tree of spans under a header with its run
// ID, trace ID, status, start and cost: each span with its duration and
// what matters about it (tokens with cache reads and writes, the cost of
// a model call and of the run, stop reason, the prompt-cache prefix parts
// whose change broke the cache, tool and run statuses, errors marked with
// ✗). The run is given by its run ID or
// trace ID; without one, or with --last, it is the run that started last.
// --attrs prints every attribute too, long values cut. --follow watches
// the trace file and prints each new run as it completes (its root span
// arrives), until interrupted; with --last it first prints the last run.
//
// # ui
//
// UI serves a web page on --addr (default 127.0.0.1:7318; port 0 picks a
// free one) and prints its URL: the runs, newest first, a page at a time
// (25 to 200; Newer and Older), with their status, duration, spans,
// tokens, cost and errors; a waterfall of the spans of the run clicked
// under a header with its cost and links to its incident bundles; the
// attributes of the span clicked (status ok or error, system prompt,
// input and output messages, tool definitions, usage and cost, the
// prompt-cache prefix key parts and which one broke the cache, every
// attribute); and the recordings' incident bundles as tables (trigger,
// time, agent, run with a link to it, error, checksums, files, events).
// The run list fits a 1,280 px window. Media
// parts named by reference in the messages and events show as thumbnails
// when they are PNG, JPEG, GIF or WebP images whose bytes the recordings
// or bundles under --dir hold (and whose bytes are of the type claimed);
// other parts, SVG included, are download links. It
// reads the files again when they change, so new runs appear. Attribute
// values above 64 KiB are cut, with their full size shown. Traces hold
// prompts and tool results, so ui listens on loopback addresses only and
// answers only requests for a loopback host name; --listen-any allows
// another address (anyone who can reach it can read the traces). It runs
// until interrupted. A port that is taken is said to be, with how to pick
// another.
//
// # Exit status
//
// Flightrec exits with 0 on success, 1 on failure (including a bundle
// that fails verification) and 2 on bad usage. Errors are printed to
// standard error prefixed with "flightrec:".
package main
