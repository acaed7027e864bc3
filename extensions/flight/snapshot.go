package flight

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/otlpjson"
	"github.com/harnessx/harnessx/internal/recording"
	"github.com/harnessx/harnessx/internal/redact"
	"go.opentelemetry.io/otel/trace"
)

// kickSnapshot wakes the snapshotter. It never blocks.
func (x *Extension) kickSnapshot() {
	select {
	case x.snapKick <- struct{}{}:
	default:
	}
}

// kickLater wakes the snapshotter for a snapshot that waits its interval
// anyway (spans, session) unless its timer is already set: waking it at
// every span end would cost a goroutine switch each time for nothing.
func (x *Extension) kickLater() {
	if !x.snapArmed.Load() {
		x.kickSnapshot()
	}
}

// snapshotter is the goroutine that keeps the recording's snapshots, so
// that neither the run nor the journal's writer waits for them: it copies
// new artifacts as soon as a tool call ends, writes the session and span
// snapshots at most once per snapshot interval each, within one CPU
// budget (snapshotSchedule), and evicts old recordings when it starts. It
// writes the final span snapshot when stopped.
func (x *Extension) snapshotter() {
	defer close(x.snapDone)
	ctx := context.Background()
	x.evictRecordings()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	sched := snapshotSchedule{every: x.cfg.snapshotEvery}
	armed := false
	for {
		select {
		case <-x.snapKick:
		case <-timer.C:
			armed = false
			// Before the dirty flags are read: a kickLater that saw the
			// timer set has set its flag already.
			x.snapArmed.Store(false)
		case <-x.snapStop:
			// The other extensions are torn down and the agent is closed:
			// only the spans can still be read.
			if x.cfg.includeArtifacts {
				x.syncParts()
			}
			if x.spansDirty.Swap(false) || x.spansLogBytes > 0 {
				x.compactSpans()
			}
			return
		}
		if x.cfg.includeArtifacts && x.artifactsDirty.Load() {
			x.syncArtifacts(ctx)
		}
		if x.cfg.includeArtifacts && x.partsDirty.Load() {
			x.syncParts()
		}
		sched.lastSession = x.lastSession()
		spansDirty, pending := x.spansDirty.Load(), 0
		if spansDirty {
			pending = x.spans.pending(x.spanSeq)
		}
		start := time.Now()
		runSpans, runSession, next := sched.plan(start, spansDirty, x.sessionDirty.Load(), pending)
		if runSpans {
			x.spansDirty.Store(false)
			n := x.snapshotSpans()
			sched.spansDone(start, time.Since(start), n)
		}
		if runSession {
			t := time.Now()
			x.snapshotSession(ctx)
			sched.sessionTook = time.Since(t)
		}
		if runSpans || runSession {
			sched.ran(start, time.Now())
		}
		if next >= 0 && !armed {
			timer.Reset(next)
			armed = true
			x.snapArmed.Store(true)
		}
	}
}

// maxSpanSnapshotWait bounds the backoff of span snapshots (unless the
// snapshot interval is longer): an estimate inflated by a snapshot's
// fixed costs must not leave the recording's spans stale for long.
const maxSpanSnapshotWait = 30 * time.Second

// snapshotBackoff bounds the snapshotter's share of a CPU to
// 1/(1+snapshotBackoff).
const snapshotBackoff = 19

