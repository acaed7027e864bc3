package flight_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/extensions/flight"
)

func line(seq int) []byte {
	return fmt.Appendf(nil, `{"seq":%d,"time":"2026-11-30T12:00:00Z","kind":"tool_result","text":"%s"}`+"\n", seq, strings.Repeat("x", 80))
}

func TestReadSegment(t *testing.T) {
	good := string(line(1)) + string(line(2))
	tests := []struct {
		name                  string
		in                    string
		events, torn, corrupt int
	}{
		{"clean", good, 2, 0, 0},
		{"torn last line", good + `{"seq":3,"ti`, 2, 1, 0},
		{"torn but valid JSON", good + `{"seq":3,"time":"2026-11-30T12:00:00Z","kind":"x"}`, 2, 1, 0},
		{"corrupt middle", string(line(1)) + "garbage\n" + string(line(2)), 2, 0, 1},
		{"event without kind", `{"seq":1}` + "\n", 0, 0, 1},
		{"empty", "", 0, 0, 0},
		{"long line", string(line(1)) + `{"text":"` + strings.Repeat("y", 5<<20) + "\"}\n" + string(line(2)), 2, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			st, err := flight.ReadSegment(strings.NewReader(tt.in), func(l []byte, e *flight.Event) error {
				n++
				if !bytes.HasSuffix(l, []byte("\n")) {
					t.Errorf("line without newline: %q", l)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if st.Events != tt.events || n != tt.events || st.Torn != tt.torn || st.Corrupt != tt.corrupt {
				t.Errorf("stats %+v (calls %d), want events %d torn %d corrupt %d", st, n, tt.events, tt.torn, tt.corrupt)
			}
		})
	}
}

func FuzzReadSegment(f *testing.F) {
	f.Add(string(line(1)) + string(line(2)))
	f.Add(string(line(1)) + `{"seq":3,"ti`)
	f.Add("garbage\n\n{}\n")
	f.Add(`{"seq":1,"time":"2026-11-30T12:00:00Z","kind":"run_start","text":"a\u2028b\"\\"}` + "\n")
	f.Fuzz(func(t *testing.T, in string) {
		var lines [][]byte
		st, err := flight.ReadSegment(strings.NewReader(in), func(l []byte, e *flight.Event) error {
			lines = append(lines, bytes.Clone(l))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if st.Events != len(lines) || st.Bytes != int64(len(in)) {
			t.Fatalf("stats %+v, %d lines, %d bytes", st, len(lines), len(in))
		}
		// Round trip: every decoded event re-encodes, through a bundle, to
		// a line that decodes to the same event.
		if len(lines) == 0 {
			return
		}
		evs := make([]flight.Event, 0, len(lines))
		for _, l := range lines {
			e, err := flight.ParseEvent(l)
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, e)
		}
		var buf bytes.Buffer
		bw := flight.NewBundleWriter(&buf, flight.NewRedactor(nil))
		for i := range evs {
			bw.AddEvent(&evs[i])
		}
		if _, err := bw.Close(t0); err != nil {
			t.Fatal(err)
		}
		b, err := flight.ReadBundle(&buf, flight.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		again, err := b.Events()
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != len(evs) {
			t.Fatalf("%d events after round trip, want %d", len(again), len(evs))
		}
		for i := range again {
			if again[i].Kind != evs[i].Kind || again[i].Seq != evs[i].Seq || !again[i].Time.Equal(evs[i].Time) {
				t.Fatalf("event %d changed: %+v -> %+v", i, evs[i], again[i])
			}
		}
	})
}
