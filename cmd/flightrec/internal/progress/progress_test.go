package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func TestReporter(t *testing.T) {
	tests := []struct {
		name     string
		terminal bool
		steps    []time.Duration // time before each tick; 8 MiB and 1000 events are added before each
		want     []string
	}{
		{name: "fast operation shows nothing", steps: []time.Duration{100 * time.Millisecond, 500 * time.Millisecond}, want: nil},
		{name: "slow operation", steps: []time.Duration{500 * time.Millisecond, 700 * time.Millisecond, time.Second, 2 * time.Second},
			want: []string{
				// 500ms: too early; 1.2s: shown; 2.2s: within the interval.
				"exporting a: 16.0 MiB of 64.0 MiB (25%), 2000 of 8000 events, 13.3 MiB/s, 1.2s",
				"exporting a: 32.0 MiB of 64.0 MiB (50%), 4000 of 8000 events, 7.6 MiB/s, 4.2s",
				"exporting a: 32.0 MiB of 64.0 MiB (50%), 4000 of 8000 events, 7.6 MiB/s, 4.2s",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			var out bytes.Buffer
			r := New(&out, Options{Label: "exporting a", TotalBytes: 64 << 20, TotalEvents: 8000, Terminal: tt.terminal, Now: c.now})
			for _, d := range tt.steps {
				r.AddBytes(8 << 20)
				r.AddEvents(1000)
				c.advance(d)
				r.Tick()
			}
			r.Stop()
			var got []string
			if s := strings.TrimSuffix(out.String(), "\n"); s != "" {
				got = strings.Split(s, "\n")
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestReporterTerminal(t *testing.T) {
	c := newClock()
	var out bytes.Buffer
	r := New(&out, Options{Terminal: true, Now: c.now})
	r.AddBytes(3 << 20)
	c.advance(1500 * time.Millisecond)
	r.Tick()
	r.Stop()
	if got, want := out.String(), "\r3.0 MiB, 0 events, 2.0 MiB/s, 1.5s\r3.0 MiB, 0 events, 2.0 MiB/s, 1.5s\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestReporterGoroutine(t *testing.T) {
	var out bytes.Buffer
	r := New(&out, Options{Delay: -1, Interval: time.Millisecond})
	r.Start()
	r.AddBytes(10)
	time.Sleep(20 * time.Millisecond)
	r.Stop()
	if !strings.Contains(out.String(), "10 B, 0 events") {
		t.Errorf("output %q", out.String())
	}
}
