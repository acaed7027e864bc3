package flight

import (
	"math/rand/v2"
	"testing"
	"time"
)

// simulateSnapshots runs the snapshotter's schedule as its loop does, on a
// virtual clock, for an hour: dirty reports at each wake-up whether each
// kind has something to write, and each snapshot costs what cost returns
// (true for a span snapshot). It returns the share of the time spent
// writing snapshots and how many of each kind were written.
func simulateSnapshots(every time.Duration, dirty func() (spans, session bool), cost func(spans bool) time.Duration) (share float64, spans, sessions int) {
	base := time.Unix(1_000_000, 0)
	now := base
	var busy time.Duration
	s := snapshotSchedule{every: every}
	for now.Sub(base) < time.Hour {
		spansDirty, sessionDirty := dirty()
		runSpans, runSession, wait := s.plan(now, spansDirty, sessionDirty, 100)
		start := now
		if runSpans {
			d := cost(true)
			now = now.Add(d)
			s.spansDone(start, d, 100)
			spans++
		}
		if runSession {
			t := now
			s.lastSession = t
			s.sessionTook = cost(false)
			now = now.Add(s.sessionTook)
			sessions++
		}
		if runSpans || runSession {
			busy += now.Sub(start)
			s.ran(start, now)
			continue
		}
		if wait < 0 {
			wait = time.Millisecond // nothing pending: the next kick
		}
		now = now.Add(wait)
	}
	return float64(busy) / float64(now.Sub(base)), spans, sessions
}

// TestSnapshotBudget: however the two kinds of snapshot come due and
// whatever they cost, the snapshotter as a whole stays within
// 1/(1+snapshotBackoff) of the time (each kind's own backoff alone would
// allow that share to each), and when both always have something to
// write neither is starved.
func TestSnapshotBudget(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 9))
	limit := 1 / float64(1+snapshotBackoff)
	always := func() (bool, bool) { return true, true }
	flip := func() (bool, bool) { return rnd.IntN(2) == 0, rnd.IntN(2) == 0 }
	fixed := func(spans, session time.Duration) func(bool) time.Duration {
		return func(s bool) time.Duration {
			if s {
				return spans
			}
			return session
		}
	}
	random := func(bool) time.Duration { return time.Duration(1+rnd.IntN(60)) * time.Millisecond }
	for _, tc := range []struct {
		name   string
		dirty  func() (bool, bool)
		cost   func(bool) time.Duration
		starve bool // check that neither kind is starved
	}{
		{"equal", always, fixed(20*time.Millisecond, 20*time.Millisecond), true},
		{"spans dominate", always, fixed(50*time.Millisecond, time.Millisecond), true},
		{"session dominates", always, fixed(2*time.Millisecond, 80*time.Millisecond), true},
		{"random costs", always, random, true},
		{"random costs, random dirt", flip, random, false},
	} {
		share, spans, sessions := simulateSnapshots(time.Millisecond, tc.dirty, tc.cost)
		t.Logf("%s: share %.4f, %d span and %d session snapshots", tc.name, share, spans, sessions)
		if share > limit*1.01 {
			t.Errorf("%s: the snapshotter took %.4f of the time, want at most %.4f", tc.name, share, limit)
		}
		if tc.starve && (spans < 1000 || sessions < 1000) {
			t.Errorf("%s: %d span and %d session snapshots in an hour: a kind is starved", tc.name, spans, sessions)
		}
	}
}

// TestSnapshotScheduleFixedCost: a span snapshot of a few spans, which
// takes mostly a snapshot's fixed cost, does not make the next snapshot
// of a full buffer wait as if each span cost that much: it waits the
// interval. A slow snapshot of many spans still backs off.
func TestSnapshotScheduleFixedCost(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s := snapshotSchedule{every: time.Second}
	s.spansDone(now, time.Millisecond, 3) // the first snapshot: 3 spans, a file's cost
	s.ran(now, now.Add(time.Millisecond))
	if _, _, wait := s.plan(now.Add(time.Millisecond), true, false, 2048); wait > time.Second {
		t.Errorf("a full buffer after a 3-span snapshot of 1 ms waits %v, want at most the interval", wait)
	}
	// 2,048 spans in 100 ms: the estimate is the measured one.
	s.spansDone(now, 100*time.Millisecond, 2048)
	if _, _, wait := s.plan(now, true, false, 2048); wait != (1+snapshotBackoff)*100*time.Millisecond {
		t.Errorf("after a 100 ms snapshot of 2,048 spans, 2,048 more wait %v, want %v", wait, (1+snapshotBackoff)*100*time.Millisecond)
	}
}

// TestSnapshotScheduleAlone: a kind with something to write alone waits
// its interval, or what its own cost asks, from the start of its last
// snapshot; span snapshots wait at most maxSpanSnapshotWait, whatever the
// budget says.
func TestSnapshotScheduleAlone(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s := snapshotSchedule{every: time.Second}
	if spans, session, _ := s.plan(now, true, true, 0); !spans || !session {
		t.Fatalf("first snapshots: spans %v, session %v; want both", spans, session)
	}
	s.spansDone(now, 100*time.Millisecond, 10)
	s.lastSession, s.sessionTook = now, 10*time.Millisecond
	if _, _, wait := s.plan(now, true, false, 10); wait != (1+snapshotBackoff)*100*time.Millisecond {
		t.Errorf("spans wait %v, want %v", wait, (1+snapshotBackoff)*100*time.Millisecond)
	}
	if _, _, wait := s.plan(now, false, true, 0); wait != time.Second {
		t.Errorf("a cheap session waits %v, want the interval", wait)
	}
	// A burst: 1,000 pending spans at 10 ms a span.
	if _, _, wait := s.plan(now, true, false, 1000); wait != maxSpanSnapshotWait {
		t.Errorf("a burst of spans waits %v, want at most %v", wait, maxSpanSnapshotWait)
	}
	// A slow snapshot's quiet time holds the session back, but not the
	// spans past maxSpanSnapshotWait.
	s.ran(now, now.Add(10*time.Second))
	later := now.Add(maxSpanSnapshotWait)
	if spans, session, _ := s.plan(later, true, true, 0); !spans || session {
		t.Errorf("after %v: spans %v, session %v; want the spans alone", maxSpanSnapshotWait, spans, session)
	}
}
