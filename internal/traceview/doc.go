// Package traceview is a small local trace viewer for harnessx runs: a
// model of spans and runs, loaders for every place harnessx leaves spans,
// a text renderer for terminals and an HTTP handler serving a web page.
//
// # Model
//
// A [Span] is one OpenTelemetry span with hex IDs, typed attributes in
// their recorded order, events, status and the service name of its
// resource. [BuildRuns] groups spans into [Run]s: one run per root
// invoke_agent span (an invoke_agent span with no invoke_agent ancestor;
// a subagent's spans belong to the run that called it), holding the root,
// its descendants as a tree, and a [Summary]: agent, status, duration,
// tokens summed over the chat spans, errors and prompt-cache breaks.
// Traces without any invoke_agent span give one run per parentless span,
// so that spans of other programs still show.
//
// # Loaders
//
// [ParseOTLP] reads one OTLP/JSON ExportTraceServiceRequest (IDs in hex,
// as OTLP/JSON wants, or base64, as protojson writes them); [FromOTLP]
// converts a decoded request. [ReadTraceFile] streams the JSON-lines trace
// file that exporters.NewFile writes (.harnessx/traces.jsonl), skipping a
// torn last line; [ReadTraceFileFrom] reads only what was appended since
// an offset. [ReadRecording] reads a flight recording's spans.json and
// [ReadBundle] an incident bundle's spans. [FromSDK] converts the SDK's
// ReadOnlySpans, such as those of an in-memory span recorder, so that a
// program can print the run it just made:
//
//	runs := traceview.BuildRuns(traceview.FromSDK(recorder.Ended()))
//	traceview.WriteTree(os.Stdout, runs[len(runs)-1], traceview.TreeOptions{})
//
// [Follow] polls a trace file and reports each run as its root span
// arrives, until its context is cancelled.
//
// # Rendering
//
// [WriteTree] prints a run as a text tree, one line per span with its
// duration, tokens, stop reason, cache breaks, statuses and errors.
// [WriteRunList] prints a table of runs. [Load] gathers runs and incident
// bundles from trace files and recording directories ([Sources]).
//
// [Handler] serves the web page: a run list, a waterfall of a run's spans
// and a panel with the attributes of the span clicked (system prompt,
// messages, tool definitions, usage, prompt-cache prefix key parts and
// which part broke the cache), and the incident bundles with their
// events. The page is plain HTML, JavaScript and CSS embedded in the
// binary; it fetches nothing from the network. Data reaches it only
// through the JSON API under /api/ and is rendered as text (the DOM is
// built with textContent, never from markup), under a strict Content
// Security Policy. Attribute values larger than a cap (64 KiB by default)
// are cut, with their full size reported. The handler reads the sources
// again when their files change, so new runs appear on reload.
//
// Media parts (images, documents, audio) are named by reference,
// "artifact:sha256:<hex>": in span attributes as GenAI uri parts (the
// tracing extension's gen_ai.input.messages and the like) and in incident
// events (flight's Event.Parts). The page shows a part whose MIME type is
// image/png, image/jpeg, image/gif or image/webp as a thumbnail, an <img>
// built with DOM calls whose address the page derives from the digest
// alone, and any other part (image/svg+xml included) as a download link.
// The handler serves the bytes at /parts/sha256-<hex>, looked up in the
// recordings (<recording>/parts/) and incident bundles of the flight
// directories and checked against the digest; it sets the type itself:
// the claimed image type only when the bytes sniff as that type
// (http.DetectContentType), 415 when they do not, and otherwise
// application/octet-stream with Content-Disposition: attachment, always
// with X-Content-Type-Options: nosniff and the policy default-src 'none';
// img-src 'self'; sandbox. Nothing a part holds can run in the page.
package traceview
