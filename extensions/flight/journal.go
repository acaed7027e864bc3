package flight

import (
	"errors"
	"log/slog"
	"time"

	"github.com/harnessx/harnessx/internal/recording"
	"go.opentelemetry.io/otel/trace"
)

// JournalOptions configures the recorder's journal (see [WithJournalOptions]).
// The zero value means the defaults.
type JournalOptions struct {
	// SegmentBytes caps one segment file. Default 8 MiB. A line longer
	// than the cap gets a segment of its own. Each segment is a file
	// created and later deleted: where creating a file is dear (ext4
	// without a journal passes over every inode freed in the last
	// seconds; a create then takes up to a millisecond beside thousands
	// of files), larger segments make an event cheaper.
	SegmentBytes int64
	// MaxBytes caps all segments together: past it, the oldest segments
	// are deleted. Default 64 MiB.
	MaxBytes int64
	// FlushInterval is how long the writer waits after an append before
	// it writes the batch (while events keep coming, an interval after
	// its last write). Default 2ms.
	FlushInterval time.Duration
	// MaxPending bounds the bytes waiting for the writer; an event that
	// would exceed it is dropped and counted ([Stats].Dropped). Default
	// 8 MiB.
	MaxPending int
	// AfterWrite, if set, is called by the writer goroutine after each
	// batch is written and once more at Close. It delays the next batch:
	// keep it short.
	AfterWrite func()
	// Logger, if set, receives an error when writes start failing (at
	// most once a minute) and a note when they work again. Default the
	// agent's logger.
	Logger *slog.Logger
}

// ReadStats counts what reading a journal found.
type ReadStats struct {
	Segments int   // segment files read
	Events   int   // events decoded
	Torn     int   // incomplete last lines (a crash during a write)
	Corrupt  int   // lines that are not events, skipped
	Bytes    int64 // bytes read
}

// ErrJournalClosed is returned by [Extension.Flush] once the journal is
// closed.
var ErrJournalClosed = errors.New("flight: journal is closed")

// eventLines adapts fn to the journal reader: lines that are not events
// are counted as corrupt, the others decoded and given to fn.
func eventLines(fn func(line []byte, e *Event) error) func([]byte) (bool, error) {
	return func(line []byte) (bool, error) {
		e, err := ParseEvent(line)
		if err != nil {
			return false, nil
		}
		return true, fn(line, &e)
	}
}

// ReadJournal reads the events of the journal of the recording in dir,
// oldest first, and calls fn with each, whole: a journal line leaves out
// what the recording or an earlier line already says (the agent and
// session ID of recording.json, the run ID and trace ID of the line its
// Ref names), and ReadJournal puts it back. An event whose Ref names a
// line that is gone (a lost write, a deleted segment) keeps its Ref and
// has no run or trace ID. An incomplete last line (the process died
// during a write) is skipped and counted as torn; lines that do not
// decode are skipped and counted as corrupt. An error from fn stops the
// read and is returned. progress, if set, is called with the byte count
// of each segment read. fn must not keep e.
func ReadJournal(dir string, fn func(e *Event) error, progress func(n int64)) (ReadStats, error) {
	agent, session := agentSession(dir)
	return readJournal(dir, agent, session, fn, progress)
}

// agentSession returns the agent and session ID of the recording in dir
// (from recording.json; empty when it cannot be read).
func agentSession(dir string) (agent, session string) {
	if info, err := recording.ReadInfo(dir); err == nil {
		return info.Agent, info.SessionID
	}
	return "", ""
}

// readJournal is ReadJournal for a caller that has read the recording's
// agent and session ID already.
func readJournal(dir, agent, session string, fn func(e *Event) error, progress func(n int64)) (ReadStats, error) {
	r := journalReader{agent: agent, session: session}
	st, err := recording.Read(dir, eventLines(func(_ []byte, e *Event) error {
		r.resolve(e)
		return fn(e)
	}), progress)
	return ReadStats(st), err
}

// journalRefWindow bounds how far back, in lines, a journal line's Ref
// reaches: past it the recorder writes the run ID and trace ID again, so
// that a reader of a journal whose oldest segments were deleted resolves
// all but the first few lines of what is left.
const journalRefWindow = 64

// journalIDs is the run ID and trace ID of a journal line that carries
// them.
type journalIDs struct {
	seq      uint64 // the line's; 0: none
	runID    string
	tid      trace.TraceID // the raw trace ID the line was encoded from
	traceID  string        // the trace ID as text (Event.TraceID)
	failures uint64        // the journal's Failures when the line was queued
}

// lineFormLocked returns what the line of e leaves out (see lineForm),
// whether the line carries a run ID, and the journal's Failures it
// decided on. A line leaves out the agent and session ID when they are
// the recording's, and the run ID and trace ID when the last line that
// carried them carried the same ones, not more than journalRefWindow
// lines back, the journal took that line and no journal write failed
// since: it names that line by Ref instead. Lines are about 40% shorter
// so: fewer bytes to keep and to write, and more events within the
// journal's caps.
func (x *Extension) lineFormLocked(e *Event) (form lineForm, carrier bool, failures uint64) {
	form.bare = e.Agent == x.agentName && e.SessionID == x.sessionID
	if e.RunID == "" {
		return form, false, 0
	}
	if x.journal != nil {
		failures = x.journal.Failures()
	}
	if last := &x.jids; last.seq != 0 && e.RunID == last.runID && e.tid == last.tid && e.TraceID == last.traceID &&
		e.Seq-last.seq < journalRefWindow && failures == last.failures {
		form.ref = last.seq
		return form, false, failures
	}
	return form, true, failures
}

// journalLocked queues line, the line of e, into the journal (if open)
// and, when the line carries a run ID, notes it as the line later ones
// may name: only when the journal took it, so that no journal line names
// a line that is not in the journal.
func (x *Extension) journalLocked(line []byte, e *Event, carrier bool, failures uint64) {
	took := x.journal == nil || x.journal.Append(line)
	switch {
	case carrier && took:
		x.jids = journalIDs{seq: e.Seq, runID: e.RunID, tid: e.tid, traceID: e.TraceID, failures: failures}
	case carrier:
		x.jids.seq = 0 // dropped: no line may name it
	}
}

// journalReader puts back what journal lines leave out (see ReadJournal).
type journalReader struct {
	agent, session string     // the recording's
	last           journalIDs // of the last line that carried a run ID, read
	prev           uint64     // the last line's seq
}

// resolve completes e, the event of the next journal line.
func (r *journalReader) resolve(e *Event) {
	if e.Seq <= r.prev {
		// A new process numbers its lines from 1 again: no line of the
		// one before names its lines, nor the reverse.
		r.last = journalIDs{}
	}
	r.prev = e.Seq
	if e.Agent == "" {
		e.Agent = r.agent
	}
	if e.SessionID == "" {
		e.SessionID = r.session
	}
	switch {
	case e.Ref != 0:
		if e.Ref == r.last.seq && e.RunID == "" && e.TraceID == "" {
			e.RunID, e.TraceID, e.Ref = r.last.runID, r.last.traceID, 0
		}
	case e.RunID != "":
		r.last = journalIDs{seq: e.Seq, runID: e.RunID, traceID: e.TraceID}
	}
}
