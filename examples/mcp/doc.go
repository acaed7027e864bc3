// Command mcp shows the MCP client adapter (extensions/mcp): an agent
// enables an MCP server, calls one of its tools and answers. It prints the
// transcript, what /mcp says about the server, the run's span tree with the
// MCP attributes of the tool span, and where the spans went.
//
//	go run ./examples/mcp
//
// It runs offline: the model is scripted, and the MCP server — a small
// notebook (internal/notes) — is this program itself, started again as a
// subprocess with -serve and spoken to over stdio, as any stdio MCP server
// would be. `go run ./examples/mcp -serve` runs that server alone, for
// another MCP client.
//
// The model first sees one tool of the adapter, mcp_enable, listing the
// servers; calling it starts the server and offers its tools, named
// notes__search_notes, notes__add_note and notes__delete_note, from the next
// request on. The tool span of the call carries mcp.method.name,
// mcp.protocol.version, jsonrpc.request.id and network.transport, and the
// server receives the span's traceparent in params._meta.
//
// Spans go where the environment says (see exporters.FromEnv): by default
// to the OTLP JSON file .harnessx/traces.jsonl, which
// `go run ./cmd/flightrec trace --last` reads.
package main
