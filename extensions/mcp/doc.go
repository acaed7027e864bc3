// Package mcp is the harnessx MCP client adapter: it offers the tools of
// Model Context Protocol servers to an agent as deferred harness tools. It
// is built on the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
//	agent, err := harness.New(
//		harness.WithProvider(p),
//		harness.WithExtensions(mcp.New(
//			mcp.WithServer("files", mcp.Command("mcp-files", "--root", "/srv")),
//			mcp.WithServer("web", mcp.StreamableHTTP("https://example.com/mcp")),
//		)),
//	)
//
// # Servers and transports
//
// One extension manages several named servers. [Command] runs a server as
// a subprocess over stdio ([CommandFunc] sets its environment or directory);
// [StreamableHTTP] reaches one over the streamable HTTP transport;
// [SDKTransport] takes any transport of the SDK (its in-memory transport
// runs a server in-process). Nothing connects at install: a server's process
// starts, or its HTTP session opens, the first time the server is used, and
// is closed by Agent.Close. A connection that is lost (a crashed process) is
// opened again by the next call.
//
// # Authorization (OAuth)
//
// A streamable HTTP server that wants OAuth gets it with
// [Transport.WithOAuth]:
//
//	mcp.WithServer("web", mcp.StreamableHTTP("https://example.com/mcp").WithOAuth(mcp.OAuth{}))
//
// When the server answers 401 (or 403 insufficient_scope), the adapter
// runs the authorization-code flow of the SDK's auth package: it finds the
// authorization server from the server's protected-resource metadata,
// registers a client (a client ID metadata document when
// [OAuth].ClientIDMetadataURL is set and the server takes it, else a
// preregistered [OAuth].ClientID, else dynamic client registration),
// listens on 127.0.0.1 (a random port unless [OAuth].RedirectPort is set)
// for the redirect, hands the authorization URL to [OAuth].Prompt, and
// exchanges the code, with PKCE, for a token; the refused request is then
// sent again. The default prompt, [BrowserPrompt] on standard error (the
// only thing the package prints), writes the URL and opens it in a browser
// when there is one (open, or xdg-open with a display); a CLI or web app
// passes its own. The person must finish within the connect timeout
// ([WithConnectTimeout], default 30 s) — raise it for interactive logins.
//
// Tokens live in the agent's storage (harness.ExtensionContext.Storage,
// namespace "mcp", key "oauth/<server>"): the file store under the state
// directory (files readable by their owner only), or the durable runtime's
// database when the agent uses it. So another agent with the same storage
// uses the token without asking again. A token is refreshed with its
// refresh token when it expires, or when the server refuses it; a refused
// refresh starts a new authorization. An agent without storage keeps
// tokens in memory. Tokens and client secrets never reach the model, the
// log, spans or the session: errors from the authorization server are
// reduced to their OAuth error code and description. Whether OAuth is on
// or not, /mcp shows an HTTP server's URL without its user information
// and with its query values replaced, and connect and call errors leave
// out its password and query values (of 4 bytes or more).
//
// # Deferred tools behind mcp_enable
//
// The model is offered one tool of the extension, mcp_enable, whose
// description lists the servers. Calling it with {"server": name} connects
// the server, loads its tool list and activates those tools for the session
// (harness.ActivateTools): they are offered from the next model request on,
// and the activation is saved with the session. Until then the server's
// tools are in the catalog, deferred, and not in the model's requests, so
// an agent with many servers does not pay for their tool definitions until
// it needs them.
//
// A server's tool t is named "server__t" (characters other than letters,
// digits, '_' and '-' become '_'; at most 64 bytes). Its description and
// input schema are the server's, unchanged. A tool whose input schema is
// not a valid JSON schema of type "object" is skipped: the log, the
// mcp_enable result and /mcp name it and say why, and the other tools work.
//
// The server's tool annotations set the harness tool's policy:
//
//   - readOnlyHint or idempotentHint: harness.ReplaySafe (a durable runtime
//     may run the call again after a crash); a read-only tool is also
//     Concurrent;
//   - destructiveHint true (and not read-only): harness.PermissionAsk, so
//     the run pauses for an approval;
//   - otherwise ReplayUnsafe and PermissionInherit: the agent's permission
//     manager decides. The MCP specification reads a missing destructiveHint
//     as true; the adapter asks only when the server says so, and a stricter
//     permission manager can ask for every "server__" tool.
//
// Annotations are hints from the server: trust them as much as the server.
//
// The tools are added by one tool transform (harness.ToolTransform) that
// reads the adapter's current lists; when a server sends
// notifications/tools/list_changed the adapter reloads its list and calls
// RefreshTools, so new tools appear (activated when the server is enabled)
// and removed ones disappear. [WithToolsChanged] reports each loaded list.
//
// # Calls and results
//
// A call runs tools/call with the model's arguments. The text of the
// result's content is what the model reads (other content is described in
// brackets; with no content, the structured content's JSON). A result with
// isError becomes an error result with the server's text. A call that the
// server does not answer within [WithCallTimeout] (default 60 s) is
// cancelled and the model gets an error result saying so; a connection lost
// during the call gives an error result saying that the server closed it;
// either way the run goes on. Large results are for the spill extension,
// which applies to every tool result.
//
// Each call carries a progress token; the server's progress notifications
// for it are published with harness.Update as the call's live metadata
// ([MetaProgress], [MetaProgressTotal], [MetaProgressMessage]), which
// EventToolUpdate hooks see and the tracing extension records as span
// events.
//
// # The /mcp command
//
// "/mcp" lists the servers: transport, whether connected (server name and
// version, protocol version), whether enabled, and their tools with what the
// annotations made of them, and the skipped tools. "/mcp server" connects
// that server first (it does not enable it). The command never reaches the
// model.
//
// # Tracing
//
// The adapter uses the OpenTelemetry API only and makes no span of its own:
// a call adds the MCP semantic-convention attributes
// (go.opentelemetry.io/otel/semconv/v1.41.0) to the span of its context,
// which is the execute_tool span when the tracing extension is installed:
// mcp.method.name=tools/call, mcp.session.id (when the transport has one:
// streamable HTTP), mcp.protocol.version, jsonrpc.request.id,
// network.transport (pipe for stdio, tcp for HTTP) and, when the call
// fails, error.type: tool_error for an isError result, timeout, cancelled,
// connection_closed, connect_error, the JSON-RPC error code, or _OTHER.
// (The tracing extension sets error.type again when the execute_tool span
// ends, from the call's harness.ToolStatus, so on that span an error
// result reads error.type=error; the MCP attributes stay.)
// The trace context of the call is sent to the server in params._meta as
// W3C traceparent (and tracestate), so that a traced server continues the
// trace.
//
// # Servers that ask for input
//
// A server may ask for user input during a call (elicitation; with protocol
// 2026-07-28, a multi-round-trip input request that the SDK fulfils). The
// adapter asks with harness.AskUser: with a durable runtime (a step runner
// that implements harness.Asker) the question is parked and its answer
// stored, so a call rerun after a crash gets the same answer. A request
// without fields, or with one boolean field, is a confirm question; one
// field with an enum a select; one string or number field an input; several
// fields an input answered with a JSON object. When the question cannot be
// asked — no durable runtime, a tool that is not replay safe (AskUser's
// rule), an answer that does not fit — the adapter declines the
// elicitation, logs why and puts the reason in the result's _meta under
// [MetaDeclineReason], so the server can tell the model. A server on an
// older protocol version sends an elicitation/create request of its own
// instead, which carries nothing that ties it to a call: the adapter asks
// it as the question of the server's running call when exactly one is
// running, and declines it otherwise.
//
// # Sessions
//
// The extension saves the names of the enabled servers with the session; an
// agent restored by LoadSession reconnects them at its next turn, so that
// the restored activations find their tools again.
//
// The package imports no other extension.
package mcp
