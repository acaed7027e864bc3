package flight

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// TestEventRing checks the ring against a slice of the last n lines, with
// lines that fit a slot and lines that do not, across many wraps.
func TestEventRing(t *testing.T) {
	const n = 16
	r := newEventRing(n)
	var want [][]byte
	rnd := rand.New(rand.NewPCG(1, 2))
	for k := 0; k < 500; k++ {
		size := rnd.IntN(3 * slotBytes)
		if k%5 == 0 {
			size = slotBytes + rnd.IntN(2) - 1
		}
		line := bytes.Repeat([]byte{byte('a' + k%26)}, size)
		line = append(line, fmt.Sprint(k)...)
		got, evicted := r.add(false, func(dst []byte) []byte { return append(dst, line...) })
		if !bytes.Equal(got, line) {
			t.Fatalf("add %d returned %d bytes, want %d", k, len(got), len(line))
		}
		if evicted != (len(want) == n) {
			t.Fatalf("add %d: evicted %v with %d lines", k, evicted, len(want))
		}
		want = append(want, line)
		if len(want) > n {
			want = want[1:]
		}
		var all [][]byte
		r.each(func(l []byte) bool { all = append(all, bytes.Clone(l)); return true })
		if len(all) != len(want) {
			t.Fatalf("after %d: %d lines, want %d", k, len(all), len(want))
		}
		for i := range all {
			if !bytes.Equal(all[i], want[i]) {
				t.Fatalf("after %d: line %d differs", k, i)
			}
		}
	}
	if len(r.long) > n {
		t.Fatalf("%d long lines kept for %d slots", len(r.long), n)
	}
}

// TestEventRingLetsLongLinesGo checks that once the lines too long for a
// slot are all overwritten, the ring keeps nothing of them: not even the
// room of the map that held them, which the collector would scan.
func TestEventRingLetsLongLinesGo(t *testing.T) {
	const n = 64
	r := newEventRing(n)
	long := bytes.Repeat([]byte("x"), 2*slotBytes)
	for range n {
		r.add(false, func(dst []byte) []byte { return append(dst, long...) })
	}
	if len(r.long) != n {
		t.Fatalf("%d long lines kept, want %d", len(r.long), n)
	}
	for range n {
		r.add(false, func(dst []byte) []byte { return append(dst, "short"...) })
	}
	if r.long != nil {
		t.Fatalf("the map of long lines stays, with %d lines", len(r.long))
	}
}

// TestRingLinesResolve records events of three runs (one ID needing
// escapes), of no run, of two traces and none, of the recording's agent
// and another one, into a ring of 16, most events continuing the one
// before as a run's do. After each it checks that the ring's events, and
// the events of bundles of every run and of each run, read back whole:
// what the whole lines of the events recorded, in order, however the
// lines that carry the IDs their lines name were evicted.
func TestRingLinesResolve(t *testing.T) {
	const ring = 16
	rnd := rand.New(rand.NewPCG(5, 6))
	x := New(WithDir(t.TempDir()), WithRingSize(ring))
	x.agentName, x.sessionID = "agent", "sess"
	defer x.Teardown(context.Background())
	runs := []string{"", "run-a", "run-b", `run-"c"`}
	traces := []trace.TraceID{{}, {1}, {2}}
	t0 := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	var want []Event
	run, tid := runs[1], traces[1]
	carriers := 0
	for i := range 600 {
		if rnd.IntN(5) == 0 {
			run, tid = runs[rnd.IntN(len(runs))], traces[rnd.IntN(len(traces))]
		}
		e := Event{Kind: KindToolCall, Time: t0.Add(time.Duration(i) * time.Millisecond), Agent: "agent", SessionID: "sess",
			RunID: run, Step: rnd.IntN(3), Tool: "t"}
		if rnd.IntN(10) == 0 {
			e.Agent = "sub"
		}
		if tid.IsValid() {
			e.setSpan(trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{byte(i), 1}}))
		}
		x.record(&e)
		whole, err := ParseEvent(appendEvent(nil, &e, x.red))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, whole)
		last := want[max(0, len(want)-ring):]
		if got := x.Events(); !reflect.DeepEqual(got, last) {
			t.Fatalf("after event %d, the ring's events\n%+v\nwant\n%+v", i+1, got, last)
		}
		x.mu.Lock()
		if x.ring.carrier[(x.ring.next+len(x.ring.lens)-1)%len(x.ring.lens)] {
			carriers++
		}
		x.mu.Unlock()
		for _, r := range runs {
			var got, wantRun []Event
			x.capture("test", r).events("agent", "sess", func(e *Event) { got = append(got, *e) })
			for _, e := range last {
				if r == "" || e.RunID == r {
					wantRun = append(wantRun, e)
				}
			}
			if !reflect.DeepEqual(got, wantRun) {
				t.Fatalf("after event %d, the bundle of run %q has\n%+v\nwant\n%+v", i+1, r, got, wantRun)
			}
		}
	}
	if carriers == 0 || carriers > 600/2 {
		t.Errorf("%d of 600 lines carry their run's IDs: want most to name an earlier line", carriers)
	}
}
