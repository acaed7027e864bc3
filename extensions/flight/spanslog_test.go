package flight_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/otlpjson"
	"github.com/harnessx/harnessx/internal/otlpspans"
	"github.com/harnessx/harnessx/internal/recording"
)

// spanLogLines decodes spans.jsonl of the recording and returns the span
// IDs of each line.
func spanLogLines(t *testing.T, rec string) [][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(rec, recording.SpansLog))
	if err != nil {
		return nil
	}
	var out [][]string
	for line := range bytes.Lines(data) {
		req, err := otlpjson.Unmarshal(bytes.TrimSpace(line))
		if err != nil {
			t.Fatalf("spans.jsonl line: %v", err)
		}
		var ids []string
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					ids = append(ids, string(s.SpanId))
				}
			}
		}
		out = append(out, ids)
	}
	return out
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestSpanSnapshotIsIncremental: each span snapshot writes only the spans
// that ended since the previous one (appended to spans.jsonl), so its
// cost follows the new spans, not the buffer; an export while the agent
// runs has every run's spans; Close compacts into spans.json.
func TestSpanSnapshotIsIncremental(t *testing.T) {
	s := newAgent(t, []harnesstest.Response{
		{Text: "one"}, {Text: "two"}, {Text: "three"},
	}, nil)
	rec := filepath.Join(s.dir, "sess-1")
	ctx := context.Background()
	for i := range 3 {
		if _, err := s.agent.Run(ctx, "run"); err != nil {
			t.Fatal(err)
		}
		// Each run ends one span (newAgent's tracer makes the agent span
		// and tool spans; these runs call no tool); wait until the
		// snapshotter has logged it before the next run.
		want := i + 1
		waitFor(t, "the span log", func() bool {
			n := 0
			for _, l := range spanLogLines(t, rec) {
				n += len(l)
			}
			return n >= want
		})
	}
	lines := spanLogLines(t, rec)
	seen := map[string]bool{}
	for _, l := range lines {
		for _, id := range l {
			if seen[id] {
				t.Errorf("span %x written twice: the snapshot rewrote old spans", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != 3 || len(lines) != 3 {
		t.Errorf("%d spans in %d lines, want 3 in 3", len(seen), len(lines))
	}
	if _, err := os.Stat(filepath.Join(rec, recording.SpansSnapshot)); err == nil {
		t.Error("spans.json written before any compaction")
	}
	// The export keeps the spans of the runs in the journal, whose last
	// run's events the journal writer may not have written yet (it
	// promises them within 50 ms): wait for them, up to waitFor's 5 s.
	spans := 0
	waitFor(t, "an export with every run's spans", func() bool {
		var out bytes.Buffer
		if _, err := flight.ExportJournal(ctx, rec, &out, flight.ExportOptions{}); err != nil {
			t.Fatal(err)
		}
		b, err := flight.ReadBundle(&out, flight.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spans = b.Manifest.Spans
		return spans >= 3
	})
	if spans != 3 {
		t.Errorf("export while running has %d spans, want 3", spans)
	}

	s.close(t)
	if _, err := os.Stat(filepath.Join(rec, recording.SpansLog)); err == nil {
		t.Error("spans.jsonl left after Close")
	}
	req, err := otlpspans.ReadRecording(rec)
	if err != nil {
		t.Fatal(err)
	}
	if n := otlpspans.Count(req); n != 3 {
		t.Errorf("spans.json after Close holds %d spans, want 3", n)
	}
}

// TestSpanLogCompacts: past the compaction size the next snapshot
// rewrites spans.json with the buffered spans and starts the log anew.
func TestSpanLogCompacts(t *testing.T) {
	defer flight.SetSpansCompactBytes(1)()
	s := newAgent(t, []harnesstest.Response{{Text: "one"}, {Text: "two"}}, nil)
	rec := filepath.Join(s.dir, "sess-1")
	ctx := context.Background()
	if _, err := s.agent.Run(ctx, "run"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the span log", func() bool { return len(spanLogLines(t, rec)) > 0 })
	if _, err := s.agent.Run(ctx, "run"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a compaction", func() bool {
		_, err := os.Stat(filepath.Join(rec, recording.SpansSnapshot))
		return err == nil
	})
	req, err := otlpspans.ReadRecording(rec)
	if err != nil {
		t.Fatal(err)
	}
	if n := otlpspans.Count(req); n != 2 {
		t.Errorf("the recording holds %d spans, want 2 (each once)", n)
	}
}

// TestReadRecordingSkipsTornLine: the torn last line a killed process
// leaves in spans.jsonl is skipped; a span in both files is kept once.
func TestReadRecordingSkipsTornLine(t *testing.T) {
	s := newAgent(t, []harnesstest.Response{{Text: "one"}}, nil)
	rec := filepath.Join(s.dir, "sess-1")
	if _, err := s.agent.Run(context.Background(), "run"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the span log", func() bool { return len(spanLogLines(t, rec)) > 0 })
	logData, err := os.ReadFile(filepath.Join(rec, recording.SpansLog))
	if err != nil {
		t.Fatal(err)
	}
	s.close(t) // compacts: spans.json holds the run's span
	// As if killed while appending after a compaction whose log removal
	// was lost: the old lines again, and a torn one.
	torn := append(append([]byte{}, logData...), logData[:len(logData)/2]...)
	if err := os.WriteFile(filepath.Join(rec, recording.SpansLog), torn, 0o600); err != nil {
		t.Fatal(err)
	}
	req, err := otlpspans.ReadRecording(rec)
	if err != nil {
		t.Fatal(err)
	}
	if n := otlpspans.Count(req); n != 1 {
		t.Errorf("%d spans, want 1", n)
	}
	if !strings.Contains(string(logData), "invoke_agent") {
		t.Errorf("the log lacks the agent span: %.200s", logData)
	}
}

// TestSpanSnapshotReplacesLogWhenBufferTurnsOver: when every buffered
// span ended since the last snapshot (spans end faster than the buffer
// holds them; here a buffer of one span and a span a run), the snapshot
// is what compacting would write: it replaces spans.json and removes the
// log instead of growing it.
func TestSpanSnapshotReplacesLogWhenBufferTurnsOver(t *testing.T) {
	s := newAgent(t, []harnesstest.Response{{Text: "one"}, {Text: "two"}}, nil, flight.WithSpanCapacity(1))
	rec := filepath.Join(s.dir, "sess-1")
	ctx := context.Background()
	if _, err := s.agent.Run(ctx, "run"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the span log", func() bool { return len(spanLogLines(t, rec)) == 1 })
	if _, err := os.Stat(filepath.Join(rec, recording.SpansSnapshot)); err == nil {
		t.Fatal("spans.json written by the first snapshot")
	}
	first := spanLogLines(t, rec)[0]
	if _, err := s.agent.Run(ctx, "run"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "spans.json in place of the log", func() bool {
		_, err := os.Stat(filepath.Join(rec, recording.SpansLog))
		return fileExists(filepath.Join(rec, recording.SpansSnapshot)) && errors.Is(err, fs.ErrNotExist)
	})
	req, err := otlpspans.ReadRecording(rec)
	if err != nil {
		t.Fatal(err)
	}
	if n := otlpspans.Count(req); n != 1 {
		t.Fatalf("the recording holds %d spans, want the buffered one", n)
	}
	if id := req.ResourceSpans[0].ScopeSpans[0].Spans[0].SpanId; len(first) != 1 || string(id) == first[0] {
		t.Errorf("spans.json holds the first run's span %x, want the second run's", id)
	}
}

// TestSpanSnapshotAfterAFirstSmallOne: a recording's first span snapshot
// holds one span and takes mostly a snapshot's fixed cost (a file
// written and renamed); the spans of a burst of runs that follows are in
// the recording within about a second, not after the backoff that the
// first snapshot's cost divided by its one span asked for (seconds for a
// few hundred pending spans, up to maxSpanSnapshotWait, 30 s).
func TestSpanSnapshotAfterAFirstSmallOne(t *testing.T) {
	// A buffer of 512 spans keeps a real snapshot's own cost, and so the
	// backoff it asks for, small even under the race detector.
	s := newAgent(t, []harnesstest.Response{{Text: "ok"}}, nil,
		flight.WithSnapshotInterval(50*time.Millisecond), flight.WithSpanCapacity(512))
	s.prov.Loop = true
	rec := filepath.Join(s.dir, "sess-1")
	ctx := context.Background()
	if _, err := s.agent.Run(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first span snapshot", func() bool { return len(recordedTraces(t, rec)) > 0 })

	var last string // the burst's last run
	for range 1000 {
		res, err := s.agent.Run(ctx, "burst")
		if err != nil {
			t.Fatal(err)
		}
		last = res.RunID
	}
	var trace string
	for _, e := range s.rec.Events() {
		if e.RunID == last && e.Kind == flight.KindRunEnd {
			trace = e.TraceID
		}
	}
	if trace == "" {
		t.Fatal("no trace for the last run")
	}
	start := time.Now()
	for !recordedTraces(t, rec)[trace] {
		if time.Since(start) > 3*time.Second {
			t.Fatalf("the burst's last run is not in the recording's spans %v after the burst", time.Since(start).Round(time.Millisecond))
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("the last run's spans were recorded %v after the burst", time.Since(start).Round(time.Millisecond))
}

// recordedTraces returns the traces of the spans in the recording's span
// snapshot and span log.
func recordedTraces(t *testing.T, rec string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	if data, err := os.ReadFile(filepath.Join(rec, recording.SpansSnapshot)); err == nil {
		req, err := otlpjson.Unmarshal(data) // written whole and renamed: never torn
		if err != nil {
			t.Fatalf("spans.json: %v", err)
		}
		maps.Copy(ids, traceIDsOf(req))
	}
	if data, err := os.ReadFile(filepath.Join(rec, recording.SpansLog)); err == nil {
		for line := range bytes.Lines(data) {
			// The last line may be being appended.
			if req, err := otlpjson.Unmarshal(bytes.TrimSpace(line)); err == nil {
				maps.Copy(ids, traceIDsOf(req))
			}
		}
	}
	return ids
}
