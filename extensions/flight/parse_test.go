package flight

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
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
	f.Add(string(appendEventBin(nil, &full, nil, nil)))
	f.Add("\x01\x02\x07\x08\x06\x1b\x01\x1b\x02\x1b\x03\x00\x00\x00\x00\n")
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
		// And to a binary line that decodes the same.
		again, err = ParseEvent([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		bin, err := ParseEvent(appendEventBin(nil, &again, nil, nil))
		if err != nil {
			t.Fatalf("re-encoded binary line does not decode: %v", err)
		}
		if !bin.Time.Equal(again.Time) {
			t.Fatalf("binary line: time changed: %v -> %v", again.Time, bin.Time)
		}
		bin.Time, again.Time = time.Time{}, time.Time{}
		if len(again.Parts) == 0 {
			again.Parts = nil // an empty list is left out
		}
		if !reflect.DeepEqual(bin, again) && validUTF8Fields(again) {
			t.Fatalf("binary round trip changed the event:\n%+v\n%+v", again, bin)
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
	values := []string{"m", "m", "", "m2", "q\"\né", secret, secret, long, long, "m", "a", "b", "a", "b", "c", "a", "b", "c", "c"}
	decode := func(line []byte) Event {
		t.Helper()
		e, err := ParseEvent(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		return e
	}
	for _, red := range []*Redactor{nil, NewRedactor(nil)} {
		c := newEncCache(red)
		if !c.fieldsOK {
			t.Fatal("the built-in rules are deterministic: fields must be cached")
		}
		for i, v := range values {
			e := Event{Seq: uint64(i), Time: time.Unix(1, 0), Kind: KindModelResponse, Status: v, Model: v, Provider: v,
				StopReason: v, Tool: v, CallID: v}
			switch i % 3 {
			case 1:
				e.Kind = Kind(v) // a kind of another recorder: cached too
			case 2:
				e.Kind = KindToolResult
			}
			cached, uncached := appendEventBin(nil, &e, red, &c), appendEventBin(nil, &e, red, nil)
			if got, want := decode(cached), decode(uncached); !reflect.DeepEqual(got, want) {
				t.Fatalf("value %d (%q): cached\n%+v\nuncached\n%+v", i, v, got, want)
			}
		}
		for _, name := range []string{"tool_a", "tool_b"} {
			copy(view, name) // the same bytes, another value
			e := Event{Kind: KindToolCall, Tool: bytesView(view)}
			if got := decode(appendEventBin(nil, &e, red, &c)); got.Tool != name {
				t.Fatalf("a view changed in place: got tool %s, want %s", got.Tool, name)
			}
		}
		if got := decode(appendEventBin(nil, &Event{Kind: KindToolCall, CallID: secret}, red, &c)); red != nil && strings.Contains(got.CallID, "api03") {
			t.Errorf("cached call ID not redacted: %s", got.CallID)
		}
	}

	calls := 0
	counting := NewRedactor(nil, func(s string) string { calls++; return fmt.Sprint(s, calls) })
	c := newEncCache(counting)
	for i := 1; i <= 3; i++ {
		e, err := ParseEvent(appendEventBin(nil, &Event{Kind: KindToolCall, Tool: "t"}, counting, &c))
		if err != nil || e.Tool != fmt.Sprintf("t%d", i) {
			t.Fatalf("event %d with a custom redactor: tool %q (%v)", i, e.Tool, err)
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
	for _, k := range []Kind{"custom", `odd"kind`, KindToolCall, "custom", ""} {
		e := Event{Seq: 3, Time: time.Date(2026, 12, 3, 1, 2, 3, 0, time.UTC), Kind: k}
		got := appendEvent(nil, &e, nil)
		want, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want)+"\n" {
			t.Errorf("kind %q: got %s, want %s", k, got, want)
		}
	}
}
