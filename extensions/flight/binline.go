package flight

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/crc32"
	"slices"
	"time"
)

// The recorder's ring and journal hold binary event lines (journal
// format 2; recordings written before it hold JSON lines, which
// [ParseEvent] still reads). A binary line is the byte binLineVersion,
// the event's fields, the CRC-32C of all that and a newline. No byte of a
// line but its last is a newline, a carriage return or binEsc unless a
// string value holds it, and then it is escaped (binEsc followed by
// escNewline, escCR or escEsc): so the journal's framing stays the JSON
// lines' (a line per event, a torn last line has no newline; a line
// reader that drops a carriage return before the newline, as
// bufio.Scanner does, drops nothing), and a damaged line fails its
// checksum instead of reading as another event.
//
// A field is a tag byte (0x80 | the field's number << 1 | 1 when a byte
// string follows, 0 when a number does) and its value; fields that are
// empty in the event are left out, as the JSON line leaves them out. A
// number is written seven bits a byte, low bits first, with the high bit
// set, and its last six bits as 0x40 | bits (see appendNum); signed ones
// zigzag. A byte string is its length (as written, escapes included) and
// its bytes. What the recorder holds raw (the trace and span ID, the
// prefix key, the time's Unix nanoseconds) is written as 64-bit words,
// each six bits a byte as 0x40 | bits (putSixes), not as hex or text; the
// checksum is written so too. Every byte that is not a string's is so
// 0x40 or more. A reader skips fields it does not know.
//
// BenchmarkEncodeRunEvents: a run's eight lines take about 700 bytes and
// 14,400 instructions, against about 1,700 bytes and 18,100 instructions
// for the JSON lines the journal held before (2,800 bytes as whole
// lines).
const (
	binLineVersion = 0x01 // a JSON line starts with '{' or white space
	binEsc         = 0x1b
	escNewline     = 0x01
	escEsc         = 0x02
	escCR          = 0x03
)

// The fields of a binary line. Their numbers are the format: a new field
// goes at the end (numbers stay below 64), none is removed or reordered
// (TestBinLineGolden).
const (
	bfSeq = iota + 1
	bfTimeSec
	bfTimeNsec
	bfKind    // one of the recorder's kinds, by binKinds
	bfKindStr // any other kind
	bfAgent
	bfSession
	bfRun
	bfRef
	bfStep
	bfAttempt
	bfTraceRaw
	bfTrace
	bfSpanRaw
	bfSpan
	bfStatus
	bfDuration
	bfModel
	bfProvider
	bfResponseID
	bfStopReason
	bfMessages
	bfPrefixRaw
	bfPrefix
	bfInputTokens
	bfOutputTokens
	bfCacheReadTokens
	bfCacheCreationTokens
	bfReasoningTokens
	bfTool
	bfCallID
	bfText
	bfSize
	bfTruncated
	bfParts // the JSON array of the event's parts
	bfError
	bfErrorType
	bfExtension
	bfOp
	bfFailedEvent
	bfReason
	bfPath
	bfTime // Unix nanoseconds as a word (see appendBinWord), for a time that has them (else bfTimeSec and bfTimeNsec)
)

// The Unix seconds within which a time has Unix nanoseconds (years 1678 to
// 2262), with a second to spare at each end.
const (
	minUnixNanoSec = -9223372036 + 1
	maxUnixNanoSec = 9223372036 - 1
)

// binKinds numbers the recorder's kinds (from 1) for bfKind. Numbers are
// never reused: a new kind goes at the end.
var binKinds = [...]Kind{KindRunStart, KindRunEnd, KindModelRequest, KindModelResponse, KindToolCall, KindToolResult,
	KindApproval, KindError, KindHookFailed, KindExtensionError, KindIncident, KindRecovered}

