package spill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
)

// Search reads the file in large chunks and finds candidate lines without
// looking at every line: with a literal prefix (regexp.LiteralPrefix) by
// bytes.Index over the chunk, otherwise by running the regexp over the
// whole chunk; only the candidate line is then matched on its own. With
// the result's line index (newline counts at every chunk boundary,
// recorded while it was written or verified) lines are counted only in
// chunks where something matched; without it, every chunk is counted with
// bytes.Count while it is in cache. Memory is the chunk buffer, whatever
// the size of the result.
const (
	searchChunk = 1 << 20  // bytes read at a time
	keepMax     = 64 << 10 // at most this much of the previous chunk is kept for context lines
	showLine    = 300      // longest line shown in full
	// searchBuffer holds the kept context, an unfinished line of up to a
	// chunk and a chunk of new data.
	searchBuffer = 2*searchChunk + keepMax
)

type searcher struct {
	re       *regexp.Regexp
	lit      []byte
	complete bool
	lineMode bool // the pattern uses \A or \z: match line by line
	context  int
	max      int
	skip     int64 // lines to skip
	out      *output

	keepMax  int
	buf      []byte
	countPos int   // position in buf up to which lines are counted
	countNo  int64 // number of the line that contains buf[countPos] (1-based)
	// endPos, when not -1, is a later position whose line number endNo is
	// known (the next chunk boundary of the line index): counting back
	// from it is shorter for positions near it.
	endPos int
	endNo  int64

	matches      int
	lastPrinted  int64
	pendingAfter int
	lastMatch    int64
	printedAny   bool
}

func search(ctx context.Context, f File, m *Meta, a *args, out *output, buf []byte, index []int64) error {
	re, err := compilePattern(a.Pattern, a.IgnoreCase)
	if err != nil {
		return &ArgError{Field: "pattern", Reason: "invalid regular expression: " + regexpError(err)}
	}
	pattern := clip(a.Pattern, quoteMax)
	out.reserveMore(len(pattern))
	s := newSearcher(re, a, out, buf, keepMax)
	if index != nil {
		err = s.runIndexed(ctx, f, searchChunk, index)
	} else {
		err = s.run(ctx, f)
	}
	if err != nil {
		return fmt.Errorf("spill: searching %s: %w", m.ID, err)
	}
	more := ""
	if s.matches >= s.max {
		more = fmt.Sprintf("; stopped at max_matches=%d, more may follow: search again with offset=%d", s.max, s.lastMatch)
		out.note = fmt.Sprintf("search again with offset=%d", s.lastMatch)
	} else if out.full() {
		more = fmt.Sprintf(" before the output was full; more may follow: search again with offset=%d", s.lastMatch)
		out.note = fmt.Sprintf("search again with offset=%d or a narrower pattern", s.lastMatch)
	}
	from := ""
	if a.Offset > 0 {
		from = fmt.Sprintf(" after line %d", a.Offset)
	}
	fmt.Fprintf(&out.head, "search /%s/ in %s (%s lines)%s: %d matching lines%s\n", pattern, m.ID, group(m.Lines), from, s.matches, more)
	return nil
}

// newSearcher returns a searcher that reads into buf (len(buf)-keep bytes
// at a time at least) and keeps up to keep bytes of context lines.
func newSearcher(re *regexp.Regexp, a *args, out *output, buf []byte, keep int) *searcher {
	s := &searcher{re: re, context: a.Context, max: a.MaxMatches, skip: a.Offset, out: out,
		keepMax: keep, buf: buf, countNo: 1, endPos: -1}
	lit, complete := re.LiteralPrefix()
	// A literal holding a newline cannot match within a line: verify
	// candidates with the regexp.
	s.lit, s.complete = []byte(lit), complete && !strings.Contains(lit, "\n")
	s.lineMode = usesTextAnchors(re.String())
	return s
}

// done reports whether the search can stop.
func (s *searcher) done() bool {
	return s.out.full() || s.matches >= s.max && s.pendingAfter == 0
}

