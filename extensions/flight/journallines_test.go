package flight_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/recording"
)

// rawJournal decodes the journal lines of the recording in dir as they
// are on disk, without ReadJournal's completion, and returns their total
// size.
func rawJournal(t *testing.T, dir string) ([]flight.Event, int) {
	t.Helper()
	segs, err := recording.Segments(dir)
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments of %s: %v %v", dir, segs, err)
	}
	var evs []flight.Event
	size := 0
	for _, name := range segs {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			size += len(sc.Bytes()) + 1
			e, err := flight.ParseEvent(sc.Bytes())
			if err != nil {
				t.Fatalf("%s: %q: %v", name, sc.Text(), err)
			}
			evs = append(evs, e)
		}
		f.Close()
	}
	return evs, size
}

// TestJournalLinesLeaveOutWhatIsKnown checks the journal's lines as they
// are on disk: no agent or session ID (recording.json has them), the run
// ID and trace ID on a run's first line only, the later lines naming it
// by Ref; and ReadJournal gives back the very events the ring holds.
func TestJournalLinesLeaveOutWhatIsKnown(t *testing.T) {
	script := []harnesstest.Response{
		harnesstest.CallTool("c1", "echo", `{"text":"hi"}`), harnesstest.Reply("one"),
		harnesstest.CallTool("c2", "echo", `{"text":"ho"}`), harnesstest.Reply("two"),
	}
	s := newAgent(t, script, []*harness.Tool{echoTool()})
	ctx := context.Background()
	for _, in := range []string{"first", "second"} {
		if _, err := s.agent.Run(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	s.close(t)
	dir := s.rec.Dir()

	raw, size := rawJournal(t, dir)
	if len(raw) != 16 {
		t.Fatalf("%d lines, want 16 (two runs of eight events)", len(raw))
	}
	var start flight.Event
	for _, e := range raw {
		if e.Agent != "" || e.SessionID != "" {
			t.Errorf("line %d (%s) has agent %q and session %q, recording.json's", e.Seq, e.Kind, e.Agent, e.SessionID)
		}
		if e.Kind == flight.KindRunStart {
			start = e
			if e.RunID == "" || e.TraceID == "" || e.Ref != 0 {
				t.Errorf("run_start %d: run %q trace %q ref %d, want its IDs", e.Seq, e.RunID, e.TraceID, e.Ref)
			}
			continue
		}
		if e.RunID != "" || e.TraceID != "" || e.Ref != start.Seq {
			t.Errorf("%s %d: run %q trace %q ref %d, want ref %d alone", e.Kind, e.Seq, e.RunID, e.TraceID, e.Ref, start.Seq)
		}
	}

	evs, st := journalEvents(t, dir)
	ring := s.rec.Events()
	if !reflect.DeepEqual(evs, ring) {
		t.Errorf("ReadJournal's events differ from the ring's:\njournal %+v\nring    %+v", evs, ring)
	}
	if st.Events != len(ring) || st.Torn != 0 || st.Corrupt != 0 {
		t.Errorf("stats %+v, want %d events", st, len(ring))
	}
	whole := 0
	for _, e := range ring {
		b, _ := json.Marshal(e) // the keys of a whole line
		whole += len(b) + 1
	}
	if size*10 > whole*7 {
		t.Errorf("journal %d bytes, whole lines %d: want at most 70%%", size, whole)
	}
	for _, e := range evs {
		if e.Agent != "tester" || e.SessionID != "sess-1" || e.RunID == "" || e.TraceID == "" || e.Ref != 0 {
			t.Errorf("read back %s %d: agent %q session %q run %q trace %q ref %d", e.Kind, e.Seq, e.Agent, e.SessionID, e.RunID, e.TraceID, e.Ref)
		}
	}
}

// TestJournalRefWindow runs one long run: a line names a line at most
// 64 lines back, so the run's IDs come again on the way, and every event
// reads back with them.
func TestJournalRefWindow(t *testing.T) {
	var script []harnesstest.Response
	for i := 0; i < 20; i++ {
		var calls []harness.ToolCall
		for k := 0; k < 4; k++ {
			calls = append(calls, harnesstest.Call(fmt.Sprintf("c%d_%d", i, k), "echo", map[string]string{"text": "x"}))
		}
		script = append(script, harnesstest.Response{ToolCalls: calls})
	}
	script = append(script, harnesstest.Reply("done"))
	s := newAgent(t, script, []*harness.Tool{echoTool()})
	if _, err := s.agent.Run(context.Background(), "long"); err != nil {
		t.Fatal(err)
	}
	s.close(t)
	raw, _ := rawJournal(t, s.rec.Dir())
	if len(raw) < 160 {
		t.Fatalf("%d lines, want a run of over 160", len(raw))
	}
	whole := 0
	for _, e := range raw {
		if e.Ref == 0 {
			whole++
		} else if e.Seq-e.Ref >= 64 || e.Ref >= e.Seq {
			t.Errorf("line %d names line %d", e.Seq, e.Ref)
		}
	}
	if whole < len(raw)/64 {
		t.Errorf("%d of %d lines carry the run's IDs", whole, len(raw))
	}
	evs, _ := journalEvents(t, s.rec.Dir())
	for _, e := range evs {
		if e.RunID != evs[0].RunID || e.TraceID != evs[0].TraceID || e.RunID == "" {
			t.Errorf("%s %d: run %q trace %q, want the run's %q %q", e.Kind, e.Seq, e.RunID, e.TraceID, evs[0].RunID, evs[0].TraceID)
		}
	}
}

// TestReadJournalRefs reads a hand-made journal: what recording.json
// says fills lines that leave it out, a Ref resolves only to the line it
// names, and a line whose named line is gone (lost, or written by a
// process before) is left without IDs rather than given another run's.
func TestReadJournalRefs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(recording.InfoName, `{"format":"harnessx-flight-recording","version":1,"agent":"ag","session_id":"s1"}`)
	const tm = `"time":"2026-12-03T08:00:00Z"`
	write(recording.SegmentName(1), ""+
		`{"seq":1,`+tm+`,"kind":"run_start","run_id":"r1","trace_id":"t1"}`+"\n"+
		`{"seq":2,`+tm+`,"kind":"model_request","ref":1}`+"\n")
	write(recording.SegmentName(2), ""+
		// A process after a crash: its line 1 was lost, its line 2 names
		// it (not the line 1 of the process before).
		`{"seq":2,`+tm+`,"kind":"model_request","ref":1}`+"\n"+
		`{"seq":3,`+tm+`,"kind":"run_start","agent":"other","run_id":"r2","trace_id":"t2"}`+"\n"+
		// Line 4, run r3's first, was lost.
		`{"seq":5,`+tm+`,"kind":"model_request","ref":4}`+"\n"+
		`{"seq":6,`+tm+`,"kind":"run_start","run_id":"r4","trace_id":"t4"}`+"\n"+
		`{"seq":7,`+tm+`,"kind":"run_end","ref":6}`+"\n")
	evs, st := journalEvents(t, dir)
	if st.Events != 7 || st.Corrupt != 0 {
		t.Fatalf("stats %+v", st)
	}
	type ids struct {
		agent, session, run, trace string
		ref                        uint64
	}
	want := []ids{
		{"ag", "s1", "r1", "t1", 0},
		{"ag", "s1", "r1", "t1", 0},
		{"ag", "s1", "", "", 1},
		{"other", "s1", "r2", "t2", 0},
		{"ag", "s1", "", "", 4},
		{"ag", "s1", "r4", "t4", 0},
		{"ag", "s1", "r4", "t4", 0},
	}
	for i, e := range evs {
		if got := (ids{e.Agent, e.SessionID, e.RunID, e.TraceID, e.Ref}); got != want[i] {
			t.Errorf("event %d (seq %d): %+v, want %+v", i, e.Seq, got, want[i])
		}
	}
}