// binKindCode returns k's number in binKinds (0: not there). A switch,
// not a search of binKinds: the search cost ~620 instructions a run of
// eight events (BenchmarkEncodeRunEvents). TestBinLineAsJSONLine, whose
// events have every kind, fails when the two disagree.
func binKindCode(k Kind) uint64 {
	switch k {
	case KindRunStart:
		return 1
	case KindRunEnd:
		return 2
	case KindModelRequest:
		return 3
	case KindModelResponse:
		return 4
	case KindToolCall:
		return 5
	case KindToolResult:
		return 6
	case KindApproval:
		return 7
	case KindError:
		return 8
	case KindHookFailed:
		return 9
	case KindExtensionError:
		return 10
	case KindIncident:
		return 11
	case KindRecovered:
		return 12
	}
	return 0
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func tagNum(f int) byte   { return byte(0x80 | f<<1) }
func tagBytes(f int) byte { return byte(0x80 | f<<1 | 1) }

// appendNum appends n seven bits a byte, low bits first, each byte with
// its high bit set, then its last six bits or fewer as 0x40 | bits: no
// byte is below 0x40.
func appendNum(dst []byte, n uint64) []byte {
	for n >= 0x40 {
		dst = append(dst, 0x80|byte(n&0x7f))
		n >>= 7
	}
	return append(dst, 0x40|byte(n))
}

// num decodes the number at the start of b and returns it and its
// length (0: malformed).
func num(b []byte) (uint64, int) {
	var n uint64
	for i, shift := 0, uint(0); i < len(b) && i < 11; i, shift = i+1, shift+7 {
		c := b[i]
		switch {
		case c >= 0x80:
			n |= uint64(c&0x7f) << shift
		case c >= 0x40:
			if shift == 63 && c > 0x41 {
				return 0, 0 // past 64 bits
			}
			return n | uint64(c&0x3f)<<shift, i + 1
		default:
			return 0, 0
		}
	}
	return 0, 0
}

func appendBinUint(dst []byte, f int, n uint64) []byte {
	if n == 0 {
		return dst
	}
	return appendNum(append(dst, tagNum(f)), n)
}

func appendBinInt(dst []byte, f int, n int64) []byte {
	if n == 0 {
		return dst
	}
	return appendNum(append(dst, tagNum(f)), uint64(n<<1^n>>63))
}

// sixes64 is the length of a 64-bit word written six bits a byte.
const sixes64 = 11

// putSixes writes v six bits a byte as 0x40 | bits, low bits first, into
// out[:sixes64]. (Assembling the bytes in registers and storing them as
// two words measured no faster, BenchmarkRecord and
// BenchmarkEncodeRunEvents, 2026-12-04.)
func putSixes(out []byte, v uint64) {
	_ = out[sixes64-1]
	out[0] = 0x40 | byte(v&0x3f)
	out[1] = 0x40 | byte(v>>6&0x3f)
	out[2] = 0x40 | byte(v>>12&0x3f)
	out[3] = 0x40 | byte(v>>18&0x3f)
	out[4] = 0x40 | byte(v>>24&0x3f)
	out[5] = 0x40 | byte(v>>30&0x3f)
	out[6] = 0x40 | byte(v>>36&0x3f)
	out[7] = 0x40 | byte(v>>42&0x3f)
	out[8] = 0x40 | byte(v>>48&0x3f)
	out[9] = 0x40 | byte(v>>54&0x3f)
	out[10] = 0x40 | byte(v>>60)
}

// getSixes reads what putSixes wrote; false when a byte is not of the
// form 0x40 | bits or the bits exceed 64.
func getSixes(b []byte) (uint64, bool) {
	_ = b[sixes64-1]
	var v uint64
	for i := range sixes64 {
		c := b[i]
		if c&0xc0 != 0x40 {
			return 0, false
		}
		v |= uint64(c&0x3f) << (6 * i)
	}
	return v, b[sixes64-1]&0x30 == 0 // 10 × 6 + 4 bits
}

// appendSixes appends b, whose length is a multiple of eight, as its
// little-endian 64-bit words written by putSixes.
func appendSixes(dst, b []byte) []byte {
	n, size := len(dst), len(b)/8*sixes64
	if cap(dst)-n < size {
		dst = slices.Grow(dst, size)
	}
	dst = dst[:n+size]
	for len(b) >= 8 {
		putSixes(dst[n:], binary.LittleEndian.Uint64(b))
		b, n = b[8:], n+sixes64
	}
	return dst
}

// appendBinWord appends field f: the 64-bit word v, as appendSixes
// writes it. It is appendBinRaw of v's eight bytes without the byte copy
// and the loop: the time of every event goes through it, and going
// through appendBinRaw instead cost ~390 instructions a run of eight
// events (BenchmarkEncodeRunEvents, 14,360 against 14,750).
func appendBinWord(dst []byte, f int, v uint64) []byte {
	n := len(dst)
	if cap(dst)-n < 2+sixes64 {
		dst = slices.Grow(dst, 2+sixes64)
	}
	dst = dst[:n+2+sixes64]
	dst[n], dst[n+1] = tagBytes(f), 0x40|sixes64
	putSixes(dst[n+2:], v)
	return dst
}

// fromSixes decodes appendSixes' output into dst; false when s does not
// hold len(dst) bytes so written.
func fromSixes(dst, s []byte) bool {
	if len(dst)%8 != 0 || len(s) != len(dst)/8*sixes64 {
		return false
	}
	for i := 0; i < len(dst); i += 8 {
		v, ok := getSixes(s[i/8*sixes64:])
		if !ok {
			return false
		}
		binary.LittleEndian.PutUint64(dst[i:], v)
	}
	return true
}

// appendBinRaw appends field f: raw bytes (a multiple of eight), six bits
// a byte.
func appendBinRaw(dst []byte, f int, b []byte) []byte {
	dst = append(dst, tagBytes(f), 0x40|byte(len(b)/8*sixes64))
	return appendSixes(dst, b)
}

// escTab marks the bytes a string value escapes.
var escTab = [256]uint8{'\n': 1, '\r': 1, binEsc: 1}

// hasEsc reports whether s holds a byte that escTab marks, eight bytes a
// step.
func hasEsc[S string | []byte](s S) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		a, b, c := x^('\n'*ones), x^('\r'*ones), x^(binEsc*ones)
		if ((a-ones)&^a|(b-ones)&^b|(c-ones)&^c)&highs != 0 {
			return true
		}
	}
	for ; i < len(s); i++ {
		if escTab[s[i]] != 0 {
			return true
		}
	}
	return false
}

