package spill

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// cell is one value of a row.
type cell struct {
	text  string          // the value as text (JSON strings unquoted)
	raw   json.RawMessage // the JSON value as stored; nil for CSV
	num   float64
	isNum bool
	null  bool
}

// field is a named cell of a row.
type field struct {
	key string
	c   cell
}

// rowReader streams the rows of a tabular result. The fields returned by
// next are valid until the following call.
type rowReader interface {
	// next returns the next row, or io.EOF after the last.
	next() ([]field, error)
	// header returns the CSV header, or nil for JSON (whose rows each have
	// their own keys).
	header() []string
}

// newRowReader returns a reader of the rows of f by type.
func newRowReader(f File, m *Meta) (rowReader, error) {
	switch m.Type {
	case TypeCSV:
		return newCSVRows(f, m.ID)
	case TypeJSON:
		return newJSONArrayRows(f, m.ID)
	case TypeJSONL:
		return newJSONLRows(f, m.ID), nil
	}
	return nil, fmt.Errorf("%w: result %s is %s; tabular operations read CSV, a JSON array or JSON lines (use slice or search)", ErrNotTabular, m.ID, m.Type)
}

// ---- CSV ----

type csvRows struct {
	id   string
	r    *csv.Reader
	cols []string
	row  int64
	buf  []field
}

func newCSVRows(rd io.Reader, id string) (*csvRows, error) {
	r := csv.NewReader(bufio.NewReaderSize(rd, readerSize))
	r.ReuseRecord = true
	r.FieldsPerRecord = 0
	h, err := r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FormatError{ID: id, Type: TypeCSV, Row: -1, Line: 1, Err: errors.New("no header")}
		}
		return nil, csvError(id, -1, err)
	}
	cols := slices.Clone(h)
	if len(cols) > 0 {
		cols[0] = strings.TrimPrefix(cols[0], "\ufeff")
	}
	return &csvRows{id: id, r: r, cols: cols, buf: make([]field, len(cols))}, nil
}

func csvError(id string, row int64, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &FormatError{ID: id, Type: TypeCSV, Row: row, Line: int64(pe.StartLine), Err: pe.Err}
	}
	return &FormatError{ID: id, Type: TypeCSV, Row: row, Err: err}
}

func (c *csvRows) header() []string { return c.cols }

func (c *csvRows) next() ([]field, error) {
	rec, err := c.r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, csvError(c.id, c.row, err)
	}
	c.row++
	for i, v := range rec {
		c.buf[i] = field{key: c.cols[i], c: textCell(v)}
	}
	return c.buf, nil
}

// textCell makes a cell of a CSV value; it is numeric when it parses as a
// finite number.
func textCell(v string) cell {
	c := cell{text: v}
	if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		c.num, c.isNum = f, true
	}
	return c
}

// ---- JSON ----

// jsonCell makes a cell of one JSON value.
func jsonCell(raw json.RawMessage) (cell, error) {
	c := cell{raw: raw}
	if len(raw) == 0 {
		return c, errors.New("empty value")
	}
	switch raw[0] {
	case '"':
		if err := json.Unmarshal(raw, &c.text); err != nil {
			return c, err
		}
	case 'n':
		c.null = true
	case 't', 'f':
		c.text = string(raw)
	case '{', '[':
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return c, err
		}
		c.text = b.String()
		c.raw = b.Bytes()
	default:
		c.text = string(raw)
		f, err := strconv.ParseFloat(c.text, 64)
		if err != nil {
			return c, fmt.Errorf("bad number %s", quote(c.text))
		}
		if !math.IsInf(f, 0) {
			c.num, c.isNum = f, true
		}
	}
	return c, nil
}

// jsonRow splits one JSON value into fields: an object by its keys, in
// order; anything else as the single column "value".
func jsonRow(raw []byte, buf []field) ([]field, error) {
	raw = bytes.TrimSpace(raw)
	buf = buf[:0]
	if len(raw) == 0 || raw[0] != '{' {
		c, err := jsonCell(raw)
		if err != nil {
			return nil, err
		}
		return append(buf, field{key: "value", c: c}), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("object key is %T", tok)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		c, err := jsonCell(v)
		if err != nil {
			return nil, err
		}
		buf = append(buf, field{key: k, c: c})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one value")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the value")
	}
	return buf, nil
}

