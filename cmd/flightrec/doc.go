// Flightrec reads the recordings of the harnessx flight recorder
// (github.com/harnessx/harnessx/extensions/flight): it lists them, exports
// incident bundles from their journals (after a crash too), shows a
// bundle's timeline, verifies its checksums and pushes its spans to an
// OTLP/HTTP endpoint such as Jaeger, an OpenTelemetry Collector or
// LangSmith.
//
// Usage:
//
//	flightrec list    [--dir DIR] [--json]
//	flightrec export  [--dir DIR] [--run ID | --last] [--recording NAME] [--include-artifacts] -o FILE
//	flightrec show    [--json] FILE
//	flightrec verify  FILE
//	flightrec push    [--endpoint URL | --langsmith] [--timeout D] FILE
//
// The recording directory is --dir, else $HARNESSX_FLIGHT_DIR, else
// .harnessx/flight. It holds one subdirectory per agent session: the
// journal segments (seg-00000001.jsonl, …), recording.json, the latest
// session and span snapshots, and incidents/ with the bundles the
// recorder exported by itself.
//
// # list
//
// List prints each recording (agent, session, event count, time span),
// its runs (status, events, start, duration, tool calls, tokens,
// failures; "running" for a run without an end, as after a crash) and its
// incident bundles. With --json it prints the same as JSON.
//
// # export
//
// Export builds an incident bundle from a journal and writes it to FILE
// (- for standard output). It exports the run given by --run, the run that
// started last with --last, or else the whole recording given by
// --recording (default: the one with the latest event). A torn last line
// left by a killed process is skipped and counted in the manifest.
// --include-artifacts adds the artifacts (such as spilled tool results)
// that the recorder indexed and that still exist unchanged. Everything is
// redacted again on the way. A progress bar goes to standard error when
// it is a terminal or the journal is larger than 64 MiB.
//
// # show
//
// Show prints a bundle's timeline for people: the manifest's facts, the
// verification result, token and tool totals, then one line per event
// with its offset from the first event, its step, its duration and a
// summary. The first failure is marked with ">>>" and repeated at the end;
// later failures are marked with "!". With --json it prints the same
// timeline as JSON (durations in milliseconds).
//
// # verify
//
// Verify reads a bundle, rejecting hostile archives (paths with "..",
// absolute paths, links, oversized members, truncated compression), and
// compares every member's size and SHA-256 with the manifest. It prints
// one line per member and exits with status 1 on any mismatch, naming the
// members at fault.
//
// # push
//
// Push verifies a bundle and sends its spans (spans.json, OTLP JSON) with
// the OTLP/HTTP exporter. The endpoint is --endpoint (a full traces URL;
// one without a path gets /v1/traces), else what the OTLP exporter reads
// from OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT,
// else http://localhost:4318/v1/traces. With --langsmith it sends to
// {LANGSMITH_ENDPOINT or https://api.smith.langchain.com}/otel/v1/traces
// with the headers x-api-key: $LANGSMITH_API_KEY and Langsmith-Project:
// $LANGSMITH_PROJECT. Failed uploads are retried until --timeout.
//
// # Exit status
//
// Flightrec exits with 0 on success, 1 on failure (including a bundle
// that fails verification) and 2 on bad usage. Errors are printed to
// standard error prefixed with "flightrec:".
package main