// appendBinBytes appends field f: s, its newlines, carriage returns and
// binEsc bytes escaped.
func appendBinBytes[S string | []byte](dst []byte, f int, s S) []byte {
	if !hasEsc(s) {
		return append(appendNum(append(dst, tagBytes(f)), uint64(len(s))), s...)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		n += int(escTab[s[i]])
	}
	dst = appendNum(append(dst, tagBytes(f)), uint64(len(s)+n))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\n':
			dst = append(dst, binEsc, escNewline)
		case '\r':
			dst = append(dst, binEsc, escCR)
		case binEsc:
			dst = append(dst, binEsc, escEsc)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// appendBinStr appends field f with s redacted by red (when not nil),
// unless s is empty. As with appendStr, the test is inlined into the
// caller.
func appendBinStr(dst []byte, f int, s string, red *Redactor) []byte {
	if s == "" {
		return dst
	}
	return appendBinStrValue(dst, f, s, red)
}

func appendBinStrValue(dst []byte, f int, s string, red *Redactor) []byte {
	if red != nil {
		s = red.String(s)
	}
	return appendBinBytes(dst, f, s)
}

// appendBinField appends field f as appendBinStr does with red, through
// the cached encodings of the last two values of the cache's field cf
// (see encCache.fields).
func (c *encCache) appendBinField(dst []byte, cf, f int, s string, red *Redactor) []byte {
	if s == "" {
		return dst
	}
	return c.appendBinFieldValue(dst, cf, f, s, red)
}

func (c *encCache) appendBinFieldValue(dst []byte, cf, f int, s string, red *Redactor) []byte {
	if c == nil || !c.fieldsOK || len(s) > fieldEncMax {
		return appendBinStrValue(dst, f, s, red)
	}
	es := &c.fields[cf]
	for i := range es {
		if e := &es[i]; len(e.enc) > 0 && e.n == len(s) && string(e.val[:e.n]) == s {
			return append(dst, e.enc...)
		}
	}
	e := &es[c.fieldNext[cf]]
	c.fieldNext[cf] ^= 1
	e.enc = appendBinStrValue(e.enc[:0], f, s, red)
	e.n = copy(e.val[:], s)
	return append(dst, e.enc...)
}

// appendEventBin appends e's binary line (with the newline) to dst,
// passing the same text fields as appendEvent through red, and leaving
// out what c's form says (c may be nil: nothing left out, nothing
// cached).
func appendEventBin(dst []byte, e *Event, red *Redactor, c *encCache) []byte {
	start := len(dst)
	dst = append(dst, binLineVersion)
	dst = appendBinUint(dst, bfSeq, e.Seq)
	if sec := e.Time.Unix(); sec > minUnixNanoSec && sec < maxUnixNanoSec {
		dst = appendBinWord(dst, bfTime, uint64(e.Time.UnixNano()))
	} else if !e.Time.IsZero() {
		dst = appendBinInt(dst, bfTimeSec, sec)
		dst = appendBinUint(dst, bfTimeNsec, uint64(e.Time.Nanosecond()))
	}
	if k := binKindCode(e.Kind); k != 0 {
		dst = append(dst, tagNum(bfKind), 0x40|byte(k))
	} else {
		dst = c.appendBinField(dst, fieldKind, bfKindStr, string(e.Kind), nil)
	}
	form := c.lineForm()
	if !form.bare {
		dst = appendBinStr(dst, bfAgent, e.Agent, nil)
		dst = appendBinStr(dst, bfSession, e.SessionID, nil)
	}
	ref := e.Ref
	if form.ref != 0 {
		ref = form.ref
	} else {
		dst = appendBinStr(dst, bfRun, e.RunID, nil)
	}
	dst = appendBinUint(dst, bfRef, ref)
	dst = appendBinInt(dst, bfStep, int64(e.Step))
	dst = appendBinInt(dst, bfAttempt, int64(e.Attempt))
	if e.TraceID == "" && e.tid.IsValid() {
		if form.ref == 0 {
			dst = appendBinRaw(dst, bfTraceRaw, e.tid[:])
		}
		dst = appendBinRaw(dst, bfSpanRaw, e.sid[:])
	} else {
		if form.ref == 0 {
			dst = appendBinStr(dst, bfTrace, e.TraceID, nil)
		}
		dst = appendBinStr(dst, bfSpan, e.SpanID, nil)
	}
	dst = c.appendBinField(dst, fieldStatus, bfStatus, e.Status, nil)
	dst = appendBinInt(dst, bfDuration, int64(e.Duration))
	dst = c.appendBinField(dst, fieldModel, bfModel, e.Model, red)
	dst = c.appendBinField(dst, fieldProvider, bfProvider, e.Provider, red)
	dst = appendBinStr(dst, bfResponseID, e.ResponseID, red)
	dst = c.appendBinField(dst, fieldStopReason, bfStopReason, e.StopReason, red)
	dst = appendBinInt(dst, bfMessages, int64(e.Messages))
	if e.Prefix == "" && e.hasPrefix {
		dst = appendBinRaw(dst, bfPrefixRaw, e.prefix[:])
	} else {
		dst = appendBinStr(dst, bfPrefix, e.Prefix, nil)
	}
	dst = appendBinInt(dst, bfInputTokens, e.InputTokens)
	dst = appendBinInt(dst, bfOutputTokens, e.OutputTokens)
	dst = appendBinInt(dst, bfCacheReadTokens, e.CacheReadTokens)
	dst = appendBinInt(dst, bfCacheCreationTokens, e.CacheCreationTokens)
	dst = appendBinInt(dst, bfReasoningTokens, e.ReasoningTokens)
	dst = c.appendBinField(dst, fieldTool, bfTool, e.Tool, red)
	dst = c.appendBinField(dst, fieldCallID, bfCallID, e.CallID, red)
	dst = appendBinStr(dst, bfText, e.Text, red)
	dst = appendBinInt(dst, bfSize, int64(e.Size))
	if e.Truncated {
		dst = append(dst, tagNum(bfTruncated), 0x41)
	}
	if len(e.Parts) > 0 {
		dst = appendBinParts(dst, e.Parts, red)
	}
	dst = appendBinStr(dst, bfError, e.Error, red)
	dst = appendBinStr(dst, bfErrorType, e.ErrorType, nil)
	dst = appendBinStr(dst, bfExtension, e.Extension, red)
	dst = appendBinStr(dst, bfOp, e.Op, nil)
	dst = appendBinStr(dst, bfFailedEvent, e.FailedEvent, nil)
	dst = appendBinStr(dst, bfReason, e.Reason, red)
	dst = appendBinStr(dst, bfPath, e.Path, red)
	sum := crc32.Update(0, crcTable, dst[start:])
	n := len(dst)
	if cap(dst)-n < crcLen+1 {
		dst = slices.Grow(dst, crcLen+1)
	}
	dst = dst[:n+crcLen+1]
	out := dst[n : n+crcLen+1]
	out[0] = 0x40 | byte(sum&0x3f)
	out[1] = 0x40 | byte(sum>>6&0x3f)
	out[2] = 0x40 | byte(sum>>12&0x3f)
	out[3] = 0x40 | byte(sum>>18&0x3f)
	out[4] = 0x40 | byte(sum>>24&0x3f)
	out[5] = 0x40 | byte(sum>>30)
	out[6] = '\n'
	return dst
}

// appendBinParts appends the bfParts field: the JSON array appendParts
// writes.
func appendBinParts(dst []byte, parts []PartRef, red *Redactor) []byte {
	const key = `,"parts":`
	var buf [512]byte
	arr := appendParts(buf[:0], parts, red)[len(key):]
	return appendBinBytes(dst, bfParts, arr)
}

var (
	errBinLine     = errors.New("flight: malformed binary event line")
	errBinChecksum = errors.New("flight: binary event line fails its checksum")
)

// isBinLine reports whether line is a binary event line (rather than a
// JSON one).
func isBinLine(line []byte) bool { return len(line) > 0 && line[0] == binLineVersion }

// crcLen is the length of a line's checksum as written: 32 bits six a
// byte.
const crcLen = 6

// binBody checks line's form and, when verify is true, its checksum, and
// returns its fields. A line of the ring, which no disk or crash touched,
// needs no checksum.
func binBody(line []byte, verify bool) ([]byte, error) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	if len(line) < 1+crcLen || line[0] != binLineVersion {
		return nil, errBinLine
	}
	n := len(line) - crcLen
	if verify {
		var sum uint64
		for i, c := range line[n:] {
			if c&0xc0 != 0x40 {
				return nil, errBinLine
			}
			sum |= uint64(c&0x3f) << (6 * i)
		}
		if sum != uint64(crc32.Update(0, crcTable, line[:n])) {
			return nil, errBinChecksum
		}
	}
	return line[1:n], nil
}

