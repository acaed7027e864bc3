package flight

import (
	"context"
	"io"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/recording"
)

// SetMaxTraces sets how many recent traces x remembers for its span
// snapshot (maxTraces by default). Call it before the first event.
func SetMaxTraces(x *Extension, n int) {
	x.mu.Lock()
	x.traceCap = n
	x.mu.Unlock()
}

// ReadSegment reads the events of one journal segment as ReadJournal does.
func ReadSegment(r io.Reader, fn func(line []byte, e *Event) error) (ReadStats, error) {
	st, err := recording.ReadSegment(r, eventLines(fn))
	return ReadStats(st), err
}

// BundleWriter is the bundle writer of incidents and exports.
type BundleWriter = bundleWriter

// NewBundleWriter returns a bundle writer (see newBundleWriter).
func NewBundleWriter(w io.Writer, red *Redactor) *BundleWriter { return newBundleWriter(w, red) }

// IndexedArtifact is an entry of a recording's artifacts.json.
type IndexedArtifact = indexedArtifact

// Observe records one lifecycle event as the recorder's hook does.
func Observe(x *Extension, ctx context.Context, ev *harness.Event) error { return x.observe(ctx, ev) }

// SetSpansCompactBytes sets the size of spans.jsonl past which span
// snapshots compact, and returns a function restoring it.
func SetSpansCompactBytes(n int64) func() {
	old := spansCompactBytes
	spansCompactBytes = n
	return func() { spansCompactBytes = old }
}
