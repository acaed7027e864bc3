package traceview

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// lineLoc locates one line of a trace file: its offset and its length
// without the newline.
type lineLoc struct {
	off int64
	n   int32
}

// fileIndex indexes one trace file: the skeleton of every span (see
// [skel]) grouped by trace, the place of every line that holds spans, and
// the runs of each trace. It reads the file once and then only what is
// appended; a file that shrinks or is replaced is indexed again from its
// start. It is not safe for concurrent use.
type fileIndex struct {
	path string
	fi   os.FileInfo // the file indexed; nil before the first read
	end  int64       // offset just past the last complete line read
	// tail is the size at which the file last ended in an incomplete
	// line, so that an unchanged torn line is not read again.
	tail   int64
	lineNo int       // complete lines read
	lines  []lineLoc // the non-empty lines
	traces map[[16]byte]*traceSkels
	// What reading found: lines that are not OTLP JSON and lines over
	// MaxLine (their numbers, the first few), and a read error.
	corrupt, long         int
	corruptAt, longAt     []int
	err                   error
	version               int // counts the changes
	dirty                 map[[16]byte]bool
	scanned, scannedLines int64 // bytes and lines scanned, for tests
}

// traceSkels are the spans of one trace in one file, and their runs.
type traceSkels struct {
	skels []skel
	runs  []*RunInfo // rebuilt when the trace is dirty
}

// maxLinesNamed caps the line numbers a problem names.
const maxLinesNamed = 5

func newFileIndex(path string) *fileIndex {
	x := &fileIndex{path: path}
	x.reset()
	return x
}

func (x *fileIndex) reset() {
	x.fi, x.end, x.tail, x.lineNo = nil, 0, -1, 0
	x.lines = nil
	x.traces = map[[16]byte]*traceSkels{}
	x.corrupt, x.long, x.corruptAt, x.longAt, x.err = 0, 0, nil, nil, nil
	x.dirty = map[[16]byte]bool{}
}

// update reads what was appended to the file since the last call and
// reports whether the index changed. A missing file is an empty index.
func (x *fileIndex) update() bool {
	f, err := os.Open(x.path)
	if err != nil {
		had := x.fi != nil || x.err != nil
		x.reset()
		if !errors.Is(err, fs.ErrNotExist) {
			x.err = err
		}
		if had || x.err != nil {
			x.version++
			return true
		}
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		x.err = err
		x.version++
		return true
	}
	changed := false
	if x.fi == nil || !os.SameFile(x.fi, fi) || fi.Size() < x.end {
		if x.fi != nil {
			x.reset()
			changed = true
		}
	}
	x.fi = fi
	if fi.Size() == x.end || fi.Size() == x.tail {
		if changed {
			x.version++
		}
		return changed
	}
	if _, err := f.Seek(x.end, io.SeekStart); err != nil {
		x.err = err
		x.version++
		return true
	}
	n, torn, err := x.scan(f, x.end)
	x.end += n
	x.tail = -1
	if torn {
		x.tail = fi.Size()
	}
	x.err = err
	x.rebuildDirty()
	x.version++
	return true
}

// scanBatch is the bytes a scan job holds, about.
const scanBatch = 1 << 20

// scanJob is a batch of lines that one worker scans.
type scanJob struct {
	buf     []byte  // the lines, one after the other
	ends    []int   // where each line ends in buf
	idx     []int32 // each line's index in fileIndex.lines
	nos     []int   // each line's number
	spans   []found // what the worker found
	corrupt []int   // numbers of the lines that are not OTLP JSON
	done    chan struct{}
}

// found is a span found in a line.
type found struct {
	trace [16]byte
	sk    skel
}

func (j *scanJob) run(in interner) {
	start := 0
	for i, end := range j.ends {
		line := j.buf[start:end]
		start = end
		mark := len(j.spans)
		if err := scanLine(line, j.idx[i], in, func(trace [16]byte, sk skel) {
			j.spans = append(j.spans, found{trace, sk})
		}); err != nil {
			j.spans = j.spans[:mark]
			j.corrupt = append(j.corrupt, j.nos[i])
		}
	}
	close(j.done)
}

