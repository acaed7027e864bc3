package flight

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/crc32"
	"time"
)

// The recorder's ring and journal hold binary event lines (journal
// format 2; recordings written before it hold JSON lines, which
// [ParseEvent] still reads). A binary line is the byte binLineVersion,
// the event's fields, and the CRC-32C of both, little-endian; then every
// newline, carriage return and binEsc byte of all that is escaped
// (binEsc followed by escNewline, escCR or escEsc) and a newline ends the
// line. So the journal's framing stays the JSON lines' (a line per event,
// a torn last line has no newline; a line reader that drops a carriage
// return before the newline, as bufio.Scanner does, drops nothing), and a
// damaged line fails its checksum instead of reading as a different
// event.
//
// A field is a tag byte (the field's number shifted left by one; the low
// bit 1 when a length-prefixed byte string follows, 0 when a uvarint
// does) and its value; fields that are empty in the event are left out,
// as the JSON line leaves them out. Signed numbers are zigzag uvarints.
// IDs that the recorder holds raw (the trace and span ID, the prefix key)
// are written raw, not as hex: an event is about a third of its JSON
// line's bytes and is encoded in about half the instructions. A reader
// skips fields it does not know.
const (
	binLineVersion = 0x01 // a JSON line starts with '{' or white space
	binEsc         = 0x1b
	escNewline     = 0x01
	escEsc         = 0x02
	escCR          = 0x03
)

// The fields of a binary line.
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
)

// binKinds numbers the recorder's kinds (from 1) for bfKind. Numbers are
// never reused: a new kind goes at the end.
var binKinds = [...]Kind{KindRunStart, KindRunEnd, KindModelRequest, KindModelResponse, KindToolCall, KindToolResult,
	KindApproval, KindError, KindHookFailed, KindExtensionError, KindIncident, KindRecovered}

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

func tagVarint(f int) byte { return byte(f << 1) }
func tagBytes(f int) byte  { return byte(f<<1 | 1) }

func appendBinUint(dst []byte, f int, n uint64) []byte {
	if n == 0 {
		return dst
	}
	return binary.AppendUvarint(append(dst, tagVarint(f)), n)
}

func appendBinInt(dst []byte, f int, n int64) []byte {
	if n == 0 {
		return dst
	}
	return binary.AppendVarint(append(dst, tagVarint(f)), n)
}

