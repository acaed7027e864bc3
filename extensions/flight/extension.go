package flight

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/otlpjson"
	"github.com/harnessx/harnessx/internal/recording"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Name is the extension's name.
const Name = "flight"

// Priority is the extension's install priority: it installs before the
// default (100) and before the tracing extension (10), whatever order they
// are given in, so that its run interceptor is outermost and an incident
// bundle written at the end of a run holds the run's complete span tree,
// the agent span included.
const Priority = 5

// indexedArtifact is an entry of artifacts.json: an artifact of one of the
// agent's extensions.
type indexedArtifact struct {
	Extension string `json:"extension"`
	harness.Artifact
	// Kept is where the recorder's own copy is, relative to the recording
	// directory, with forward slashes (artifacts/<extension>/<name>).
	Kept string `json:"kept,omitempty"`
	// Missing says why there is no copy (the artifact limit was reached,
	// the copy failed); empty when Kept is set.
	Missing string `json:"missing,omitempty"`
}

// MemberName returns the artifact's name in a bundle, under artifacts/:
// its name, prefixed with the extension's name unless it already starts
// with it.
func (a indexedArtifact) MemberName() string {
	if strings.HasPrefix(a.Name, a.Extension+"/") {
		return a.Name
	}
	return a.Extension + "/" + a.Name
}

// Extension is the flight recorder: a harness extension that records
// every lifecycle event into a bounded in-memory ring and an on-disk
// journal, and exports incident bundles on triggers. Build it with [New]
// and install it with harness.WithExtensions; use a fresh one for each
// agent. Its methods are safe for concurrent use.
type Extension struct {
	cfg   config
	red   *Redactor
	spans *SpanProcessor

	registerOnce sync.Once
	registered   []spanProcessorRegistry // guarded by mu

	mu        sync.Mutex // guards the fields below
	ring      eventRing
	evicted   uint64
	enc       encCache // formats what consecutive events share
	seq       uint64
	journal   *recording.Journal
	jids      journalIDs // of the last journal line that carried a run ID
	openErr   error
	started   bool // the background goroutines run
	closing   bool // Teardown began: no new automatic bundle
	closed    bool
	traceRing []trace.TraceID // trace IDs of the recent runs, oldest first from traceNext when full
	traceNext int             // where the next one goes
	lastTrace trace.TraceID   // the last one noted: most events repeat it
	traceCap  int             // maxTraces; smaller in tests
	lock      *os.File        // holds the recording's lock while it is in use

	ec        *harness.ExtensionContext
	agentName string
	sessionID string
	dir       string // the recording directory

	// The snapshotter goroutine (snapshot.go).
	snapKick       chan struct{}
	snapArmed      atomic.Bool // the snapshotter's timer is set
	snapStop       chan struct{}
	snapDone       chan struct{}
	snapOnce       sync.Once
	sessionDirty   atomic.Bool
	spansDirty     atomic.Bool
	artifactsDirty atomic.Bool
	sessMu         sync.Mutex           // serializes session snapshots
	sess           sessionCache         // guarded by sessMu
	sessAt         atomic.Int64         // when the last one started, Unix ns
	turnAt         atomic.Int64         // when the last one at a turn's completion started
	sessTook       atomic.Int64         // how long the last one took, ns
	spanSeq        uint64               // snapshotter only: the last span written
	spansLogBytes  int64                // snapshotter only: the size of spans.jsonl
	spansBuf       []byte               // snapshotter only: reused by span snapshots' encoding
	spansCache     otlpjson.StringCache // span snapshots' encodings of long strings

	// Artifact copies (snapshot.go), guarded by artMu.
	artMu     sync.Mutex
	kept      map[string]*indexedArtifact // by member name
	keptOrder []string
	keptBytes int64
	artKept   atomic.Uint64
	artSkip   atomic.Uint64

	// Media parts (parts.go, partstore.go): the hot path's tracker, and
	// the part store, guarded by artMu.
	parts        partTracker
	partsDirty   atomic.Bool
	partFiles    map[[32]byte]int64 // stored parts and their sizes
	partBytes    int64
	partsScanned bool
	partKept     atomic.Uint64
	partSkip     atomic.Uint64
	partEvict    atomic.Uint64
	partFail     atomic.Uint64
	sums         *sumCache // of the session snapshots' inline bytes

	// Incident bundles (incident.go).
	bundleQ    chan *bundleJob
	bundleStop chan struct{}
	bundleDone chan struct{}
	stopOnce   sync.Once
	suppressed atomic.Uint64
	incMu      sync.Mutex // guards the fields below
	incidents  []string
	tokens     float64
	tokensAt   time.Time
}

