package traceview

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"
)

// FollowOptions configures [Follow]. The zero value means the defaults.
type FollowOptions struct {
	// Interval is the time between two reads of the file. Default 500ms.
	Interval time.Duration
	// FromStart reports the runs already in the file too; by default
	// only the runs appended after Follow starts are reported.
	FromStart bool
	// Grace is how long a run whose root span has a parent (a run called
	// from an application span, or a subagent whose caller has not ended
	// yet) waits for that parent before it is reported alone. Default 10s.
	Grace time.Duration
}

// Follow reads the trace file at path every Interval and calls fn with
// each run as its root span arrives (a root span ends after its
// descendants, so the run is complete). A file that does not exist yet is
// waited for; a file that shrinks is read again from its start. Follow
// returns nil when ctx is done, or the first error of fn. It blocks; fn is
// called from the calling goroutine.
func Follow(ctx context.Context, path string, opts FollowOptions, fn func(*Run) error) error {
	if opts.Interval <= 0 {
		opts.Interval = 500 * time.Millisecond
	}
	if opts.Grace <= 0 {
		opts.Grace = 10 * time.Second
	}
	var off int64
	if !opts.FromStart {
		off = endOfLastLine(path)
	}
	type key struct{ trace, span string }
	var pending []*Span
	firstSeen := map[key]time.Time{}
	emitted := map[key]bool{}
	t := time.NewTicker(opts.Interval)
	defer t.Stop()
	for {
		if fi, err := os.Stat(path); err == nil && fi.Size() < off {
			off, pending = 0, nil // truncated or replaced
		}
		spans, next, _, err := ReadTraceFileFrom(path, off)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			off = next
		}
		pending = append(pending, spans...)
		if len(spans) > 0 || len(firstSeen) > 0 {
			now := time.Now()
			var done map[*Span]bool
			for _, r := range BuildRuns(pending) {
				k := key{r.TraceID, r.Root.SpanID}
				if emitted[k] {
					continue
				}
				if r.Root.ParentID != "" {
					if _, ok := firstSeen[k]; !ok {
						firstSeen[k] = now
					}
					if now.Sub(firstSeen[k]) < opts.Grace {
						continue
					}
				}
				delete(firstSeen, k)
				emitted[k] = true
				if done == nil {
					done = map[*Span]bool{}
				}
				for _, s := range r.Spans {
					done[s] = true
				}
				if err := fn(r); err != nil {
					return err
				}
			}
			if done != nil {
				kept := pending[:0]
				for _, s := range pending {
					if !done[s] {
						kept = append(kept, s)
					}
				}
				clear(pending[len(kept):])
				pending = kept
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// endOfLastLine returns the offset just past the last newline of the
// file at path (0 when there is none or no file).
func endOfLastLine(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	end := fi.Size()
	buf := make([]byte, 64<<10)
	for end > 0 {
		n := int64(len(buf))
		if end < n {
			n = end
		}
		if _, err := f.ReadAt(buf[:n], end-n); err != nil && err != io.EOF {
			return 0
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] == '\n' {
				return end - n + i + 1
			}
		}
		end -= n
	}
	return 0
}