func appendBinBytes[S string | []byte](dst []byte, f int, s S) []byte {
	dst = binary.AppendUvarint(append(dst, tagBytes(f)), uint64(len(s)))
	return append(dst, s...)
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
	if !e.Time.IsZero() {
		dst = appendBinInt(dst, bfTimeSec, e.Time.Unix())
		dst = appendBinUint(dst, bfTimeNsec, uint64(e.Time.Nanosecond()))
	}
	if k := binKindCode(e.Kind); k != 0 {
		dst = append(dst, tagVarint(bfKind), byte(k))
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
	if e.TraceID == "" && e.sc.IsValid() {
		if form.ref == 0 {
			tid := e.sc.TraceID()
			dst = appendBinBytes(dst, bfTraceRaw, tid[:])
		}
		sid := e.sc.SpanID()
		dst = appendBinBytes(dst, bfSpanRaw, sid[:])
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
		dst = appendBinBytes(dst, bfPrefixRaw, e.prefix[:])
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
		dst = append(dst, tagVarint(bfTruncated), 1)
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
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Update(0, crcTable, dst[start:]))
	return escapeLine(dst, start)
}

// appendBinParts appends the bfParts field: the JSON array appendParts
// writes.
func appendBinParts(dst []byte, parts []PartRef, red *Redactor) []byte {
	const key = `,"parts":`
	var buf [512]byte
	arr := appendParts(buf[:0], parts, red)[len(key):]
	return appendBinBytes(dst, bfParts, arr)
}

// escapeLine escapes the newlines, carriage returns and binEsc bytes of
// dst[start:] in place and appends the newline that ends the line.
func escapeLine(dst []byte, start int) []byte {
	b := dst[start:]
	n := bytes.Count(b, []byte{'\n'}) + bytes.Count(b, []byte{'\r'}) + bytes.Count(b, []byte{binEsc})
	if n == 0 {
		return append(dst, '\n')
	}
	end := len(dst)
	dst = append(dst, make([]byte, n+1)...)
	dst[len(dst)-1] = '\n'
	j := len(dst) - 2 // the last byte not written yet; always at or after i
	for i := end - 1; i >= start; i-- {
		switch c := dst[i]; c {
		case '\n':
			dst[j-1], dst[j] = binEsc, escNewline
			j -= 2
		case '\r':
			dst[j-1], dst[j] = binEsc, escCR
			j -= 2
		case binEsc:
			dst[j-1], dst[j] = binEsc, escEsc
			j -= 2
		default:
			dst[j] = c
			j--
		}
	}
	return dst
}

var (
	errBinLine     = errors.New("flight: malformed binary event line")
	errBinChecksum = errors.New("flight: binary event line fails its checksum")
)

// isBinLine reports whether line is a binary event line (rather than a
// JSON one).
func isBinLine(line []byte) bool { return len(line) > 0 && line[0] == binLineVersion }

// unescapeLine returns the bytes of the binary line (without its newline)
// as they were before escaping, and whether the escapes were well formed.
// It returns line itself when nothing is escaped.
func unescapeLine(line []byte) ([]byte, bool) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	i := bytes.IndexByte(line, binEsc)
	if i < 0 {
		return line, true
	}
	out := make([]byte, i, len(line))
	copy(out, line)
	for ; i < len(line); i++ {
		c := line[i]
		if c == binEsc {
			if i+1 == len(line) {
				return nil, false
			}
			i++
			switch line[i] {
			case escNewline:
				c = '\n'
			case escEsc:
				c = binEsc
			case escCR:
				c = '\r'
			default:
				return nil, false
			}
		}
		out = append(out, c)
	}
	return out, true
}

// binBody checks line's escapes and, when verify is true, its checksum,
// and returns its fields. A line of the ring, which no disk or crash
// touched, needs no checksum.
func binBody(line []byte, verify bool) ([]byte, error) {
	b, ok := unescapeLine(line)
	if !ok || len(b) < 5 || b[0] != binLineVersion {
		return nil, errBinLine
	}
	n := len(b) - 4
	if verify && crc32.Update(0, crcTable, b[:n]) != binary.LittleEndian.Uint32(b[n:]) {
		return nil, errBinChecksum
	}
	return b[1:n], nil
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
	if len(b) == 0 {
		return binField{}, nil, errBinLine
	}
	f := binField{num: int(b[0] >> 1), isStr: b[0]&1 == 1}
	u, n := binary.Uvarint(b[1:])
	if n <= 0 {
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

// zigzag decodes a signed uvarint.
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
		*dst = string(f.b)
		return f.isStr
	}
	hexOf := func(dst *string, n int) bool {
		*dst = hex.EncodeToString(f.b)
		return f.isStr && len(f.b) == n
	}
	num := func(dst *int64) bool {
		*dst = zigzag(f.u)
		return !f.isStr
	}
	var n int64
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
		ok := num(&n)
		e.Step = int(n)
		return ok
	case bfAttempt:
		ok := num(&n)
		e.Attempt = int(n)
		return ok
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
		ok := num(&n)
		e.Duration = time.Duration(n)
		return ok
	case bfModel:
		return str(&e.Model)
	case bfProvider:
		return str(&e.Provider)
	case bfResponseID:
		return str(&e.ResponseID)
	case bfStopReason:
		return str(&e.StopReason)
	case bfMessages:
		ok := num(&n)
		e.Messages = int(n)
		return ok
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
		ok := num(&n)
		e.Size = int(n)
		return ok
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
		case bfRef:
			ref = f.u
		}
	}
	return seq, run, ref
}