// snapshotSchedule decides when the snapshotter writes span and session
// snapshots. Each kind waits the snapshot interval from the start of its
// last snapshot, or 1+snapshotBackoff times as long as that snapshot took
// when that is longer (a big span buffer under load is snapshotted less
// often). A span snapshot's cost follows the spans it writes: its estimate
// covers the cost the pending spans will have at the last snapshot's cost
// a span (its time over at least minSpanSample spans, so that a small
// snapshot's fixed cost is not taken for its spans'), so that a burst of
// spans does not make one expensive snapshot before the backoff has
// measured it. And the snapshots written together
// are followed by snapshotBackoff times their duration in which none
// starts: the two kinds share one budget, so that the snapshotter as a
// whole never takes more than 1/(1+snapshotBackoff) of a CPU from the
// agent and the journal's writer (each kind's own wait alone would allow
// that share to each). Span snapshots wait at most maxSpanSnapshotWait
// (or the interval, when longer), whatever the budget says.
// TestSnapshotBudget simulates it.
type snapshotSchedule struct {
	every                  time.Duration
	lastSpans, lastSession time.Time     // when the last snapshot of each kind started
	spansTook, sessionTook time.Duration // what it took
	perSpan                time.Duration // what the last span snapshot took a span (of at least minSpanSample)
	quiet                  time.Time     // no snapshot starts before
}

// plan returns which snapshots to write at now, given which kinds have
// something to write and how many spans are pending, and when none is due
// how long to wait for the next (-1 when nothing is pending).
func (s *snapshotSchedule) plan(now time.Time, spansDirty, sessionDirty bool, pendingSpans int) (spans, session bool, wait time.Duration) {
	wait = -1
	need := func(w time.Duration) {
		if wait < 0 || w < wait {
			wait = w
		}
	}
	quiet := s.quiet.Sub(now)
	if spansDirty {
		most := max(s.every, maxSpanSnapshotWait) - now.Sub(s.lastSpans)
		cost := max(s.spansTook, s.perSpan*time.Duration(pendingSpans))
		w := max(min(max(s.every, (1+snapshotBackoff)*cost)-now.Sub(s.lastSpans), most), min(quiet, most))
		if w > 0 {
			need(w)
		} else {
			spans = true
		}
	}
	if sessionDirty {
		if w := max(max(s.every, (1+snapshotBackoff)*s.sessionTook)-now.Sub(s.lastSession), quiet); w > 0 {
			need(w)
		} else {
			session = true
		}
	}
	return spans, session, wait
}

// spansDone notes a span snapshot that started at start, took took and
// wrote n spans.
func (s *snapshotSchedule) spansDone(start time.Time, took time.Duration, n int) {
	s.lastSpans, s.spansTook = start, took
	if n > 0 {
		s.perSpan = took / time.Duration(max(n, minSpanSample))
	}
}

// minSpanSample is the fewest spans a span snapshot's time is spread over
// to estimate what a span costs. A snapshot of a few spans (the first of
// a recording, or one after a quiet spell) takes mostly its fixed cost:
// creating, writing and renaming a file, a millisecond or so. Divided by
// three spans, that made the next snapshot of a full buffer (2,048 spans)
// look ~700 ms costly, and it waited 20 times that, ~14 s, instead of the
// interval (TestSnapshotScheduleFixedCost).
const minSpanSample = 64

// ran notes that the snapshots planned together ran from start to end.
func (s *snapshotSchedule) ran(start, end time.Time) {
	s.quiet = end.Add(snapshotBackoff * end.Sub(start))
}

func (x *Extension) lastSession() time.Time { return time.Unix(0, x.sessAt.Load()) }

// turnSnapshotDue reports whether the last session snapshot written at a
// turn's completion is older than the snapshot interval, and if so counts
// the caller's as the new last one.
func (x *Extension) turnSnapshotDue() bool {
	now := time.Now()
	last := x.turnAt.Load()
	if now.Sub(time.Unix(0, last)) < x.cfg.snapshotEvery {
		return false
	}
	return x.turnAt.CompareAndSwap(last, now.UnixNano())
}