var (
	_ harness.Extension      = (*Extension)(nil)
	_ harness.Prioritizer    = (*Extension)(nil)
	_ harness.TurnCompleter  = (*Extension)(nil)
	_ harness.TearDowner     = (*Extension)(nil)
	_ harness.RunInterceptor = (*runInterceptor)(nil)
)

// New returns a flight recorder.
func New(opts ...Option) *Extension {
	c := config{
		ringSize:       4096,
		previewBytes:   1024,
		spanCapacity:   2048,
		snapshotEvery:  time.Second,
		triggers:       map[Trigger]bool{TriggerRunFailure: true, TriggerToolPanic: true, TriggerCancellation: true},
		now:            time.Now,
		artifactBytes:  DefaultArtifactBytes,
		incidentRate:   DefaultIncidentRate,
		incidentPer:    DefaultIncidentPer,
		maxIncidents:   DefaultMaxIncidents,
		incidentBytes:  DefaultIncidentBytes,
		maxRecordings:  DefaultMaxRecordings,
		recordingBytes: DefaultRecordingBytes,
		registerSpans:  true,
	}
	for _, o := range opts {
		o(&c)
	}
	if c.dir == "" {
		c.dir = DefaultDir()
		c.dirUnasked = os.Getenv(EnvDir) == ""
	}
	c.ringSize = max(c.ringSize, 16)
	c.previewBytes = max(c.previewBytes, 64)
	if c.artifactBytes <= 0 {
		c.artifactBytes = DefaultArtifactBytes
	}
	if c.incidentPer <= 0 {
		c.incidentPer = DefaultIncidentPer
	}
	if c.maxIncidents <= 0 {
		c.maxIncidents = DefaultMaxIncidents
	}
	if c.incidentBytes <= 0 {
		c.incidentBytes = DefaultIncidentBytes
	}
	if c.maxRecordings <= 0 {
		c.maxRecordings = DefaultMaxRecordings
	}
	if c.recordingBytes <= 0 {
		c.recordingBytes = DefaultRecordingBytes
	}
	x := &Extension{
		cfg:        c,
		red:        NewRedactor(c.rules, c.redactFuncs...),
		spans:      newSpanProcessor(c.spanCapacity),
		ring:       newEventRing(c.ringSize),
		traceCap:   maxTraces,
		snapKick:   make(chan struct{}, 1),
		snapStop:   make(chan struct{}),
		snapDone:   make(chan struct{}),
		kept:       map[string]*indexedArtifact{},
		partFiles:  map[[32]byte]int64{},
		sums:       newSumCache(),
		bundleQ:    make(chan *bundleJob, bundleQueue),
		bundleStop: make(chan struct{}),
		bundleDone: make(chan struct{}),
		tokens:     float64(c.incidentRate),
	}
	x.enc = newEncCache(x.red)
	x.spans.setNotify(x.spanEnded)
	return x
}

// maxTraces bounds the trace IDs the recorder remembers for its span
// snapshot: the most recent runs' traces, the oldest forgotten first.
const maxTraces = 4096

// Name returns "flight".
func (x *Extension) Name() string { return Name }

// Priority returns [Priority].
func (x *Extension) Priority() int { return Priority }

