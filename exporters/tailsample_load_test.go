package exporters_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/internal/otlpjson"
)

// The load cases of issue 23: many traces open at once, errors on random
// spans, and a slow exporter behind a full queue.

// loadSpans is the size of a loadTraces trace:
//
//	root
//	├── a
//	├── b
//	│   └── b1
//	└── c
const loadSpans = 5

// loadSpanNames are the spans of a loadTraces trace in the order they
// end: a and b1 end while every trace is open, with b, c and the root
// still running (so an error on them comes before their siblings end);
// b, c and the root end after.
var loadSpanNames = [loadSpans]string{"a", "b1", "b", "c", "root"}

// loadResult is what loadTraces made: the spans of each trace, and the
// traces that have an error span.
type loadResult struct {
	spans   map[trace.TraceID]int
	errored map[trace.TraceID]bool
}

// loadTraces runs n traces of loadSpans spans concurrently, each in its own
// goroutine, all open at once: every trace starts its spans and ends a and
// b1, then waits until all n have done so before it ends b, c and its
// root. The first nErr traces get status Error on one span chosen at
// random (seeded, so a failure replays).
func loadTraces(t testing.TB, tr trace.Tracer, n, nErr int, seed uint64) loadResult {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0))
	errAt := make([]int, n)
	for i := range errAt {
		errAt[i] = -1
		if i < nErr {
			errAt[i] = rng.IntN(loadSpans)
		}
	}
	res := loadResult{spans: map[trace.TraceID]int{}, errored: map[trace.TraceID]bool{}}
	var (
		mu      sync.Mutex
		opened  sync.WaitGroup
		wg      sync.WaitGroup
		release = make(chan struct{})
	)
	opened.Add(n)
	for i := range n {
		wg.Go(func() {
			ctx, root := tr.Start(context.Background(), "invoke_agent load")
			_, a := tr.Start(ctx, "a")
			bctx, b := tr.Start(ctx, "b")
			_, b1 := tr.Start(bctx, "b1")
			_, c := tr.Start(ctx, "c")
			spans := [loadSpans]trace.Span{a, b1, b, c, root}
			end := func(k int) {
				if errAt[i] == k {
					spans[k].SetStatus(codes.Error, "boom")
				}
				spans[k].End()
			}
			end(0)
			end(1)
			opened.Done()
			<-release
			end(2)
			end(3)
			end(4)
			id := root.SpanContext().TraceID()
			mu.Lock()
			res.spans[id] = loadSpans
			if errAt[i] >= 0 {
				res.errored[id] = true
			}
			mu.Unlock()
		})
	}
	opened.Wait()
	close(release)
	wg.Wait()
	if len(res.spans) != n || len(res.errored) != nErr {
		t.Fatalf("made %d traces (%d errored), want %d (%d): trace IDs collide", len(res.spans), len(res.errored), n, nErr)
	}
	return res
}

