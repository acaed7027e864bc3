package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Options configures a [Reporter]. The zero value means the defaults.
type Options struct {
	// Label starts each line, e.g. "exporting alpha".
	Label string
	// TotalBytes and TotalEvents are the expected totals; 0 when unknown.
	TotalBytes  int64
	TotalEvents int
	// Terminal rewrites one line in place instead of printing lines.
	Terminal bool
	// Delay is how long the operation runs before anything is shown.
	// Default one second; negative shows at once.
	Delay time.Duration
	// Interval is the time between two readings. Default 250ms on a
	// terminal, 2s elsewhere.
	Interval time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Reporter counts bytes and events and shows them. Add methods are safe
// for concurrent use.
type Reporter struct {
	w    io.Writer
	opts Options

	mu     sync.Mutex
	start  time.Time
	bytes  int64
	events int
	shown  bool
	last   time.Time
	width  int
	stop   chan struct{}
	done   chan struct{}
}

// New returns a reporter that writes to w and starts its clock. Call
// Start to show readings from a goroutine, or Tick to show them by hand.
func New(w io.Writer, opts Options) *Reporter {
	if opts.Delay == 0 {
		opts.Delay = time.Second
	}
	if opts.Interval <= 0 {
		opts.Interval = 2 * time.Second
		if opts.Terminal {
			opts.Interval = 250 * time.Millisecond
		}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Reporter{w: w, opts: opts, start: opts.Now()}
}

// Start shows a reading every interval (once the delay has passed) until
// Stop.
func (r *Reporter) Start() {
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.done)
		t := time.NewTicker(min(r.opts.Interval, 100*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				r.Tick()
			}
		}
	}()
}

// AddBytes counts n more bytes done.
func (r *Reporter) AddBytes(n int64) {
	r.mu.Lock()
	r.bytes += n
	r.mu.Unlock()
}

// AddEvents counts n more events done.
func (r *Reporter) AddEvents(n int) {
	r.mu.Lock()
	r.events += n
	r.mu.Unlock()
}

// Tick shows a reading if the delay has passed and the last reading is
// an interval old.
func (r *Reporter) Tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Now()
	if now.Sub(r.start) < r.opts.Delay || (r.shown && now.Sub(r.last) < r.opts.Interval) {
		return
	}
	r.show(now, false)
}

// Stop ends the readings. If any was shown, or the delay has passed, it
// shows the final reading on a line of its own.
func (r *Reporter) Stop() {
	if r.stop != nil {
		close(r.stop)
		<-r.done
		r.stop = nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Now()
	if r.shown || now.Sub(r.start) >= r.opts.Delay {
		r.show(now, true)
	}
}

func (r *Reporter) show(now time.Time, final bool) {
	line := r.line(now)
	switch {
	case r.opts.Terminal:
		pad := max(0, r.width-len(line))
		fmt.Fprintf(r.w, "\r%s%s", line, strings.Repeat(" ", pad))
		r.width = len(line)
		if final {
			fmt.Fprintln(r.w)
		}
	default:
		fmt.Fprintln(r.w, line)
	}
	r.shown, r.last = true, now
}

// Line returns the current reading.
func (r *Reporter) Line() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.line(r.opts.Now())
}

func (r *Reporter) line(now time.Time) string {
	elapsed := now.Sub(r.start)
	var b strings.Builder
	if r.opts.Label != "" {
		b.WriteString(r.opts.Label + ": ")
	}
	b.WriteString(Size(r.bytes))
	if r.opts.TotalBytes > 0 {
		fmt.Fprintf(&b, " of %s (%d%%)", Size(r.opts.TotalBytes), min(100, r.bytes*100/r.opts.TotalBytes))
	}
	fmt.Fprintf(&b, ", %d", r.events)
	if r.opts.TotalEvents > 0 {
		fmt.Fprintf(&b, " of %d", r.opts.TotalEvents)
	}
	b.WriteString(" events")
	// A rate over less than a tenth of a second says nothing.
	if elapsed >= 100*time.Millisecond {
		fmt.Fprintf(&b, ", %s/s", Size(int64(float64(r.bytes)/elapsed.Seconds())))
	}
	fmt.Fprintf(&b, ", %s", elapsed.Round(100*time.Millisecond))
	return b.String()
}

// Size formats n bytes for people: 780 B, 3.6 KiB, 12.0 MiB, 1.5 GiB.
func Size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
