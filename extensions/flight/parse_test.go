package flight

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
	"go.opentelemetry.io/otel/trace"
)

// FuzzParseEvent checks that the fast decoder agrees with encoding/json
// whenever it accepts a line, and that ParseEvent accepts what appendEvent
// writes.
func FuzzParseEvent(f *testing.F) {
	full := Event{Seq: 7, Time: time.Date(2026, 11, 30, 1, 2, 3, 4, time.UTC), Kind: KindToolResult, Agent: "a", SessionID: "s",
		RunID: "r", Step: 2, Attempt: 3, TraceID: "t", SpanID: "p", Status: "ok", Duration: 5, Model: "m", Provider: "pr", ResponseID: "id",
		StopReason: "end_turn", Messages: 3, Prefix: "ab", InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3,
		CacheCreationTokens: 4, ReasoningTokens: 5, Tool: "t", CallID: "c", Text: "héllo\n\"x\"\t\u2028", Size: 9, Truncated: true,
		Error: "e", ErrorType: "*x", Extension: "x", Op: "o", FailedEvent: "run_start", Reason: "why", Path: "/p",
		Parts: []PartRef{{Type: "image", MIME: "image/png", Name: "a<b>.png", URI: "artifact:sha256:" + strings.Repeat("ab", 32), Size: 12}, {Type: "audio", URI: "x"}}}
	f.Add(string(appendEvent(nil, &full, nil)))
	f.Add(`{"seq":1,"time":"2026-11-30T12:00:00Z","kind":"run_start"}`)
	f.Add(`{"SEQ":1,"kind":"x","kind":"y","step":-0,"truncated":false}`)
	f.Add(`{"seq":1e3,"kind":"x"}`)
	f.Add(`{"kind":"x","text":"\ud83d\ude00 \u00e9","size":01}`)
	f.Add(` { "kind" : "x" , "text" : null } `)
	f.Add("{\"kind\":\"\xff\"}")
	f.Fuzz(func(t *testing.T, line string) {
		var fast Event
		if parseFast([]byte(line), &fast) {
			var slow Event
			if err := json.Unmarshal([]byte(line), &slow); err != nil {
				t.Fatalf("fast accepted what encoding/json rejects (%v): %q", err, line)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("decoders differ on %q:\nfast %+v\nslow %+v", line, fast, slow)
			}
		}
		e, err := ParseEvent([]byte(line))
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to a line that decodes the same.
		again, err := ParseEvent(appendEvent(nil, &e, nil))
		if err != nil {
			t.Fatalf("re-encoded event does not decode: %v", err)
		}
		e.Time, again.Time = e.Time.UTC(), again.Time.UTC()
		if !e.Time.Equal(again.Time) {
			t.Fatalf("time changed: %v -> %v", e.Time, again.Time)
		}
		e.Time, again.Time = time.Time{}, time.Time{}
		if !reflect.DeepEqual(e, again) && validUTF8Fields(e) {
			t.Fatalf("round trip changed the event:\n%+v\n%+v", e, again)
		}
	})
}

// validUTF8Fields reports whether e's strings survive encoding unchanged
// (encoding/json replaces invalid UTF-8).
func validUTF8Fields(e Event) bool {
	b, _ := json.Marshal(e)
	var back Event
	json.Unmarshal(b, &back)
	back.Time, e.Time = time.Time{}, time.Time{}
	return reflect.DeepEqual(back, e)
}

// TestAttemptRoundTrip checks that the encoder writes the attempt under
// encoding/json's key and that both decoders read it back.
func TestAttemptRoundTrip(t *testing.T) {
	e := Event{Seq: 1, Time: time.Date(2026, 11, 30, 1, 2, 3, 4, time.UTC), Kind: KindRecovered, RunID: "r", Attempt: 2}
	line := appendEvent(nil, &e, nil)
	var slow Event
	if err := json.Unmarshal(line, &slow); err != nil || slow.Attempt != 2 {
		t.Fatalf("encoding/json: %+v %v (%s)", slow, err, line)
	}
	fast, err := ParseEvent(line)
	if err != nil || fast.Attempt != 2 || fast.Kind != KindRecovered {
		t.Fatalf("ParseEvent: %+v %v", fast, err)
	}
	want, _ := json.Marshal(&e)
	if string(want)+"\n" != string(line) {
		t.Errorf("appendEvent\n%s\nencoding/json\n%s", line, want)
	}
}