// unescape returns the string value v without its escapes; false when
// they are malformed.
func unescape(v []byte) (string, bool) {
	i := bytes.IndexByte(v, binEsc)
	if i < 0 {
		return string(v), true
	}
	out := make([]byte, i, len(v))
	copy(out, v)
	for ; i < len(v); i++ {
		c := v[i]
		if c == binEsc {
			if i+1 == len(v) {
				return "", false
			}
			i++
			switch v[i] {
			case escNewline:
				c = '\n'
			case escCR:
				c = '\r'
			case escEsc:
				c = binEsc
			default:
				return "", false
			}
		}
		out = append(out, c)
	}
	return string(out), true
}

// binField is one field of a binary line: its number and its value.
type binField struct {
	num   int
	isStr bool
	u     uint64 // a uvarint's value
	b     []byte // a byte string's value
}

// nextBinField decodes the field at the start of b and returns it and the
// rest of b.
func nextBinField(b []byte) (binField, []byte, error) {
	if len(b) == 0 || b[0] < 0x80 {
		return binField{}, nil, errBinLine
	}
	f := binField{num: int(b[0]&0x7f) >> 1, isStr: b[0]&1 == 1}
	u, n := num(b[1:])
	if n == 0 {
		return f, nil, errBinLine
	}
	b = b[1+n:]
	if !f.isStr {
		f.u = u
		return f, b, nil
	}
	if u > uint64(len(b)) {
		return f, nil, errBinLine
	}
	f.b = b[:u]
	return f, b[u:], nil
}

