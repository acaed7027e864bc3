package recording

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configures a [Journal]. The zero value means the defaults. It
// has the fields of flight.JournalOptions, which converts to it.
type Options struct {
	// SegmentBytes caps one segment file. Default 8 MiB. A line longer
	// than the cap gets a segment of its own.
	SegmentBytes int64
	// MaxBytes caps all segments together: past it, the oldest segments
	// are deleted. Default 64 MiB.
	MaxBytes int64
	// FlushInterval is how long the writer waits after an append before
	// it writes the batch (while lines keep coming, an interval after its
	// last write). Default 2ms.
	FlushInterval time.Duration
	// MaxPending bounds the bytes waiting for the writer; an append that
	// would exceed it is dropped and counted. Default 8 MiB.
	MaxPending int
	// AfterWrite, if set, is called by the writer goroutine after each
	// batch is written and once more at Close. It delays the next batch:
	// keep it short.
	AfterWrite func()
	// Logger, if set, receives an error when writes start failing (at
	// most once per [WriteErrorLogInterval]) and a note when they work
	// again.
	Logger *slog.Logger
}

// WriteErrorLogInterval is the least time between two error logs of a
// journal whose writes keep failing.
const WriteErrorLogInterval = time.Minute

func (o *Options) defaults() {
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = 8 << 20
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 64 << 20
	}
	if o.MaxBytes < o.SegmentBytes {
		o.MaxBytes = o.SegmentBytes
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 2 * time.Millisecond
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 8 << 20
	}
}

// segmentPrefix and segmentSuffix frame segment file names:
// seg-00000001.events, seg-00000002.events, … in write order. Segments
// written before the journal's lines could be binary (flight's journal
// format 2) end in legacySuffix; they are read, and deleted past the cap,
// as the others are.
const (
	segmentPrefix = "seg-"
	segmentSuffix = ".events"
	legacySuffix  = ".jsonl"
)

// SegmentName returns the file name of segment n. Names sort in write
// order.
func SegmentName(n int) string { return fmt.Sprintf("%s%08d%s", segmentPrefix, n, segmentSuffix) }

// Journal is an append-only journal of lines in size-capped segment
// files in one directory: each line is one record, which the caller
// encodes (flight: an event, as a binary line or, in older recordings,
// JSON) and which holds no newline before its end. Appends copy into a
// memory batch and never wait for the disk; a writer goroutine writes
// each batch with one write(2) per segment, FlushInterval after the
// first append (while lines keep coming, an interval after the last
// write), so a killed process loses at most the last batch. An appender
// that keeps its processor busy calls [Journal.Yield] so that the writer
// gets its turn. Its methods are safe for concurrent use.
//
// A write that fails (disk full, file size limit, I/O error) loses the
// rest of its batch: the lines are counted ([Journal.Lost]), the error is
// logged (see [Options.Logger]) and returned by Flush and Close
// until a later write succeeds. A line cut by a short write is truncated
// away (or, when that fails too, ended with a newline so that readers skip
// it as corrupt), so later lines parse. Writing resumes by itself as soon
// as the disk takes data again.
type Journal struct {
	dir  string
	opts Options

	mu           sync.Mutex
	buf          []byte // pending lines
	closed       bool
	dropped      uint64
	lost         uint64        // lines lost to write errors
	werr         error         // error of the last write, nil once one succeeds
	overdue      time.Duration // 4 × FlushInterval
	pendingSince time.Time     // when buf became non-empty
	pendingLines int           // the lines appended to buf since
	lateSeen     bool          // the batch in buf was found late (see Yield)
	failures     atomic.Uint64 // writes that failed (see Failures)
	yieldDue     atomic.Bool   // Yield has a late batch to give way to

	kick  chan struct{}   // an append made buf non-empty
	flush chan chan error // explicit flush requests
	stop  chan struct{}
	done  chan struct{}

	// wmu serializes writes: the writer goroutine's, or an appender's
	// when the writer is late. It guards the fields below.
	wmu     sync.Mutex
	stopped bool
	spare   []byte
	f       *os.File
	segN    int
	segSize int64
	segs    []segment // oldest first, the current one included
	torn    bool      // the current segment ends with a cut line
	failing bool      // the last write failed
	lastLog time.Time // of the last error log
	lostLog uint64    // lines lost since writing last worked
}

