package spill

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"strings"
	"unicode/utf8"
)

// Type is the detected kind of a stored result.
type Type string

// The detected types. Tabular operations work on CSV, JSON (an array) and
// JSON lines.
const (
	TypeText  Type = "text"
	TypeJSON  Type = "json"
	TypeJSONL Type = "jsonl"
	TypeCSV   Type = "csv"
)

func (t Type) valid() bool {
	return t == TypeText || t == TypeJSON || t == TypeJSONL || t == TypeCSV
}

// sampleSize is how much of the head is kept for type detection and the
// preview.
const sampleSize = 64 << 10

// capture is the io.Writer that a result streams through on its way to the
// store: it hashes, counts and keeps the head and the tail, with memory
// bounded by sampleSize and the tail size.
type capture struct {
	h        hash.Hash
	lines    *lineIndex
	size     int64
	newlines int64
	last     byte
	head     []byte // first sampleSize bytes
	tail     []byte // ring of the last len(tail) bytes
	tailPos  int
	tailFull bool
}

func newCapture(tailSize int) *capture {
	return &capture{h: sha256.New(), lines: newLineIndex(searchChunk), head: make([]byte, 0, sampleSize), tail: make([]byte, tailSize)}
}

func (c *capture) Write(p []byte) (int, error) {
	c.h.Write(p)
	c.lines.write(p)
	c.size += int64(len(p))
	c.newlines = c.lines.newlines
	if len(p) > 0 {
		c.last = p[len(p)-1]
	}
	if room := sampleSize - len(c.head); room > 0 {
		c.head = append(c.head, p[:min(room, len(p))]...)
	}
	if len(c.tail) > 0 {
		q := p
		if len(q) > len(c.tail) {
			q = q[len(q)-len(c.tail):]
		}
		for len(q) > 0 {
			n := copy(c.tail[c.tailPos:], q)
			q = q[n:]
			c.tailPos += n
			if c.tailPos == len(c.tail) {
				c.tailPos = 0
				c.tailFull = true
			}
		}
	}
	return len(p), nil
}

// lineCount returns the number of lines: newlines, plus one for a last line
// without a newline.
func (c *capture) lineCount() int64 {
	if c.size > 0 && c.last != '\n' {
		return c.newlines + 1
	}
	return c.newlines
}

// tailBytes returns the kept tail in order.
func (c *capture) tailBytes() []byte {
	if !c.tailFull {
		return c.tail[:c.tailPos]
	}
	out := make([]byte, 0, len(c.tail))
	out = append(out, c.tail[c.tailPos:]...)
	return append(out, c.tail[:c.tailPos]...)
}

func (c *capture) sum() string { return hex.EncodeToString(c.h.Sum(nil)) }

var nl = []byte{'\n'}

// detect guesses the type of a result from its head (up to sampleSize
// bytes), its tail and whether the head is the whole result. It also
// returns the column names for CSV (the header) and for JSON rows (the keys
// of the first object), when it finds them.
func detect(head, tail []byte, whole bool) (Type, []string) {
	h := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\ufeff")), " \t\r\n")
	t := bytes.TrimRight(tail, " \t\r\n")
	if len(h) == 0 {
		return TypeText, nil
	}
	switch h[0] {
	case '[':
		if whole && !json.Valid(h) {
			break
		}
		if len(t) > 0 && t[len(t)-1] == ']' {
			return TypeJSON, firstObjectKeys(h[1:])
		}
	case '{':
		lines := completeLines(h, whole)
		if len(lines) >= 2 {
			ok := true
			for _, l := range lines {
				l = bytes.TrimSpace(l)
				if len(l) > 0 && !json.Valid(l) {
					ok = false
					break
				}
			}
			if ok {
				return TypeJSONL, firstObjectKeys(lines[0])
			}
		}
		if whole && !json.Valid(h) {
			break
		}
		if len(t) > 0 && t[len(t)-1] == '}' {
			return TypeJSON, nil
		}
	}
	if cols := csvHeader(h, whole); cols != nil {
		return TypeCSV, cols
	}
	return TypeText, nil
}

