package flight

import (
	"errors"
	"log/slog"
	"time"

	"github.com/harnessx/harnessx/internal/recording"
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
	// it writes the batch. Default 5ms.
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

// readJournal reads the events of every segment of the journal in dir,
// oldest first, and calls fn for each with its line (newline included;
// valid until fn returns) and its event. An incomplete last line (the
// process died during a write) is skipped and counted as torn; lines
// that do not decode are skipped and counted as corrupt. An error from fn
// stops the read and is returned. progress, if set, is called with the
// byte count of each segment read.
func readJournal(dir string, fn func(line []byte, e *Event) error, progress func(n int64)) (ReadStats, error) {
	st, err := recording.Read(dir, eventLines(fn), progress)
	return ReadStats(st), err
}
