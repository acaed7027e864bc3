package flight

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/recording"
	"go.opentelemetry.io/otel/trace"
)

// randEvent returns an event with every field set or empty at random,
// the IDs raw or as text, and strings that hold newlines and escape
// bytes.
func randEvent(r *rand.Rand) Event {
	str := func() string {
		if r.IntN(3) == 0 {
			return ""
		}
		alphabet := []string{"a", "\n", "\r", "\x1b", "\x01", "\x02", "\x03", "é", `"`, "\\", "sk-ant-api03-" + strings.Repeat("x", 40)}
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	num := func() int64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return -r.Int64N(1 << 40)
		case 2:
			return 10 // a newline in a uvarint
		}
		return r.Int64N(1 << 62)
	}
	kinds := append(binKinds[:], "custom_kind")
	e := Event{
		Seq: uint64(r.Int64N(1 << 40)), Kind: kinds[r.IntN(len(kinds))], Agent: str(), SessionID: str(), RunID: str(),
		Ref: uint64(r.IntN(3)), Step: int(num()), Attempt: int(num()),
		Status: str(), Duration: time.Duration(num()), Model: str(), Provider: str(), ResponseID: str(), StopReason: str(),
		Messages: int(num()), InputTokens: num(), OutputTokens: num(), CacheReadTokens: num(), CacheCreationTokens: num(),
		ReasoningTokens: num(), Tool: str(), CallID: str(), Text: str(), Size: int(num()), Truncated: r.IntN(2) == 0,
		Error: str(), ErrorType: str(), Extension: str(), Op: str(), FailedEvent: str(), Reason: str(), Path: str(),
	}
	switch r.IntN(3) {
	case 1:
		e.Time = time.Unix(r.Int64N(1<<34)-1<<33, r.Int64N(1e9))
	case 2:
		e.Time = time.Date(1, 2, 3, 4, 5, 6, 7, time.FixedZone("x", 3600)) // outside UnixNano's range
	}
	var tid trace.TraceID
	var sid trace.SpanID
	for i := range tid {
		tid[i] = []byte{'\n', '\r', binEsc, byte(r.IntN(256))}[r.IntN(4)]
	}
	for i := range sid {
		sid[i] = []byte{'\n', '\r', binEsc, byte(r.IntN(256))}[r.IntN(4)]
	}
	switch r.IntN(3) {
	case 0:
		e.setSpan(trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))
	case 1:
		e.TraceID, e.SpanID = str(), str()
	}
	switch r.IntN(3) {
	case 0:
		e.hasPrefix = true
		for i := range e.prefix {
			e.prefix[i] = []byte{'\n', '\r', binEsc, byte(r.IntN(256))}[r.IntN(4)]
		}
	case 1:
		e.Prefix = str()
	}
	if r.IntN(3) == 0 {
		e.Parts = []PartRef{{Type: "image", MIME: "image/png", Name: str(), URI: "artifact:sha256:" + strings.Repeat("ab", 32), Size: num()}}
	}
	return e
}

// TestBinLineAsJSONLine checks that a binary line decodes to the event
// its JSON line decodes to, field by field, for events with every field,
// redacted fields, IDs raw and as text, newlines and escape bytes
// anywhere, through the encoder's cache (whose cached fields repeat) and
// without it.
func TestBinLineAsJSONLine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	red := NewRedactor(nil)
	c := newEncCache(red)
	escaped := 0
	for i := range 5000 {
		e := randEvent(r)
		var cache *encCache
		if i%2 == 0 {
			cache = &c
			c.form = lineForm{}
		}
		bin := appendEventBin(nil, &e, red, cache)
		if bytes.IndexAny(bin[:len(bin)-1], "\r\n") >= 0 || bin[len(bin)-1] != '\n' {
			t.Fatalf("event %d: the line has a newline or carriage return before its end: %q", i, bin)
		}
		if bytes.IndexByte(bin, binEsc) >= 0 {
			escaped++
		}
		want, err := ParseEvent(appendEvent(nil, &e, red))
		if err != nil {
			t.Fatalf("event %d: JSON line: %v", i, err)
		}
		for _, line := range [][]byte{bin, bin[:len(bin)-1]} {
			got, err := ParseEvent(line)
			if err != nil {
				t.Fatalf("event %d: binary line %q: %v", i, line, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("event %d: binary line decodes to\n%+v\nJSON line to\n%+v", i, got, want)
			}
		}
	}
	if escaped < 1000 {
		t.Errorf("only %d of 5000 lines escaped a byte: the test does not reach the escapes", escaped)
	}
}