// TestPartsRoundTrip checks that the encoder writes an event's parts as
// encoding/json does and that ParseEvent reads them back.
func TestPartsRoundTrip(t *testing.T) {
	e := Event{Seq: 1, Time: time.Date(2026, 11, 30, 1, 2, 3, 4, time.UTC), Kind: KindModelRequest, RunID: "r",
		Parts: []PartRef{{Type: "image", MIME: "image/png", Name: "cat.png", URI: "artifact:sha256:" + strings.Repeat("0f", 32), Size: 5 << 20},
			{Type: "document", URI: "artifact:sha256:" + strings.Repeat("a1", 32)}}}
	line := appendEvent(nil, &e, nil)
	want, _ := json.Marshal(&e)
	if string(want)+"\n" != string(line) {
		t.Errorf("appendEvent\n%s\nencoding/json\n%s", line, want)
	}
	back, err := ParseEvent(line)
	if err != nil || !reflect.DeepEqual(back.Parts, e.Parts) {
		t.Fatalf("ParseEvent: %+v %v", back.Parts, err)
	}
	red := NewRedactor(nil)
	e.Parts[0].Name = "sk-ant-api03-" + strings.Repeat("x", 40) + ".png"
	if line := appendEvent(nil, &e, red); strings.Contains(string(line), "api03") {
		t.Errorf("part name not redacted: %s", line)
	}
}

// TestEncCache checks that the recorder's cached formatting of times,
// trace and span IDs, prefix keys and event numbers writes what the
// uncached encoding writes, across seconds, ID changes, fractions with
// trailing zeros and the carries of counting up.
func TestEncCache(t *testing.T) {
	var c encCache
	base := time.Date(2026, 12, 2, 9, 40, 44, 729733638, time.FixedZone("x", 3600))
	nanos := []int{0, 1, 10, 100, 999999999, 500000000, 729733638, 729733600, 120000000, 12345678, 100000001, 90000, 5}
	tids := []trace.TraceID{{1, 2, 3}, {1, 2, 3}, {0xff, 0xee}}
	sids := []trace.SpanID{{4, 5}, {4, 5}, {4, 5}, {0xab, 0xcd}}
	prefixes := []harness.Hash{{1}, {2}, {3}, {1, 0xff}, {31: 7}}
	for i := 0; i < 200; i++ {
		tm := base.Add(time.Duration(i) * 337 * time.Millisecond)
		tm = time.Date(tm.Year(), tm.Month(), tm.Day(), tm.Hour(), tm.Minute(), tm.Second(), nanos[i%len(nanos)], tm.Location())
		if got, want := string(c.appendTime(nil, tm)), tm.UTC().Format(time.RFC3339Nano); got != want {
			t.Fatalf("time %v: got %s, want %s", tm, got, want)
		}
		tid := tids[i%len(tids)]
		if got, want := string(c.appendTraceID(nil, tid)), hex.EncodeToString(tid[:]); got != want {
			t.Fatalf("trace ID: got %s, want %s", got, want)
		}
		sid := sids[i%len(sids)]
		if got, want := string(c.appendSpanID(nil, sid)), hex.EncodeToString(sid[:]); got != want {
			t.Fatalf("span ID: got %s, want %s", got, want)
		}
		// Two keys that alternate, then a third now and then: the
		// cache keeps two.
		pre := prefixes[i%2]
		if i%5 == 4 {
			pre = prefixes[2+i%3]
		}
		if got, want := string(c.appendPrefix(nil, &pre)), hex.EncodeToString(pre[:]); got != want {
			t.Fatalf("prefix key %d: got %s, want %s", i, got, want)
		}
	}
	// Event numbers: counted up across the digits' carries, after a
	// jump, down, and at the ends of uint64.
	var seqs []uint64
	for n := uint64(0); n <= 1100; n++ {
		seqs = append(seqs, n)
	}
	seqs = append(seqs, 99999, 100000, 100001, 7, 8, 1<<64-2, 1<<64-1, 0, 1, 1<<64-1)
	for _, n := range seqs {
		if got, want := string(c.appendSeq(nil, n)), strconv.FormatUint(n, 10); got != want {
			t.Fatalf("event number %d: got %s", n, got)
		}
	}
	for _, tm := range []time.Time{{}, time.Date(12000, 1, 1, 0, 0, 0, 5, time.UTC), time.Date(999, 12, 31, 23, 59, 59, 9, time.UTC),
		time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1000, 1, 1, 0, 30, 0, 0, time.FixedZone("e", 3600)),
		time.Date(9999, 12, 31, 23, 30, 0, 0, time.FixedZone("w", -3600))} {
		if got, want := string(c.appendTime(nil, tm)), tm.UTC().Format(time.RFC3339Nano); got != want {
			t.Fatalf("time %v: got %s, want %s", tm, got, want)
		}
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}})
	for i, ids := range [][3]string{{"a", "s", "r"}, {"a", "s", "r"}, {"a", "s", "r2"}, {"", "s", ""}, {"b\"<é", "s", "r"}, {"a", strings.Repeat("s", 300), "r"}, {"a", "s", "r"}} {
		e := Event{Seq: uint64(i), Time: base, Kind: KindToolCall, sc: sc, Text: "x", Agent: ids[0], SessionID: ids[1], RunID: ids[2]}
		if got, want := string(appendEventCached(nil, &e, nil, &c)), string(appendEvent(nil, &e, nil)); got != want {
			t.Fatalf("cached\n%s\nuncached\n%s", got, want)
		}
	}
}

