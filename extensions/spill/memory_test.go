package spill

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// peakHeap runs fn while sampling runtime.MemStats.HeapInuse and returns
// the peak.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	var peak atomic.Uint64
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > peak.Load() {
			peak.Store(ms.HeapInuse)
		}
	}
	sample()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				sample()
			}
		}
	})
	fn()
	close(stop)
	wg.Wait()
	sample()
	return peak.Load()
}

// TestLargeResultBoundedHeap stores a 200 MB result and reads it with
// every kind of operation, with the heap staying small throughout.
func TestLargeResultBoundedHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 400 MB of files")
	}
	const size = 200 << 20
	const limit = 32 << 20
	dir := t.TempDir()
	src := filepath.Join(dir, "big.log")
	// Stream the file to disk: a 1 MiB block of lines, written 200 times;
	// one line in 10,000 holds the rare word.
	var block strings.Builder
	for i := 0; block.Len() < 1<<20-200; i++ {
		if i%10_000 == 5_000 {
			fmt.Fprintf(&block, "%07d WARN shipment rerouted through the zanzibar hub\n", i)
		} else {
			fmt.Fprintf(&block, "%07d INFO GET /api/v1/items/%d status=200 latency=%dms\n", i, i, i%1000)
		}
	}
	blk := block.String()
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var written int64
	for written < size {
		n, _ := w.WriteString(blk)
		written += int64(n)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	blocks := written / int64(len(blk))
	rarePerBlock := int64(strings.Count(blk, "zanzibar"))
	linesPerBlock := int64(strings.Count(blk, "\n"))

	e := newExt(t, WithDir(filepath.Join(dir, "store")), WithVerifyEveryRead(true), WithMaxOutput(256<<10))
	var r Result
	peak := peakHeap(func() {
		f, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err = e.Spill(t.Context(), "logs", f)
		if err != nil {
			t.Fatal(err)
		}
	})
	if peak > limit {
		t.Errorf("storing: peak HeapInuse %d MB", peak>>20)
	}
	if r.Size != written || r.Lines != blocks*linesPerBlock {
		t.Fatalf("stored %d bytes, %d lines; want %d, %d", r.Size, r.Lines, written, blocks*linesPerBlock)
	}
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"search rare word", map[string]any{"op": "search", "pattern": "zanzibar", "max_matches": 1000},
			fmt.Sprintf(": %d matching lines\n", blocks*rarePerBlock)},
		{"search regexp with a literal prefix", map[string]any{"op": "search", "pattern": `zanzi(bar|baz) hub$`, "context": 1, "max_matches": 1000},
			fmt.Sprintf(": %d matching lines\n", blocks*rarePerBlock)},
		{"slice near the end", map[string]any{"op": "slice", "offset": blocks*linesPerBlock - 2},
			fmt.Sprintf("lines %d to %d", blocks*linesPerBlock-1, blocks*linesPerBlock)},
		{"search past max", map[string]any{"op": "search", "pattern": "INFO", "max_matches": 1000}, "stopped at max_matches=1000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.args["id"] = r.ID
			var out string
			peak := peakHeap(func() {
				var err error
				out, err = read(e, c.args)
				if err != nil {
					t.Fatal(err)
				}
			})
			t.Logf("peak HeapInuse %.1f MB", float64(peak)/(1<<20))
			if peak > limit {
				t.Errorf("peak HeapInuse %d MB, limit %d MB", peak>>20, limit>>20)
			}
			if !strings.Contains(out, c.want) {
				t.Errorf("output lacks %q:\n%.400s", c.want, out)
			}
		})
	}
}

// TestIndexObjectsPerResult checks that a stored result costs the index
// nearly no heap object and nearly nothing for the garbage collector to
// scan (its record, strings and line index go into the index's noscan
// arrays, the line index shared when the result is shorter than a search
// chunk): a collection would otherwise mark and scan them all at every
// cycle while the index lives.
func TestIndexObjectsPerResult(t *testing.T) {
	e := New(WithDir(t.TempDir()))
	t.Cleanup(func() { _ = e.Teardown(context.Background()) })
	ctx := t.Context()
	if _, err := e.spill(ctx, "tool", "warm-up", false, strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	objects := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapObjects
	}
	// scannable is the heap a collection scans for pointers, just after
	// one: the index should add nearly nothing to it.
	scannable := func() uint64 {
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	const n = 2000
	scanBefore := scannable()
	before := objects()
	for i := range n {
		r, err := e.spill(ctx, "tool", fmt.Sprintf("call_%d", i), false, strings.NewReader(strings.Repeat("a result line\n", 100)))
		if err != nil {
			t.Fatal(err)
		}
		if i == n-1 {
			got, _, idx, err := e.openIndexed(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			got.Close()
			if len(idx) != 1 || idx[0] != 0 {
				t.Errorf("line index %v", idx)
			}
		}
	}
	after := objects()
	scanAfter := scannable()
	runtime.KeepAlive(e)
	if per := float64(after-before) / n; per > 0.1 {
		t.Errorf("%.2f heap objects a stored result, want at most 0.1", per)
	}
	if per := (float64(scanAfter) - float64(scanBefore)) / n; per > 16 {
		t.Errorf("%.0f bytes a stored result for every collection to scan, want at most 16", per)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := 0
	e.idx.each(func(en *entry) bool {
		seen++
		if got, ok := e.idx.get(en.meta.ID); !ok || got.meta != en.meta || len(en.meta.SHA256) != 64 || !strings.HasPrefix(en.meta.CallID, "call_") && en.meta.CallID != "warm-up" {
			t.Fatalf("result %s: meta %+v", en.meta.ID, en.meta)
		}
		return true
	})
	if seen != n+1 {
		t.Fatalf("%d results in the index, want %d", seen, n+1)
	}
}