// jsonArrayRows streams the elements of a JSON array with json.Decoder:
// only one element is in memory at a time.
type jsonArrayRows struct {
	id   string
	dec  *json.Decoder
	row  int64
	buf  []field
	done bool
}

func newJSONArrayRows(rd io.Reader, id string) (*jsonArrayRows, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(rd, readerSize))
	tok, err := dec.Token()
	if err != nil {
		return nil, &FormatError{ID: id, Type: TypeJSON, Row: -1, Err: err}
	}
	if tok != json.Delim('[') {
		return nil, fmt.Errorf("%w: result %s is a JSON value but not an array; use slice or search", ErrNotTabular, id)
	}
	return &jsonArrayRows{id: id, dec: dec}, nil
}

func (j *jsonArrayRows) header() []string { return nil }

func (j *jsonArrayRows) next() ([]field, error) {
	if j.done {
		return nil, io.EOF
	}
	if !j.dec.More() {
		j.done = true
		if _, err := j.dec.Token(); err != nil {
			return nil, j.fail(err)
		}
		if _, err := j.dec.Token(); !errors.Is(err, io.EOF) {
			return nil, j.fail(errors.New("data after the end of the array"))
		}
		return nil, io.EOF
	}
	var raw json.RawMessage
	if err := j.dec.Decode(&raw); err != nil {
		j.done = true
		return nil, j.fail(err)
	}
	fs, err := jsonRow(raw, j.buf)
	if err != nil {
		j.done = true
		return nil, j.fail(err)
	}
	j.buf = fs
	j.row++
	return fs, nil
}

func (j *jsonArrayRows) fail(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		err = fmt.Errorf("%v (near byte offset %d)", se, se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = errors.New("unexpected end of data (the array is not closed)")
	}
	return &FormatError{ID: j.id, Type: TypeJSON, Row: j.row, Err: err}
}

// maxRowLine bounds one JSON line, so memory stays bounded.
const maxRowLine = 16 << 20

// jsonlRows reads one JSON value per line; empty lines are skipped.
type jsonlRows struct {
	id   string
	r    *bufio.Reader
	line int64
	row  int64
	lb   []byte
	buf  []field
}

func newJSONLRows(rd io.Reader, id string) *jsonlRows {
	return &jsonlRows{id: id, r: bufio.NewReaderSize(rd, readerSize)}
}

func (j *jsonlRows) header() []string { return nil }

