package flight_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/recording"
)

func failingAgent(t *testing.T, dir string, runs int, opts []flight.Option, exts ...harness.Extension) (*harness.Agent, *flight.Extension) {
	t.Helper()
	rec := flight.New(append([]flight.Option{flight.WithDir(dir)}, opts...)...)
	var script []harnesstest.Response
	for i := 0; i < runs; i++ {
		script = append(script, harnesstest.Fail(errors.New("upstream overloaded")))
	}
	a, err := harness.New(
		harness.WithSessionID("s"),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithProvider(harnesstest.NewScriptedProvider(script...)),
		harness.WithExtensions(append([]harness.Extension{rec}, exts...)...),
	)
	if err != nil {
		t.Fatal(err)
	}
	return a, rec
}

// TestFailedRunDoesNotWaitForBundle: the bundle of a failed run is
// written in the background (here made slow by the incident callback);
// the run returns at once, and Close waits for the bundle.
func TestFailedRunDoesNotWaitForBundle(t *testing.T) {
	const delay = time.Second
	slow := flight.WithOnIncident(func(string, error) { time.Sleep(delay) })
	a, rec := failingAgent(t, t.TempDir(), 1, []flight.Option{slow})
	start := time.Now()
	res, _ := a.Run(context.Background(), "go")
	took := time.Since(start)
	if res.Status != harness.StatusFailed {
		t.Fatalf("status %s", res.Status)
	}
	start = time.Now()
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	closing := time.Since(start)
	if took > delay/4 {
		t.Errorf("the failed run took %v: it waited for its bundle", took)
	}
	if closing < delay/2 {
		t.Errorf("Close took %v: it did not wait for the pending bundle", closing)
	}
	if got := rec.Incidents(); len(got) != 1 {
		t.Fatalf("incidents after Close %v, want 1", got)
	}
	b, err := flight.ReadBundleFile(rec.Incidents()[0], flight.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Verify(); err != nil || b.Manifest.Reason != "run_failure" || b.Manifest.Counts["run_end"] != 1 {
		t.Errorf("bundle %+v: %v", b.Manifest, err)
	}
}

func bundlesIn(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "s", recording.IncidentsDir, "*.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestIncidentRateLimit: 1,000 failures write no more bundles than the
// rate limit allows; the others are counted.
func TestIncidentRateLimit(t *testing.T) {
	const runs = 1000
	dir := t.TempDir()
	a, rec := failingAgent(t, dir, runs, nil)
	start := time.Now()
	for i := 0; i < runs; i++ {
		if res, _ := a.Run(context.Background(), "go"); res.Status != harness.StatusFailed {
			t.Fatalf("run %d: %s", i, res.Status)
		}
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := len(bundlesIn(t, dir))
	st := rec.Stats()
	// A burst of the rate, plus what the bucket refilled meanwhile.
	refill := int(time.Since(start)*flight.DefaultIncidentRate/flight.DefaultIncidentPer) + 1
	if n == 0 || n > flight.DefaultIncidentRate+refill {
		t.Errorf("%d bundles for %d failures, want 1..%d", n, runs, flight.DefaultIncidentRate+refill)
	}
	if st.IncidentsSuppressed != uint64(runs-n) {
		t.Errorf("suppressed %d, want %d", st.IncidentsSuppressed, runs-n)
	}
}

// TestIncidentLimits: the incidents directory keeps the newest bundles
// within the count and byte limits.
func TestIncidentLimits(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		dir := t.TempDir()
		a, rec := failingAgent(t, dir, 30, []flight.Option{flight.WithIncidentRate(0, 0), flight.WithIncidentLimits(5, 0)})
		for i := 0; i < 30; i++ {
			a.Run(context.Background(), "go")
			if i%4 == 0 {
				rec.Flush(context.Background())
			}
		}
		if err := a.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := bundlesIn(t, dir)
		if len(got) != 5 {
			t.Fatalf("%d bundles, want 5", len(got))
		}
		// The newest are kept: the last bundle written is among them.
		inc := rec.Incidents()
		if len(inc) != 5 || inc[len(inc)-1] != got[len(got)-1] {
			t.Errorf("Incidents() %v, dir %v", inc, got)
		}
		if st := rec.Stats(); st.IncidentsSuppressed+uint64(len(got)) > 30 {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		dir := t.TempDir()
		a, _ := failingAgent(t, dir, 1, []flight.Option{flight.WithIncidentRate(0, 0)})
		a.Run(context.Background(), "go")
		a.Close(context.Background())
		one := bundlesIn(t, dir)
		fi, err := os.Stat(one[0])
		if err != nil {
			t.Fatal(err)
		}
		limit := 3*fi.Size() + fi.Size()/2 // three bundles and a half
		dir = t.TempDir()
		a, _ = failingAgent(t, dir, 20, []flight.Option{flight.WithIncidentRate(0, 0), flight.WithIncidentLimits(1000, limit)})
		for i := 0; i < 20; i++ {
			a.Run(context.Background(), "go")
		}
		a.Close(context.Background())
		var total int64
		got := bundlesIn(t, dir)
		for _, p := range got {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			total += fi.Size()
		}
		if total > limit || len(got) < 2 {
			t.Errorf("%d bundles, %d bytes; limit %d bytes", len(got), total, limit)
		}
	})
}

// fakeRecording creates an old recording directory of about size bytes.
func fakeRecording(t *testing.T, root, name string, created time.Time, size int) {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(recording.Info{Format: "harnessx-flight-recording", Version: 1, SessionID: name, Created: created})
	if err := os.WriteFile(filepath.Join(dir, recording.InfoName), info, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, recording.SegmentName(1)), []byte(strings.Repeat("x", size)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRecordingLimits: opening a journal evicts the oldest recordings
// under the root past the count and byte limits, never one in use.
func TestRecordingLimits(t *testing.T) {
	tests := []struct {
		name     string
		count    int
		bytes    int64
		survive  []string // of the old recordings
		liveKept bool
	}{
		{"count", 4, 0, []string{"old-8", "old-9"}, true},
		{"bytes", 100, 3*10_000 + 5_000, []string{"old-7", "old-8", "old-9"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			// A live recording, the oldest of all: another agent, open.
			live, _ := failingAgent(t, root, 1, []flight.Option{flight.WithTriggers()})
			live.Run(context.Background(), "go")
			defer live.Close(context.Background())
			base := time.Now().Add(time.Hour) // newer than the live one
			for i := 0; i < 10; i++ {
				fakeRecording(t, root, fmt.Sprintf("old-%d", i), base.Add(time.Duration(i)*time.Minute), 10_000)
			}
			if err := os.WriteFile(filepath.Join(root, "not-a-recording.txt"), []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(root, "other-dir"), 0o755); err != nil {
				t.Fatal(err)
			}
			rec := flight.New(flight.WithDir(root), flight.WithRecordingLimits(tt.count, tt.bytes))
			a, err := harness.New(harness.WithSessionID("new"), harness.WithLogger(slog.New(slog.DiscardHandler)),
				harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Reply("ok"))), harness.WithExtensions(rec))
			if err != nil {
				t.Fatal(err)
			}
			a.Run(context.Background(), "go")
			a.Close(context.Background()) // the eviction ran on the snapshotter
			ents, _ := os.ReadDir(root)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			want := append([]string{"new", "not-a-recording.txt", "other-dir", "s"}, tt.survive...)
			if fmt.Sprint(sorted(names)) != fmt.Sprint(sorted(want)) {
				t.Errorf("root holds %v, want %v", sorted(names), sorted(want))
			}
		})
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
