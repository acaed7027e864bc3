// Package spill keeps large tool results out of a model's context without
// losing anything: results over a threshold are stored and the model gets
// a compact envelope and a read_result tool to read what was stored.
//
//	agent, err := harness.New(
//		harness.WithProvider(p),
//		harness.WithTools(exportTool),
//		harness.WithExtensions(spill.New(spill.WithThreshold(32_000))),
//	)
//
// # Spilling
//
// The extension ([New], named "spill") adds a tool-result middleware
// (harness.ToolResultMiddleware), so it applies to every tool however it
// was registered. A result whose Content is longer than the threshold
// (default 32,000 bytes) is streamed to the [Store] while its SHA-256,
// size and line count are computed, and is replaced by an envelope:
//
//	[result spilled: export_orders returned 4,194,372 bytes in 60,001 lines, too large to show in full]
//	id: res_5f0c2a9d0e4b7c1a2f3e4d5c
//	type: csv
//	columns: order_id, customer, country, amount, status
//	sha256: 9c1e…
//	--- head ---
//	…about 1,000 bytes…
//	--- tail ---
//	…about 1,000 bytes…
//	--- end of preview ---
//	Read more with the read_result tool: {"id": "res_…", "op": ...}; ops: …
//
// The type (text, json, jsonl or csv) is detected from the first 64 KiB
// and the end of the result. Error results are spilled too, keeping
// IsError: a huge stack trace floods the context as much as a huge answer.
// The results of read_result itself are never spilled. The original tool
// never runs again to read a stored result.
//
// If storing fails (a directory that cannot be written, a remote store
// that is down), the result is not passed whole: the model gets its head,
// cut at a UTF-8 boundary so that head and note fit in the threshold, and
// a note with the cause, whose secrets the built-in redaction rules hide:
//
//	…head…
//	[spill: result cut at 31897 of 52428800 bytes: the store failed: spill: storing res_…: disk full]
//
// The failure is logged and counted ([Extension.Stats]: StoreFailures,
// StoreFailedBytes, and StoreCutBytes for what the model did not get).
//
// # Large media parts (claim check)
//
// A tool result's media parts (harness.ToolResult.Parts: images,
// documents, audio) are sent to the provider in every model request of
// the conversation, inline as base64 unless they refer to a URL or a file
// ID. The middleware replaces a part whose inline bytes exceed
// [WithPartThreshold] (default 256 KiB) by a part of the same type, MIME
// type and name that refers to a copy of the bytes in the store by URL,
// when both:
//
//   - the store, given with [WithStore], is a [URLer]: it hands out URLs
//     that the provider can fetch without credentials, such as the
//     presigned GET URLs of s3store (valid for [WithPartURLExpiry],
//     default 24 hours); a [DirStore], the default temporary directory
//     and [WithDir] are not, since a remote provider cannot reach the
//     local disk;
//   - the agent's provider takes that part by URL for the agent's model
//     (harness.Agent.AcceptsURL, from the provider's
//     harness.URLAccepter): providers/anthropic takes images and PDFs,
//     providers/openai images; a provider that does not say takes none.
//
// The model still sees the part: the provider sends the URL and the API
// fetches the image or document; only the bytes leave the request. A part
// sent by URL has no inline bytes, so it passes the agent's inline limit
// (harness.WithInlineLimit), which the engine checks after this
// middleware. Otherwise the part stays inline and nothing is stored: the
// engine holds its bytes once, and the provider encodes them into each
// request. When storing the part or making its URL fails (a store that is
// down), the part stays inline too, whole: the failure is logged as a
// warning (redacted) and counted ([Stats].PartStoreFailures); a part is
// never lost. Stored parts are not results: read_result does not read
// them, and sessions and Artifacts do not list them; they live in the
// caller's store under its retention, and a URL stops working when it
// expires or its object is deleted. Every request sends the URL again, so
// a conversation continued after that fails at the provider. Anyone who
// holds the URL (the conversation, a saved session, a trace) can fetch
// the part until it expires. With a store whose endpoint the provider
// cannot reach (a private network), keep parts inline with
// WithPartThreshold(-1).
//
// # The read_result tool
//
// Arguments are a JSON object with "id" and "op":
//
//	slice      {"unit": "lines"|"bytes", "offset": n, "limit": n}
//	search     {"pattern": "RE2", "ignore_case": b, "context": n, "max_matches": n, "offset": lines to skip}
//	columns    {}
//	rows       {"where": [...], "columns": ["a", "b"], "offset": n, "limit": n}
//	count      {"where": [...]}
//	aggregate  {"where": [...], "column": "amount", "func": "sum"|"min"|"max"|"mean" (omit for all)}
//
// where is a list of {"column", "op", "value"} conditions, all of which must
// hold; op is eq, ne, contains, gt, gte, lt or lte. Numbers compare
// numerically, anything else as text. Tabular operations read CSV (with a
// header), JSON arrays and JSON lines; a JSON element that is not an object
// is a row with the single column "value". Lines are numbered from 1;
// offsets count what to skip, from 0; a row's [n] is its 0-based index.
//
// Every operation streams over the stored file (a 1 MiB chunked scan for
// search, a bufio reader for slices and JSON lines, json.Decoder for JSON
// arrays, encoding/csv for CSV), so memory stays bounded whatever the size;
// only one row or one line (up to 16 MiB for a JSON line) is held at a
// time. Every reply is capped (default 16 KiB, [WithMaxOutput]), its head
// and notes included, with a note saying how to continue. Search prefilters candidate lines with
// bytes.Index on the regexp's literal prefix, and numbers lines from a line
// index (newline counts at every 1 MiB, recorded while the result was
// written) instead of counting every line. Lines longer than 1 MiB are
// searched in 1 MiB segments, and a match that crosses a segment boundary
// is missed.
//
// Bad input gives the model an error result that says what is wrong, and
// never crashes or reads outside the store: arguments are decoded strictly
// ([ArgError]); ids must have the generated form ([ValidID]); an unknown
// id, an invalid regular expression, an unknown column, an offset past the
// end, a malformed CSV row or JSON value (naming the row and line) and a
// corrupt file ([CorruptError]) are all errors.
//
// The cap holds for errors too, however large the request: a reply quotes
// a value of the request (an id, an operation or column name, a where
// value) or a name from the stored data by at most its first 100 bytes and
// its length, like "aaaa…" (10485760 bytes); it lists at most about 2 KiB
// of column names and 1 KiB of where conditions; and, as a last guard, a
// longer reply or error text is cut with a note. Decoding a request copies
// its values about once (json.Unmarshal, not a json.Decoder, whose buffer
// grows to several times a huge request), and quoting them copies only
// their prefix.
//
// # Integrity
//
// Each result's SHA-256 is computed while it is written. Before a read is
// served, the file is checked: it is hashed again (streaming, in 1 MiB
// reads) unless its stamp — inode, size, modification and change time — is
// the one last verified. A file changed less than a second ago has no
// stamp (file times advance in clock ticks, so a change in the same tick
// could keep them), and neither has a file of a store that cannot tell
// (such as an in-memory one): those are hashed on every read, as is the
// first read after a session load. A mismatch is a [CorruptError] naming
// the id. [WithVerifyEveryRead] hashes on every read regardless.
//
// # Storage and lifecycle
//
// The default store is a [DirStore] over a fresh temporary directory
// (os.MkdirTemp), created at the first spill and removed at agent Close,
// unless [WithRetain]. [WithDir] and [WithStore] bind a caller-owned
// directory or store: their files are kept at Close. A DirStore reaches its
// files only through an [os.Root], so no id or symbolic link can lead
// outside it. For workers on several machines, the package
// github.com/harnessx/harnessx/extensions/spill/s3store is a Store on
// S3-compatible storage (HARNESSX_ARTIFACTS=s3://bucket/prefix).
//
// Saving a session records every stored result (id, tool, size, lines,
// type, SHA-256 and store directory). Once saved, results are retained:
// Close keeps them (and their temporary directory) because the session
// refers to them, and whoever keeps the session owns them. A snapshot
// (a save with harness.AsSnapshot, as the flight recorder takes) records
// the results but retains nothing. Loading the
// session into a new agent with a fresh spill extension restores them:
// each is read from the new extension's store if it is there, or from the
// recorded directory, read-only.
//
// A result that a caller-owned store ([WithDir], [WithStore]) holds but
// that no saved session lists — spilled by a process that stopped before
// saving, as when a durable runtime re-executes a run after a crash and
// replays the recorded envelope instead of spilling again — is adopted at
// its first read_result: its content is read once to rebuild its size,
// lines, type and SHA-256, and later reads verify that hash as usual.
// The temporary default store adopts nothing.
//
// The extension is a harness.ArtifactSource: Artifacts lists stored
// results with path, size and SHA-256, for incident bundles.
//
// Concurrent tool calls spill at the same time safely, and read_result
// calls may run in parallel (the tool is marked Concurrent).
package spill
