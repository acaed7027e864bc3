package spill

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

const benchSize = 100 << 20

// benchText writes about size bytes of log lines to w; one line in 10,000
// holds the rare word "zanzibar". It returns the number of such lines.
func benchText(w *bufio.Writer, size int64) (rare int, err error) {
	var written int64
	for i := 0; written < size; i++ {
		var n int
		if i%10_000 == 5_000 {
			n, err = fmt.Fprintf(w, "%09d WARN shipment %d rerouted through the zanzibar hub after a customs hold\n", i, i)
			rare++
		} else {
			n, err = fmt.Fprintf(w, "%09d INFO GET /api/v1/items/%d status=200 user=u%d latency=%dms bytes=%d\n", i, i, i%977, i%1000, i*7%65536)
		}
		if err != nil {
			return rare, err
		}
		written += int64(n)
	}
	return rare, w.Flush()
}

// heapSampler records the peak of live heap objects, sampled every
// millisecond through runtime/metrics (which does not stop the world).
type heapSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	wg   sync.WaitGroup
}

func startHeapSampler() *heapSampler {
	h := &heapSampler{stop: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > h.peak.Load() {
			h.peak.Store(v)
		}
	}
	read()
	h.wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				read()
				return
			case <-t.C:
				read()
			}
		}
	})
	return h
}

func (h *heapSampler) Stop() uint64 {
	close(h.stop)
	h.wg.Wait()
	return h.peak.Load()
}

// BenchmarkSearch is a read_result regex search for a rare word over a
// 100 MB stored text result, created once outside the timed loop.
func BenchmarkSearch(b *testing.B) {
	dir := b.TempDir()
	e := New(WithDir(filepath.Join(dir, "store")))
	defer e.Teardown(context.Background())
	src := filepath.Join(dir, "src.txt")
	f, err := os.Create(src)
	if err != nil {
		b.Fatal(err)
	}
	rare, err := benchText(bufio.NewWriterSize(f, 1<<20), benchSize)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	f, err = os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	r, err := e.Spill(context.Background(), "logs", f)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	// A freshly written file's stamp is not trusted for racyWindow (every
	// read would hash it): wait, as a result is read some time after it
	// was written.
	time.Sleep(racyWindow + 100*time.Millisecond)
	req, _ := json.Marshal(map[string]any{"id": r.ID, "op": "search", "pattern": "zanzibar", "max_matches": 1000})
	want := fmt.Sprintf(": %d matching lines\n", rare)
	ctx := context.Background()
	b.SetBytes(r.Size)
	b.ReportAllocs()
	h := startHeapSampler()
	b.ResetTimer()
	for b.Loop() {
		out, err := e.Read(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if !strings.Contains(out, want) {
			b.Fatalf("want %q in output:\n%.500s", want, out)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(h.Stop())/(1<<20), "peak-heap-MB")
}

// BenchmarkSearchFloor is bytes.Index over the same data in memory.
func BenchmarkSearchFloor(b *testing.B) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	rare, err := benchText(w, benchSize)
	if err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	word := []byte("zanzibar")
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		n := 0
		for d := data; ; {
			i := bytes.Index(d, word)
			if i < 0 {
				break
			}
			n++
			d = d[i+len(word):]
		}
		if n != rare {
			b.Fatalf("found %d, want %d", n, rare)
		}
	}
}

// BenchmarkEngineSnapshot is the engine snapshot a durable runtime takes
// after every step (harness.Agent.SaveExtensionState under
// harness.AsSnapshot) of an agent whose spill extension holds 2,000
// results, when no result was added since the last one.
func BenchmarkEngineSnapshot(b *testing.B) {
	a := agentWithResults(b, 2000)
	snap := harness.AsSnapshot(context.Background())
	first, err := a.SaveExtensionState(snap)
	if err != nil || len(first) == 0 {
		b.Fatal(len(first), err)
	}
	b.ReportAllocs()
	for b.Loop() {
		st, err := a.SaveExtensionState(snap)
		if err != nil || len(st) != len(first) {
			b.Fatal(len(st), err)
		}
	}
}

// BenchmarkSessionSnapshot is the session snapshot the flight recorder
// takes (harness.Agent.SaveSession under harness.AsSnapshot, at most once a
// second while runs go on) of an agent whose spill extension holds 2,000
// results, when no result was added since the last one.
func BenchmarkSessionSnapshot(b *testing.B) {
	a := agentWithResults(b, 2000)
	snap := harness.AsSnapshot(context.Background())
	first, err := a.SaveSession(snap)
	if err != nil || len(first) == 0 {
		b.Fatal(len(first), err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := a.SaveSession(snap)
		if err != nil || len(s) != len(first) {
			b.Fatal(len(s), err)
		}
	}
}

// agentWithResults returns an agent whose spill extension holds n small
// stored results; it is closed when b ends.
func agentWithResults(b *testing.B, n int) *harness.Agent {
	b.Helper()
	ctx := context.Background()
	e := New(WithThreshold(16), WithTempParent(b.TempDir()))
	a, err := harness.New(harness.WithProvider(harnesstest.NewScriptedProvider()), harness.WithExtensions(e))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Close(ctx) })
	for i := range n {
		if _, err := e.Spill(ctx, "export", strings.NewReader(strings.Repeat("row,value\n", 4)+strconv.Itoa(i))); err != nil {
			b.Fatal(err)
		}
	}
	return a
}
