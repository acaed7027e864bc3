package recording_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessx/harnessx/internal/recording"
)

func line(seq int) []byte {
	return fmt.Appendf(nil, `{"seq":%d,"time":"2026-11-30T12:00:00Z","kind":"tool_result","text":"%s"}`+"\n", seq, strings.Repeat("x", 80))
}

func TestJournalSegments(t *testing.T) {
	tests := []struct {
		name      string
		segBytes  int64
		maxBytes  int64
		lines     int
		wantSegs  int
		wantFirst uint64 // first surviving seq
	}{
		{"one segment", 1 << 20, 4 << 20, 50, 1, 1},
		{"rotation", 1000, 1 << 20, 50, 9, 1},
		{"oldest deleted", 1000, 3000, 50, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			j, err := recording.Open(dir, recording.Options{SegmentBytes: tt.segBytes, MaxBytes: tt.maxBytes, FlushInterval: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= tt.lines; i++ {
				if !j.Append(line(i)) {
					t.Fatalf("append %d dropped", i)
				}
				if i%5 == 0 {
					if err := j.Flush(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := j.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := j.Close(context.Background()); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			segs, err := recording.Segments(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(segs) != tt.wantSegs {
				t.Fatalf("%d segments %v, want %d", len(segs), segs, tt.wantSegs)
			}
			var total int64
			for _, s := range segs {
				fi, err := os.Stat(filepath.Join(dir, s))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Size() > tt.segBytes {
					t.Errorf("segment %s has %d bytes, cap %d", s, fi.Size(), tt.segBytes)
				}
				total += fi.Size()
			}
			if total > tt.maxBytes {
				t.Errorf("total %d > cap %d", total, tt.maxBytes)
			}
			var seqs []uint64
			st, err := recording.Read(dir, func(l []byte) (bool, error) {
				var e struct{ Seq uint64 }
				if json.Unmarshal(l, &e) != nil {
					return false, nil
				}
				seqs = append(seqs, e.Seq)
				return true, nil
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if st.Torn != 0 || st.Corrupt != 0 {
				t.Errorf("stats %+v", st)
			}
			if seqs[len(seqs)-1] != uint64(tt.lines) {
				t.Errorf("last seq %d, want %d", seqs[len(seqs)-1], tt.lines)
			}
			if tt.wantFirst != 0 && seqs[0] != tt.wantFirst {
				t.Errorf("first seq %d, want %d", seqs[0], tt.wantFirst)
			}
			if tt.wantFirst == 0 && seqs[0] == 1 {
				t.Errorf("oldest segment was not deleted")
			}
			for i := 1; i < len(seqs); i++ {
				if seqs[i] != seqs[i-1]+1 {
					t.Fatalf("gap after seq %d", seqs[i-1])
				}
			}
		})
	}
}

func TestJournalReopen(t *testing.T) {
	dir := t.TempDir()
	for round := 0; round < 2; round++ {
		j, err := recording.Open(dir, recording.Options{})
		if err != nil {
			t.Fatal(err)
		}
		j.Append(line(round + 1))
		if err := j.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if j.Append(line(9)) {
			t.Error("append after close accepted")
		}
	}
	segs, _ := recording.Segments(dir)
	if len(segs) != 2 || segs[0] != recording.SegmentName(1) || segs[1] != recording.SegmentName(2) {
		t.Errorf("segments %v", segs)
	}
}

// TestJournalLegacySegments checks a directory whose older segments
// end in .jsonl (recordings of format 1): they are listed and read in
// number order among the new ones, the journal numbers its segments after
// them, and rotation deletes them past the cap like the others.
func TestJournalLegacySegments(t *testing.T) {
	dir := t.TempDir()
	for n := 1; n <= 2; n++ {
		name := fmt.Sprintf("seg-%08d.jsonl", n)
		if err := os.WriteFile(filepath.Join(dir, name), line(n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Not segments: other suffixes, no number.
	for _, name := range []string{"seg-00000004.json", "seg-.events", "seg-x.jsonl", "spans.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, name), line(99), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	size := int64(len(line(1)))
	j, err := recording.Open(dir, recording.Options{SegmentBytes: size, MaxBytes: 3 * size, FlushInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	j.Append(line(3))
	if err := j.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	segs, _ := recording.Segments(dir)
	want := []string{"seg-00000001.jsonl", "seg-00000002.jsonl", recording.SegmentName(3)}
	if fmt.Sprint(segs) != fmt.Sprint(want) || !strings.HasSuffix(want[2], ".events") {
		t.Fatalf("segments %v, want %v", segs, want)
	}
	var seqs []int
	if _, err := recording.Read(dir, func(l []byte) (bool, error) {
		var e struct{ Seq int }
		err := json.Unmarshal(l, &e)
		seqs = append(seqs, e.Seq)
		return err == nil, nil
	}, nil); err != nil || fmt.Sprint(seqs) != "[1 2 3]" {
		t.Fatalf("read %v (%v), want [1 2 3]", seqs, err)
	}
	// Two more segments: past the cap of three, the legacy ones go first.
	for n := 4; n <= 5; n++ {
		j.Append(line(n))
		if err := j.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	segs, _ = recording.Segments(dir)
	want = []string{recording.SegmentName(3), recording.SegmentName(4), recording.SegmentName(5)}
	if fmt.Sprint(segs) != fmt.Sprint(want) {
		t.Errorf("after rotation: segments %v, want %v", segs, want)
	}
}

func TestJournalDropsWhenFull(t *testing.T) {
	dir := t.TempDir()
	j, err := recording.Open(dir, recording.Options{MaxPending: 2*len(line(1)) + 10, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close(context.Background())
	accepted := 0
	for i := 0; i < 10; i++ {
		if j.Append(line(i + 1)) {
			accepted++
		}
	}
	if accepted != 2 || j.Dropped() != 8 {
		t.Errorf("accepted %d dropped %d", accepted, j.Dropped())
	}
}

// TestJournalWritesWhenTheWriterIsLate holds the writer goroutine in
// AfterWrite: lines appended past four flush intervals are written by
// Append itself.
func TestJournalWritesWhenTheWriterIsLate(t *testing.T) {
	dir := t.TempDir()
	held, release := make(chan struct{}), make(chan struct{})
	var once bool
	j, err := recording.Open(dir, recording.Options{FlushInterval: time.Millisecond, AfterWrite: func() {
		if !once {
			once = true
			close(held)
			<-release
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close(context.Background())
	defer close(release)
	j.Append(line(1))
	<-held // the writer wrote line 1 and is stuck
	size := func() int64 {
		names, _ := recording.Segments(dir)
		var n int64
		for _, name := range names {
			if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
				n += fi.Size()
			}
		}
		return n
	}
	before := size()
	deadline := time.Now().Add(10 * time.Second)
	for seq := 2; size() == before; seq++ {
		if time.Now().After(deadline) {
			t.Fatalf("%d lines appended over 10 s with the writer stuck: none written", seq-2)
		}
		j.Append(line(seq))
		time.Sleep(time.Millisecond / 2)
	}
}

// TestJournalAppendPartsAndFailures appends lines in parts, each written
// as one line; a write that fails (the directory removed under the
// journal) loses its line and counts in Failures, and once the directory
// is back the next line is written.
func TestJournalAppendPartsAndFailures(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "rec")
	j, err := recording.Open(dir, recording.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close(ctx)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	l1, l2 := line(1), line(2)
	if !j.AppendParts(l1[:10], l1[10:20], l1[20:]) {
		t.Fatal("AppendParts dropped the line")
	}
	if err := j.Flush(ctx); err == nil {
		t.Fatal("Flush into a removed directory returned no error")
	}
	if j.Failures() != 1 || j.Lost() != 1 {
		t.Fatalf("failures %d lost %d, want 1 and 1", j.Failures(), j.Lost())
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if !j.AppendParts(l2[:5], nil, l2[5:]) {
		t.Fatal("AppendParts dropped the line")
	}
	if err := j.Flush(ctx); err != nil {
		t.Fatalf("Flush once the directory is back: %v", err)
	}
	if j.Failures() != 1 {
		t.Errorf("failures %d after a good write, want 1 still", j.Failures())
	}
	var got []string
	if _, err := recording.Read(dir, func(b []byte) (bool, error) {
		got = append(got, strings.TrimSuffix(string(b), "\n"))
		return true, nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSuffix(string(l2), "\n"); len(got) != 1 || got[0] != want {
		t.Errorf("journal holds %q, want [%q]", got, want)
	}
}

// TestJournalYield keeps one processor busy appending, as an agent's loop
// does under GOMAXPROCS=1, calling Yield after each line: the writer
// goroutine must write batches about one FlushInterval apart. Without
// Yield it runs only when the scheduler preempts the appender, about
// every 10 ms.
func TestJournalYield(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const interval = 2 * time.Millisecond
	var mu sync.Mutex
	var writes []time.Time
	j, err := recording.Open(t.TempDir(), recording.Options{FlushInterval: interval, AfterWrite: func() {
		mu.Lock()
		writes = append(writes, time.Now())
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close(context.Background())
	l := line(1) // one line, appended over and over: the loop allocates nothing
	start := time.Now()
	for time.Since(start) < 400*time.Millisecond {
		if !j.Append(l) {
			t.Fatal("line dropped")
		}
		j.Yield()
		// Busy between lines, as a run is between its events (and at a
		// pace the disk keeps up with).
		for d := time.Now().Add(5 * time.Microsecond); time.Now().Before(d); {
		}
	}
	mu.Lock()
	w := slices.Clone(writes)
	mu.Unlock()
	if len(w) < 10 {
		t.Fatalf("%d batches written in 400 ms of appends, want about 200", len(w))
	}
	gaps := make([]time.Duration, len(w)-1)
	for i := range gaps {
		gaps[i] = w[i+1].Sub(w[i])
	}
	slices.Sort(gaps)
	if med := gaps[len(gaps)/2]; med > 3*interval { // 10 ms and more when broken
		t.Errorf("batches written %v apart (median of %d), want about %v", med, len(gaps), interval)
	}
}

// TestJournalAfterWriteOncePerBatch: the writer, due again an interval
// after each write, calls AfterWrite for the batches it writes and the
// Kicks it gets, not for the interval that finds nothing to write.
func TestJournalAfterWriteOncePerBatch(t *testing.T) {
	var calls atomic.Int32
	j, err := recording.Open(t.TempDir(), recording.Options{FlushInterval: time.Millisecond, AfterWrite: func() { calls.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close(context.Background())
	j.Append(line(1))
	time.Sleep(50 * time.Millisecond)
	if n := calls.Load(); n != 1 {
		t.Errorf("AfterWrite called %d times for one batch, want 1", n)
	}
	j.Kick()
	time.Sleep(50 * time.Millisecond)
	if n := calls.Load(); n != 2 {
		t.Errorf("AfterWrite called %d times after a batch and a Kick, want 2", n)
	}
}