// SpanProcessor returns the processor that keeps the recent ended spans
// for bundles. The recorder registers it on the tracing extension's
// provider by itself ([WithSpanRegistration]); register it on any other
// TracerProvider whose spans bundles should hold.
func (x *Extension) SpanProcessor() *SpanProcessor { return x.spans }

// Redactor returns the redactor applied to everything the recorder writes.
func (x *Extension) Redactor() *Redactor { return x.red }

// Dir returns the recording directory (set at Install).
func (x *Extension) Dir() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.dir
}

// Incidents returns the paths of the bundles exported so far, oldest first.
func (x *Extension) Incidents() []string {
	x.incMu.Lock()
	defer x.incMu.Unlock()
	return append([]string(nil), x.incidents...)
}

// Install subscribes the recorder to every hook event and adds its run
// interceptor. It opens no file: the journal opens with the first event.
func (x *Extension) Install(ec *harness.ExtensionContext) error {
	x.mu.Lock()
	if x.ec != nil {
		x.mu.Unlock()
		return errors.New("flight: extension already installed; use a fresh one for each agent")
	}
	x.ec = ec
	x.agentName = ec.Agent().Name()
	x.sessionID = ec.SessionID()
	x.dir = filepath.Join(x.cfg.dir, dirName(x.sessionID))
	x.mu.Unlock()
	// Only the events observe records: a subscription makes the engine
	// build the event (EventMessage, for one, comes with every message).
	for _, ev := range recordedEvents {
		if _, err := ec.OnHook(ev, x.observe); err != nil {
			return err
		}
	}
	_, err := ec.AddMiddleware(&runInterceptor{x})
	return err
}

// recordedEvents are the hook events the recorder records (see observe).
var recordedEvents = [...]harness.HookEvent{
	harness.EventRunStart, harness.EventRunEnd,
	harness.EventModelRequestStart, harness.EventModelRequestEnd,
	harness.EventToolCallStart, harness.EventToolCallEnd,
	harness.EventApprovalRequested, harness.EventError, harness.EventHookFailed,
}

// dirName turns a session ID into a safe directory name.
func dirName(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" || s == "." || s == ".." || strings.HasPrefix(s, ".") {
		s = "session" + s
	}
	if len(s) > 128 {
		s = s[:128]
	}
	return s
}

// OnTurnComplete keeps the session snapshot fresh, without making runs
// pay for it: the snapshotter writes it in the background, at most once
// per snapshot interval. Only a cheap snapshot (the last one took under
// [syncSessionBudget]) is written here, at most once per interval, so
// that the session of a small agent is on disk even when it closes right
// after the run (the agent's session cannot be read once it is closed). A
// Close less than an interval after the previous snapshot may thus leave
// the last turns of a big session out of session.json; the journal has
// their events. With [WithIncludeArtifacts], it also makes sure that the
// artifacts of the turn's tool calls are copied into the recording before
// it returns, so that a Close right after the run, which may remove them,
// loses none: usually the snapshotter copied them while the run went on,
// and this costs nothing.
func (x *Extension) OnTurnComplete(ctx context.Context, ec *harness.ExtensionContext, _ *harness.RunResult) {
	if x.cfg.includeArtifacts {
		x.syncArtifacts(context.WithoutCancel(ctx))
		x.syncParts()
	}
	if time.Duration(x.sessTook.Load()) < syncSessionBudget && x.turnSnapshotDue() {
		x.snapshotSession(context.WithoutCancel(ctx))
		return
	}
	setFlag(&x.sessionDirty)
	x.kickLater()
}

// syncSessionBudget is how long a session snapshot may take for
// OnTurnComplete to write it itself.
const syncSessionBudget = time.Millisecond

