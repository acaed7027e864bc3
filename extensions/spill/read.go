package spill

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/harnessx/harnessx/harness"
)

// tool returns the read_result tool. Its calls only read, so they may run
// in parallel and be replayed.
func (e *Extension) tool() *harness.Tool {
	return &harness.Tool{
		Name:         ToolName,
		Description:  toolDescription,
		InputSchema:  json.RawMessage(inputSchema),
		Concurrent:   true,
		ReplayPolicy: harness.ReplaySafe,
		Handler: func(ctx context.Context, input json.RawMessage) (string, error) {
			return e.Read(ctx, input)
		},
	}
}

// Read runs one read_result request (the tool's JSON arguments) and
// returns the text the model reads. Bad arguments, an unknown id, a bad
// regular expression, an unknown column, an offset past the end, malformed
// stored data and a corrupt file are errors whose text says what is wrong
// (the tool returns them as error results). Every operation streams over
// the stored file; the output is capped (WithMaxOutput) with a note.
//
// The cap holds for every reply, errors included, however large the
// request: values are quoted by a short prefix and their length, and as a
// last guard a longer reply is cut with a note, and so is the text of a
// longer error (which then wraps the original, for errors.Is and As).
func (e *Extension) Read(ctx context.Context, input json.RawMessage) (string, error) {
	out, err := e.read(ctx, input)
	if err != nil {
		return "", capError(err, e.cfg.maxOutput)
	}
	return capText(out, e.cfg.maxOutput, "reply", "narrow the request"), nil
}

func (e *Extension) read(ctx context.Context, input json.RawMessage) (string, error) {
	a, err := parseArgs(input)
	if err != nil {
		return "", err
	}
	f, m, index, err := e.openIndexed(ctx, a.ID)
	if err != nil {
		return "", err
	}
	defer f.Close()
	out := newOutput(e.cfg.maxOutput)
	switch a.Op {
	case opSlice:
		if a.Unit == "bytes" {
			err = sliceBytes(f, &m, a, out)
		} else {
			err = sliceLines(ctx, f, &m, a, out)
		}
	case opSearch:
		bp := e.searchBufs.Get().(*[]byte)
		err = search(ctx, f, &m, a, out, *bp, index)
		e.searchBufs.Put(bp)
	default:
		err = table(ctx, f, &m, a, out)
	}
	if err != nil {
		return "", err
	}
	return out.String(), nil
}

// output collects the text of a reply up to a cap: the body is kept to
// the cap less a reserve for the head and the closing note, so that the
// whole reply fits.
type output struct {
	head    strings.Builder // a summary line, always kept
	body    strings.Builder
	max     int
	reserve int // bytes of max kept for the head and notes
	cut     bool
	note    string // how to get the rest, when cut
	raw     bool   // the body is content as stored (a byte slice): keep it exact
}

// headReserve is room enough for the head and notes of any operation,
// numbers included, without the where conditions and the pattern they
// repeat.
const headReserve = 384

func newOutput(max int) *output { return &output{max: max, reserve: min(headReserve, max/2)} }

// reserveMore keeps n more bytes for the head (a description of the where
// conditions or the pattern), leaving the body at least half the cap.
func (o *output) reserveMore(n int) { o.reserve = min(o.reserve+n, o.max/2) }

// room returns the bytes the body may hold.
func (o *output) room() int { return o.max - o.reserve }

// line appends s and a newline; it returns false once the output is full
// (s is then cut or dropped).
func (o *output) line(s string) bool {
	if o.cut {
		return false
	}
	room := o.room() - o.body.Len()
	if len(s)+1 > room {
		if room > 0 {
			o.body.WriteString(cutUTF8(s, room))
		}
		o.cut = true
		return false
	}
	o.body.WriteString(s)
	o.body.WriteByte('\n')
	return true
}

func (o *output) full() bool { return o.cut }

