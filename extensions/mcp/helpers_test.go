package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/mcp"
	"github.com/harnessx/harnessx/extensions/mcp/internal/testserver"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// serverBin is the stdio test server, built once by TestMain.
var serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcptest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "mcptestserver")
	if out, err := exec.Command("go", "build", "-o", serverBin, "./internal/testserver/mcptestserver").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// memServer runs srv in-process: each connection the extension opens gets
// a fresh pair of in-memory transports, the server side connected first.
func memServer(t *testing.T, srv *sdk.Server) mcp.Transport { return memServerWith(t, srv, nil) }

// memServerWith is memServer with the server's side of each connection
// wrapped by wrap (nil: not wrapped).
func memServerWith(t *testing.T, srv *sdk.Server, wrap func(sdk.Transport) sdk.Transport) mcp.Transport {
	var mu sync.Mutex
	var sessions []*sdk.ServerSession
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, ss := range sessions {
			ss.Close()
			ss.Wait()
		}
	})
	return mcp.SDKTransport("memory", "", func(ctx context.Context) (sdk.Transport, error) {
		ct, st := sdk.NewInMemoryTransports()
		var server sdk.Transport = st
		if wrap != nil {
			server = wrap(st)
		}
		ss, err := srv.Connect(ctx, server, nil)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		sessions = append(sessions, ss)
		mu.Unlock()
		return ct, nil
	})
}

// stdioServer is the test server as a subprocess.
func stdioServer() mcp.Transport { return mcp.Command(serverBin) }

// logBuffer collects an agent's log.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newAgent builds an agent with a scripted provider and the extension; it
// is closed at the end of the test.
func newAgent(t *testing.T, p harness.Provider, ext *mcp.Extension, opts ...harness.Option) *harness.Agent {
	t.Helper()
	a, err := harness.New(append([]harness.Option{
		harness.WithProvider(p),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithStateDir(t.TempDir()),
		harness.WithExtensions(ext),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := a.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return a
}

func enable(id, server string) harnesstest.Response {
	return harnesstest.CallTool(id, mcp.EnableTool, map[string]string{"server": server})
}

// results returns the tool results of a run, by call ID.
func results(r *harness.RunResult) map[string]*harness.ToolResult {
	m := map[string]*harness.ToolResult{}
	for _, msg := range r.Messages {
		for _, p := range msg.Content {
			if p.ToolResult != nil {
				m[p.ToolResult.CallID] = p.ToolResult
			}
		}
	}
	return m
}

func toolNames(defs []harness.ToolDefinition) []string {
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	return names
}

func has(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

func run(t *testing.T, a *harness.Agent, input string) *harness.RunResult {
	t.Helper()
	return runWithin(t, a, input, 30*time.Second)
}

// runWithin is run with a deadline of d.
func runWithin(t *testing.T, a *harness.Agent, input string, d time.Duration) *harness.RunResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r, err := a.Run(ctx, input)
	if err != nil {
		t.Fatalf("Run(%q): %v", input, err)
	}
	return r
}

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

func newLogger(l *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

var _ = testserver.Lines