// TestBinLineLeavesOut checks the line form: a bare line has no agent
// and session ID, a line with a ref no run and trace ID, and the ring's
// run lookup reads them.
func TestBinLineLeavesOut(t *testing.T) {
	tid := trace.TraceID{1, 2, 3}
	e := Event{Seq: 7, Kind: KindToolCall, Agent: "a", SessionID: "s", RunID: "run-1",
		tid: tid, sid: trace.SpanID{4}}
	c := newEncCache(nil)
	c.form = lineForm{bare: true, ref: 5}
	got, err := ParseEvent(appendEventBin(nil, &e, nil, &c))
	if err != nil {
		t.Fatal(err)
	}
	if got.Agent != "" || got.SessionID != "" || got.RunID != "" || got.TraceID != "" || got.Ref != 5 ||
		got.SpanID != "0400000000000000" || got.Seq != 7 {
		t.Errorf("short line decodes to %+v", got)
	}
	c.form = lineForm{}
	carrier := appendEventBin(nil, &e, nil, &c)
	seq, run, ref := binLineIDs(carrier)
	if seq != 7 || string(run) != "run-1" || ref != 0 {
		t.Errorf("binLineIDs = %d %q %d", seq, run, ref)
	}
	var runs lineRuns
	e.Seq = 8
	c.form = lineForm{ref: 7}
	named := appendEventBin(nil, &e, nil, &c)
	if got := runs.runOf(carrier); string(got) != "run-1" {
		t.Errorf("runOf(carrier) = %q", got)
	}
	if got := runs.runOf(named); string(got) != "run-1" {
		t.Errorf("runOf(line naming it) = %q", got)
	}
}

// TestBinLineDamage checks that a damaged binary line does not decode:
// every byte flipped, every cut, bad escapes.
func TestBinLineDamage(t *testing.T) {
	e := Event{Seq: 3, Time: time.Unix(1e9, 5), Kind: KindModelRequest, RunID: "r", Model: "m", Messages: 3,
		hasPrefix: true, prefix: harness.Hash{9, '\n', binEsc, '\r'}}
	line := appendEventBin(nil, &e, nil, nil)
	body := line[:len(line)-1]
	for i := range body {
		for _, bit := range []byte{1, 0x40, 0x80} {
			b := bytes.Clone(body)
			b[i] ^= bit
			if b[i] == '\n' || b[i] == '\r' {
				continue // a line reader would cut the line there: the cuts below check it
			}
			if got, err := ParseEvent(b); err == nil {
				t.Errorf("byte %d flipped by %#x: decodes to %+v", i, bit, got)
			}
		}
	}
	for n := 1; n < len(body); n++ {
		if got, err := ParseEvent(body[:n]); err == nil {
			t.Errorf("cut to %d bytes: decodes to %+v", n, got)
		}
	}
	for _, bad := range [][]byte{append(bytes.Clone(body), binEsc), append(bytes.Clone(body), binEsc, 7)} {
		if _, err := ParseEvent(bad); err == nil {
			t.Errorf("%q decodes", bad)
		}
	}
}