func (s *searcher) run(ctx context.Context, f File) error {
	buf := s.buf
	n, keep := 0, 0 // buf[:keep] was searched (kept for context); buf[keep:n] was not
	eof := false
	for !eof && !s.done() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if n == len(buf) && keep > 0 {
			// A very long line: drop the kept context to make room.
			s.shift(keep, n)
			n -= keep
			keep = 0
		}
		k, err := io.ReadFull(f, buf[n:])
		n += k
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				return err
			}
			eof = true
		}
		end := n
		if !eof {
			i := bytes.LastIndexByte(buf[keep:n], '\n')
			switch {
			case i >= 0:
				end = keep + i + 1
			case n < len(buf):
				continue
				// Otherwise the buffer holds one line longer than the buffer:
				// search it as a segment (a match across segments is missed).
			}
		}
		s.region(keep, end)
		s.countTo(end)
		// Keep up to s.context lines before end for the context of matches
		// at the start of the next chunk, and the unsearched rest.
		from := s.keepFrom(end)
		s.shift(from, n)
		n -= from
		keep = end - from
	}
	return nil
}

// runIndexed is run for a result whose line index is known: it reads
// exactly chunk new bytes at a time, aligned with the index, so the line
// number at the start of each chunk's data is index[i] + 1 and lines are
// counted only up to the matches of the chunk, not through all the data.
// The buffer must hold 2*chunk + keepMax bytes.
func (s *searcher) runIndexed(ctx context.Context, f File, chunk int, index []int64) error {
	buf := s.buf
	carry, keep := 0, 0 // buf[:keep] kept context; buf[keep:carry] the unfinished line
	for i := 0; !s.done(); i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if i >= len(index) {
			return errors.New("the line index is shorter than the file")
		}
		k, err := io.ReadFull(f, buf[carry:carry+chunk])
		eof := false
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				return err
			}
			eof = true
		}
		n := carry + k
		// Lines are numbered from the start of the new data; the unfinished
		// line before it is the same line (it holds no newline).
		s.countPos, s.countNo = carry, index[i]+1
		s.endPos = -1
		if k == chunk && i+1 < len(index) {
			s.endPos, s.endNo = n, index[i+1]+1
		}
		end := n
		if !eof {
			if j := bytes.LastIndexByte(buf[keep:n], '\n'); j >= 0 {
				end = keep + j + 1
			}
			// Otherwise the buffer holds no line end after the context: it
			// is searched as a segment of a very long line.
		}
		s.region(keep, end)
		if eof {
			break
		}
		from := s.keepFrom(end)
		copy(buf, buf[from:n])
		carry, keep = n-from, end-from
	}
	return nil
}

// keepFrom returns where the lines to keep for context start: up to
// s.context lines before end, at most keepMax bytes; end itself when the
// region ended inside a line longer than the buffer.
func (s *searcher) keepFrom(end int) int {
	buf := s.buf
	from := end
	if end > 0 && buf[end-1] == '\n' {
		for lines := 0; lines < s.context && from > 0; lines++ {
			j := bytes.LastIndexByte(buf[:from-1], '\n')
			if end-(j+1) > s.keepMax {
				break
			}
			from = j + 1
		}
	}
	return from
}

// shift moves buf[from:n] to the start of buf.
func (s *searcher) shift(from, n int) {
	if from == 0 {
		return
	}
	copy(s.buf, s.buf[from:n])
	s.countPos -= from
}

// countTo counts lines up to pos and returns the number of the line that
// contains pos.
func (s *searcher) countTo(pos int) int64 {
	if pos > s.countPos {
		if s.endPos >= pos && s.endPos-pos < pos-s.countPos {
			s.countNo = s.endNo - int64(bytes.Count(s.buf[pos:s.endPos], nl))
		} else {
			s.countNo += int64(bytes.Count(s.buf[s.countPos:pos], nl))
		}
		s.countPos = pos
	}
	return s.countNo
}

// region searches the complete lines in buf[start:end].
func (s *searcher) region(start, end int) {
	buf := s.buf
	pos := start
	if s.pendingAfter > 0 {
		pos = s.after(pos, end)
	}
	for pos < end && !s.done() {
		if s.matches >= s.max {
			return
		}
		var cand int
		if s.lineMode {
			c, ok := s.findLine(pos, end)
			if !ok {
				return
			}
			cand = c
		} else if len(s.lit) > 0 {
			i := bytes.Index(buf[pos:end], s.lit)
			if i < 0 {
				return
			}
			cand = pos + i
		} else {
			loc := s.re.FindIndex(buf[pos:end])
			if loc == nil {
				return
			}
			cand = pos + loc[0]
			if cand == end && (cand == start || buf[cand-1] == '\n') {
				return // an empty match after the last line: no line there
			}
		}
		ls := start
		if i := bytes.LastIndexByte(buf[start:cand], '\n'); i >= 0 {
			ls = start + i + 1
		}
		le := end
		if i := bytes.IndexByte(buf[cand:end], '\n'); i >= 0 {
			le = cand + i
		}
		next := min(le+1, end)
		lineNo := s.countTo(ls)
		if lineNo <= s.skip {
			pos = next
			continue
		}
		line := buf[ls:le]
		var loc []int
		if s.complete {
			loc = []int{cand - ls, cand - ls + len(s.lit)}
		} else if loc = s.re.FindIndex(line); loc == nil {
			pos = next
			continue
		}
		s.before(ls, lineNo)
		s.emit(lineNo, line, loc, true)
		s.matches++
		s.lastMatch = lineNo
		s.pendingAfter = s.context
		pos = s.after(next, end)
	}
}