func (o *output) String() string {
	var b strings.Builder
	b.WriteString(o.head.String())
	b.WriteString(o.body.String())
	if o.cut {
		fmt.Fprintf(&b, "\n[output cut at %d bytes", o.max)
		if o.note != "" {
			b.WriteString("; " + o.note)
		}
		b.WriteString("]")
	}
	if o.raw {
		return b.String()
	}
	return strings.TrimRight(b.String(), "\n")
}

// cutUTF8 returns s cut to at most n bytes on a rune boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// text makes b printable: valid UTF-8, no trailing carriage return.
func text(b []byte) string {
	return strings.ToValidUTF8(string(bytes.TrimSuffix(b, []byte{'\r'})), "\uFFFD")
}

func sliceBytes(f File, m *Meta, a *args, out *output) error {
	if a.Offset > 0 && a.Offset >= m.Size {
		return fmt.Errorf("%w: byte offset %d; result %s has %d bytes", ErrOutOfRange, a.Offset, m.ID, m.Size)
	}
	if _, err := f.Seek(a.Offset, io.SeekStart); err != nil {
		return fmt.Errorf("spill: reading %s: %w", m.ID, err)
	}
	n := min(a.Limit, int64(out.room()), m.Size-a.Offset)
	buf := make([]byte, n)
	k, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("spill: reading %s: %w", m.ID, err)
	}
	end := a.Offset + int64(k)
	fmt.Fprintf(&out.head, "bytes %d to %d of %d (result %s, %s):\n", a.Offset, end, m.Size, m.ID, m.Type)
	out.raw = true
	out.body.WriteString(strings.ToValidUTF8(string(buf[:k]), "\uFFFD"))
	if int64(k) < a.Limit && end < m.Size {
		fmt.Fprintf(&out.body, "\n[cut at %d bytes; continue with unit=bytes offset=%d]", k, end)
	}
	return nil
}

// maxLineShow is the longest line slice shows in full.
const maxLineShow = 2000

func sliceLines(ctx context.Context, f File, m *Meta, a *args, out *output) error {
	r := newBufReader(f)
	var line, pos int64 // lines passed, bytes passed
	// Skip a.Offset lines.
	for line < a.Offset {
		chunk, err := r.ReadSlice('\n')
		pos += int64(len(chunk))
		if err == nil {
			line++
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			if len(chunk) > 0 {
				line++
			}
			break
		}
		return fmt.Errorf("spill: reading %s: %w", m.ID, err)
	}
	if line < a.Offset || line == a.Offset && a.Offset > 0 && pos >= m.Size {
		return fmt.Errorf("%w: line offset %d; result %s has %d lines", ErrOutOfRange, a.Offset, m.ID, m.Lines)
	}
	shown := int64(0)
	for shown < a.Limit && pos < m.Size && !out.full() {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := pos
		var b []byte
		total := 0
		for {
			chunk, err := r.ReadSlice('\n')
			pos += int64(len(chunk))
			total += len(chunk)
			if len(b) < maxLineShow+1 {
				b = append(b, chunk[:min(len(chunk), maxLineShow+1-len(b))]...)
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("spill: reading %s: %w", m.ID, err)
			}
			break
		}
		if total == 0 {
			break
		}
		shown++
		b = bytes.TrimSuffix(b, []byte{'\n'})
		s := strconv.FormatInt(line+shown, 10) + ": "
		if total > maxLineShow+1 {
			s += text(b[:min(len(b), maxLineShow)]) + fmt.Sprintf(" … [line of %d bytes cut; read it with unit=bytes offset=%d]", total, start)
		} else {
			s += text(b)
		}
		if !out.line(s) {
			out.note = fmt.Sprintf("continue with offset=%d", line+shown-1)
			break
		}
	}
	first := line + 1
	last := line + shown
	if shown == 0 {
		first = line
	}
	fmt.Fprintf(&out.head, "lines %d to %d of %d (result %s, %s):\n", first, last, m.Lines, m.ID, m.Type)
	if !out.full() && last < m.Lines {
		fmt.Fprintf(&out.body, "[%d more lines; continue with offset=%d]", m.Lines-last, last)
	}
	return nil
}