// TestReadJournalMixedFormats reads a recording that a process of format
// 1 began (JSON lines in seg-00000001.jsonl) and a later process
// continued (binary lines in seg-00000002.events, numbered from 1 again):
// every event reads back whole, in order, and a binary line's ref names
// a line of its own process, not the JSON line of the same number.
func TestReadJournalMixedFormats(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(recording.InfoName, []byte(`{"format":"harnessx-flight-recording","version":1,"agent":"ag","session_id":"s1"}`))
	const tm = `"time":"2026-12-03T08:00:00Z"`
	write("seg-00000001.jsonl", []byte(""+
		`{"seq":1,`+tm+`,"kind":"run_start","run_id":"r1","trace_id":"t1"}`+"\n"+
		`{"seq":2,`+tm+`,"kind":"model_request","ref":1}`+"\n"))
	tid, sid := trace.TraceID{0x0a, 0x1b, 0x0d}, trace.SpanID{1}
	c := newEncCache(nil)
	var seg []byte
	c.form = lineForm{bare: true}
	seg = appendEventBin(seg, &Event{Seq: 1, Time: time.Unix(5, 6), Kind: KindRunStart, Agent: "ag", SessionID: "s1", RunID: "r2", tid: tid, sid: sid}, nil, &c)
	c.form = lineForm{bare: true, ref: 1}
	seg = appendEventBin(seg, &Event{Seq: 2, Time: time.Unix(7, 8), Kind: KindRunEnd, Agent: "ag", SessionID: "s1", RunID: "r2", tid: tid, sid: sid, Status: "completed"}, nil, &c)
	// A third process, whose line 1 was lost: its line 2 names that line,
	// not the line 1 of a process before, and stays without IDs.
	seg = appendEventBin(seg, &Event{Seq: 2, Kind: KindRunEnd, Ref: 1}, nil, nil)
	write(recording.SegmentName(2), seg)

	var got []string
	st, err := ReadJournal(dir, func(e *Event) error {
		got = append(got, fmt.Sprintf("%d %s %s %s %s %s %d", e.Seq, e.Kind, e.Agent, e.SessionID, e.RunID, e.TraceID, e.Ref))
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tidHex := hex.EncodeToString(tid[:])
	want := []string{
		"1 run_start ag s1 r1 t1 0",
		"2 model_request ag s1 r1 t1 0",
		"1 run_start ag s1 r2 " + tidHex + " 0",
		"2 run_end ag s1 r2 " + tidHex + " 0",
		"2 run_end ag s1   1",
	}
	if st.Events != 5 || st.Corrupt != 0 || st.Segments != 2 {
		t.Errorf("stats %+v", st)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("read\n%q\nwant\n%q", got, want)
	}
}

// TestBinLineGolden pins the format: an event's line as recordings of
// format 2 hold it. A change of field numbers, number or word encoding,
// escapes or checksum fails here; such a change needs a new format
// version, read beside this one.
func TestBinLineGolden(t *testing.T) {
	e := Event{Seq: 300, Time: time.Unix(1764806400, 123456789), Kind: KindToolResult, RunID: "r\n1", Ref: 0, Step: -2,
		Status: "ok", Duration: 1500, Tool: "echo", CallID: "c\r", Text: "a\x1bb", Truncated: true, Size: 70,
		tid: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		sid: trace.SpanID{0xa, 0xd, 0x1b, 0xff, 0, 0x40, 0x80, 0xc0}}
	got := appendEventBin(nil, &e, nil, nil)
	const want = "\x01\x82\xacB\xd7KUt\\lPHav}aA\x88F\x91Dr\x1b\x011\x94C\x99VAHp@DT`AG`@IhpBLt`CO@A\x9dKJtpF\x7fC@P@BL\xa1Bok\xa2\xb8W\xbdDecho\xbfCc\x1b\x03\xc1Da\x1b\x02b\u008cA\xc4AWUe|k@\n"
	if string(got) != want {
		t.Errorf("line\n%q\nwant\n%q", got, want)
	}
	back, err := ParseEvent([]byte(want))
	if err != nil || back.Seq != 300 || back.RunID != "r\n1" || back.CallID != "c\r" || back.Text != "a\x1bb" ||
		back.Step != -2 || !back.Time.Equal(e.Time) || back.SpanID != "0a0d1bff004080c0" {
		t.Errorf("golden line decodes to %+v (%v)", back, err)
	}
}

// TestSixes checks putSixes against the layout it documents (byte i is
// 0x40 | bits 6i to 6i+5 of the word) and getSixes against putSixes.
func TestSixes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := []uint64{0, 1, 0x3f, 0x40, 1 << 63, 1<<64 - 1, 0x0123456789abcdef}
	for i := range 64 {
		words = append(words, 1<<i)
	}
	for range 1000 {
		words = append(words, r.Uint64())
	}
	for _, v := range words {
		var got [sixes64 + 2]byte
		got[sixes64], got[sixes64+1] = 0xee, 0xee
		putSixes(got[:sixes64], v)
		for i := range sixes64 {
			if want := 0x40 | byte(v>>(6*i)&0x3f); got[i] != want {
				t.Fatalf("putSixes(%#x): byte %d is %#x, want %#x", v, i, got[i], want)
			}
		}
		if got[sixes64] != 0xee || got[sixes64+1] != 0xee {
			t.Fatalf("putSixes(%#x) wrote past its eleven bytes", v)
		}
		if back, ok := getSixes(got[:]); !ok || back != v {
			t.Fatalf("getSixes(putSixes(%#x)) = %#x, %v", v, back, ok)
		}
	}
}
