package flight

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/otlpspans"
	"github.com/harnessx/harnessx/internal/recording"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// bundleQueue bounds the automatic bundles waiting for the bundle writer;
// a trigger that finds it full is suppressed.
const bundleQueue = 8

// bundleJob is what a bundle is built from: copies of the ring's lines
// and of the span buffer taken when the trigger fired.
type bundleJob struct {
	reason, runID string
	now           time.Time
	lines         [][]byte // the ring's (see lineForm)
	gone          []byte   // the ring's newest evicted line that carried a run ID
	spans         *spanCopy
	dropped       uint64
	reply         chan bundleResult // Trigger's; nil for automatic bundles
	barrier       bool              // Flush's: build nothing, reply
}

type bundleResult struct {
	path string
	err  error
}

// capture takes what a bundle of runID (every run when empty) needs from
// the ring and the span buffer: a copy of the matching lines and of the
// span records. It is cheap: no decoding, no conversion.
func (x *Extension) capture(reason, runID string) *bundleJob {
	job := &bundleJob{reason: reason, runID: runID, now: x.cfg.now()}
	var size int
	x.mu.Lock()
	if runID == "" {
		job.dropped = x.evicted
	}
	job.gone = bytes.Clone(x.ring.gone)
	var idx [][]byte
	x.ring.eachRun(func(l, run []byte) bool {
		if len(l) > 0 && (runID == "" || string(run) == runID) {
			idx = append(idx, l)
			size += len(l)
		}
		return true
	})
	buf := make([]byte, 0, size)
	for _, l := range idx {
		start := len(buf)
		buf = append(buf, l...)
		job.lines = append(job.lines, buf[start:len(buf):len(buf)])
	}
	x.mu.Unlock()
	job.spans = x.spans.copySince(0, nil)
	return job
}

// events calls fn with each event of the job's lines, whole (with what
// the lines leave out put back from the recording's agent and session ID
// and the lines they name), that is of the job's run (every event when
// the job has none). fn must not keep e.
func (job *bundleJob) events(agent, session string, fn func(e *Event)) {
	r := lineReader(agent, session, job.gone)
	for _, line := range job.lines {
		e, err := ParseEvent(line)
		if err != nil {
			continue
		}
		r.resolve(&e)
		if job.runID == "" || e.RunID == job.runID {
			fn(&e)
		}
	}
}

// allowAutomatic takes a token of the automatic bundles' rate limit.
func (x *Extension) allowAutomatic() bool {
	n := x.cfg.incidentRate
	if n <= 0 {
		return true
	}
	x.incMu.Lock()
	defer x.incMu.Unlock()
	now := time.Now()
	if !x.tokensAt.IsZero() {
		x.tokens += float64(n) * float64(now.Sub(x.tokensAt)) / float64(x.cfg.incidentPer)
		x.tokens = min(x.tokens, float64(n))
	}
	x.tokensAt = now
	if x.tokens < 1 {
		return false
	}
	x.tokens--
	return true
}

// autoTrigger queues an automatic bundle for the bundle writer, off the
// run's path: the run waits only for the copies of capture.
func (x *Extension) autoTrigger(reason, runID string) {
	if !x.allowAutomatic() {
		x.suppress(reason, "rate limit")
		return
	}
	job := x.capture(reason, runID)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closing || !x.started {
		return
	}
	select {
	case x.bundleQ <- job:
	default:
		x.suppress(reason, "too many bundles waiting")
	}
}

// suppress counts a suppressed automatic bundle; the first is logged.
func (x *Extension) suppress(reason, why string) {
	if x.suppressed.Add(1) == 1 {
		x.ec.Logger().Warn("flight: incident bundles suppressed; Stats counts them", "reason", reason, "why", why)
	}
}

// bundler is the goroutine that writes the automatic bundles. When
// stopped it writes those still queued, then returns.
func (x *Extension) bundler() {
	defer close(x.bundleDone)
	ctx := context.Background()
	write := func(job *bundleJob) {
		if job.barrier {
			job.reply <- bundleResult{}
			return
		}
		path, err := x.build(ctx, job)
		if job.reply != nil {
			job.reply <- bundleResult{path, err}
		} else if err != nil {
			x.ec.Logger().Error("flight: incident export failed", "reason", job.reason, "err", err)
		}
	}
	for {
		select {
		case job := <-x.bundleQ:
			write(job)
		case <-x.bundleStop:
			for {
				select {
				case job := <-x.bundleQ:
					write(job)
				default:
					return
				}
			}
		}
	}
}

