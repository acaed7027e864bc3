package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

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
	// A stdio server: the command, and the variables of the agent's
	// environment it gets besides defaultEnv.
	newCmd  func() *exec.Cmd
	passEnv []string
	// A streamable HTTP server: OAuth from WithOAuth, and the
	// credentials in the URL, kept out of errors (oauth.go).
	oauth   *OAuth
	secrets []string
}

// String describes the transport, as /mcp and errors show it:
// "stdio: mcp-files --root /srv" or "http: https://example.com/mcp",
// with what looks like a secret redacted (a URL's password, ?api_key=…;
// a URL is shown without its user information and with its query values
// replaced), cut after 256 bytes.
// (The model's mcp_enable description names only the kind, "stdio" or
// "http".)
func (t Transport) String() string {
	if t.target == "" {
		return t.kind
	}
	return t.kind + ": " + clip(redacted(t.target), maxTarget)
}

// maxTarget bounds the command line or URL that String shows.
const maxTarget = 256

// terminateAfter is how long closing a stdio server waits for it to exit
// after its standard input closed, before it is sent SIGTERM (and, as
// long again later, SIGKILL).
const terminateAfter = 2 * time.Second

// defaultEnv are the variables of the agent's environment that a stdio
// server gets by default: those the MCP SDKs for TypeScript and Python
// pass.
var defaultEnv = [...]string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}

// Command runs the MCP server name with args as a subprocess and talks to
// it over its standard input and output (the stdio transport). The process
// starts when the server is first used and is stopped when the agent
// closes: its standard input is closed, then, if it has not exited, it gets
// SIGTERM after two seconds and SIGKILL two seconds later.
//
// The process gets only HOME, LOGNAME, PATH, SHELL, TERM and USER of the
// agent's environment (what the MCP SDKs for TypeScript and Python pass),
// and the variables named with [Transport.PassEnv]: an agent's API keys do
// not reach every server. The last 64 KiB of its standard error are kept:
// a connection that fails, or a server that exits, shows them (redacted)
// in the error and the log. Use [CommandFunc] to set the environment
// yourself, the working directory, or a writer of your own for standard
// error.
func Command(name string, args ...string) Transport {
	args = append([]string(nil), args...)
	return CommandFunc(func() *exec.Cmd { return exec.Command(name, args...) })
}

// CommandFunc is [Command] with a function that builds the command, called
// at each connection (an exec.Cmd runs once). A command whose Env is set
// gets that environment and nothing else; with Env nil it gets the
// defaults of [Command] and the variables of [Transport.PassEnv]. A
// command's own Stderr still gets the server's standard error; the
// extension keeps its tail too. Do not bind the command to a context that
// ends before the agent closes.
func CommandFunc(newCmd func() *exec.Cmd) Transport {
	target := ""
	if c := newCmd(); c != nil {
		target = strings.Join(c.Args, " ")
	}
	return Transport{kind: "stdio", target: target, network: "pipe", newCmd: newCmd}
}

// PassEnv returns t with the named variables of the agent's environment
// passed to the stdio server, besides HOME, LOGNAME, PATH, SHELL, TERM and
// USER: mcp.Command("gh-mcp").PassEnv("GITHUB_TOKEN"). A variable that is
// not set is not passed. It changes nothing for other transports, nor for
// a CommandFunc command that sets its own Env.
func (t Transport) PassEnv(names ...string) Transport {
	t.passEnv = append(slices.Clip(t.passEnv), names...)
	return t
}

// open returns a fresh SDK transport for a connection, and, for a stdio
// server, the buffer that keeps the tail of its standard error.
func (t Transport) open(ctx context.Context) (sdk.Transport, *tailBuffer, error) {
	if t.newCmd == nil {
		tr, err := t.connect(ctx)
		return tr, nil, err
	}
	c := t.newCmd()
	if c == nil {
		return nil, nil, errors.New("the command function returned nil")
	}
	if c.Env == nil {
		c.Env = serverEnv(t.passEnv)
	}
	tail := newTailBuffer(stderrTail)
	if c.Stderr != nil {
		c.Stderr = io.MultiWriter(tail, c.Stderr)
	} else {
		c.Stderr = tail
	}
	return &stdioTransport{cmd: c}, tail, nil
}