type segment struct {
	n    int
	name string
	size int64
}

// ErrClosed is returned by Flush on a closed journal (flight's
// Extension.Flush returns flight.ErrJournalClosed for it).
var ErrClosed = errors.New("flight: journal is closed")

// Open opens (creating it if needed) the journal in dir and starts
// its writer goroutine; Close stops it. Existing segments are kept and new
// lines go to a new segment after them.
func Open(dir string, opts Options) (*Journal, error) {
	opts.defaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("flight: journal: %w", err)
	}
	j := &Journal{
		dir:   dir,
		opts:  opts,
		buf:   make([]byte, 0, 256<<10),
		spare: make([]byte, 0, 256<<10),
		kick:  make(chan struct{}, 1),
		flush: make(chan chan error),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	j.overdue = 4 * opts.FlushInterval
	names, err := Segments(dir)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		n, _ := segmentNumber(name)
		var size int64
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
			size = fi.Size()
		}
		j.segs = append(j.segs, segment{n: n, name: name, size: size})
		j.segN = max(j.segN, n)
	}
	go j.writer()
	return j, nil
}

// overdueEvery is how many lines Append queues between two checks that
// the writer is late: a clock read at every line would cost more than
// the rest of Append.
const overdueEvery = 8

// Dir returns the journal's directory.
func (j *Journal) Dir() string { return j.dir }

// Append queues line, which must be one complete line ending in a
// newline. It copies line and does not wait for the disk: the writer
// goroutine writes the batch. Only when that goroutine is late (the
// batch waits for more than four FlushIntervals, as when the process is
// starved of CPU) and not writing does Append write the batch itself, one
// write(2), so that what a crash can lose stays bounded. It reads the
// clock for that at every overdueEvery-th line of a batch, not at each. It reports false
// when the line was dropped: the journal is closed or MaxPending bytes
// are already waiting.
func (j *Journal) Append(line []byte) bool { return j.AppendParts(line) }

// AppendParts is Append of the line that parts make one after the other:
// a line assembled from pieces of others is copied once.
func (j *Journal) AppendParts(parts ...[]byte) bool {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	j.mu.Lock()
	if j.closed || len(j.buf)+n > j.opts.MaxPending {
		j.dropped++
		j.mu.Unlock()
		return false
	}
	first := len(j.buf) == 0
	overdue := false
	if first {
		j.pendingSince, j.pendingLines, j.lateSeen = time.Now(), 0, false
	} else if j.pendingLines++; j.pendingLines%overdueEvery == 0 {
		age := time.Since(j.pendingSince)
		overdue = age > j.overdue
		if !j.lateSeen && age > j.opts.FlushInterval {
			j.lateSeen = true
			j.yieldDue.Store(true)
		}
	}
	for _, p := range parts {
		j.buf = append(j.buf, p...)
	}
	j.mu.Unlock()
	if first {
		select {
		case j.kick <- struct{}{}:
		default:
		}
	}
	if overdue && j.wmu.TryLock() {
		// The writer goroutine is late (starved of CPU): write the batch
		// here, so that a crash cannot lose more.
		if !j.stopped {
			j.writePending()
		}
		j.wmu.Unlock()
	}
	return true
}

// Yield gives up the processor once when an append found the pending
// batch older than FlushInterval (once a batch), so that the writer
// goroutine writes it; otherwise it returns at once. Call it after
// appending, holding no lock.
//
// On a processor that the appending goroutine keeps busy (GOMAXPROCS=1,
// or every processor taken) and that never blocks, the writer's timer
// fires but the writer runs only when the scheduler preempts that
// goroutine, every 10 ms or so: batches wait for that instead of their
// interval, and so does the garbage collector's background worker, whose
// marks then run on with the write barrier on while the pacer starts the
// next one earlier (docs/benchmarking.md, "The collector's turn"). Where
// the writer has a processor of its own it writes on time and Yield does
// nothing.
func (j *Journal) Yield() {
	if j.yieldDue.Load() && j.yieldDue.CompareAndSwap(true, false) {
		runtime.Gosched()
	}
}

