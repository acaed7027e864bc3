// Package flight is the harnessx flight recorder: an extension that keeps
// a bounded, crash-safe record of what an agent did and exports incident
// bundles that the flightrec command lists, shows, verifies and pushes to
// a tracing backend.
//
// # Recording
//
// [New] returns the extension; install it with harness.WithExtensions. It
// subscribes to every hook event and records runs, model requests and
// responses (with usage), tool calls and results (status, duration),
// approvals, errors, hook failures and extension failures as [Event]s,
// each with the trace and span IDs of the hook's context when tracing is
// on, the run and session IDs, the agent, the step and the time.
//
// Events go to two places: a bounded in-memory ring, and an append-only
// [Journal] of JSON lines in size-capped segment files
// (seg-00000001.jsonl, …) under <dir>/<session ID>/, where dir comes from
// [WithDir], else $HARNESSX_FLIGHT_DIR, else .harnessx/flight. Past the
// journal's total cap the oldest segments are deleted. An append only
// encodes the event into preallocated buffers; a writer goroutine writes
// each batch a few milliseconds later with plain write(2) calls, so a
// process killed with SIGKILL leaves everything up to the last batch on
// disk, and readers skip a torn last line. Beside the journal the recorder
// keeps the latest session snapshot (session.json), the spans of its
// traces (spans.json) and, with [WithIncludeArtifacts], an index of the
// agent's artifacts (artifacts.json), so that an export after a crash has
// them. Close the agent to flush the journal and stop the goroutine.
//
// # Spans
//
// [Extension.SpanProcessor] is an OpenTelemetry SDK span processor that
// keeps the recent ended spans; register it on the TracerProvider that the
// tracing extension uses, and bundles carry the run's spans as OTLP JSON
// without any tracing backend. The conversion is the OTLP exporter's own
// (otlptrace.New with a capturing client).
//
// # Incident bundles
//
// A failed run, a tool panic, a cancelled run ([WithTriggers] selects
// them) or a call of [Extension.Trigger] exports a bundle into
// <recording>/incidents/: a .tar.gz holding manifest.json ([Manifest]:
// format version, times, agent, run and session IDs, counts by kind,
// SHA-256 and size of every other member, redaction summary),
// events.jsonl, spans.json, session.json and, only when asked,
// artifacts/<extension>/<name>. [ExportJournal] builds the same bundle
// from a journal on disk; [BundleWriter] and [ReadBundle] are the writer
// and the verifying reader that the flightrec command shares.
// [ReadBundle] rejects hostile archives: unsafe member paths, links,
// oversized members, truncated or corrupt compression. It extracts nothing
// to disk.
//
// # Redaction
//
// Secrets are redacted before anything is written, journal and bundle
// alike: provider API keys (sk-…, sk-ant-…), Bearer tokens, AWS access and
// secret keys, and the values of variables and JSON keys whose names
// contain KEY, TOKEN, SECRET or PASSWORD (case-insensitive), plus the
// rules and functions given with [WithRedactRules] and [WithRedactor].
// Each redaction leaves a marker such as [REDACTED:anthropic-key]; the
// manifest counts them by rule.
package flight