// snapshotSession writes the redacted session snapshot into the recording.
func (x *Extension) snapshotSession(ctx context.Context) {
	x.sessMu.Lock()
	defer x.sessMu.Unlock()
	x.sessionDirty.Store(false)
	x.sessAt.Store(time.Now().UnixNano())
	x.mu.Lock()
	open := x.journal != nil && !x.closed
	x.mu.Unlock()
	if !open {
		return
	}
	data, err := x.ec.Agent().SaveSession(harness.AsSnapshot(ctx))
	if err != nil {
		if !errors.Is(err, harness.ErrClosed) {
			x.ec.Logger().Warn("flight: session snapshot failed", "err", err)
		}
		return
	}
	var found func([32]byte, []byte)
	if x.cfg.includeArtifacts {
		found = x.queueSessionPart
	}
	data, err = sessionRefs(data, x.sums, found)
	var sum sessionSum
	if err == nil {
		var same bool
		if sum, same = x.sess.unchanged(data); same {
			// What session.json holds already: nothing to redact or
			// write. sessTook keeps the cost of the last snapshot
			// written, which a changed session's next one will have.
			if x.partsDirty.Load() {
				x.kickSnapshot()
			}
			return
		}
	}
	var red []byte
	if err == nil {
		red, err = x.sess.redact(x.red, data)
	}
	if err == nil {
		err = writeFileAtomic(filepath.Join(x.dir, recording.SessionSnapshot), red)
	}
	if err != nil {
		x.sess.written(sessionSum{})
		x.ec.Logger().Warn("flight: session snapshot failed", "err", err)
	} else {
		x.sess.written(sum)
	}
	if x.partsDirty.Load() {
		x.kickSnapshot()
	}
	x.sessTook.Store(int64(time.Since(time.Unix(0, x.sessAt.Load()))))
}

// spansCompactBytes is the size of spans.jsonl past which the next span
// snapshot rewrites spans.json with the buffered spans and starts the log
// anew (a variable for tests).
var spansCompactBytes int64 = 8 << 20

// snapshotSpans keeps the recording's spans current at a cost that
// follows the spans that ended since the last snapshot, not the buffer:
// it appends them as one OTLP JSON line to spans.jsonl, and compacts into
// spans.json only when the log has grown past spansCompactBytes. Readers
// (ExportJournal, flightrec) merge the two. It runs on the snapshotter.
func (x *Extension) snapshotSpans() int {
	if x.spansLogBytes > spansCompactBytes {
		return x.compactSpans()
	}
	x.mu.Lock()
	open := x.journal != nil
	x.mu.Unlock()
	if !open {
		return 0
	}
	spans := x.recentSpans(x.spanSeq)
	last := spans.last
	if spans.Len() == 0 {
		x.spanSeq = last
		return 0
	}
	if spans.whole && x.spansLogBytes > 0 {
		// Every buffered span of the recent traces ended since the last
		// snapshot (spans end faster than the buffer holds them): they
		// are what compacting would write. Written as spans.json, they
		// replace the log, which then does not grow to its cap to be
		// compacted, encoding the same spans again.
		return x.writeSpans(spans)
	}
	data := x.encodeSpans(spans)
	err := appendLine(filepath.Join(x.dir, recording.SpansLog), data)
	if err != nil {
		x.ec.Logger().Warn("flight: span snapshot failed", "err", err)
		return spans.Len()
	}
	x.spanSeq = last
	x.spansLogBytes += int64(len(data)) + 1
	return spans.Len()
}

// recentSpans returns a copy of the buffered spans of the recent traces
// numbered after seq, with the number of the last span kept and whether
// they are all the buffered spans of the recent traces (see
// SpanProcessor.copySince). encodeSpans decodes them.
func (x *Extension) recentSpans(seq uint64) *spanCopy {
	return x.spans.copySince(seq, x.inRecentTrace())
}

