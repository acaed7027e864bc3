package flight_test

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// TestRecordingGivesTheJournalWriterItsTurn runs an agent back to back on
// one processor (GOMAXPROCS=1, a provider that never blocks): the
// journal's writer goroutine must still write a batch about every flush
// interval, because the recorder yields to it once a batch is late (see
// recording.Journal.Yield). Without that, it writes when the scheduler
// preempts the agent's goroutine, 10 ms or more apart.
func TestRecordingGivesTheJournalWriterItsTurn(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const interval = 2 * time.Millisecond
	var mu sync.Mutex
	var writes []time.Time
	s := newAgent(t, []harnesstest.Response{harnesstest.Reply("done")}, nil,
		flight.WithJournalOptions(flight.JournalOptions{FlushInterval: interval, AfterWrite: func() {
			mu.Lock()
			writes = append(writes, time.Now())
			mu.Unlock()
		}}))
	s.prov.Loop, s.prov.DiscardRequests = true, true
	ctx := context.Background()
	start := time.Now()
	runs := 0
	for time.Since(start) < 400*time.Millisecond {
		if _, err := s.agent.Run(ctx, "go"); err != nil {
			t.Fatal(err)
		}
		s.agent.Reset()
		runs++
	}
	mu.Lock()
	w := slices.Clone(writes)
	mu.Unlock()
	if len(w) < 10 {
		t.Fatalf("%d batches written over %d runs in 400 ms, want about 200", len(w), runs)
	}
	gaps := make([]time.Duration, len(w)-1)
	for i := range gaps {
		gaps[i] = w[i+1].Sub(w[i])
	}
	slices.Sort(gaps)
	if med := gaps[len(gaps)/2]; med > 3*interval { // 10 ms and more when broken
		t.Errorf("batches written %v apart (median of %d, %d runs), want about %v", med, len(gaps), runs, interval)
	}
}