// waitBundles waits until the bundles queued so far are written. It
// honours ctx.
func (x *Extension) waitBundles(ctx context.Context) error {
	x.mu.Lock()
	queued := x.started && !x.closing
	x.mu.Unlock()
	if !queued {
		return nil
	}
	job := &bundleJob{barrier: true, reply: make(chan bundleResult, 1)}
	select {
	case x.bundleQ <- job:
	case <-x.bundleDone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-job.reply:
	case <-x.bundleDone:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// Trigger exports an incident bundle now, with the events in the ring,
// the buffered spans, a fresh session snapshot and, when configured, the
// artifacts, into the recording's incidents directory. It returns the
// bundle's path. It blocks while the bundle is written, after the
// automatic bundles already queued, and honours ctx only before it
// starts. It works whatever WithTriggers says and is not rate-limited.
func (x *Extension) Trigger(ctx context.Context, reason string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if reason == "" {
		reason = "manual"
	}
	x.mu.Lock()
	installed, queued := x.ec != nil, x.started && !x.closing
	x.mu.Unlock()
	if !installed {
		return "", errors.New("flight: the extension is not installed")
	}
	job := x.capture(reason, "")
	if !queued {
		return x.build(ctx, job)
	}
	job.reply = make(chan bundleResult, 1)
	select {
	case x.bundleQ <- job:
	case <-x.bundleDone: // Teardown stopped the writer meanwhile
		return x.build(ctx, job)
	case <-ctx.Done():
		return "", ctx.Err()
	}
	select {
	case r := <-job.reply:
		return r.path, r.err
	case <-x.bundleDone:
		select {
		case r := <-job.reply:
			return r.path, r.err
		default: // queued after the writer's last look
			return x.build(ctx, job)
		}
	}
}

// build writes the bundle of job into the incidents directory, records an
// incident event and evicts the oldest bundles past the limits.
func (x *Extension) build(ctx context.Context, job *bundleJob) (path string, err error) {
	defer func() {
		if x.cfg.onIncident != nil {
			x.cfg.onIncident(path, err)
		}
	}()
	ec, dir := x.ec, x.dir
	incDir := filepath.Join(dir, recording.IncidentsDir)
	if err := os.MkdirAll(incDir, 0o700); err != nil {
		return "", fmt.Errorf("flight: incident: %w", err)
	}
	f, err := os.CreateTemp(incDir, ".incident-*.tmp")
	if err != nil {
		return "", fmt.Errorf("flight: incident: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := newBundleWriter(f, x.red)
	bw.sums = x.sums
	if x.cfg.includeArtifacts {
		x.syncParts()
		bw.IncludeParts(dir)
	}
	job.events(x.agentName, x.sessionID, bw.AddEvent)
	bw.SetInfo(job.reason, x.agentName, x.sessionID, job.dropped)
	spans, err := job.spans.decode()
	if err != nil {
		ec.Logger().Warn("flight: bundle: span records", "err", err)
	}
	if job.runID != "" {
		ids := bw.TraceIDs()
		spans = slices.DeleteFunc(spans, func(s sdktrace.ReadOnlySpan) bool { return !ids[s.SpanContext().TraceID().String()] })
	}
	req, err := otlpspans.FromSDK(ctx, spans)
	if err != nil {
		return "", err
	}
	if err := bw.SetSpans(req); err != nil {
		return "", err
	}
	bw.SetExecutionTrace(snapshotExecutionTrace(x.cfg.execTrace, MaxExecutionTraceBytes))
	if data, serr := ec.Agent().SaveSession(harness.AsSnapshot(ctx)); serr == nil {
		if err := bw.SetSession(data); err != nil {
			return "", err
		}
	} else if data, rerr := os.ReadFile(filepath.Join(dir, recording.SessionSnapshot)); rerr == nil {
		if err := bw.SetSession(data); err != nil {
			return "", err
		}
	}
	if x.cfg.includeArtifacts {
		x.artifactsDirty.Store(true)
		x.syncArtifacts(ctx)
		for _, a := range x.keptArtifacts() {
			addIndexed(bw, dir, a)
		}
	}
	if _, err := bw.Close(job.now); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("flight: incident: %w", err)
	}
	path = filepath.Join(incDir, incidentFileName(job.now, job.reason, job.runID))
	if err := os.Rename(f.Name(), path); err != nil {
		return "", fmt.Errorf("flight: incident: %w", err)
	}
	evicted := x.evictIncidents(incDir, path)
	x.incMu.Lock()
	x.incidents = slices.DeleteFunc(append(x.incidents, path), func(p string) bool { return evicted[p] })
	x.incMu.Unlock()
	x.record(&Event{Kind: KindIncident, Time: job.now, Agent: x.agentName, SessionID: x.sessionID, RunID: job.runID, Reason: job.reason, Path: path})
	return path, nil
}

// addIndexed adds an indexed artifact to a bundle: the recorder's copy
// when it kept one, else the reason it did not.
func addIndexed(bw *bundleWriter, dir string, a indexedArtifact) {
	switch {
	case a.Kept != "" && validMemberName(a.Kept):
		bw.AddArtifact(a.MemberName(), filepath.Join(dir, filepath.FromSlash(a.Kept)), a.SHA256)
	case a.Missing != "":
		bw.AddMissingArtifact(a.MemberName(), a.Missing)
	default: // an index without copies (older recorders): the original file
		bw.AddArtifact(a.MemberName(), a.Path, a.SHA256)
	}
}

// evictIncidents deletes the oldest bundles of incDir past the limits of
// WithIncidentLimits, never keep. It returns the deleted paths.
func (x *Extension) evictIncidents(incDir, keep string) map[string]bool {
	ents, err := os.ReadDir(incDir)
	if err != nil {
		return nil
	}
	type bundle struct {
		path string
		size int64
	}
	var bs []bundle // names sort by time
	var total int64
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".tar.gz") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		bs = append(bs, bundle{filepath.Join(incDir, e.Name()), fi.Size()})
		total += fi.Size()
	}
	evicted := map[string]bool{}
	for i := 0; i < len(bs) && (len(bs)-len(evicted) > x.cfg.maxIncidents || total > x.cfg.incidentBytes); i++ {
		if bs[i].path == keep {
			continue
		}
		if err := os.Remove(bs[i].path); err != nil {
			continue
		}
		evicted[bs[i].path] = true
		total -= bs[i].size
	}
	return evicted
}