// encodeSpans encodes spans as one redacted OTLP/JSON export request,
// the bytes bundles hold (marshalSpans), straight from the copied
// records, decoding one span at a time (otlpjson.AppendSDKSpans), and
// logs records that did not decode. The bytes are valid until the next
// call: they are in a buffer the snapshotter reuses, unless it is much
// larger than this request needed (after a burst of large spans).
func (x *Extension) encodeSpans(spans *spanCopy) []byte {
	var red *redact.Redactor
	if x.red != nil {
		red = &x.red.r
	}
	data := otlpjson.AppendSDKSpans(x.spansBuf[:0], spans, red, &x.spansCache)
	// A snapshot is a generation of the cache: it keeps the long strings
	// of this snapshot's spans and the last one's, not those of spans long
	// gone (a burst of large tool results an hour ago).
	x.spansCache.Rotate()
	if spans.err != nil {
		x.ec.Logger().Warn("flight: span snapshot", "err", spans.err)
	}
	if cap(data) <= max(4*len(data), 64<<10) {
		x.spansBuf = data[:0]
	} else {
		x.spansBuf = nil
	}
	return data
}

// compactSpans writes every buffered span of the recent traces into
// spans.json and removes spans.jsonl: at close, and when the log is
// large. It returns the number of spans written.
func (x *Extension) compactSpans() int {
	x.mu.Lock()
	open := x.journal != nil
	x.mu.Unlock()
	if !open {
		return 0
	}
	spans := x.recentSpans(0)
	return x.writeSpans(spans)
}

// writeSpans writes spans, every buffered span of the recent traces, into
// spans.json and removes spans.jsonl. It returns the number of spans
// written.
func (x *Extension) writeSpans(spans *spanCopy) int {
	data := x.encodeSpans(spans)
	err := writeFileAtomic(filepath.Join(x.dir, recording.SpansSnapshot), data)
	if err == nil {
		err = os.Remove(filepath.Join(x.dir, recording.SpansLog))
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	}
	if err != nil {
		x.ec.Logger().Warn("flight: span snapshot failed", "err", err)
		return spans.Len()
	}
	x.spanSeq, x.spansLogBytes = spans.last, 0
	return spans.Len()
}

// inRecentTrace returns a filter of the recent traces this
// recorder saw.
func (x *Extension) inRecentTrace() func(trace.TraceID) bool {
	x.mu.Lock()
	traces := make(map[trace.TraceID]struct{}, len(x.traceRing))
	for _, t := range x.traceRing {
		traces[t] = struct{}{}
	}
	x.mu.Unlock()
	return func(id trace.TraceID) bool {
		_, ok := traces[id]
		return ok
	}
}

// appendLine appends data and a newline to the file at p (created 0600)
// in one write.
func appendLine(p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// artifacts lists the artifacts of the agent's extensions.
func (x *Extension) artifacts(ctx context.Context) ([]indexedArtifact, error) {
	var out []indexedArtifact
	var errs []error
	for _, ext := range x.ec.Agent().Extensions() {
		src, ok := ext.(harness.ArtifactSource)
		if !ok {
			continue
		}
		arts, err := src.Artifacts(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("flight: artifacts of %q: %w", ext.Name(), err))
		}
		for _, a := range arts {
			out = append(out, indexedArtifact{Extension: ext.Name(), Artifact: a})
		}
	}
	return out, errors.Join(errs...)
}

// syncArtifacts copies the artifacts not kept yet into the recording and
// rewrites the index when it changed. Only new artifacts are copied: the
// cost of a call is the listing, whatever the number kept. It runs on the
// snapshotter, or on the run's goroutine at turn completion when the
// snapshotter has not caught up; artMu serializes them.
func (x *Extension) syncArtifacts(ctx context.Context) {
	x.artMu.Lock()
	defer x.artMu.Unlock()
	if !x.artifactsDirty.Swap(false) {
		return
	}
	x.mu.Lock()
	open := x.journal != nil && !x.closing
	x.mu.Unlock()
	if !open {
		return
	}
	arts, err := x.artifacts(ctx)
	if err != nil {
		x.ec.Logger().Warn("flight: listing artifacts", "err", err)
	}
	changed := false
	for _, a := range arts {
		name := a.MemberName()
		if old, ok := x.kept[name]; ok && strings.EqualFold(old.SHA256, a.SHA256) {
			continue
		}
		ent := a
		switch {
		case !validMemberName(ArtifactsDir + name):
			ent.Missing = "invalid name"
		case !x.makeRoomLocked(a.Size):
			ent.Missing = fmt.Sprintf("not copied: the recording's artifact limit of %d bytes was reached", x.cfg.artifactBytes)
			x.artSkip.Add(1)
		default:
			if err := x.keepCopy(&ent); err != nil {
				ent.Missing = "not copied: " + err.Error()
			} else {
				x.keptBytes += ent.Size
				x.artKept.Add(1)
			}
		}
		if _, ok := x.kept[name]; !ok {
			x.keptOrder = append(x.keptOrder, name)
		}
		x.kept[name] = &ent
		changed = true
	}
	if changed {
		if err := x.writeIndexLocked(); err != nil {
			x.ec.Logger().Warn("flight: artifact index failed", "err", err)
		}
	}
}