// scan reads r (the file from offset base) to its end: the lines are
// read in order here and scanned by a worker per processor, a batch at a
// time, and what they find is added in the order of the lines. It
// returns the bytes of complete lines read, whether an incomplete line
// followed them, and a read error.
func (x *fileIndex) scan(r io.Reader, base int64) (int64, bool, error) {
	workers := max(1, min(runtime.GOMAXPROCS(0), 8))
	jobs := make(chan *scanJob)
	ordered := make(chan *scanJob, 2*workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := interner{} // one a worker: strings repeat within a worker's batches
			for j := range jobs {
				j.run(in)
			}
		}()
	}
	merged := make(chan struct{})
	go func() {
		defer close(merged)
		for j := range ordered {
			<-j.done
			x.merge(j)
		}
	}()
	newJob := func() *scanJob {
		return &scanJob{buf: make([]byte, 0, scanBatch+scanBatch/4), done: make(chan struct{})}
	}
	cur := newJob()
	send := func() {
		ordered <- cur
		jobs <- cur
		cur = newJob()
	}
	n, torn, err := eachLine(r, func(off int64, line []byte, tooLong bool) {
		x.lineNo++
		x.scannedLines++
		x.scanned += int64(len(line)) + 1
		if tooLong {
			x.long++
			if len(x.longAt) < maxLinesNamed {
				x.longAt = append(x.longAt, x.lineNo)
			}
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			return
		}
		cur.idx = append(cur.idx, int32(len(x.lines)))
		x.lines = append(x.lines, lineLoc{off: base + off, n: int32(len(line))})
		cur.nos = append(cur.nos, x.lineNo)
		cur.buf = append(cur.buf, line...)
		cur.ends = append(cur.ends, len(cur.buf))
		if len(cur.buf) >= scanBatch {
			send()
		}
	})
	if len(cur.ends) > 0 {
		send()
	}
	close(jobs)
	close(ordered)
	wg.Wait()
	<-merged
	return n, torn, err
}

// merge adds what a job found.
func (x *fileIndex) merge(j *scanJob) {
	for _, no := range j.corrupt {
		x.corrupt++
		if len(x.corruptAt) < maxLinesNamed {
			x.corruptAt = append(x.corruptAt, no)
		}
	}
	for i := range j.spans {
		f := &j.spans[i]
		ts := x.traces[f.trace]
		if ts == nil {
			ts = &traceSkels{}
			x.traces[f.trace] = ts
		}
		ts.skels = append(ts.skels, f.sk)
		x.dirty[f.trace] = true
	}
}

// rebuildDirty computes the runs of the traces that changed, a share of
// them a processor.
func (x *fileIndex) rebuildDirty() {
	ids := make([][16]byte, 0, len(x.dirty))
	for id := range x.dirty {
		ids = append(ids, id)
	}
	clear(x.dirty)
	workers := max(1, min(runtime.GOMAXPROCS(0), 8, len(ids)/64))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(ids); i += workers {
				x.rebuild(ids[i]) // each trace apart: no two workers touch one
			}
		}()
	}
	wg.Wait()
}

// rebuild computes the runs of one trace.
func (x *fileIndex) rebuild(id [16]byte) {
	ts := x.traces[id]
	ts.skels = slices.Clip(ts.skels)
	ts.runs = runsOf(hex.EncodeToString(id[:]), []skelGroup{{file: x, skels: ts.skels}})
}

// problems describes what could not be read.
func (x *fileIndex) problems() []string {
	var out []string
	if x.err != nil {
		out = append(out, fmt.Sprintf("traceview: %s: %v", x.path, x.err))
	}
	if x.long > 0 {
		out = append(out, fmt.Sprintf("traceview: %s: %s longer than the limit (%d MiB): skipped", x.path, linesPhrase(x.long, x.longAt), MaxLine>>20))
	}
	if x.corrupt > 0 {
		out = append(out, fmt.Sprintf("traceview: %s: %s not OTLP JSON: skipped", x.path, linesPhrase(x.corrupt, x.corruptAt)))
	}
	return out
}

// linesPhrase is "line 7 is", "lines 3, 9 are" or "12 lines (3, 9, …) are".
func linesPhrase(n int, at []int) string {
	nums := make([]string, len(at))
	for i, a := range at {
		nums[i] = strconv.Itoa(a)
	}
	switch {
	case n == 1 && len(at) == 1:
		return "line " + nums[0] + " is"
	case n == len(at):
		return "lines " + strings.Join(nums, ", ") + " are"
	}
	return fmt.Sprintf("%d lines (%s, …) are", n, strings.Join(nums, ", "))
}