// completeLines splits b into lines, dropping a last line that may be cut
// (when b is not the whole result) and empty lines.
func completeLines(b []byte, whole bool) [][]byte {
	if !whole {
		i := bytes.LastIndexByte(b, '\n')
		if i < 0 {
			return nil
		}
		b = b[:i]
	}
	var out [][]byte
	for l := range bytes.SplitSeq(b, nl) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// csvHeader returns the header if the complete lines of b parse as CSV
// with at least two columns and the same number of fields in every record
// (at least a header and one row).
func csvHeader(b []byte, whole bool) []string {
	if !whole {
		i := bytes.LastIndexByte(b, '\n')
		if i < 0 {
			return nil
		}
		b = b[:i+1]
	}
	first, _, _ := bytes.Cut(b, nl)
	if !bytes.ContainsRune(first, ',') {
		return nil
	}
	r := csv.NewReader(bytes.NewReader(b))
	header, err := r.Read()
	if err != nil || len(header) < 2 {
		return nil
	}
	header = append([]string(nil), header...)
	rows := 0
	for {
		_, err := r.Read()
		if err != nil {
			if err == io.EOF {
				break
			}
			return nil // a sample cut inside a quoted field is not CSV we trust
		}
		rows++
	}
	if rows == 0 {
		return nil
	}
	return header
}

// firstObjectKeys returns the keys of the JSON object at the start of b
// (after spaces), or nil.
func firstObjectKeys(b []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		k, ok := tok.(string)
		if !ok {
			return keys
		}
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}

// headPreview returns about n bytes from the start of b, ending at a line
// end when one is in the second half, and on a UTF-8 boundary.
func headPreview(b []byte, n int) (string, bool) {
	if len(b) <= n {
		return string(b), false
	}
	p := b[:n]
	if i := bytes.LastIndexByte(p, '\n'); i >= n/2 {
		p = p[:i+1]
	}
	for len(p) > 0 && !utf8.Valid(p[len(p)-min(len(p), 3):]) {
		p = p[:len(p)-1]
	}
	return string(p), true
}

// tailPreview returns about n bytes from the end of b, starting after a
// line end when one is in the first half, and on a UTF-8 boundary.
func tailPreview(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < n/2 {
			b = b[i+1:]
		}
	}
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	return string(b)
}

// envelope is what the model receives instead of a spilled result.
func (m *Meta) envelope(head, tail []byte, preview int, cols []string) string {
	var b strings.Builder
	status := ""
	if m.IsError {
		status = " (an error result)"
	}
	fmt.Fprintf(&b, "[result spilled: %s returned %s bytes in %s lines%s, too large to show in full]\n",
		m.Tool, group(m.Size), group(m.Lines), status)
	fmt.Fprintf(&b, "id: %s\n", m.ID)
	fmt.Fprintf(&b, "type: %s\n", m.Type)
	if len(cols) > 0 {
		shown, more := cols, ""
		if len(shown) > 40 {
			shown, more = shown[:40], fmt.Sprintf(", … (%d more)", len(cols)-40)
		}
		fmt.Fprintf(&b, "columns: %s%s\n", strings.Join(shown, ", "), more)
	}
	fmt.Fprintf(&b, "sha256: %s\n", m.SHA256)
	hp, cut := headPreview(head, preview)
	fmt.Fprintf(&b, "--- head ---\n%s", strings.ToValidUTF8(hp, "\uFFFD"))
	if !strings.HasSuffix(hp, "\n") {
		b.WriteString("\n")
	}
	if cut {
		tp := tailPreview(tail, preview)
		fmt.Fprintf(&b, "--- tail ---\n%s", strings.ToValidUTF8(tp, "\uFFFD"))
		if !strings.HasSuffix(tp, "\n") {
			b.WriteString("\n")
		}
	}
	b.WriteString("--- end of preview ---\n")
	ops := "slice (bytes or lines), search (regex with context)"
	if m.Type != TypeText {
		ops += "; columns, rows, count, aggregate (with where filters)"
	}
	fmt.Fprintf(&b, "Read more with the read_result tool: {\"id\": %q, \"op\": ...}; ops: %s.", m.ID, ops)
	return b.String()
}

// group formats n with thousands separators.
func group(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// readerSize is the buffer of bufio readers over stored results.
const readerSize = 256 << 10

func newBufReader(f File) *bufio.Reader { return bufio.NewReaderSize(f, readerSize) }