// keepCopy makes the recording's own copy of a under artifacts/: a hard
// link when the file is on the same file system, else a copy whose
// SHA-256 is checked. It sets a.Kept.
func (x *Extension) keepCopy(a *indexedArtifact) error {
	rel := ArtifactsDir + a.MemberName()
	dst := filepath.Join(x.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp")
	os.Remove(tmp)
	if err := os.Link(a.Path, tmp); err != nil {
		if err := copyFile(a.Path, tmp, a.SHA256); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	a.Kept = rel
	return nil
}

// copyFile copies the regular file src to dst (mode 0600) and checks that
// the copy's SHA-256 is wantSHA256 when that is set.
func copyFile(src, dst, wantSHA256 string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		if err == nil {
			err = errors.New("not a regular file")
		}
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && wantSHA256 != "" && !strings.EqualFold(hex.EncodeToString(h.Sum(nil)), wantSHA256) {
		err = errors.New("changed since it was listed")
	}
	return err
}

// writeIndexLocked writes artifacts.json. artMu must be held.
func (x *Extension) writeIndexLocked() error {
	arts := make([]*indexedArtifact, 0, len(x.keptOrder))
	for _, n := range x.keptOrder {
		arts = append(arts, x.kept[n])
	}
	data, err := json.MarshalIndent(arts, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(x.dir, recording.ArtifactsIndexName), data)
}

// keptArtifacts returns a copy of the artifact index.
func (x *Extension) keptArtifacts() []indexedArtifact {
	x.artMu.Lock()
	defer x.artMu.Unlock()
	out := make([]indexedArtifact, 0, len(x.keptOrder))
	for _, n := range x.keptOrder {
		out = append(out, *x.kept[n])
	}
	return out
}

// evictRecordings deletes the oldest recordings under the root directory
// past the limits of WithRecordingLimits. Recordings in use (locked) are
// counted but never deleted; the recorder's own one is locked.
func (x *Extension) evictRecordings() {
	root := x.cfg.dir
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	type rec struct {
		dir     string
		created time.Time
		size    int64
	}
	var recs []rec
	var total int64
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		info, err := recording.ReadInfo(dir)
		if err != nil {
			continue // not a recording: never touched
		}
		r := rec{dir: dir, created: info.Created, size: dirSize(dir)}
		total += r.size
		recs = append(recs, r)
	}
	if len(recs) <= x.cfg.maxRecordings && total <= x.cfg.recordingBytes {
		return
	}
	slices.SortFunc(recs, func(a, b rec) int { return a.created.Compare(b.created) })
	count := len(recs)
	for _, r := range recs {
		if count <= x.cfg.maxRecordings && total <= x.cfg.recordingBytes {
			break
		}
		if r.dir == x.dir || recordingInUse(r.dir) {
			continue
		}
		if err := os.RemoveAll(r.dir); err != nil {
			x.ec.Logger().Warn("flight: evicting an old recording", "dir", r.dir, "err", err)
			continue
		}
		x.ec.Logger().Info("flight: evicted an old recording", "dir", r.dir, "bytes", r.size)
		count--
		total -= r.size
	}
}

// dirSize returns the bytes of the regular files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