// Dropped returns how many lines were dropped because the journal was
// closed or too many bytes were waiting.
func (j *Journal) Dropped() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.dropped
}

// Failures returns how many writes failed and lost lines since Open. A
// caller whose lines refer to earlier ones (flight's journal lines name
// an earlier line's run) watches it: a line accepted before a failure may
// not be on disk.
func (j *Journal) Failures() uint64 { return j.failures.Load() }

// Lost returns how many lines were accepted but could not be written
// (disk full, file size limit, I/O error). They are not counted in
// Dropped.
func (j *Journal) Lost() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.lost
}

// Kick asks the writer to run AfterWrite soon even if nothing was
// appended. It never blocks.
func (j *Journal) Kick() {
	select {
	case j.kick <- struct{}{}:
	default:
	}
}

// Flush writes the pending lines now and waits for them to be written. It
// returns the write error when the last write failed (this batch's or an
// earlier one's), nil once a write succeeds again. It honours ctx.
func (j *Journal) Flush(ctx context.Context) error {
	ch := make(chan error, 1)
	select {
	case j.flush <- ch:
	case <-j.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes the pending lines, closes the current segment and stops
// the writer goroutine. It returns the write error when the last write
// failed. It is safe to call twice; ctx bounds the wait.
func (j *Journal) Close(ctx context.Context) error {
	j.mu.Lock()
	if !j.closed {
		j.closed = true
		close(j.stop)
	}
	j.mu.Unlock()
	select {
	case <-j.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.werr
}

func (j *Journal) writer() {
	defer close(j.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed, kicked := false, false
	for {
		select {
		case <-j.kick:
			kicked = true
			if !armed {
				timer.Reset(j.opts.FlushInterval)
				armed = true
			}
		case <-timer.C:
			armed = false
			if !kicked && !j.pending() {
				continue // re-armed after a write, and nothing came since
			}
			kicked = false
			if wrote, _ := j.writeBatch(); wrote {
				// Due again an interval after this write, whether or
				// not this goroutine gets to run when the next batch
				// starts: an appender that finds that batch late
				// yields (see Yield) after the timer has fired.
				timer.Reset(j.opts.FlushInterval)
				armed = true
			}
		case ch := <-j.flush:
			_, err := j.writeBatch()
			ch <- err
		case <-j.stop:
			timer.Stop()
			j.writeBatch()
			j.wmu.Lock()
			j.stopped = true
			if j.f != nil {
				if err := j.f.Close(); err != nil {
					j.setErr(err)
				}
				j.f = nil
			}
			j.wmu.Unlock()
			return
		}
	}
}

// pending reports whether lines wait to be written.
func (j *Journal) pending() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.buf) > 0
}

func (j *Journal) setErr(err error) {
	j.mu.Lock()
	j.werr = fmt.Errorf("flight: journal: %w", err)
	j.mu.Unlock()
}

// writeBatch writes the pending lines, then calls AfterWrite. Writer
// goroutine only. It returns the journal's write error state after the
// write.
func (j *Journal) writeBatch() (wrote bool, err error) {
	j.wmu.Lock()
	wrote = j.writePending()
	j.wmu.Unlock()
	if j.opts.AfterWrite != nil {
		j.opts.AfterWrite()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return wrote, j.werr
}

// writePending swaps the pending buffer and writes it, and reports
// whether it held lines. wmu must be held.
func (j *Journal) writePending() bool {
	j.mu.Lock()
	batch := j.buf
	j.buf = j.spare[:0]
	j.yieldDue.Store(false) // the batch is taken: nothing to yield to
	j.mu.Unlock()
	if len(batch) > 0 {
		written, err := j.write(batch)
		if err != nil {
			j.failed(err, bytes.Count(batch[written:], []byte{'\n'}))
		} else {
			j.recovered()
		}
	}
	j.spare = batch[:0]
	return len(batch) > 0
}

// failed records a failed write that lost n lines. wmu must be held.
func (j *Journal) failed(err error, n int) {
	j.mu.Lock()
	j.werr = fmt.Errorf("flight: journal: %w", err)
	j.lost += uint64(n)
	j.mu.Unlock()
	j.failing = true
	j.failures.Add(1)
	j.lostLog += uint64(n)
	if l := j.opts.Logger; l != nil && (j.lastLog.IsZero() || time.Since(j.lastLog) >= WriteErrorLogInterval) {
		j.lastLog = time.Now()
		l.Error("flight: journal write failed; events are being lost until the disk takes data again",
			"dir", j.dir, "lost", j.lostLog, "err", err)
	}
}

// recovered records a successful write. wmu must be held.
func (j *Journal) recovered() {
	if !j.failing {
		return
	}
	j.mu.Lock()
	j.werr = nil
	j.mu.Unlock()
	j.failing = false
	if l := j.opts.Logger; l != nil {
		l.Info("flight: journal writes work again", "dir", j.dir, "lost", j.lostLog)
	}
	j.lostLog = 0
}

// write writes batch, which holds whole lines, into the segments. It
// returns how many bytes of batch are on disk as whole lines. After a
// short write it removes the cut line.
func (j *Journal) write(batch []byte) (int, error) {
	done := 0
	for done < len(batch) {
		rest := batch[done:]
		room := j.opts.SegmentBytes - j.segSize
		if j.f == nil || room <= 0 {
			if err := j.rotate(); err != nil {
				return done, err
			}
			room = j.opts.SegmentBytes
		}
		if j.torn {
			// A cut line that could not be truncated: end it, so that it
			// reads as one corrupt line and the next line parses.
			n, err := j.f.Write([]byte{'\n'})
			j.grow(int64(n))
			if err != nil {
				return done, err
			}
			j.torn = false
			room--
		}
		chunk := rest
		if int64(len(chunk)) > room {
			cut := bytes.LastIndexByte(chunk[:max(room, 0)], '\n')
			switch {
			case cut >= 0:
				chunk = chunk[:cut+1]
			case j.segSize > 0:
				if err := j.rotate(); err != nil {
					return done, err
				}
				continue
			default: // one line longer than a segment: give it the segment
				if nl := bytes.IndexByte(chunk, '\n'); nl >= 0 {
					chunk = chunk[:nl+1]
				}
			}
		}
		before := j.segSize
		n, err := j.f.Write(chunk)
		if err != nil {
			// Keep the whole lines written, remove the cut one.
			whole := 0
			if n > 0 {
				whole = bytes.LastIndexByte(chunk[:n], '\n') + 1
			}
			j.grow(int64(n))
			if whole < n {
				if terr := j.f.Truncate(before + int64(whole)); terr == nil {
					j.setSize(before + int64(whole))
				} else {
					j.torn = true
				}
			}
			return done + whole, err
		}
		j.grow(int64(n))
		done += len(chunk)
	}
	return done, nil
}

func (j *Journal) grow(n int64) { j.setSize(j.segSize + n) }

func (j *Journal) setSize(n int64) {
	j.segSize = n
	j.segs[len(j.segs)-1].size = n
}

// rotate closes the current segment, opens the next and deletes the
// oldest segments past MaxBytes.
func (j *Journal) rotate() error {
	if j.f != nil {
		if err := j.f.Close(); err != nil {
			return err
		}
		j.f = nil
	}
	j.segN++
	f, err := os.OpenFile(filepath.Join(j.dir, SegmentName(j.segN)), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	j.f, j.segSize, j.torn = f, 0, false
	j.segs = append(j.segs, segment{n: j.segN, name: SegmentName(j.segN)})
	var total int64
	for _, s := range j.segs {
		total += s.size
	}
	for len(j.segs) > 1 && total+j.opts.SegmentBytes > j.opts.MaxBytes {
		old := j.segs[0]
		if err := os.Remove(filepath.Join(j.dir, old.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		total -= old.size
		j.segs = j.segs[1:]
	}
	return nil
}

// Segments lists the segment files of the journal in dir, oldest first.
func Segments(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("flight: journal: %w", err)
	}
	var names []string
	for _, e := range ents {
		if _, ok := segmentNumber(e.Name()); ok && e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		x, _ := segmentNumber(a)
		y, _ := segmentNumber(b)
		return x - y
	})
	return names, nil
}

func segmentNumber(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, segmentPrefix)
	if !ok {
		return 0, false
	}
	if num, ok := strings.CutSuffix(rest, segmentSuffix); ok {
		rest = num
	} else if num, ok := strings.CutSuffix(rest, legacySuffix); ok {
		rest = num
	} else {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// Stats counts what a journal read found. It has the fields of
// flight.ReadStats, which it converts to.
type Stats struct {
	Segments int   // segment files read
	Events   int   // events decoded
	Torn     int   // incomplete last lines (a crash during a write)
	Corrupt  int   // lines that are not events, skipped
	Bytes    int64 // bytes read
}

func (s *Stats) add(o Stats) {
	s.Segments += o.Segments
	s.Events += o.Events
	s.Torn += o.Torn
	s.Corrupt += o.Corrupt
	s.Bytes += o.Bytes
}

// maxLine bounds one journal line; longer lines are skipped as corrupt.
const maxLine = 4 << 20

// ReadSegment calls fn, in order, with each complete line of one segment
// (newline included; valid until fn returns). fn reports whether the line
// holds an event: lines that do not are skipped and counted as corrupt.
// An incomplete last line (no newline: the process died during a write)
// is skipped and counted as torn, and so is a line longer than 4 MiB
// (counted as corrupt when complete). An error from fn stops the read and
// is returned.
func ReadSegment(r io.Reader, fn func(line []byte) (bool, error)) (Stats, error) {
	st := Stats{Segments: 1}
	br := bufio.NewReaderSize(r, 256<<10)
	var long []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		st.Bytes += int64(len(chunk))
		if errors.Is(err, bufio.ErrBufferFull) {
			if !tooLong && len(long)+len(chunk) <= maxLine {
				long = append(long, chunk...)
			} else {
				tooLong, long = true, long[:0]
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return st, fmt.Errorf("flight: reading segment: %w", err)
		}
		line := chunk
		if len(long) > 0 {
			line = append(long, chunk...)
			long = long[:0]
		}
		complete := len(line) > 0 && line[len(line)-1] == '\n'
		switch {
		case tooLong:
			tooLong = false
			if complete {
				st.Corrupt++
			} else {
				st.Torn++
			}
		case len(line) == 0:
		case !complete:
			st.Torn++
		default:
			ok, ferr := fn(line)
			if !ok {
				st.Corrupt++
				break
			}
			st.Events++
			if ferr != nil {
				return st, ferr
			}
		}
		if err != nil {
			break
		}
	}
	return st, nil
}

// Read reads every segment of the journal in dir, oldest first, as
// [ReadSegment] does. progress, if set, is called with the byte count of
// each segment read.
func Read(dir string, fn func(line []byte) (bool, error), progress func(n int64)) (Stats, error) {
	var st Stats
	names, err := Segments(dir)
	if err != nil {
		return st, err
	}
	for _, name := range names {
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) { // deleted by a running writer
			continue
		}
		if err != nil {
			return st, fmt.Errorf("flight: journal: %w", err)
		}
		s, err := ReadSegment(f, fn)
		f.Close()
		st.add(s)
		if progress != nil {
			progress(s.Bytes)
		}
		if err != nil {
			return st, fmt.Errorf("flight: journal segment %s: %w", name, err)
		}
	}
	return st, nil
}
