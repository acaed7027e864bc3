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
// A stdio server gets only HOME, LOGNAME, PATH, SHELL, TERM and USER of the
// agent's environment (what the MCP SDKs for TypeScript and Python pass),
// and the variables named with [Transport.PassEnv]; a CommandFunc command
// that sets its own Env gets that. The last 64 KiB of its standard error
// are kept: when it cannot be connected, or its connection is lost during
// a call, the error (the tool's result, which the flight recorder's
// journal keeps) shows the last 4 KiB of them, and the log all 64 KiB (the
// log has them too when the connection is lost between calls), redacted with
// the built-in rules of the tracing extension and the flight recorder (a
// URL's password, an api_key=…, a bearer token). Errors that reach the
// model are redacted the same way, and so are the command line or URL
// that errors, logs and /mcp show: a failed connection never shows the
// model the ?api_key=… of a URL. An HTTP server's URL goes further, whether
// OAuth is on or not: /mcp and errors show it without its user information
// and with its query values replaced, and connect and call errors leave out
// its password and query values (of 4 bytes or more) wherever the SDK or
// net/http quote it.
//
// Over streamable HTTP the adapter hears what the server sends outside a
// call's response: tools/list_changed, log messages and requests such as
// an elicitation (resource updates, which it does not subscribe to, are
// logged at debug level). After the handshake every request
// carries Mcp-Protocol-Version; with a protocol before 2026-07-28 the
// SDK's standalone GET stream is open, and is opened again (resuming from
// the last event ID) when the server ends it; with 2026-07-28 the SDK
// listens with subscriptions/listen. (The adapter reads the JSON-RPC IDs,
// progress notifications and raw tool lists it needs from the HTTP
// requests, so it never wraps the SDK's HTTP connection. It watches them
// beneath the SDK, on the transport of the server's http.Client, so a
// server behind OAuth is watched the same way, its refused requests and
// their retries included.)
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
// reduced to their OAuth error code and description. The requests to the
// authorization server go through [OAuth].HTTPClient, or else the
// transport's client, and are not watched.
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
// input schema are the server's, the description cut after 8 KiB. A tool
// is skipped, and the log, the mcp_enable result and /mcp name it and say
// why, while the other tools work, when:
//
//   - its input schema is not a valid JSON schema of type "object", or
//     nests more than 64 levels (a schema nested deeper than the SDK reads,
//     1,000 levels, would fail the whole tools/list: over stdio and HTTP
//     the adapter replaces it before the SDK reads the list);
//   - its name is empty or longer than 128 bytes (a long name is shown cut);
//   - it requires task augmentation (execution.taskSupport "required"),
//     which the adapter does not support;
//   - its name is another's once sanitized.
//
// When the server has resources, a tool "server__read_resource" reads one
// by its URI: a tool result's resource links name it.
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
// One reload runs at a time, 50 ms after the notification that wants it,
// and one more at most is wanted meanwhile, however many notifications
// come: while one waits in the SDK's queue the others are dropped (over
// stdio and HTTP before the SDK decodes them), and a list that did not
// change costs no rebuild of the catalog.
//
// # Calls and results
//
// A call runs tools/call with the model's arguments. The model reads the
// text of the result's content, one block a line, followed by its media
// as harness parts (harness.ToolResult.Parts), each with the server's
// MIME type (lower case, without parameters):
//
//   - image and audio content become image and audio parts;
//   - an embedded resource with text is text; one with a blob becomes,
//     by its MIME type, an image part (image/*), an audio part (audio/*)
//     or a document part (application/pdf), named after the last element
//     of the resource's URI; a text blob (text/*, JSON, XML) in valid
//     UTF-8 is text; any other blob (application/octet-stream when the
//     server gives no type) is a note naming its URI, type and size, and
//     its bytes are not sent, since no provider takes them;
//   - a resource link is a note naming its URI and the read_resource tool
//     that reads it: the adapter does not fetch it;
//   - other content is its JSON; with no content, the text is the
//     structured content's JSON.
//
// Each part leaves a note in the text where the content was, such as
// "[image: image/png, 48213 bytes; attached as part 1]", so the model
// knows what came where. The bytes are those the SDK decoded from base64
// when it read the response, shared with the part, not copied or encoded
// again. Content that cannot become a part makes the call an error result
// (error type invalid_content) that says which content and why: image or
// audio content without a MIME type (the specification requires one), a
// MIME type that is not a well-formed type/subtype (for an embedded
// resource too) or, for image or audio content, not image/* or audio/*,
// no data, or malformed base64. A part over the agent's inline limit
// (harness.WithInlineLimit, 5 MiB by default) makes the engine turn the
// result into an error result naming the part, its size and the limit
// (error type part_too_large), after the result middleware, so the spill
// extension may first store it and hand the model a URL. The
// read_resource tool converts a resource's contents the same way.
//
// A result with isError becomes an error result with the server's text;
// its media are described in brackets, not sent (error results carry no
// parts). A call that the server
// does not answer within [WithCallTimeout] (default 60 s; the time a user
// takes to answer the server's elicitation does not count) is cancelled
// and the model gets an error result saying so; a connection lost during
// the call gives an error result saying that the server closed it (with
// the end of a stdio server's standard error); either way the run goes
// on. Large results are for the spill extension, which applies to every
// tool result.
//
// A call whose updates someone observes (an EventToolUpdate hook: the
// tracing extension, a UI; see harness.UpdatesObserved) carries a progress
// token, which costs the client and the server about a tenth of a call;
// the server's progress notifications
// for it are published with harness.Update as the call's live metadata
// ([MetaProgress], [MetaProgressTotal], [MetaProgressMessage]), which
// EventToolUpdate hooks see and the tracing extension records as span
// events. A call returns only once the notifications read before its
// response were published, so the last update is not lost.
//
// The adapter asks servers that log for messages of level info and up. A
// log message that comes while exactly one call of the server runs is
// published as that call's live metadata ([MetaLogLevel], [MetaLogLogger],
// [MetaLogData]: an EventToolUpdate, and a span event with the tracing
// extension); every log message is logged through the agent's logger at
// the matching level, at most 5 per 10 s and server (the next says how many
// were suppressed), its data cut after 4 KiB and redacted.
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
// The class is also the error result's harness.ToolResult.ErrorType, which
// the tracing extension sets as error.type when the execute_tool span ends.
// A read_resource call has mcp.method.name=resources/read.
// The trace context of the call is sent to the server in params._meta as
// W3C traceparent (and tracestate), so that a traced server continues the
// trace.
//
// # Servers that ask for input
//
// A server may ask for user input during a call (elicitation; with protocol
// 2026-07-28, a multi-round-trip input request that the SDK fulfils). The
// adapter asks with harness.AskUser, in the call's context, whatever the
// transport: with a durable runtime (a step runner that implements
// harness.Asker) the question is parked and its answer stored, so a call
// rerun after a crash gets the same answer; without one, AskUser reaches
// whatever answers questions outside durable runs, when the harness has
// one. A request without fields, or with one boolean field, is a confirm
// question; one field with an enum a select; one string or number field an
// input; several fields an input answered with a JSON object. The call
// timeout is paused while the question waits. When the question cannot be
// asked — AskUser fails with harness.ErrAskUnsupported (nothing can
// answer) or harness.ErrAskNotReplaySafe (AskUser's rule for durable runs),
// an answer does not fit — the adapter declines the elicitation, logs why
// (at most 5 times per 10 s and server) and puts the reason in the
// result's _meta under [MetaDeclineReason], so the server can tell the
// model. A server on an older protocol version sends an elicitation/create
// request of its own instead, which carries nothing that ties it to a
// call. Over streamable HTTP, one that comes on the response stream of a
// call is that call's question, however many run; otherwise the adapter
// asks it as the question of the server's running call when exactly one
// is running, and declines it when none or several are.
//
// # Servers that ask for the model (sampling)
//
// A server given [AllowSampling] (mcp.WithServer("files", t,
// mcp.AllowSampling())) may ask the agent's own model for a completion
// (sampling/createMessage): the adapter sends its messages, system prompt
// and temperature with harness.Agent.Generate, so the request passes the
// agent's model interceptors and middleware, in the context of the call
// that asked (found as for an elicitation; a request tied to no single
// call is served in its own context), so that the tracing extension's chat
// span is a child of that call's execute_tool span. maxTokens is capped at
// [MaxSamplingTokens], at most [MaxConcurrentSamplings] requests of a
// server are served at a time, a request with no messages is refused,
// and the time the model takes does not count against the call timeout.
// Without AllowSampling the client does not advertise sampling, and a
// server's sampling request gets a JSON-RPC error saying that sampling is
// not allowed (on protocol 2026-07-28, where the SDK fulfils input
// requests itself, the SDK's "client does not support CreateMessage").
//
// # Sessions
//
// The extension saves the names of the enabled servers with the session; an
// agent restored by LoadSession reconnects them at its next turn, so that
// the restored activations find their tools again.
//
// The package imports no other extension.
package mcp