// eachLine reads r to its end and calls fn with each complete line, its
// offset from where r started, and whether it is longer than MaxLine
// (then line is nil). It returns the bytes of complete lines read and
// whether an incomplete last line followed them.
func eachLine(r io.Reader, fn func(off int64, line []byte, tooLong bool)) (int64, bool, error) {
	var (
		pos, lineStart int64
		long           []byte
		tooLong        bool
	)
	br := bufio.NewReaderSize(r, 256<<10)
	for {
		chunk, err := br.ReadSlice('\n')
		pos += int64(len(chunk))
		if errors.Is(err, bufio.ErrBufferFull) {
			if !tooLong && len(long)+len(chunk) <= MaxLine {
				long = append(long, chunk...)
			} else {
				tooLong, long = true, nil
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return lineStart, false, err
		}
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			line := chunk
			if len(long) > 0 {
				line = append(long, chunk...)
			}
			line = line[:len(line)-1]
			if tooLong || len(line) > MaxLine {
				fn(lineStart, nil, true)
			} else {
				fn(lineStart, line, false)
			}
			lineStart, long, tooLong = pos, long[:0], false
			if cap(long) > 1<<20 {
				long = nil // do not keep a big line's buffer
			}
		}
		if err != nil {
			return lineStart, pos > lineStart, nil
		}
	}
}

// skelGroup is the skeletons of one trace from one source: a trace file,
// or (file nil) the spans of recordings and bundles.
type skelGroup struct {
	file  *fileIndex
	skels []skel
	mem   []*Span // the full spans, for a group from memory
}

// runsOf groups the spans of one trace into runs, with [BuildRuns] on
// light spans made of the skeletons, and says where each run's spans are.
// Groups come in source order: a span given twice keeps its first place.
func runsOf(trace string, groups []skelGroup) []*RunInfo {
	type origin struct {
		g    int
		line int32
	}
	var spans []*Span
	from := map[*Span]origin{}
	for gi, g := range groups {
		for i := range g.skels {
			s := g.skels[i].toSpan(trace)
			spans = append(spans, s)
			from[s] = origin{gi, g.skels[i].line}
		}
	}
	var out []*RunInfo
	for _, r := range BuildRuns(spans) {
		ri := &RunInfo{Key: r.Key(), ID: r.ID, TraceID: r.TraceID, Name: r.Root.Name, Summary: r.Summary}
		lines := make([][]int32, len(groups))
		for _, s := range r.Spans {
			o := from[s]
			lines[o.g] = append(lines[o.g], o.line)
		}
		for gi, g := range groups {
			if len(lines[gi]) == 0 {
				continue
			}
			if g.file == nil {
				ri.mem = g.mem
				continue
			}
			slices.Sort(lines[gi])
			fl := fileLines{path: g.file.path, fi: g.file.fi}
			for _, l := range slices.Compact(lines[gi]) {
				fl.lines = append(fl.lines, g.file.lines[l])
			}
			ri.files = append(ri.files, fl)
		}
		out = append(out, ri)
	}
	return out
}

// toSpan makes a light span of sk, with the attributes a summary reads.
func (sk *skel) toSpan(trace string) *Span {
	s := &Span{
		TraceID: trace,
		SpanID:  hex.EncodeToString(sk.span[:]),
		Name:    sk.name,
		Status:  sk.status,
		Start:   unixNano(uint64(sk.start)),
		End:     unixNano(uint64(sk.end)),
	}
	if sk.hasParent {
		s.ParentID = hex.EncodeToString(sk.parent[:])
	}
	if sk.op != "" {
		s.Attrs = append(s.Attrs, strAttr(keyOp, sk.op))
	}
	x := sk.x
	if x == nil {
		return s
	}
	s.StatusMessage = x.statusMsg
	for _, kv := range [][2]string{{keyRunID, x.runID}, {keyAgent, x.agent}, {keyRunStatus, x.runStatus}, {keyErrorType, x.errType}} {
		if kv[1] != "" {
			s.Attrs = append(s.Attrs, strAttr(kv[0], kv[1]))
		}
	}
	for i, k := range usageKeys {
		if x.usageKeys&(1<<i) != 0 {
			s.Attrs = append(s.Attrs, Attr{k, Value{Type: TypeInt, Int: *x.usageField(i)}})
		}
	}
	if x.hasCost {
		s.Attrs = append(s.Attrs, Attr{keyCost, Value{Type: TypeDouble, Double: x.cost}})
	}
	if x.hasUnpriced {
		s.Attrs = append(s.Attrs, Attr{keyUnpriced, Value{Type: TypeInt, Int: x.unpriced}})
	}
	if len(x.breaks) > 0 {
		v := Value{Type: TypeArray}
		for _, b := range x.breaks {
			v.Array = append(v.Array, Value{Type: TypeString, Str: b})
		}
		s.Attrs = append(s.Attrs, Attr{keyPrefixDiff, v})
	}
	return s
}