// TestEncCacheFields checks that the cached encodings of the fields that
// repeat from event to event (kind, status, model, provider, stop reason,
// tool, call ID) write what the uncached encoding writes, redaction
// included: for repeated, alternating, changed, empty, escaped, secret and
// long values, and for a value that is a view of bytes changed in place between two
// events; and that a redactor with custom functions, whose result may
// depend on more than the text, is called for every value.
func TestEncCacheFields(t *testing.T) {
	secret := "sk-ant-api03-" + strings.Repeat("x", 40)
	long := strings.Repeat("m", fieldEncMax+1)
	view := []byte("tool_a")
	values := []string{"m", "m", "", "m2", `q"é`, secret, secret, long, long, "m", "a", "b", "a", "b", "c", "a", "b", "c", "c"}
	for _, red := range []*Redactor{nil, NewRedactor(nil)} {
		c := newEncCache(red)
		if !c.fieldsOK {
			t.Fatal("the built-in rules are deterministic: fields must be cached")
		}
		for i, v := range values {
			e := Event{Seq: uint64(i), Time: time.Unix(1, 0), Kind: KindModelResponse, Status: v, Model: v, Provider: v,
				StopReason: v, Tool: v, CallID: v}
			if i%3 == 2 {
				e.Kind = KindToolResult
			}
			if got, want := string(appendEventCached(nil, &e, red, &c)), string(appendEvent(nil, &e, red)); got != want {
				t.Fatalf("value %d (%q): cached\n%s\nuncached\n%s", i, v, got, want)
			}
		}
		for _, name := range []string{"tool_a", "tool_b"} {
			copy(view, name) // the same bytes, another value
			e := Event{Kind: KindToolCall, Tool: bytesView(view)}
			if got := string(appendEventCached(nil, &e, red, &c)); !strings.Contains(got, `"tool":"`+name+`"`) {
				t.Fatalf("a view changed in place: got %s, want tool %s", got, name)
			}
		}
		if line := string(appendEventCached(nil, &Event{Kind: KindToolCall, CallID: secret}, red, &c)); red != nil && strings.Contains(line, "api03") {
			t.Errorf("cached call ID not redacted: %s", line)
		}
	}

	calls := 0
	counting := NewRedactor(nil, func(s string) string { calls++; return fmt.Sprint(s, calls) })
	c := newEncCache(counting)
	for i := 1; i <= 3; i++ {
		line := string(appendEventCached(nil, &Event{Kind: KindToolCall, Tool: "t"}, counting, &c))
		if !strings.Contains(line, fmt.Sprintf(`"tool":"t%d"`, i)) {
			t.Fatalf("event %d with a custom redactor: %s", i, line)
		}
	}
}

// TestKindJSON checks the recorder's kinds' fixed encodings against
// encoding/json's, and that an event of another kind is encoded as
// encoding/json encodes it.
func TestKindJSON(t *testing.T) {
	kinds := []Kind{KindRunStart, KindRunEnd, KindModelRequest, KindModelResponse, KindToolCall, KindToolResult,
		KindApproval, KindError, KindHookFailed, KindExtensionError, KindIncident, KindRecovered}
	for _, k := range kinds {
		q, _ := json.Marshal(k)
		if got, want := kindJSON(k), `","kind":`+string(q); got != want {
			t.Errorf("kindJSON(%q) = %s, want %s", k, got, want)
		}
	}
	var c encCache
	for _, k := range []Kind{"custom", `odd"kind`, KindToolCall, "custom"} {
		e := Event{Seq: 3, Time: time.Date(2026, 12, 3, 1, 2, 3, 0, time.UTC), Kind: k}
		got := appendEventCached(nil, &e, nil, &c)
		want, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want)+"\n" {
			t.Errorf("kind %q: got %s, want %s", k, got, want)
		}
	}
}
