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
// tokens and cost summed over the chat spans, errors and prompt-cache
// breaks. Traces without any invoke_agent span give one run per
// parentless span, so that spans of other programs still show.
//
// A run's state reads "ok" or "error" ([State]; paused, cancelled and
// the like as they are), never a span's "unset" status code. An error is
// named by its type when a span names one ([ErrorLabel]): the
// conventions' "_OTHER", which the tracing extension records for an
// error without a Go type, gives way to a type another span of the run
// names, else to the error's text. Costs are the tracing extension's
// harnessx.cost.usd ([SpanCost]) and are always shown with [FormatUSD]:
// four significant digits below a dollar ($0.00412), cents from a dollar
// up ($12.35), never float noise.
//
// # Loaders
//
// [ParseOTLP] reads one OTLP/JSON ExportTraceServiceRequest (IDs in hex,
// as OTLP/JSON wants, or base64, as protojson writes them); [FromOTLP]
// converts a decoded request. [ReadTraceFile] streams the JSON-lines trace
// file that exporters.NewFile writes (.harnessx/traces.jsonl), skipping a
// torn last line and reporting, by their numbers, lines that are not OTLP
// JSON and lines longer than [MaxLine] (64 MiB); [ReadTraceFileFrom]
// reads only what was appended since an offset. [ReadRecording] reads a flight recording's spans.json and
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
// duration, tokens, cost, stop reason, cache breaks, statuses and errors.
// [WriteRunList] prints a table of runs.
//
// # Index
//
// [Load] gathers runs and incident bundles from trace files and
// recording directories ([Sources]) into a [Catalog]; an [Index] keeps
// them up to date. A trace file is indexed, not loaded: it is read once,
// line by line, keeping of each span only its IDs, name, times, status
// and the few attributes a summary reads (the rest, prompts and results
// included, is skipped unparsed), with the offset of its line; later
// reads take only what was appended, leave an incomplete last line for
// the next one, and start again on a file that was cut or replaced. The
// catalog lists each run ([RunInfo]) with its summary and where its
// spans are, and [Catalog.Run] reads a run's spans from those lines
// alone. A 250 MB trace file gives the viewer's first page in a few
// seconds within a few tens of MB (TestBigTraceFile with
// HARNESSX_VIEWER_BIG=1 measures it). Recordings and bundles, which the
// flight recorder bounds, are read whole; a span found in several places
// counts once. Under a flight directory, recordings, span snapshots and
// bundles that resolve (through symbolic links) outside it are refused
// and reported, never read.
//
// [Handler] serves the web page: a run list, newest first, a page at a
// time (time, agent, state, duration, spans, tokens, cost, errors, and
// what failed by name), a waterfall of a run's spans under a header with
// its state, tokens, cost, errors and links to its incident bundles, and
// a panel with the attributes of the span clicked (status ok or error,
// system prompt, messages, tool definitions, usage and cost, prompt-cache
// prefix key parts and which part broke the cache). The incident bundles
// show as tables: trigger, time, agent, run (a link to it), error,
// checksums, files with their sizes and SHA-256, and events. The list
// fits a 1,280 px window, and labels wrap between words only. The page is plain HTML, JavaScript and CSS embedded in the
// binary; it fetches nothing from the network. Data reaches it only
// through the JSON API under /api/ and is rendered as text (the DOM is
// built with textContent, never from markup), under a strict Content
// Security Policy. Attribute values larger than a cap (64 KiB by default)
// are cut, with their full size reported. The handler brings its index
// up to date on each request, so new runs appear on reload.
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