// stdioTransport runs a server as a subprocess, as the SDK's
// CommandTransport does, and reads its output through filterFrame, one
// newline-delimited message at a time.
type stdioTransport struct {
	cmd *exec.Cmd
	s   *server // set by watch
}

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	return (&sdk.IOTransport{
		Reader: &frameReader{r: bufio.NewReaderSize(stdout, 64<<10), s: t.s},
		Writer: &processInput{WriteCloser: stdin, cmd: t.cmd},
	}).Connect(ctx)
}

// frameReader reads newline-delimited JSON-RPC messages, each through
// filterFrame. Closing it does nothing: closing the process's input ends
// the connection.
type frameReader struct {
	r   *bufio.Reader
	s   *server // drops the tools/list_changed notifications it need not see
	out []byte
	err error
}

func (f *frameReader) Read(p []byte) (int, error) {
	for len(f.out) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		line, err := f.r.ReadBytes('\n')
		f.err = err
		if len(line) > 0 {
			if jsonDepth(line, sdkMaxDepth-1) >= sdkMaxDepth-1 {
				body := bytes.TrimRight(line, "\r\n")
				line = append(filterFrame(body), line[len(body):]...)
			}
			if f.s != nil && bytes.Contains(line, []byte(methodListChanged)) && !f.s.keepListChanged(line) {
				continue // before the SDK decodes it: a flood costs little
			}
			f.out = line
		}
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	return n, nil
}

func (f *frameReader) Close() error { return nil }

// processInput is a server process's standard input. Closing it stops the
// process as the MCP specification says: its input is closed; if it has
// not exited after terminateAfter, it gets SIGTERM, and SIGKILL as long
// again later.
type processInput struct {
	io.WriteCloser
	cmd *exec.Cmd
}

func (p *processInput) Close() error {
	if err := p.WriteCloser.Close(); err != nil {
		return fmt.Errorf("closing the server's input: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	wait := func() (error, bool) {
		t := time.NewTimer(terminateAfter)
		defer t.Stop()
		select {
		case err := <-done:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if p.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := p.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("the server process does not exit")
}

// serverEnv is the environment of a stdio server: the default variables
// and those named, as the agent's process has them.
func serverEnv(names []string) []string {
	env := make([]string, 0, len(defaultEnv)+len(names))
	seen := make(map[string]bool, len(defaultEnv)+len(names))
	for _, list := range [][]string{defaultEnv[:], names} {
		for _, n := range list {
			if seen[n] {
				continue
			}
			seen[n] = true
			if v, ok := os.LookupEnv(n); ok {
				env = append(env, n+"="+v)
			}
		}
	}
	return env
}

// stderrTail is how much of a stdio server's standard error is kept.
const stderrTail = 64 << 10

// tailBuffer keeps the last bytes written to it. It is safe for
// concurrent use.
type tailBuffer struct {
	mu    sync.Mutex
	buf   []byte // a ring of cap(buf) bytes
	next  int    // where the next byte goes
	full  bool   // the ring has wrapped
	total int64  // bytes written
}

func newTailBuffer(n int) *tailBuffer { return &tailBuffer{buf: make([]byte, n)} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.total += int64(n)
	if len(p) > len(t.buf) {
		p = p[len(p)-len(t.buf):]
	}
	for len(p) > 0 {
		k := copy(t.buf[t.next:], p)
		p = p[k:]
		t.next += k
		if t.next == len(t.buf) {
			t.next, t.full = 0, true
		}
	}
	return n, nil
}

// String returns the kept bytes: the last len(buf) written, from the start
// of a line when the beginning was cut.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.full {
		return string(t.buf[:t.next])
	}
	b := make([]byte, 0, len(t.buf))
	b = append(b, t.buf[t.next:]...)
	b = append(b, t.buf[:t.next]...)
	if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
		b = b[i+1:]
	}
	return string(b)
}

// last returns at most n of the kept bytes, the last ones, from the start
// of a line when cut, and whether bytes were cut.
func (t *tailBuffer) last(n int) (string, bool) {
	s := t.String()
	cut := t.written() > int64(len(s))
	if len(s) > n {
		s = s[len(s)-n:]
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
			s = s[i+1:]
		}
		s = strings.ToValidUTF8(s, "")
		cut = true
	}
	return s, cut
}

func (t *tailBuffer) written() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
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
