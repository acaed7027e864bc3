package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport says how to reach one MCP server. Build one with [Command],
// [CommandFunc], [StreamableHTTP] or [SDKTransport]; the zero value is not
// valid. A Transport is a recipe, not a connection: the extension uses it
// each time it connects (at the first use of the server, and again after
// the connection was lost).
type Transport struct {
	kind    string // "stdio", "http" or what SDKTransport was given
	target  string // the command line or URL, for listings
	network string // the network.transport attribute: "pipe", "tcp" or ""
	connect func(ctx context.Context) (sdk.Transport, error)
	oauth   *OAuth   // from WithOAuth (oauth.go)
	secrets []string // credentials in the URL, kept out of errors (oauth.go)
}

// String describes the transport, as /mcp and errors show it:
// "stdio: mcp-files --root /srv" or "http: https://example.com/mcp".
// (The model's mcp_enable description names only the kind, "stdio" or
// "http": a command line or URL may hold a secret.)
func (t Transport) String() string {
	if t.target == "" {
		return t.kind
	}
	return t.kind + ": " + t.target
}

// terminateAfter is how long closing a stdio server waits for it to exit
// after its standard input closed, before it is sent SIGTERM (and, as
// long again later, SIGKILL).
const terminateAfter = 2 * time.Second

// Command runs the MCP server name with args as a subprocess and talks to
// it over its standard input and output (the stdio transport). The process
// starts when the server is first used and is stopped when the agent
// closes: its standard input is closed, then, if it has not exited, it gets
// SIGTERM after two seconds and SIGKILL two seconds later. Its standard error is discarded; use [CommandFunc] to keep it or
// to set the environment or the working directory.
func Command(name string, args ...string) Transport {
	args = append([]string(nil), args...)
	return CommandFunc(func() *exec.Cmd { return exec.Command(name, args...) })
}

// CommandFunc is [Command] with a function that builds the command, called
// at each connection (an exec.Cmd runs once). Do not bind the command to a
// context that ends before the agent closes.
func CommandFunc(newCmd func() *exec.Cmd) Transport {
	target := ""
	if c := newCmd(); c != nil {
		target = strings.Join(c.Args, " ")
	}
	return Transport{
		kind:    "stdio",
		target:  target,
		network: "pipe",
		connect: func(context.Context) (sdk.Transport, error) {
			c := newCmd()
			if c == nil {
				return nil, errors.New("the command function returned nil")
			}
			return &sdk.CommandTransport{Command: c, TerminateDuration: terminateAfter}, nil
		},
	}
}

// StreamableHTTP connects to an MCP server at url over the streamable HTTP
// transport, with http.DefaultClient. Use [StreamableHTTPClient] for another
// client (authentication, proxies, timeouts).
func StreamableHTTP(url string) Transport { return StreamableHTTPClient(url, nil) }

// StreamableHTTPClient is [StreamableHTTP] with the given client; nil means
// http.DefaultClient.
func StreamableHTTPClient(url string, client *http.Client) Transport {
	return Transport{
		kind:    "http",
		target:  redactURL(url), // a URL may carry a credential
		secrets: urlSecrets(url),
		network: "tcp",
		connect: func(context.Context) (sdk.Transport, error) {
			return &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: client}, nil
		},
	}
}

// SDKTransport wraps any transport of the MCP Go SDK: connect returns a
// fresh one at each connection. kind describes it in listings ("memory",
// "sse"); network is its network.transport span attribute ("pipe", "tcp",
// "unix", or "" to leave it out). Tests use it with sdk.NewInMemoryTransports
// to run a server in-process.
func SDKTransport(kind, network string, connect func(ctx context.Context) (sdk.Transport, error)) Transport {
	return Transport{kind: kind, network: network, connect: connect}
}

// ---- the JSON-RPC request ID of a call ----

// callInfoKey carries a *callInfo in the context of one tools/call, so
// that the connection records the JSON-RPC ID the SDK gave the request.
type callInfoKey struct{}

type callInfo struct {
	token string // the call's progress token
	mu    sync.Mutex
	id    string
}

func (c *callInfo) set(id string) {
	c.mu.Lock()
	c.id = id
	c.mu.Unlock()
}

func (c *callInfo) get() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

// idTransport wraps a transport so that its connection reports the ID of
// each outgoing tools/call request to the callInfo in the request's
// context. The SDK numbers requests itself and does not expose the ID.
type idTransport struct{ sdk.Transport }

func (t idTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return idConn{c}, nil
}

type idConn struct{ sdk.Connection }

func (c idConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && req.Method == methodToolsCall {
		if info, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
			info.set(fmt.Sprint(req.ID.Raw()))
		}
	}
	return c.Connection.Write(ctx, msg)
}
