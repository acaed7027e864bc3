package flight_test

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/recording"
	"go.opentelemetry.io/otel/trace"
)

// BenchmarkRecord measures one event append (a tool result) on the hot
// path. The floor is a bare loop that copies an encoded line of the same
// size into a ring slot under a mutex. The recorder's variants flush the
// journal every recordFlushEvery events, so that a loop that records
// faster than the journal writes measures recording, writing included,
// not the dropping of events the journal has no room for (its pending
// lines are bounded): a dropped event fails the benchmark.
func BenchmarkRecord(b *testing.B) {
	b.Run("floor", func(b *testing.B) {
		var mu sync.Mutex
		ring := make([][]byte, 4096)
		for i := range ring {
			ring[i] = make([]byte, 0, 512)
		}
		line := []byte(strings.Repeat("x", 300))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			mu.Lock()
			k := i & 4095
			ring[k] = append(ring[k][:0], line...)
			mu.Unlock()
		}
	})
	for _, traced := range []bool{false, true} {
		name := "untraced"
		if traced {
			name = "traced"
		}
		b.Run(name, func(b *testing.B) {
			rec := flight.New(flight.WithDir(b.TempDir()))
			a, err := harness.New(harness.WithProvider(harnesstest.NewScriptedProvider()), harness.WithExtensions(rec))
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close(context.Background())
			ctx := context.Background()
			if traced {
				sc := trace.NewSpanContext(trace.SpanContextConfig{
					TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
					SpanID:  trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled,
				})
				ctx = trace.ContextWithSpanContext(ctx, sc)
			}
			call := &harness.ToolCall{ID: "call_0123456789", Name: "get_weather", Input: json.RawMessage(`{"city":"Lisbon"}`)}
			ev := &harness.Event{
				Type: harness.EventToolCallEnd, Time: time.Now(), Agent: "agent", SessionID: "0123456789abcdef0123456789abcdef",
				RunID: "fedcba9876543210fedcba9876543210", Step: 3, Duration: 1234567 * time.Nanosecond, ToolCall: call,
				ToolResult: &harness.ToolResult{CallID: call.ID, Name: call.Name, Status: harness.ToolOK,
					Content: "Lisbon: 18°C, light rain, wind 12 km/h from the north-west, humidity 81%."},
			}
			b.ReportAllocs()
			for i := 1; b.Loop(); i++ {
				flight.Observe(rec, ctx, ev)
				if i%recordFlushEvery == 0 {
					if err := rec.Flush(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			if st := rec.Stats(); st.Dropped != 0 {
				b.Fatalf("journal dropped %d of %d events", st.Dropped, st.Events)
			}
		})
	}
}

// recordFlushEvery is how many events BenchmarkRecord records between
// flushes: a few hundred kilobytes of lines, a batch the size the journal's
// writer takes under load.
const recordFlushEvery = 2048

// writeJournal prepares a journal of n events in dir.
func writeJournal(tb testing.TB, dir string, n int) {
	tb.Helper()
	j, err := recording.Open(dir, recording.Options{MaxBytes: 1 << 30, SegmentBytes: 8 << 20})
	if err != nil {
		tb.Fatal(err)
	}
	evs := sampleEvents()
	for i := 0; i < n; i++ {
		e := evs[i%len(evs)]
		e.Seq = uint64(i + 1)
		e.Time = t0.Add(time.Duration(i) * time.Millisecond)
		if i%len(evs) == 0 && i > 0 {
			e.RunID = "run-" + strings.Repeat("x", i%7)
		}
		line, err := json.Marshal(e)
		if err != nil {
			tb.Fatal(err)
		}
		for !j.Append(append(line, '\n')) {
			j.Flush(context.Background())
		}
	}
	if err := j.Close(context.Background()); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkExport measures the export of a 100,000-event journal into a
// bundle. The floor reads and decodes the journal without writing.
func BenchmarkExport(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "rec")
	writeJournal(b, dir, 100_000)
	b.Run("floor-read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			st, err := flight.ReadJournal(dir, func(*flight.Event) error { return nil }, nil)
			if err != nil || st.Events != 100_000 {
				b.Fatalf("%+v %v", st, err)
			}
		}
	})
	b.Run("export", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m, err := flight.ExportJournal(context.Background(), dir, io.Discard, flight.ExportOptions{})
			if err != nil || m.Events != 100_000 {
				b.Fatalf("%v", err)
			}
		}
	})
}
