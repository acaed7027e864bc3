package flight_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/otlpjson"
	"github.com/harnessx/harnessx/internal/otlpspans"
	"github.com/harnessx/harnessx/internal/recording"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// childEnv, when set, makes the test binary run runChild instead of the
// tests: an agent with the recorder that blocks in a tool until killed.
const childEnv = "FLIGHT_TEST_CHILD_DIR"

func runChild() int {
	dir := os.Getenv(childEnv)
	rec := flight.New(flight.WithDir(dir), flight.WithSnapshotInterval(time.Millisecond))
	block := harness.MustTool(harness.NewTool("wait", "Block.", func(ctx context.Context, in echoIn) (string, error) {
		select {} // until SIGKILL
	}))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec.SpanProcessor()))
	a, err := harness.New(
		harness.WithName("child"),
		harness.WithSessionID("crash-session"),
		harness.WithProvider(harnesstest.NewScriptedProvider(
			harnesstest.CallTool("c1", "leak", map[string]string{"text": "x"}),
			harnesstest.CallTool("c2", "wait", map[string]string{"text": "y"}),
		)),
		harness.WithTools(leakTool(), block),
		harness.WithExtensions(rec, tracingExt{tracer{tp.Tracer("child")}}),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, err = a.Run(context.Background(), "please use "+fakeSecret)
	fmt.Fprintln(os.Stderr, "child: run returned", err)
	return 1
}

func TestSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(dir, "crash-session")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if journalHas(rec, "wait") && fileExists(filepath.Join(rec, recording.SessionSnapshot)) && fileExists(filepath.Join(rec, recording.SpansLog)) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the child wrote no tool_call of wait in time; stderr:\n%s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v", err)
	}
	// Simulate a write torn by the kill.
	segs, err := recording.Segments(rec)
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments %v, %v", segs, err)
	}
	f, err := os.OpenFile(filepath.Join(rec, segs[len(segs)-1]), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":99,"time":"2026-01-01T00:00:00Z","kind":"tool_res`)
	f.Close()

	var buf bytes.Buffer
	m, err := flight.ExportJournal(context.Background(), rec, &buf, flight.ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Journal == nil || m.Journal.Torn != 1 {
		t.Errorf("journal stats %+v, want one torn line", m.Journal)
	}
	b, err := flight.ReadBundle(bytes.NewReader(buf.Bytes()), flight.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Verify(); err != nil {
		t.Fatal(err)
	}
	evs, err := b.Events()
	if err != nil {
		t.Fatal(err)
	}
	want := []flight.Kind{flight.KindRunStart, flight.KindModelRequest, flight.KindModelResponse, flight.KindToolCall,
		flight.KindToolResult, flight.KindModelRequest, flight.KindModelResponse, flight.KindToolCall}
	if got := kinds(evs); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if last := evs[len(evs)-1]; last.Tool != "wait" || last.CallID != "c2" {
		t.Errorf("last event %+v", last)
	}
	// The span of the finished leak call survived the crash; the run's
	// and the wait call's spans never ended.
	data, _ := b.Member(flight.SpansName)
	spans, err := otlpjson.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if n := otlpspans.Count(spans); n != 1 || spans.ResourceSpans[0].ScopeSpans[0].Spans[0].Name != "execute_tool leak" {
		t.Errorf("spans: %d, want execute_tool leak", n)
	}
	if m.Agent != "child" || m.SessionID != "crash-session" || len(m.RunIDs) != 1 {
		t.Errorf("manifest %+v", m)
	}
	sess, ok := b.Member(flight.SessionName)
	if !ok || !strings.Contains(string(sess), "crash-session") {
		t.Errorf("session snapshot missing: %q", sess)
	}
	assertNoSecret(t, rec, b)
}

func journalHas(dir, tool string) bool {
	found := false
	flight.ReadJournal(dir, func(e *flight.Event) error {
		if e.Kind == flight.KindToolCall && e.Tool == tool {
			found = true
		}
		return nil
	}, nil)
	return found
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
