package flight_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// fsizeChildEnv, when set, makes the test binary run runFsizeChild: an
// agent that records under a low file-size limit, then under a raised one.
const fsizeChildEnv = "FLIGHT_TEST_FSIZE_DIR"

// fsizeReport is what the child tells the parent on stdout.
type fsizeReport struct {
	FlushErr     string       // Flush while the limit is hit
	During       flight.Stats // Stats then
	FlushAfter   string       // Flush after the limit is raised
	After        flight.Stats // Stats at the end, after Close
	CloseErr     string
	ErrorLogs    []string // error lines the agent's logger received
	MarkersAfter []string // user messages of the runs after the raise
	Err          string   // the child failed
}

// lockedBuffer is a concurrency-safe bytes.Buffer for a slog handler.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func runFsizeChild() int {
	rep := fsizeReport{}
	defer func() { json.NewEncoder(os.Stdout).Encode(rep) }()
	fail := func(err error) int { rep.Err = err.Error(); return 0 }

	signal.Ignore(syscall.SIGXFSZ) // writes past the limit fail with EFBIG instead of killing us
	var logs lockedBuffer
	rec := flight.New(flight.WithDir(os.Getenv(fsizeChildEnv)), flight.WithTriggers())
	var script []harnesstest.Response
	for i := 0; i < 100; i++ {
		script = append(script, harnesstest.Reply(strings.Repeat("answer ", 40)))
	}
	a, err := harness.New(
		harness.WithSessionID("fsize"),
		harness.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))),
		harness.WithProvider(harnesstest.NewScriptedProvider(script...)),
		harness.WithExtensions(rec),
	)
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	if _, err := a.Run(ctx, "before the limit"); err != nil {
		return fail(err)
	}
	if err := rec.Flush(ctx); err != nil {
		return fail(fmt.Errorf("flush before the limit: %w", err))
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		return fail(err)
	}
	low := lim
	low.Cur = 6 << 10 // bytes; the first run wrote about 2 KiB
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &low); err != nil {
		return fail(err)
	}
	for i := 0; i < 30; i++ {
		if _, err := a.Run(ctx, fmt.Sprintf("under the limit %d", i)); err != nil {
			return fail(err)
		}
		time.Sleep(2 * time.Millisecond) // several batches, several failures
	}
	time.Sleep(20 * time.Millisecond) // let the writer's timer write (and fail) the last batch
	if err := rec.Flush(ctx); err != nil {
		rep.FlushErr = err.Error()
	}
	rep.During = rec.Stats()
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil { // soft back up to the hard limit
		return fail(err)
	}
	for i := 0; i < 3; i++ {
		m := fmt.Sprintf("after the raise %d", i)
		rep.MarkersAfter = append(rep.MarkersAfter, m)
		if _, err := a.Run(ctx, m); err != nil {
			return fail(err)
		}
	}
	if err := rec.Flush(ctx); err != nil {
		rep.FlushAfter = err.Error()
	}
	if err := a.Close(ctx); err != nil {
		rep.CloseErr = err.Error()
	}
	rep.After = rec.Stats()
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"level":"ERROR"`) {
			rep.ErrorLogs = append(rep.ErrorLogs, l)
		}
	}
	return 0
}

// TestJournalFileSizeLimit runs a child process under a real file-size
// limit (RLIMIT_FSIZE, SIGXFSZ ignored, so writes fail with EFBIG): lost
// events are counted, logged once and reported by Flush; once the limit
// is raised writing resumes and the journal reads cleanly.
func TestJournalFileSizeLimit(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fsizeChildEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	var rep fsizeReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("child report %q: %v\n%s", out, err, stderr.String())
	}
	if rep.Err != "" {
		t.Fatalf("child: %s", rep.Err)
	}
	t.Logf("during %+v, after %+v", rep.During, rep.After)
	if !strings.Contains(rep.FlushErr, "file too large") {
		t.Errorf("Flush under the limit returned %q, want the EFBIG error", rep.FlushErr)
	}
	if rep.During.Lost == 0 {
		t.Errorf("no lost events counted under the limit: %+v", rep.During)
	}
	if len(rep.ErrorLogs) != 1 || !strings.Contains(rep.ErrorLogs[0], "journal write failed") {
		t.Errorf("error logs %q, want exactly one about the journal", rep.ErrorLogs)
	}
	if rep.FlushAfter != "" || rep.CloseErr != "" {
		t.Errorf("after the raise: Flush %q, Close %q, want no error", rep.FlushAfter, rep.CloseErr)
	}
	if rep.After.Lost != rep.During.Lost {
		t.Errorf("lost %d after the raise, %d before: writes did not resume", rep.After.Lost, rep.During.Lost)
	}

	evs, st := journalEvents(t, filepath.Join(dir, "fsize"))
	if st.Torn != 0 || st.Corrupt != 0 {
		t.Errorf("journal has %d torn and %d corrupt lines", st.Torn, st.Corrupt)
	}
	if got := uint64(len(evs)) + rep.After.Lost + rep.After.Dropped; got != rep.After.Events {
		t.Errorf("journal %d + lost %d + dropped %d != %d events recorded", len(evs), rep.After.Lost, rep.After.Dropped, rep.After.Events)
	}
	seen := map[string]bool{}
	for i, e := range evs {
		if e.Kind == flight.KindRunStart {
			seen[e.Text] = true
		}
		if i > 0 && e.Seq <= evs[i-1].Seq {
			t.Errorf("seq %d after %d", e.Seq, evs[i-1].Seq)
		}
	}
	for _, m := range append([]string{"before the limit"}, rep.MarkersAfter...) {
		if !seen[m] {
			t.Errorf("run %q is not in the journal", m)
		}
	}
	if seen["under the limit 29"] {
		t.Errorf("the last run under the limit was written: the limit did not bite")
	}
}