// zigzag decodes a signed number.
func zigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// parseBin decodes the binary line into e (as ParseEvent decodes a JSON
// line: what the line leaves out stays empty).
func parseBin(line []byte, e *Event) error {
	b, err := binBody(line, true)
	if err != nil {
		return err
	}
	var sec int64
	var nsec uint64
	hasTime := false
	for len(b) > 0 {
		var f binField
		if f, b, err = nextBinField(b); err != nil {
			return err
		}
		if !binSetField(e, f, &sec, &nsec, &hasTime) {
			return errBinLine
		}
	}
	if hasTime {
		if nsec >= 1e9 {
			return errBinLine
		}
		e.Time = time.Unix(sec, int64(nsec)).UTC()
	}
	return nil
}

// binSetField sets the field f of e; false when f's value is not of its
// field's type. A field of an unknown number is skipped.
func binSetField(e *Event, f binField, sec *int64, nsec *uint64, hasTime *bool) bool {
	str := func(dst *string) bool {
		v, ok := unescape(f.b)
		*dst = v
		return f.isStr && ok
	}
	hexOf := func(dst *string, n int) bool {
		var raw [32]byte
		if !f.isStr || !fromSixes(raw[:n], f.b) {
			return false
		}
		*dst = hex.EncodeToString(raw[:n])
		return true
	}
	num := func(dst *int64) bool {
		*dst = zigzag(f.u)
		return !f.isStr
	}
	numInt := func(dst *int) bool {
		*dst = int(zigzag(f.u))
		return !f.isStr
	}
	switch f.num {
	case bfSeq:
		e.Seq = f.u
		return !f.isStr
	case bfTimeSec:
		*hasTime = true
		return num(sec)
	case bfTimeNsec:
		*hasTime = true
		*nsec = f.u
		return !f.isStr
	case bfTime:
		// One word, as appendBinWord wrote it.
		if !f.isStr || len(f.b) != sixes64 {
			return false
		}
		w, ok := getSixes(f.b)
		ns := int64(w)
		*hasTime = true
		*sec, *nsec = ns/1e9, uint64(ns%1e9)
		if ns < 0 && *nsec != 0 {
			*sec, *nsec = *sec-1, uint64(ns%1e9+1e9)
		}
		return ok
	case bfKind:
		if f.isStr || f.u == 0 || f.u > uint64(len(binKinds)) {
			return false
		}
		e.Kind = binKinds[f.u-1]
		return true
	case bfKindStr:
		var s string
		ok := str(&s)
		e.Kind = Kind(s)
		return ok
	case bfAgent:
		return str(&e.Agent)
	case bfSession:
		return str(&e.SessionID)
	case bfRun:
		return str(&e.RunID)
	case bfRef:
		e.Ref = f.u
		return !f.isStr
	case bfStep:
		return numInt(&e.Step)
	case bfAttempt:
		return numInt(&e.Attempt)
	case bfTraceRaw:
		return hexOf(&e.TraceID, 16)
	case bfTrace:
		return str(&e.TraceID)
	case bfSpanRaw:
		return hexOf(&e.SpanID, 8)
	case bfSpan:
		return str(&e.SpanID)
	case bfStatus:
		return str(&e.Status)
	case bfDuration:
		e.Duration = time.Duration(zigzag(f.u))
		return !f.isStr
	case bfModel:
		return str(&e.Model)
	case bfProvider:
		return str(&e.Provider)
	case bfResponseID:
		return str(&e.ResponseID)
	case bfStopReason:
		return str(&e.StopReason)
	case bfMessages:
		return numInt(&e.Messages)
	case bfPrefixRaw:
		return hexOf(&e.Prefix, 32)
	case bfPrefix:
		return str(&e.Prefix)
	case bfInputTokens:
		return num(&e.InputTokens)
	case bfOutputTokens:
		return num(&e.OutputTokens)
	case bfCacheReadTokens:
		return num(&e.CacheReadTokens)
	case bfCacheCreationTokens:
		return num(&e.CacheCreationTokens)
	case bfReasoningTokens:
		return num(&e.ReasoningTokens)
	case bfTool:
		return str(&e.Tool)
	case bfCallID:
		return str(&e.CallID)
	case bfText:
		return str(&e.Text)
	case bfSize:
		return numInt(&e.Size)
	case bfTruncated:
		e.Truncated = f.u != 0
		return !f.isStr
	case bfParts:
		return f.isStr && json.Unmarshal(f.b, &e.Parts) == nil
	case bfError:
		return str(&e.Error)
	case bfErrorType:
		return str(&e.ErrorType)
	case bfExtension:
		return str(&e.Extension)
	case bfOp:
		return str(&e.Op)
	case bfFailedEvent:
		return str(&e.FailedEvent)
	case bfReason:
		return str(&e.Reason)
	case bfPath:
		return str(&e.Path)
	}
	return true
}

// binLineIDs returns what lineRuns needs of a binary line: its seq, the
// run ID it carries (nil: none) and the line it names by ref (0: none).
// A line that does not decode gives zeros. It is for the ring's lines: it
// does not verify the checksum.
func binLineIDs(line []byte) (seq uint64, run []byte, ref uint64) {
	b, err := binBody(line, false)
	if err != nil {
		return 0, nil, 0
	}
	for len(b) > 0 {
		var f binField
		if f, b, err = nextBinField(b); err != nil {
			return 0, nil, 0
		}
		switch f.num {
		case bfSeq:
			seq = f.u
		case bfRun:
			run = f.b
			if bytes.IndexByte(run, binEsc) >= 0 {
				v, _ := unescape(run)
				run = []byte(v)
			}
		case bfRef:
			ref = f.u
		}
	}
	return seq, run, ref
}