func (j *jsonlRows) next() ([]field, error) {
	for {
		j.lb = j.lb[:0]
		var err error
		for {
			var chunk []byte
			chunk, err = j.r.ReadSlice('\n')
			if len(j.lb)+len(chunk) > maxRowLine {
				return nil, &FormatError{ID: j.id, Type: TypeJSONL, Row: j.row, Line: j.line + 1, Err: fmt.Errorf("line longer than %d bytes", maxRowLine)}
			}
			j.lb = append(j.lb, chunk...)
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if len(j.lb) == 0 && err != nil {
			return nil, io.EOF
		}
		j.line++
		if len(bytes.TrimSpace(j.lb)) == 0 {
			if err != nil {
				return nil, io.EOF
			}
			continue
		}
		fs, perr := jsonRow(j.lb, j.buf)
		if perr != nil {
			return nil, &FormatError{ID: j.id, Type: TypeJSONL, Row: j.row, Line: j.line, Err: perr}
		}
		j.buf = fs
		j.row++
		return fs, nil
	}
}

// ---- operations ----

func lookupField(fs []field, key string) (cell, bool) {
	for i := range fs {
		if fs[i].key == key {
			return fs[i].c, true
		}
	}
	return cell{}, false
}

// filter is a compiled condition.
type filter struct {
	col string
	op  string
	v   cell
}

func compileFilters(conds []condition) ([]filter, error) {
	out := make([]filter, len(conds))
	for i, c := range conds {
		v, err := jsonCell(c.Value)
		if err != nil {
			return nil, &ArgError{Field: fmt.Sprintf("where[%d]", i), Reason: fmt.Sprintf("value: %v", err)}
		}
		out[i] = filter{col: c.Column, op: c.Op, v: v}
	}
	return out, nil
}

// match reports whether a row passes every filter. A missing column or a
// null cell equals only null, and passes no other test than ne.
func match(fs []field, filters []filter) bool {
	for _, f := range filters {
		c, ok := lookupField(fs, f.col)
		if !ok || c.null {
			isNull := f.v.null
			switch f.op {
			case "eq":
				if !isNull {
					return false
				}
			case "ne":
				if isNull {
					return false
				}
			default:
				return false
			}
			continue
		}
		if f.v.null {
			if f.op != "ne" {
				return false
			}
			continue
		}
		var cmp int
		if c.isNum && f.v.isNum {
			switch {
			case c.num < f.v.num:
				cmp = -1
			case c.num > f.v.num:
				cmp = 1
			}
		} else {
			cmp = strings.Compare(c.text, f.v.text)
		}
		var pass bool
		switch f.op {
		case "eq":
			pass = cmp == 0
		case "ne":
			pass = cmp != 0
		case "contains":
			pass = strings.Contains(c.text, f.v.text)
		case "gt":
			pass = cmp > 0
		case "gte":
			pass = cmp >= 0
		case "lt":
			pass = cmp < 0
		case "lte":
			pass = cmp <= 0
		}
		if !pass {
			return false
		}
	}
	return true
}

// colSet tracks the columns seen in JSON rows, up to a bound.
type colSet struct {
	order []string
	seen  map[string]string // column -> kind
}

const maxTrackedColumns = 10_000

func (s *colSet) add(fs []field) {
	if s.seen == nil {
		s.seen = map[string]string{}
	}
	for _, f := range fs {
		k := kindOf(f.c)
		old, ok := s.seen[f.key]
		switch {
		case !ok:
			if len(s.order) >= maxTrackedColumns {
				continue
			}
			s.order = append(s.order, f.key)
			s.seen[f.key] = k
		case old != k && k != "null" && old != "null" && old != "mixed":
			s.seen[f.key] = "mixed"
		case old == "null":
			s.seen[f.key] = k
		}
	}
}

func kindOf(c cell) string {
	switch {
	case c.null:
		return "null"
	case c.isNum:
		return "number"
	case c.raw == nil:
		return "text"
	}
	switch c.raw[0] {
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "number"
}

// table runs columns, rows, count and aggregate.
func table(ctx context.Context, f File, m *Meta, a *args, out *output) error {
	rr, err := newRowReader(f, m)
	if err != nil {
		return err
	}
	filters, err := compileFilters(a.Where)
	if err != nil {
		return err
	}
	where := describeWhere(filters)
	out.reserveMore(len(where))
	// Column names are checked against the CSV header up front, and
	// against the keys seen in JSON rows after a full scan.
	var refs []string
	for _, c := range a.Where {
		refs = append(refs, c.Column)
	}
	refs = append(refs, a.Columns...)
	if a.Column != "" {
		refs = append(refs, a.Column)
	}
	if h := rr.header(); h != nil {
		for _, r := range refs {
			if !slices.Contains(h, r) {
				return fmt.Errorf("%w: %s; result %s has columns %s", ErrUnknownColumn, quote(r), m.ID, nameList(h, len(h)))
			}
		}
	}
	var cols colSet
	checkJSONCols := func() error {
		if rr.header() != nil {
			return nil
		}
		for _, r := range refs {
			if _, ok := cols.seen[r]; !ok {
				return fmt.Errorf("%w: %s appears in no row of result %s; its columns are %s", ErrUnknownColumn, quote(r), m.ID, nameList(cols.order, 50))
			}
		}
		return nil
	}
	switch a.Op {
	case opColumns:
		return columnsOp(ctx, rr, m, out)
	case opRows:
		return rowsOp(ctx, rr, m, a, filters, where, &cols, checkJSONCols, out)
	}
	// count and aggregate scan every row.
	var matched, numeric, other int64
	var sum, lo, hi float64
	lo, hi = math.Inf(1), math.Inf(-1)
	total, err := scanRows(ctx, rr, filters, &cols, func(_ int64, fs []field) bool {
		matched++
		if a.Op != opAggregate {
			return true
		}
		c, ok := lookupField(fs, a.Column)
		switch {
		case !ok || c.null:
		case c.isNum:
			numeric++
			sum += c.num
			lo, hi = min(lo, c.num), max(hi, c.num)
		default:
			other++
		}
		return true
	})
	if err != nil {
		return err
	}
	if err := checkJSONCols(); err != nil {
		return err
	}
	if a.Op == opCount {
		fmt.Fprintf(&out.head, "count: %d of %d rows%s (result %s)", matched, total, where, m.ID)
		return nil
	}
	fmt.Fprintf(&out.head, "aggregate of %s over %d of %d rows%s (result %s): %d numeric values", quote(a.Column), matched, total, where, m.ID, numeric)
	if other > 0 {
		fmt.Fprintf(&out.head, ", %d non-numeric values ignored", other)
	}
	out.head.WriteString("\n")
	if numeric == 0 {
		out.head.WriteString("no numeric values: sum, min, max and mean are undefined")
		return nil
	}
	vals := map[string]float64{"sum": sum, "min": lo, "max": hi, "mean": sum / float64(numeric)}
	var parts []string
	for _, fn := range aggFuncs {
		if a.Func == "" || a.Func == fn {
			parts = append(parts, fn+" = "+formatNum(vals[fn]))
		}
	}
	out.head.WriteString(strings.Join(parts, "\n"))
	return nil
}

func formatNum(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', 12, 64)
}

// whereMax bounds the description of the where conditions in a reply.
const whereMax = 1024

// describeWhere describes the conditions for a reply: " where a eq 1 and
// b contains "x"", with long columns and values cut (quote, clip) and
// conditions past about whereMax bytes counted, not listed.
func describeWhere(filters []filter) string {
	if len(filters) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(" where ")
	for i, f := range filters {
		if i > 0 {
			if b.Len() > whereMax {
				fmt.Fprintf(&b, " and %d more conditions", len(filters)-i)
				break
			}
			b.WriteString(" and ")
		}
		b.WriteString(clip(f.col, quoteMax) + " " + f.op + " ")
		switch {
		case f.v.null:
			b.WriteString("null")
		case f.v.raw[0] == '"':
			b.WriteString(quote(f.v.text))
		default:
			b.WriteString(clip(f.v.text, quoteMax))
		}
	}
	return b.String()
}

// columnSample is how many rows columns reads to describe JSON columns
// and the kinds of CSV columns.
const columnSample = 10_000

func columnsOp(ctx context.Context, rr rowReader, m *Meta, out *output) error {
	h := rr.header()
	var cols colSet
	kinds := map[string]string{}
	rows := 0
	for ; rows < columnSample; rows++ {
		if rows&0xfff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		fs, err := rr.next()
		if err == io.EOF { // the end; a FormatError may wrap io.EOF too
			break
		}
		if err != nil {
			return err
		}
		if h == nil {
			cols.add(fs)
			continue
		}
		for _, f := range fs {
			switch k := kinds[f.key]; {
			case strings.TrimSpace(f.c.text) == "":
			case f.c.isNum && (k == "" || k == "number"):
				kinds[f.key] = "number"
			default:
				kinds[f.key] = "text"
			}
		}
	}
	names := h
	if h == nil {
		names = cols.order
		kinds = cols.seen
	}
	scope := fmt.Sprintf("from the first %d rows", rows)
	if rows < columnSample {
		scope = fmt.Sprintf("all %d rows", rows)
	}
	fmt.Fprintf(&out.head, "%d columns of result %s (%s; kinds %s):\n", len(names), m.ID, m.Type, scope)
	for _, n := range names {
		k := kinds[n]
		if k == "" {
			k = "empty"
		}
		if !out.line(fmt.Sprintf("%s (%s)", n, k)) {
			out.note = "too many columns to list"
			break
		}
	}
	return nil
}

// maxRowShow bounds one printed row.
const maxRowShow = 4000

func rowsOp(ctx context.Context, rr rowReader, m *Meta, a *args, filters []filter, where string, cols *colSet, check func() error, out *output) error {
	var matched, shown int64
	var b strings.Builder
	complete := true
	_, err := scanRows(ctx, rr, filters, cols, func(idx int64, fs []field) bool {
		matched++
		if matched <= a.Offset {
			return true
		}
		b.Reset()
		fmt.Fprintf(&b, "[%d] ", idx)
		whole := writeRow(&b, fs, a.Columns, maxRowShow)
		line := b.String()
		if !whole {
			line += "…"
		}
		if !out.line(line) {
			// The output is full: the rows read so far are not all the
			// matching rows, so the count is not final either.
			out.note = fmt.Sprintf("continue with offset=%d", a.Offset+shown)
			complete = false
			return false
		}
		shown++
		if shown >= a.Limit || out.full() {
			complete = false
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	if complete {
		if err := check(); err != nil {
			return err
		}
		if a.Offset > 0 && matched <= a.Offset {
			return fmt.Errorf("%w: row offset %d; %d rows of result %s match%s", ErrOutOfRange, a.Offset, matched, m.ID, where)
		}
	}
	if complete {
		fmt.Fprintf(&out.head, "%d rows from offset %d of %d matching rows%s (result %s; [n] is the row's index in the result):\n",
			shown, a.Offset, matched, where, m.ID)
	} else {
		fmt.Fprintf(&out.head, "%d rows from offset %d of the matching rows%s (result %s; [n] is the row's index in the result); more may follow: continue with offset=%d\n",
			shown, a.Offset, where, m.ID, a.Offset+shown)
	}
	return nil
}

// scanRows reads the rows of rr in order and calls visit with each row
// that passes filters and its index in the result; visit returns false to
// stop. It records the columns of JSON rows in cols and checks ctx every
// 4096 rows. It returns how many rows it read.
func scanRows(ctx context.Context, rr rowReader, filters []filter, cols *colSet, visit func(idx int64, fs []field) bool) (read int64, err error) {
	for {
		if read&0xfff == 0 {
			if err := ctx.Err(); err != nil {
				return read, err
			}
		}
		fs, err := rr.next()
		if err == io.EOF { // the end; a FormatError may wrap io.EOF too
			return read, nil
		}
		if err != nil {
			return read, err
		}
		read++
		if rr.header() == nil {
			cols.add(fs)
		}
		if match(fs, filters) && !visit(read-1, fs) {
			return read, nil
		}
	}
}

// writeRow writes a row as a JSON object: JSON values as stored, CSV
// values as strings; projected to cols when given (a missing column is
// null). It stops at limit bytes of b, cutting on a UTF-8 boundary, and
// reports whether the row is whole: the work and memory spent on a row
// with huge names or values (or a projection of huge column names) are
// bounded by limit.
func writeRow(b *strings.Builder, fs []field, cols []string, limit int) bool {
	w := rowWriter{b: b, limit: limit}
	w.str("{")
	put := func(i int, k string, c cell, ok bool) {
		if i > 0 {
			w.str(",")
		}
		w.jsonString(k)
		w.str(":")
		switch {
		case !ok:
			w.str("null")
		case c.raw != nil:
			w.bytes(c.raw)
		default:
			w.jsonString(c.text)
		}
	}
	if cols == nil {
		for i, f := range fs {
			if put(i, f.key, f.c, true); w.cut {
				break
			}
		}
	} else {
		for i, k := range cols {
			c, ok := lookupField(fs, k)
			if put(i, k, c, ok); w.cut {
				break
			}
		}
	}
	w.str("}")
	return !w.cut
}

// rowWriter writes to b up to limit bytes.
type rowWriter struct {
	b     *strings.Builder
	limit int
	cut   bool
}

func (w *rowWriter) str(s string) {
	if w.cut {
		return
	}
	if room := w.limit - w.b.Len(); len(s) > room {
		w.b.WriteString(cutUTF8(s, room))
		w.cut = true
		return
	}
	w.b.WriteString(s)
}

func (w *rowWriter) bytes(p []byte) {
	if room := w.limit - w.b.Len(); len(p) > room {
		p = p[:max(room+1, 0)] // enough to cut; no more is copied
	}
	w.str(string(p))
}

// jsonString writes s as a JSON string, encoding only what can fit.
func (w *rowWriter) jsonString(s string) {
	if w.cut {
		return
	}
	room := w.limit - w.b.Len()
	short := cutUTF8(s, max(room, 0))
	enc, _ := json.Marshal(short)
	if len(short) < len(s) {
		enc = enc[:len(enc)-1] // an unclosed string: more follows
	}
	w.str(string(enc))
	if len(short) < len(s) {
		w.cut = true
	}
}