// Teardown waits for the incident bundles being written, writes the final
// span snapshot, flushes and closes the journal and stops the background
// goroutines. It is safe to call twice; ctx bounds the waits.
func (x *Extension) Teardown(ctx context.Context) error {
	x.mu.Lock()
	x.closing = true
	started := x.started
	x.mu.Unlock()
	if started {
		x.stopOnce.Do(func() { close(x.bundleStop) })
		select {
		case <-x.bundleDone:
		case <-ctx.Done():
			return ctx.Err()
		}
		x.snapOnce.Do(func() { close(x.snapStop) })
		select {
		case <-x.snapDone:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	x.mu.Lock()
	x.closed = true
	j := x.journal
	lock := x.lock
	x.lock = nil
	registered := x.registered
	x.registered = nil
	x.mu.Unlock()
	for _, reg := range registered {
		reg.UnregisterSpanProcessor(x.spans)
	}
	var err error
	if j != nil {
		err = j.Close(ctx)
	}
	if lock != nil {
		lock.Close() // releases the recording's lock
	}
	return err
}

// Flush waits for the incident bundles being written in the background,
// then writes the journal's pending events now. It returns the journal's
// write error while writes fail (disk full, file size limit), nil once
// one succeeds again, and [ErrJournalClosed] after Teardown. It honours
// ctx.
func (x *Extension) Flush(ctx context.Context) error {
	if err := x.waitBundles(ctx); err != nil {
		return err
	}
	x.mu.Lock()
	j := x.journal
	x.mu.Unlock()
	if j == nil {
		return nil
	}
	err := j.Flush(ctx)
	if errors.Is(err, recording.ErrClosed) {
		return ErrJournalClosed
	}
	return err
}

// Stats reports the recorder's counters.
type Stats struct {
	Events  uint64 // events recorded
	Evicted uint64 // events pushed out of the full ring
	Dropped uint64 // events the journal could not take (closed, or too many waiting)
	// Lost counts events the journal took but could not write (disk full,
	// file size limit, I/O error); they are not in Dropped. The ring
	// still holds the recent ones.
	Lost uint64
	// IncidentsSuppressed counts automatic triggers that wrote no bundle:
	// over the rate of [WithIncidentRate], or too many bundles waiting.
	IncidentsSuppressed uint64
	// ArtifactsKept counts the artifact copies made into the recording;
	// ArtifactsSkipped those not made because of [WithArtifactLimit].
	ArtifactsKept    uint64
	ArtifactsSkipped uint64
	// PartsKept counts the media parts whose bytes were stored in the
	// recording (each once); PartsSkipped those not stored (larger than
	// what the artifact limit leaves, or a failed write); PartsEvicted
	// those deleted to make room for newer ones.
	PartsKept    uint64
	PartsSkipped uint64
	PartsEvicted uint64
}

// Stats returns the recorder's counters.
func (x *Extension) Stats() Stats {
	x.mu.Lock()
	s := Stats{Events: x.seq, Evicted: x.evicted}
	j := x.journal
	x.mu.Unlock()
	if j != nil {
		s.Dropped, s.Lost = j.Dropped(), j.Lost()
	}
	s.IncidentsSuppressed = x.suppressed.Load()
	s.ArtifactsKept, s.ArtifactsSkipped = x.artKept.Load(), x.artSkip.Load()
	s.PartsKept, s.PartsSkipped, s.PartsEvicted = x.partKept.Load(), x.partSkip.Load(), x.partEvict.Load()
	return s
}

// observe records one lifecycle event; it is the harness.Hook the
// extension subscribes to every event. It never fails and never blocks on
// the disk; it is safe for concurrent use.
func (x *Extension) observe(ctx context.Context, ev *harness.Event) error {
	var e Event
	e.Time = ev.Time
	e.Agent, e.SessionID, e.RunID, e.Step = ev.Agent, ev.SessionID, ev.RunID, ev.Step
	sc := trace.SpanContextFromContext(ctx)
	e.setSpan(sc)
	switch ev.Type {
	case harness.EventRunStart:
		if ev.Recovered {
			// A recovery is a fact of its own, recorded before the run's
			// start so that a timeline reads "recovered, attempt n".
			re := e
			re.Kind, re.Attempt = KindRecovered, ev.Attempt
			x.record(&re)
			e.Attempt = ev.Attempt
		}
		e.Kind = KindRunStart
		logTraceID(ctx, sc)
		x.setText(&e, ev.Input)
		setFlag(&x.sessionDirty)
	case harness.EventRunEnd:
		e.Kind = KindRunEnd
		if r := ev.Result; r != nil {
			e.Status = string(r.Status)
			setUsage(&e, r.Usage)
			x.setText(&e, r.Text)
		}
		x.setErr(&e, ev.Err)
		x.record(&e)
		x.recordExtensionError(ev, ev.Err)
		return nil
	case harness.EventModelRequestStart:
		e.Kind = KindModelRequest
		if r := ev.Request; r != nil {
			e.Model, e.Messages = r.Model, len(r.Messages)
			if !r.PrefixKey.Key.IsZero() {
				e.prefix, e.hasPrefix = r.PrefixKey.Key, true
			}
			for i := range r.Messages {
				x.noteParts(&e, ev.RunID, false, r.Messages[i].Content)
			}
		}
	case harness.EventModelRequestEnd:
		e.Kind = KindModelResponse
		e.Duration = ev.Duration
		if r := ev.Request; r != nil {
			e.Model = r.Model
		}
		if r := ev.Response; r != nil {
			if r.Model != "" {
				e.Model = r.Model
			}
			e.Provider, e.ResponseID, e.StopReason = r.Provider, r.ID, string(r.StopReason)
			setUsage(&e, r.Usage)
			x.noteParts(&e, ev.RunID, true, r.Message.Content)
		}
		x.setErr(&e, ev.Err)
		setFlag(&x.sessionDirty)
	case harness.EventToolCallStart:
		e.Kind = KindToolCall
		if c := ev.ToolCall; c != nil {
			e.Tool, e.CallID = c.Name, c.ID
			x.setText(&e, bytesView(c.Input))
		}
	case harness.EventToolCallEnd:
		e.Kind = KindToolResult
		e.Duration = ev.Duration
		if c := ev.ToolCall; c != nil {
			e.Tool, e.CallID = c.Name, c.ID
		}
		r := ev.ToolResult
		if r != nil {
			e.Status = string(r.Status)
			x.setText(&e, r.Content)
			x.noteParts(&e, ev.RunID, true, r.Parts)
		}
		setFlag(&x.sessionDirty)
		x.record(&e)
		if x.cfg.includeArtifacts {
			setFlag(&x.artifactsDirty)
			x.kickSnapshot()
		}
		return nil
	case harness.EventApprovalRequested:
		e.Kind = KindApproval
		if c := ev.ToolCall; c != nil {
			e.Tool, e.CallID = c.Name, c.ID
		}
		if a := ev.Approval; a != nil {
			x.setText(&e, a.Reason)
		}
	case harness.EventError:
		e.Kind = KindError
		x.setErr(&e, ev.Err)
		x.record(&e)
		x.recordExtensionError(ev, ev.Err)
		return nil
	case harness.EventHookFailed:
		e.Kind = KindHookFailed
		e.FailedEvent = ev.FailedEvent.String()
		x.setErr(&e, ev.Err)
	default:
		return nil
	}
	x.record(&e)
	if len(e.Parts) > 0 && x.partsDirty.Load() {
		x.kickSnapshot()
	}
	return nil
}

// recordExtensionError records an extension failure found in err, once
// per run: at the error event, or at run end when no error event came.
func (x *Extension) recordExtensionError(ev *harness.Event, err error) {
	if err == nil {
		return // before xe, which escapes: no allocation for a run without error
	}
	x.recordExtensionErrorOf(ev, err)
}

func (x *Extension) recordExtensionErrorOf(ev *harness.Event, err error) {
	var xe *harness.ExtensionError
	if !errors.As(err, &xe) {
		return
	}
	if ev.Type == harness.EventRunEnd && x.sawExtensionError(ev.RunID) {
		return
	}
	e := Event{Kind: KindExtensionError, Time: ev.Time, Agent: ev.Agent, SessionID: ev.SessionID, RunID: ev.RunID, Step: ev.Step,
		Extension: xe.Extension, Op: xe.Op}
	x.setErr(&e, xe.Err)
	x.record(&e)
}

// sawExtensionError reports whether the ring holds an extension_error
// event of runID.
func (x *Extension) sawExtensionError(runID string) bool {
	found := false
	x.eachRingRun(func(line, run []byte) bool {
		if string(run) == runID {
			e, err := ParseEvent(line)
			found = err == nil && e.Kind == KindExtensionError
		}
		return !found
	})
	return found
}

func setUsage(e *Event, u harness.Usage) {
	e.InputTokens, e.OutputTokens = u.InputTokens, u.OutputTokens
	e.CacheReadTokens, e.CacheCreationTokens, e.ReasoningTokens = u.CacheReadInputTokens, u.CacheCreationInputTokens, u.ReasoningTokens
}

func (x *Extension) setErr(e *Event, err error) {
	if err == nil {
		return
	}
	e.Error = err.Error()
	e.ErrorType = fmt.Sprintf("%T", err)
}

// setText keeps a preview of s. A cut preview also loses its last partial
// word, so that no fragment of a secret cut in two survives redaction.
func (x *Extension) setText(e *Event, s string) {
	e.Size = len(s)
	t, cut := cutText(s, x.cfg.previewBytes)
	if cut {
		i := len(t)
		for i > 0 && len(t)-i < 128 && isWordByte(t[i-1]) {
			i--
		}
		t = t[:i]
	}
	e.Text, e.Truncated = t, cut
	if !cut {
		e.Size = 0
	}
}

func isWordByte(c byte) bool {
	return c >= 0x80 || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("-_+/=.~", c) >= 0
}

// bytesView returns b as a string without copying. The string must not be
// kept after b changes; the recorder copies it into its buffers at once.
func bytesView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// record encodes e (redacted) into the ring and the journal, then,
// outside the lock, gives the journal's writer the processor if its batch
// is late (recording.Journal.Yield): on a processor the agent keeps busy,
// the writer would otherwise wait for the scheduler to preempt the agent.
func (x *Extension) record(e *Event) {
	if j := x.recordLocked(e); j != nil {
		j.Yield()
	}
}

// recordLocked records e under x.mu and returns the journal it went to,
// nil when none.
func (x *Extension) recordLocked(e *Event) *recording.Journal {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	if !x.started {
		x.startLocked()
	}
	x.seq++
	e.Seq = x.seq
	if e.tid.IsValid() {
		x.noteTraceLocked(e.tid)
	}
	form, carrier, failures := x.lineFormLocked(e)
	x.enc.form = form
	line, evicted := x.ring.add(carrier, func(dst []byte) []byte { return appendEventBin(dst, e, x.red, &x.enc) })
	if evicted {
		x.evicted++
	}
	x.journalLocked(line, e, carrier, failures)
	return x.journal
}

// noteTraceLocked remembers id among the recent traces, forgetting the
// oldest past traceCap. Events come run after run, each run's with its
// trace: a trace already among the latest recentTraceDepth is not added
// again, one seen longer ago is (it then takes two places in the ring).
// A ring without a set keeps a new trace at the cost of a few
// comparisons; the snapshotter makes the set it filters with.
func (x *Extension) noteTraceLocked(id trace.TraceID) {
	if id == x.lastTrace {
		return
	}
	x.lastTrace = id
	n := len(x.traceRing)
	for k := 1; k <= recentTraceDepth && k <= n; k++ {
		if x.traceRing[(x.traceNext-k+n)%n] == id {
			return
		}
	}
	if n < x.traceCap {
		x.traceRing = append(x.traceRing, id)
		x.traceNext = len(x.traceRing) % x.traceCap
	} else {
		x.traceRing[x.traceNext] = id
		x.traceNext = (x.traceNext + 1) % x.traceCap
	}
}

// recentTraceDepth is how many of the latest traces noteTraceLocked
// compares a trace with.
const recentTraceDepth = 8

// startLocked opens the journal and starts the snapshotter and the bundle
// writer, at the first event.
func (x *Extension) startLocked() {
	x.started = true
	x.openLocked()
	go x.snapshotter()
	go x.bundler()
}

// openLocked creates the recording directory, takes its lock and opens
// the journal.
func (x *Extension) openLocked() {
	info := recording.Info{Format: "harnessx-flight-recording", Version: 2, Agent: x.agentName, SessionID: x.sessionID,
		Created: x.cfg.now().UTC(), PID: os.Getpid()}
	if err := os.MkdirAll(x.dir, 0o700); err != nil {
		x.fail(err)
		return
	}
	if l, err := lockRecording(x.dir); err == nil {
		x.lock = l
	} else if x.ec != nil {
		x.ec.Logger().Warn("flight: cannot lock the recording; another process may evict it", "dir", x.dir, "err", err)
	}
	p := filepath.Join(x.dir, recording.InfoName)
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		data, _ := json.MarshalIndent(info, "", "  ")
		if err := writeFileAtomic(p, data); err != nil {
			x.fail(err)
			return
		}
	}
	opts := x.cfg.journal
	if opts.Logger == nil && x.ec != nil {
		opts.Logger = x.ec.Logger()
	}
	j, err := recording.Open(x.dir, recording.Options(opts))
	if err != nil {
		x.fail(err)
		return
	}
	x.journal = j
	if x.ec != nil {
		// Say where the recording goes, so that a directory appearing in
		// the working directory is never a surprise: at Info level when
		// nobody chose the directory, at Debug level when someone did.
		root := x.cfg.dir
		level := slog.LevelDebug
		if x.cfg.dirUnasked {
			level = slog.LevelInfo
		}
		x.ec.Logger().Log(context.Background(), level, "flight: recording the agent's events", "dir", x.dir,
			"view", "flightrec list --dir "+root+"; flightrec ui --dir "+root)
	}
}

func (x *Extension) fail(err error) {
	x.openErr = err
	if x.ec != nil {
		x.ec.Logger().Error("flight: cannot open the journal; recording in memory only", "dir", x.dir, "err", err)
	}
}

// Events returns the events in the ring, oldest first, whole: with the
// fields their lines leave out put back (see lineForm).
func (x *Extension) Events() []Event {
	var out []Event
	x.mu.Lock()
	defer x.mu.Unlock()
	r := x.ringReaderLocked()
	x.ring.each(func(line []byte) bool {
		if e, err := ParseEvent(line); err == nil {
			r.resolve(&e)
			out = append(out, e)
		}
		return true
	})
	return out
}

func (x *Extension) spanEnded() {
	setFlag(&x.spansDirty)
	x.kickLater()
}

// setFlag sets f, and does not store when f is set already: on amd64 an
// atomic store is a locked instruction, a full barrier, and a load is a
// plain one. The flags are set at most events and spans, and cleared at
// most once a snapshot interval. A set that the load misses (f seen set
// just as the snapshotter clears it) is not lost: the snapshotter clears a
// flag before it reads what the flag stands for.
func setFlag(f *atomic.Bool) {
	if !f.Load() {
		f.Store(true)
	}
}

// writeFileAtomic writes data to a temporary file (mode 0600) and renames
// it to p.
func writeFileAtomic(p string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// runInterceptor triggers incident exports when a run ends failed or
// cancelled, or a tool panics. Installed before the default priority, it
// runs outside the tracing extension's interceptors and sees their spans
// ended.
type runInterceptor struct{ x *Extension }

func (ri *runInterceptor) InterceptRun(ctx context.Context, info *harness.RunInfo, next harness.RunFunc) *harness.RunResult {
	ri.x.registerOnce.Do(ri.x.registerSpans)
	ctx, task := startRunTask(ctx, info)
	res := next(ctx)
	endTask(task)
	if res == nil {
		return res
	}
	x := ri.x
	switch {
	case res.Status == harness.StatusFailed && x.cfg.triggers[TriggerRunFailure]:
		x.autoTrigger(string(TriggerRunFailure), res.RunID)
	case res.Status == harness.StatusCancelled && x.cfg.triggers[TriggerCancellation]:
		x.autoTrigger(string(TriggerCancellation), res.RunID)
	}
	return res
}

// InterceptTool triggers an incident export when the tool panicked, after
// the call's inner interceptors (the tracing extension's span) finished.
func (ri *runInterceptor) InterceptTool(ctx context.Context, call *harness.ToolCall, next harness.ToolFunc) *harness.ToolResult {
	region := startToolRegion(ctx, call.Name)
	r := next(ctx, call)
	endRegion(region)
	if r != nil && r.Status == harness.ToolPanicked && ri.x.cfg.triggers[TriggerToolPanic] {
		ri.x.autoTrigger(string(TriggerToolPanic), runIDOf(ri.x, call.ID))
	}
	return r
}

// tracerProviderSource is what the tracing extension offers other
// extensions: the provider its spans come from.
type tracerProviderSource interface {
	TracerProvider() trace.TracerProvider
}

// spanProcessorRegistry is an OpenTelemetry SDK provider
// (*sdktrace.TracerProvider, or exporters.Provider which wraps one).
type spanProcessorRegistry interface {
	RegisterSpanProcessor(sdktrace.SpanProcessor)
	UnregisterSpanProcessor(sdktrace.SpanProcessor)
}

// registerSpans registers the recorder's span processor on the provider
// of the agent's tracing extension, once, before the first run starts
// its spans, so that bundles hold the spans with nothing else to wire.
// A provider that is not an SDK provider is left alone (with one debug
// line): its spans cannot be read back.
func (x *Extension) registerSpans() {
	x.mu.Lock()
	ec := x.ec
	x.mu.Unlock()
	if ec == nil || !x.cfg.registerSpans {
		return
	}
	for _, ext := range ec.Agent().Extensions() {
		src, ok := ext.(tracerProviderSource)
		if !ok {
			continue
		}
		tp := src.TracerProvider()
		reg, ok := tp.(spanProcessorRegistry)
		if !ok {
			if tp != nil {
				ec.Logger().Debug("flight: the tracing provider is not an OpenTelemetry SDK provider; bundles get no spans unless Extension.SpanProcessor() is registered on it",
					"extension", ext.Name(), "provider", fmt.Sprintf("%T", tp))
			}
			continue
		}
		reg.RegisterSpanProcessor(x.spans)
		x.mu.Lock()
		x.registered = append(x.registered, reg)
		x.mu.Unlock()
	}
}

// runIDOf finds the run of a tool call in the ring.
func runIDOf(x *Extension, callID string) string {
	var run string
	// A line holds the call ID's bytes as they are unless some need
	// escaping (see appendBinBytes).
	plain := !strings.ContainsAny(callID, "\n\r\x1b")
	x.eachRingRun(func(line, lineRun []byte) bool {
		if lineRun != nil && (!plain || bytes.Contains(line, []byte(callID))) {
			if e, err := ParseEvent(line); err == nil && e.CallID == callID {
				run = string(lineRun)
			}
		}
		return true
	})
	return run
}

// incidentFileName returns the file name of a bundle written at t for
// reason and run: names sort by time.
func incidentFileName(t time.Time, reason, runID string) string {
	name := t.UTC().Format("20060102T150405.000000000Z") + "-" + dirName(reason)
	if runID != "" {
		name += "-" + dirName(runID[:min(len(runID), 12)])
	}
	return name + ".tar.gz"
}