// TestTailSamplingThousandOpenTraces is issue 23's first case: with more
// than 1,000 traces open, 1,000 of them errored on a random span (the
// root, or a child, some before their siblings end), every errored trace
// reaches the exporter whole and no other trace does.
func TestTailSamplingThousandOpenTraces(t *testing.T) {
	const traces, errored = 1500, 1000
	r := newTailRig(t, exporters.WithKeepProbability(0), exporters.WithLatencyThreshold(0))
	made := loadTraces(t, r.tr, traces, errored, 23)
	kept := r.keptByTrace()
	var partial, extra int
	for id := range made.errored {
		if kept[id] != made.spans[id] {
			partial++
			if partial <= 5 {
				t.Errorf("errored trace %s: %d of its %d spans exported", id, kept[id], made.spans[id])
			}
		}
	}
	for id := range kept {
		if !made.errored[id] {
			extra++
		}
	}
	if partial > 0 || extra > 0 {
		t.Fatalf("%d of %d errored traces not whole in the exporter; %d ordinary traces exported", partial, errored, extra)
	}
	st := r.ts.Stats()
	accounted(t, st, traces*loadSpans)
	if st.KeptError != errored || st.DroppedTraces != traces-errored || st.PartialTraces != 0 ||
		st.EvictedTraces != 0 || st.BufferedSpans != 0 || st.BufferedTraces != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestTailSamplingSpanBudgetPartial runs the same load with a span budget
// too small for it: open traces are evicted, and an errored trace whose
// error came after its eviction goes downstream partial. Every errored
// trace is kept, and the partial ones are exactly those counted.
func TestTailSamplingSpanBudgetPartial(t *testing.T) {
	const traces, errored, budget = 1500, 1000, 1000
	r := newTailRig(t, exporters.WithKeepProbability(0), exporters.WithLatencyThreshold(0), exporters.WithMaxSpans(budget))
	made := loadTraces(t, r.tr, traces, errored, 42)
	kept := r.keptByTrace()
	var partial int64
	for id := range made.errored {
		switch n := kept[id]; {
		case n == 0:
			t.Errorf("errored trace %s: nothing exported", id)
		case n < made.spans[id]:
			partial++
		}
	}
	for id := range kept {
		if !made.errored[id] {
			t.Errorf("ordinary trace %s exported", id)
		}
	}
	st := r.ts.Stats()
	accounted(t, st, traces*loadSpans)
	t.Logf("%d of %d errored traces partial; %+v", partial, errored, st)
	if partial == 0 || st.EvictedTraces == 0 || st.EvictedSpans == 0 {
		t.Fatalf("the budget was never exceeded: %+v", st)
	}
	if st.KeptError != errored || st.PartialTraces != partial {
		t.Fatalf("%d errored traces partial in the exporter, stats say %d (kept for errors %d, want %d)",
			partial, st.PartialTraces, st.KeptError, errored)
	}
}

// gatedWriter is a slow exporter's destination: each Write waits until
// the gate opens, then for delay, and keeps what it was given.
type gatedWriter struct {
	gate  chan struct{}
	delay time.Duration
	mu    sync.Mutex
	buf   bytes.Buffer
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	<-w.gate
	time.Sleep(w.delay)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// TestTailSamplingSlowExporter is issue 23's second case: behind a slow
// exporter the queue fills, and the spans of errored traces must not be
// dropped while it holds spans kept only by the probabilistic share.
// The writer blocks until every trace has ended (so the queue is full and
// stays full), then takes 50 ms a batch. The queue has room for the
// errored traces' spans, not for the sampled ones besides.
func TestTailSamplingSlowExporter(t *testing.T) {
	clearEnv(t)
	const (
		traces, errored = 3000, 1000
		queue           = 6000 // > errored*loadSpans + one batch
		batch           = 512
	)
	w := &gatedWriter{gate: make(chan struct{}), delay: 50 * time.Millisecond}
	ctx := context.Background()
	tp, err := exporters.NewFile(ctx,
		exporters.WithFileWriter(w),
		exporters.WithQueueSize(queue),
		exporters.WithBatchSize(batch),
		// The sampler holds every open trace: what is lost here is lost
		// in the queue.
		exporters.WithTailSampling(exporters.WithKeepProbability(0.5), exporters.WithLatencyThreshold(0),
			exporters.WithMaxTraces(2*traces), exporters.WithMaxSpans(2*traces*loadSpans)),
	)
	if err != nil {
		t.Fatal(err)
	}
	made := loadTraces(t, tp.Tracer("slow"), traces, errored, 7)
	full := tp.Stats()
	close(w.gate)
	if err := tp.Shutdown(ctx); !errors.Is(err, exporters.ErrSpansLost) {
		t.Fatalf("Shutdown: %v, want the shed spans reported", err)
	}
	st := tp.Stats()
	reqs, err := otlpjson.ReadLines(bytes.NewReader(w.buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	got := map[trace.TraceID]int{}
	for _, s := range allSpans(reqs...) {
		got[trace.TraceID(s.GetTraceId())]++
	}
	var lost int
	for id := range made.errored {
		if got[id] != made.spans[id] {
			lost++
			if lost <= 5 {
				t.Errorf("errored trace %s: %d of its %d spans exported", id, got[id], made.spans[id])
			}
		}
	}
	t.Logf("queue full: %+v", full)
	t.Logf("after shutdown: exported %d, dropped %d (shed %d); %d traces in the file", st.Exported, st.Dropped, st.Shed, len(got))
	if lost > 0 {
		t.Fatalf("%d of %d errored traces lost spans behind the slow exporter", lost, errored)
	}
	// While the queue was full, every drop was a shed sampled span.
	if full.Shed == 0 || full.Dropped != full.Shed || full.Backends[0].Queued != queue {
		t.Fatalf("queue full: %+v, want sampled spans shed and nothing else dropped", full)
	}
	// Shutdown exported everything queued: the sheds are the only loss,
	// and every span the sampler kept is exported or shed.
	ts := st.TailSampling
	if st.Dropped != st.Shed || st.Failed != 0 || st.Exported+st.Shed != ts.KeptSpans || ts.KeptError != errored {
		t.Fatalf("after shutdown: %+v", st)
	}
	if int(st.Exported) != len(allSpans(reqs...)) {
		t.Fatalf("exported %d spans, the file has %d", st.Exported, len(allSpans(reqs...)))
	}
}

// heldWriter blocks every Write until release is closed, and says when
// the first Write began.
type heldWriter struct {
	entered chan struct{} // receives once, at the first Write
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (w *heldWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.entered) })
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// TestQueueShedsSampledFirst fills a backend's queue of 4 behind a held
// export, span by span: an errored trace's span takes the place of the
// newest sampled span queued; with no sampled span left it is dropped;
// a sampled span finding the queue full is shed.
func TestQueueShedsSampledFirst(t *testing.T) {
	clearEnv(t)
	w := &heldWriter{entered: make(chan struct{}), release: make(chan struct{})}
	ctx := context.Background()
	tp, err := exporters.NewFile(ctx, exporters.WithFileWriter(w),
		exporters.WithQueueSize(4), exporters.WithBatchSize(1),
		exporters.WithTailSampling(exporters.WithKeepProbability(1), exporters.WithLatencyThreshold(0)))
	if err != nil {
		t.Fatal(err)
	}
	tr := tp.Tracer("shed")
	one := func(name string, fail bool) {
		_, s := tr.Start(ctx, name)
		if fail {
			s.SetStatus(codes.Error, "x")
		}
		s.End()
	}
	one("sampled 0", false)
	<-w.entered // in the export in flight, which holds
	for i := range 3 {
		one("sampled "+string(rune('1'+i)), false) // queued: the queue is full
	}
	check := func(step string, dropped, shed int64) {
		t.Helper()
		st := tp.Stats()
		if st.Dropped != dropped || st.Shed != shed || st.Backends[0].Queued != 4 {
			t.Fatalf("%s: dropped %d, shed %d, queued %d; want %d, %d, 4", step, st.Dropped, st.Shed, st.Backends[0].Queued, dropped, shed)
		}
	}
	check("full of sampled spans", 0, 0)
	for i := range 3 {
		one("errored "+string(rune('1'+i)), true)
	}
	check("three errored spans in", 3, 3)
	one("errored 4", true)
	check("no sampled span left to shed", 4, 3)
	one("sampled 4", false)
	check("a sampled span refused", 5, 4)
	close(w.release)
	if err := tp.Shutdown(ctx); !errors.Is(err, exporters.ErrSpansLost) {
		t.Fatalf("Shutdown: %v", err)
	}
	reqs, err := otlpjson.ReadLines(bytes.NewReader(w.buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range allSpans(reqs...) {
		names = append(names, s.GetName())
	}
	want := []string{"sampled 0", "errored 1", "errored 2", "errored 3"}
	if !slices.Equal(names, want) {
		t.Fatalf("exported %q, want %q", names, want)
	}
}