func strAttr(k, v string) Attr { return Attr{k, Value{Type: TypeString, Str: v}} }

// skelOf makes the skeleton of a full span (from a recording or bundle);
// ok is false when its IDs are not OTLP's sizes.
func skelOf(s *Span) (trace [16]byte, sk skel, ok bool) {
	if !decodeID(trace[:], []byte(s.TraceID)) || !decodeID(sk.span[:], []byte(s.SpanID)) {
		return trace, sk, false
	}
	if s.ParentID != "" {
		if !decodeID(sk.parent[:], []byte(s.ParentID)) {
			return trace, sk, false
		}
		sk.hasParent = true
	}
	sk.name, sk.status = s.Name, s.Status
	if !s.Start.IsZero() {
		sk.start = s.Start.UnixNano()
	}
	if !s.End.IsZero() {
		sk.end = s.End.UnixNano()
	}
	sk.op = s.Attrs.Str(keyOp)
	if s.StatusMessage != "" {
		sk.extra().statusMsg = cutBytes([]byte(s.StatusMessage), maxStatusMsg)
	}
	if v := s.Attrs.Str(keyRunID); v != "" {
		sk.extra().runID = v
	}
	if v := s.Attrs.Str(keyAgent); v != "" {
		sk.extra().agent = v
	}
	if v := s.Attrs.Str(keyRunStatus); v != "" {
		sk.extra().runStatus = v
	}
	if v := s.Attrs.Str(keyErrorType); v != "" {
		sk.extra().errType = v
	}
	for i, k := range usageKeys {
		if v, ok := s.Attrs.Get(k); ok {
			x := sk.extra()
			*x.usageField(i), _ = v.AsInt()
			x.usageKeys |= 1 << i
		}
	}
	if v, ok := s.Attrs.Get(keyCost); ok {
		x := sk.extra()
		x.cost, x.hasCost = valueFloat(v), true
	}
	if v, ok := s.Attrs.Get(keyUnpriced); ok {
		x := sk.extra()
		x.unpriced, _ = v.AsInt()
		x.hasUnpriced = true
	}
	if br := cacheBreaks(s); len(br) > 0 {
		sk.extra().breaks = br
	}
	return trace, sk, true
}

// fileLines are the lines of one trace file that hold a run's spans.
type fileLines struct {
	path  string
	fi    os.FileInfo
	lines []lineLoc
}

// ErrFileChanged is returned when a run is read from a trace file that
// was replaced or cut since it was indexed.
var ErrFileChanged = errors.New("traceview: the trace file changed since it was indexed")

// read returns the spans of trace found in the lines.
func (fl *fileLines) read(trace string) ([]*Span, error) {
	f, err := os.Open(fl.path)
	if err != nil {
		return nil, fmt.Errorf("traceview: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("traceview: %w", err)
	}
	if fl.fi == nil || !os.SameFile(fi, fl.fi) {
		return nil, fmt.Errorf("%w: %s", ErrFileChanged, fl.path)
	}
	var out []*Span
	var buf []byte
	for _, l := range fl.lines {
		if l.off+int64(l.n) > fi.Size() {
			return nil, fmt.Errorf("%w: %s", ErrFileChanged, fl.path)
		}
		if cap(buf) < int(l.n) {
			buf = make([]byte, l.n)
		}
		buf = buf[:l.n]
		if _, err := f.ReadAt(buf, l.off); err != nil {
			return nil, fmt.Errorf("traceview: %s: %w", fl.path, err)
		}
		spans, err := ParseOTLP(buf)
		if err != nil {
			return nil, fmt.Errorf("%w: %s at offset %d: %v", ErrFileChanged, fl.path, l.off, err)
		}
		for _, s := range spans {
			if s.TraceID == trace {
				out = append(out, s)
			}
		}
	}
	return out, nil
}
