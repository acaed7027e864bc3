package flight_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// windowChildEnv, when set, makes the test binary run runWindowChild: an
// agent that runs without pause, traced into the recorder's span
// processor (heavy span and session snapshots), and prints on stdout, every
// millisecond, how many events the recorder has accepted.
const windowChildEnv = "FLIGHT_TEST_WINDOW_DIR"

func runWindowChild() int {
	dir := os.Getenv(windowChildEnv)
	rec := flight.New(flight.WithDir(dir),
		flight.WithSpanCapacity(4096),
		flight.WithSnapshotInterval(20*time.Millisecond),
		flight.WithJournalOptions(flight.JournalOptions{MaxBytes: 1 << 30}),
		flight.WithTriggers())
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec.SpanProcessor()))
	result := strings.Repeat("a fairly long tool result line\n", 80)
	tool := harness.MustTool(harness.NewTool("fetch", "Fetch.", func(context.Context, echoIn) (string, error) { return result, nil }))
	prov := harnesstest.NewScriptedProvider(
		harnesstest.CallTool("c1", "fetch", map[string]string{"text": "x"}),
		harnesstest.Reply(strings.Repeat("answer ", 100)),
	)
	prov.Loop, prov.DiscardRequests = true, true
	a, err := harness.New(
		harness.WithSessionID("window"),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithProvider(prov),
		harness.WithTools(tool),
		harness.WithExtensions(rec, tracing.New(tracing.WithTracerProvider(tp))),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		w := bufio.NewWriter(os.Stdout)
		for {
			fmt.Fprintf(w, "%d\n", rec.Stats().Events)
			w.Flush()
			time.Sleep(time.Millisecond)
		}
	}()
	ctx := context.Background()
	for i := 1; ; i++ {
		a.Run(ctx, "fetch it")
		if i%30 == 0 {
			a.Reset() // bounds the history: a big session, but not an ever-growing one
		}
	}
}

// TestCrashWindow kills, under CPU load, a child that runs agents without
// pause with heavy snapshots, and checks that every event the recorder
// accepted at least 50ms before the kill is in the journal: no snapshot
// delays the journal's writes.
func TestCrashWindow(t *testing.T) {
	const window = 50 * time.Millisecond
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), windowChildEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type report struct {
		seq uint64
		at  time.Time
	}
	var mu sync.Mutex
	var reports []report
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			n, err := strconv.ParseUint(sc.Text(), 10, 64)
			if err != nil {
				continue
			}
			at := time.Now() // after the child accepted them: conservative
			mu.Lock()
			reports = append(reports, report{n, at})
			mu.Unlock()
		}
	}()
	// Load: busy goroutines for a bounded time.
	stopLoad := make(chan struct{})
	var load sync.WaitGroup
	for i := 0; i < 3; i++ {
		load.Add(1)
		go func() {
			defer load.Done()
			deadline := time.Now().Add(10 * time.Second)
			x := 0
			for time.Now().Before(deadline) {
				select {
				case <-stopLoad:
					return
				default:
				}
				for j := 0; j < 100_000; j++ {
					x += j
				}
			}
			_ = x
		}()
	}
	defer func() { close(stopLoad); load.Wait() }()

	// Let the span buffer and the session fill up, then kill.
	time.Sleep(2500 * time.Millisecond)
	kill := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	<-readDone
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v\n%s", cmd.ProcessState, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	var must uint64 // every event up to must was accepted >= window before the kill
	for _, r := range reports {
		if kill.Sub(r.at) >= window {
			must = max(must, r.seq)
		}
	}
	if must < 100 {
		t.Fatalf("only %d events accepted before the kill: the child did not run (stderr:\n%s)", must, stderr.String())
	}
	present := map[uint64]bool{}
	var last uint64
	flight.ReadJournal(filepath.Join(dir, "window"), func(e *flight.Event) error {
		present[e.Seq] = true
		last = max(last, e.Seq)
		return nil
	}, nil)
	for s := uint64(1); s <= must; s++ {
		if !present[s] {
			// When was it first reported accepted?
			var first time.Time
			for _, r := range reports {
				if r.seq >= s {
					first = r.at
					break
				}
			}
			t.Fatalf("event %d, accepted %v before the kill, is not in the journal (journal ends at %d; %d must be there)",
				s, kill.Sub(first).Round(time.Millisecond), last, must)
		}
	}
	t.Logf("%d events accepted >= %v before the kill, all in the journal; journal ends at %d", must, window, last)
}
