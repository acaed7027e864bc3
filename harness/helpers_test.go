package harness_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/harnessx/harnessx/harness"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newAgent builds an agent over a scripted provider, failing the test on error.
func newAgent(t *testing.T, p harness.Provider, opts ...harness.Option) *harness.Agent {
	t.Helper()
	a, err := harness.New(append([]harness.Option{harness.WithProvider(p), harness.WithModel("test-model")}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	return a
}

type echoIn struct {
	Text string `json:"text"`
}

func echoTool() *harness.Tool {
	return harness.MustTool(harness.NewTool("echo", "Echo the text.", func(_ context.Context, in echoIn) (string, error) {
		return "echo: " + in.Text, nil
	}))
}

// logBuffer returns a logger writing to a buffer safe for concurrent use.
func logBuffer() (*slog.Logger, *syncBuffer) {
	b := &syncBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// orderLog records labels in order, from any goroutine.
type orderLog struct {
	mu  sync.Mutex
	got []string
}

func (o *orderLog) add(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, s)
}

func (o *orderLog) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.got...)
}