// findLine returns the start of the first line in buf[pos:end] that
// matches on its own.
func (s *searcher) findLine(pos, end int) (int, bool) {
	for pos < end {
		le := end
		if i := bytes.IndexByte(s.buf[pos:end], '\n'); i >= 0 {
			le = pos + i
		}
		if s.re.Match(s.buf[pos:le]) {
			return pos, true
		}
		pos = le + 1
	}
	return 0, false
}

// usesTextAnchors reports whether a pattern has \A or \z (or ^ and $
// outside multi-line mode), which match differently on a line than on a
// chunk of lines.
func usesTextAnchors(pattern string) bool {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return true
	}
	var walk func(*syntax.Regexp) bool
	walk = func(r *syntax.Regexp) bool {
		if r.Op == syntax.OpBeginText || r.Op == syntax.OpEndText {
			return true
		}
		for _, sub := range r.Sub {
			if walk(sub) {
				return true
			}
		}
		return false
	}
	return walk(re)
}

// before prints up to s.context lines before the line at ls, numbered
// lineNo, that were not printed yet.
func (s *searcher) before(ls int, lineNo int64) {
	if s.context == 0 {
		return
	}
	starts := make([]int, 0, s.context)
	p := ls
	for len(starts) < s.context && p > 0 && lineNo-int64(len(starts))-1 > s.lastPrinted {
		j := bytes.LastIndexByte(s.buf[:p-1], '\n')
		starts = append(starts, j+1)
		p = j + 1
		if j < 0 {
			break
		}
	}
	for i := len(starts) - 1; i >= 0; i-- {
		st := starts[i]
		en := st + bytes.IndexByte(s.buf[st:ls], '\n')
		s.emit(lineNo-int64(i)-1, s.buf[st:en], nil, false)
	}
}

// after prints pending context lines from pos, stopping at a line that
// matches (the search reports it); it returns where the search goes on.
func (s *searcher) after(pos, end int) int {
	for s.pendingAfter > 0 && pos < end && !s.out.full() {
		le := end
		if i := bytes.IndexByte(s.buf[pos:end], '\n'); i >= 0 {
			le = pos + i
		}
		line := s.buf[pos:le]
		if s.re.Match(line) {
			s.pendingAfter = 0
			return pos
		}
		s.emit(s.countTo(pos), line, nil, false)
		s.pendingAfter--
		pos = min(le+1, end)
	}
	return pos
}

// emit prints a line: "N: text" for a match, "N- text" for context, with a
// "--" between groups that are not adjacent. Long lines are shown as a
// window around the match.
func (s *searcher) emit(lineNo int64, line []byte, loc []int, match bool) {
	if lineNo <= s.lastPrinted {
		return
	}
	if s.printedAny && lineNo > s.lastPrinted+1 {
		s.out.line("--")
	}
	s.printedAny = true
	s.lastPrinted = lineNo
	sep := "- "
	if match {
		sep = ": "
	}
	var shown string
	switch {
	case len(line) <= showLine:
		shown = text(line)
	case match:
		from := max(0, loc[0]-100)
		to := min(len(line), max(loc[1], loc[0])+200)
		shown = text(line[from:to])
		if from > 0 {
			shown = "…" + shown
		}
		if to < len(line) {
			shown += "…"
		}
		shown = fmt.Sprintf("[%d bytes; match at column %d] %s", len(line), loc[0]+1, shown)
	default:
		shown = text(line[:showLine]) + "…"
	}
	s.out.line(strconv.FormatInt(lineNo, 10) + sep + shown)
}
