package tracing

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/jsonenc"
	"github.com/harnessx/harnessx/internal/redact"
)

// recorder collects the attributes of one span and the keys of the values
// it cut. It is used by one goroutine.
type recorder struct {
	e         *Extension
	kvs       []attribute.KeyValue
	truncated []string
	pooled    *[]attribute.KeyValue // where kvs goes back to
}

// content adds a captured value under key after the redactor and the cap.
func (r *recorder) content(key attribute.Key, v string) { r.contentScanned(key, v, false) }

// contentScanned is content for a value that the built-in secret rules
// are known to leave unchanged when clean (see mayContainSecret): they do
// not scan it again. The custom redactor and the cap still apply.
func (r *recorder) contentScanned(key attribute.Key, v string, clean bool) {
	v, _, cut := r.e.processCounted(string(key), v, clean)
	if cut > 0 {
		r.truncated = append(r.truncated, string(key))
	}
	r.set(key, v, v)
}

// set adds v under key and, with WithLangSmithPromptKeys, mirror under
// LangSmith's key for it.
func (r *recorder) set(key attribute.Key, v, mirror string) {
	r.kvs = append(r.kvs, key.String(v))
	if r.e.cfg.promptKeys {
		switch key {
		case semconv.GenAIInputMessagesKey, semconv.GenAIToolCallArgumentsKey:
			r.kvs = append(r.kvs, KeyPrompt.String(mirror)) // the same string: no copy
		case semconv.GenAIOutputMessagesKey, semconv.GenAIToolCallResultKey:
			r.kvs = append(r.kvs, KeyCompletion.String(mirror))
		}
	}
}

// encodedParts adds a captured value v that holds encoded parts: sum
// says what the encoding did and holes (offsets in v) where it wrote
// bytes, which the built-in rules skip; without holes, clean says that
// the rules leave v unchanged. A part over the byte cap counts v as
// truncated. When v holds bytes, mirror returns the value LangSmith's
// copy gets instead, with every part by reference: the copies never
// carry bytes.
func (r *recorder) encodedParts(key attribute.Key, v string, sum encoded, holes []hole, clean bool, mirror func() string) {
	e := r.e
	var cut int
	if e.red != nil && len(holes) > 0 {
		red, changed := redactAround(e.red, v, holes)
		v, _, cut = e.processAfterBuiltin(string(key), red, changed)
	} else {
		v, _, cut = e.processCounted(string(key), v, clean)
	}
	if sum.omitted > 0 {
		if cut == 0 {
			e.stats.truncated.Add(1)
		}
		e.stats.truncatedBytes.Add(sum.omittedBytes)
	}
	if cut > 0 || sum.omitted > 0 {
		r.truncated = append(r.truncated, string(key))
	}
	m := v
	if sum.blobs && e.cfg.promptKeys && mirror != nil {
		m = e.processUncounted(string(key), mirror())
	}
	r.set(key, v, m)
}

// cached adds a value from the cache, counting its redaction and cut again
// so that Stats count every value set.
func (r *recorder) cached(c *cachedValue) {
	if c.redacted {
		r.e.stats.redacted.Add(1)
	}
	if c.cut > 0 {
		r.e.stats.truncated.Add(1)
		r.e.stats.truncatedBytes.Add(int64(c.cut))
		r.truncated = append(r.truncated, string(c.kv.Key))
	}
	r.kvs = append(r.kvs, c.kv)
}

// finish appends the list of cut keys, if any, and returns the attributes.
func (r *recorder) finish() []attribute.KeyValue {
	if len(r.truncated) > 0 {
		r.kvs = append(r.kvs, KeyTruncated.StringSlice(r.truncated))
	}
	return r.kvs
}

// process runs the redactor and the cap on v. It reports whether v was cut.
func (e *Extension) process(key, v string) (string, bool) {
	v, _, cut := e.processCounted(key, v, false)
	return v, cut > 0
}

// processCounted is process that also reports whether the redactor changed
// v and how many bytes were cut. clean says that the built-in rules are
// known to leave v unchanged.
func (e *Extension) processCounted(key, v string, clean bool) (out string, redacted bool, cut int) {
	if e.red != nil && !clean {
		// The conversation comes from the history cache, which redacts
		// each message once, when it is first encoded.
		pre, changed := false, false
		if key == string(semconv.GenAIInputMessagesKey) {
			pre, changed = e.history.redactedOutput(v)
		}
		if !pre {
			r := e.red.String(v)
			changed = r != v
			v = r
		}
		redacted = changed
	}
	return e.processAfterBuiltin(key, v, redacted)
}

// processAfterBuiltin is processCounted for a value that the built-in
// rules have read already; redacted says whether they changed it.
func (e *Extension) processAfterBuiltin(key, v string, redacted bool) (out string, _ bool, cut int) {
	if e.cfg.redact != nil {
		r := e.cfg.redact(key, v)
		redacted = redacted || r != v
		v = r
	}
	if redacted {
		e.stats.redacted.Add(1)
	}
	if len(v) <= e.cfg.maxBytes {
		return v, redacted, 0
	}
	out, kept := truncate(v, e.cfg.maxBytes)
	cut = len(v) - kept
	e.stats.truncated.Add(1)
	e.stats.truncatedBytes.Add(int64(cut))
	return out, redacted, cut
}

// processUncounted is processCounted for a second form of a value that
// is counted already (LangSmith's copy): it leaves Stats as they were.
func (e *Extension) processUncounted(key, v string) string {
	out, redacted, cut := e.processCounted(key, v, false)
	if redacted {
		e.stats.redacted.Add(-1)
	}
	if cut > 0 {
		e.stats.truncated.Add(-1)
		e.stats.truncatedBytes.Add(-int64(cut))
	}
	return out
}

// truncEllipsis starts the marker appended to a cut value.
const truncEllipsis = "…"

// truncate cuts v so that, with the marker, it fits in max bytes when it
// can; the marker gives v's length and SHA-256 in hex. It returns the cut
// value and how many bytes of v it kept.
func truncate(v string, max int) (string, int) {
	sum := sha256.Sum256([]byte(v))
	marker := make([]byte, 0, 128)
	marker = append(marker, truncEllipsis+"[truncated by harnessx: "...)
	marker = strconv.AppendInt(marker, int64(len(v)), 10)
	marker = append(marker, " bytes, sha256="...)
	marker = hex.AppendEncode(marker, sum[:])
	marker = append(marker, ']')
	keep := max - len(marker)
	if keep < 0 {
		keep = 0
	}
	for keep > 0 && !utf8.RuneStart(v[keep]) {
		keep--
	}
	return v[:keep] + string(marker), keep
}

// cachedValue is an encoded and processed attribute value that is reused
// while the part of the request it encodes does not change.
type cachedValue struct {
	hash     harness.Hash
	capture  bool
	kv       attribute.KeyValue
	redacted bool
	cut      int
}

// encCache keeps the last encodings of the parts that rarely change
// between requests: tool definitions, system instructions and the hex
// forms of the prefix-key part hashes.
type encCache struct {
	tools, system                 atomic.Pointer[cachedValue]
	hexModel, hexTools, hexSystem atomic.Pointer[hexValue]
}

type hexValue struct {
	hash harness.Hash
	s    string
}

// hexString returns h in hex with one allocation.
func hexString(h harness.Hash) string {
	var b [hashHexLen]byte
	encodeHash(&b, &h)
	return string(b[:])
}

// hashHexLen is the length of a harness.Hash in hex.
const hashHexLen = 2 * len(harness.Hash{})

// hexDigits maps a byte to its two hex digits, the first in the low byte:
// encodeHash writes a byte's digits with one 16-bit store. It is never
// modified.
var hexDigits = func() (t [256]uint16) {
	const digits = "0123456789abcdef"
	for i := range t {
		t[i] = uint16(digits[i>>4]) | uint16(digits[i&0xf])<<8
	}
	return t
}()

// encodeHash writes h in hex to dst; hex.Encode, a byte at a time, costs
// more than twice as many instructions, which the two hashes of every
// chat span notice.
func encodeHash(dst *[hashHexLen]byte, h *harness.Hash) {
	for i, v := range h {
		binary.LittleEndian.PutUint16(dst[2*i:], hexDigits[v])
	}
}

// hexOf returns h in hex, reusing the string from slot when h is the same.
func hexOf(slot *atomic.Pointer[hexValue], h harness.Hash) string {
	if c := slot.Load(); c != nil && c.hash == h {
		return c.s
	}
	c := &hexValue{hash: h, s: hexString(h)}
	slot.Store(c)
	return c.s
}

// newRecorder returns a recorder whose attribute slice comes from the pool;
// release returns it. The SDK copies attributes, so the slice is free again
// once SetAttributes has returned.
func (e *Extension) newRecorder() recorder {
	p := e.getKVs()
	return recorder{e: e, kvs: *p, pooled: p}
}

func (e *Extension) release(r *recorder) {
	*r.pooled = r.kvs
	e.putKVs(r.pooled)
	r.kvs, r.pooled = nil, nil
}

func (e *Extension) getKVs() *[]attribute.KeyValue {
	p := e.kvs.Get().(*[]attribute.KeyValue)
	*p = (*p)[:0]
	return p
}

// putKVs returns a slice to the pool without clearing it: clearing costs
// a write barrier for each of its pointers while the garbage collector
// marks, on every span, and the values a pooled slice still holds stay
// reachable only until the slice is used again or the pool drops it,
// within two collections.
func (e *Extension) putKVs(p *[]attribute.KeyValue) {
	if cap(*p) > 256 {
		return // do not keep huge slices
	}
	*p = (*p)[:0]
	e.kvs.Put(p)
}

// nameCache remembers span names ("chat m", "execute_tool weather") so that
// each request does not build its name again. It holds at most
// maxCachedNames names; past that, names are built each time.
//
// The last name of each operation is kept apart, where one atomic load
// and a string comparison find it: an agent's requests mostly name the
// same model, its runs the same agent.
type nameCache struct {
	mu    sync.RWMutex
	names map[[2]string]*spanName
	// last holds the last name of invoke_agent, chat and execute_tool.
	last [3]atomic.Pointer[spanName]
}

// spanName is a name and what it names.
type spanName struct{ what, name string }

const maxCachedNames = 1024

// lastSlot returns the slot of op's last name; nil for another op.
func (c *nameCache) lastSlot(op string) *atomic.Pointer[spanName] {
	switch op {
	case "invoke_agent":
		return &c.last[0]
	case "chat":
		return &c.last[1]
	case "execute_tool":
		return &c.last[2]
	}
	return nil
}

func (c *nameCache) name(op, what string) string {
	if what == "" {
		return op
	}
	slot := c.lastSlot(op)
	if slot != nil {
		if l := slot.Load(); l != nil && l.what == what {
			return l.name
		}
	}
	k := [2]string{op, what}
	c.mu.RLock()
	n, ok := c.names[k]
	c.mu.RUnlock()
	if ok {
		if slot != nil {
			slot.Store(n)
		}
		return n.name
	}
	n = &spanName{what: what, name: op + " " + what}
	c.mu.Lock()
	if c.names == nil {
		c.names = make(map[[2]string]*spanName)
	}
	if len(c.names) < maxCachedNames {
		c.names[k] = n
		if slot != nil {
			slot.Store(n)
		}
	}
	c.mu.Unlock()
	return n.name
}

// getBuf and putBuf recycle encoding buffers.
func (e *Extension) getBuf() *[]byte {
	b := e.bufs.Get().(*[]byte)
	*b = (*b)[:0]
	return b
}

func (e *Extension) putBuf(b *[]byte) {
	if cap(*b) > 1<<20 {
		return // do not keep huge buffers
	}
	e.bufs.Put(b)
}

// historyCache encodes gen_ai.input.messages incrementally. The messages
// of a conversation never change once added (the harness forbids it), so
// a message already encoded, recognized by its role and the identity of its
// parts, is not encoded again; a middleware that replaces messages breaks
// the identity, and the encoding restarts from the first difference. It is
// guarded by a mutex: an agent's model requests are sequential, so it is
// not contended.
//
// With the built-in secret rules on (red not nil), each message is
// redacted once, when it is encoded, and the output is redacted as a
// whole: [historyCache.redactedOutput] recognizes it. The rules skip the
// base64 of the bytes a message holds (redactAround).
type historyCache struct {
	mu   sync.Mutex
	red  *redact.Redactor // read-only after New
	ids  []msgID
	ends []int     // ends[i] is len(buf) after message i
	info []msgInfo // info[i] is what encoding message i did
	buf  []byte    // "[" then the messages, comma-separated, without the "]"
	// last is the last output, and lastChanged whether the rules changed
	// any of its messages.
	last        string
	lastChanged bool

	// Verdicts of the scan for secrets (mayContainSecret) that later
	// values reuse instead of scanning again: a model's reply and a
	// tool's result are scanned when their spans end and join the
	// conversation that the next request encodes; a run's input and
	// final text repeat the texts of its first and last messages. Only
	// "clean" verdicts are kept, by identity (the message, the result,
	// the string's bytes), which the values the harness forbids to
	// change keep. Bounded; encode drops the message and result
	// verdicts it had the chance to use.
	cleanMsgs    []msgID
	cleanResults []cleanResult
	cleanTexts   [4]string
	textNext     int
}

// cleanResult is a tool result found clean, with the strings it had
// then: a result whose fields were replaced since is scanned again.
type cleanResult struct {
	r               *harness.ToolResult
	callID, content string
}

func (c *cleanResult) is(r *harness.ToolResult) bool {
	return c.r == r && sameString(c.callID, r.CallID) && sameString(c.content, r.Content) && len(r.Parts) == 0
}

// sameString reports whether a and b are the same bytes in memory.
func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// maxCleanVerdicts bounds the message and result verdicts kept between
// two encodes; past it, values are scanned again.
const maxCleanVerdicts = 256

// noteCleanMessage records that m (an output message) has no candidate
// word for the built-in rules, nor have its text parts.
func (h *historyCache) noteCleanMessage(m *harness.Message) {
	h.mu.Lock()
	if len(h.cleanMsgs) < maxCleanVerdicts {
		h.cleanMsgs = append(h.cleanMsgs, idOf(m))
	}
	h.noteTextsLocked(m)
	h.mu.Unlock()
}

// noteTextsLocked records the text parts of a clean message.
func (h *historyCache) noteTextsLocked(m *harness.Message) {
	for i := range m.Content {
		if p := &m.Content[i]; p.Type == harness.PartText && p.Text != "" {
			h.cleanTexts[h.textNext] = p.Text
			h.textNext = (h.textNext + 1) % len(h.cleanTexts)
		}
	}
}

// noteCleanResult records that r (its call ID, content and parts) has no
// candidate word for the built-in rules.
func (h *historyCache) noteCleanResult(r *harness.ToolResult) {
	h.mu.Lock()
	if len(h.cleanResults) < maxCleanVerdicts {
		h.cleanResults = append(h.cleanResults, cleanResult{r, r.CallID, r.Content})
	}
	h.mu.Unlock()
}

// cleanText reports whether s is, by identity, a text found clean: a
// text part of a clean message.
func (h *historyCache) cleanText(s string) bool {
	if s == "" {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range &h.cleanTexts {
		if sameString(t, s) {
			return true
		}
	}
	return false
}

// knownCleanLocked reports whether a verdict says that m has no
// candidate word: m itself was noted, or m is a tool message all of
// whose results were.
func (h *historyCache) knownCleanLocked(m *harness.Message, id msgID) bool {
	if slices.Contains(h.cleanMsgs, id) {
		return true
	}
	if m.Role != harness.RoleTool || len(m.Content) == 0 || len(h.cleanResults) == 0 {
		return false
	}
	for i := range m.Content {
		p := &m.Content[i]
		if p.Type != harness.PartToolResult || p.ToolResult == nil {
			return false
		}
		found := false
		for j := range h.cleanResults {
			if h.cleanResults[j].is(p.ToolResult) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// textClean reports whether the built-in rules find no candidate word in
// s encoded as a JSON string, from a verdict when there is one.
func (e *Extension) textClean(s string) bool {
	return e.history.cleanText(s) || !redact.MayContainSecretInJSON(s)
}

// msgInfo is what the encoding of one message did.
type msgInfo struct {
	changed bool // the built-in rules changed it
	blobs   bool // it holds bytes (blob parts)
	// omitted counts its parts recorded by reference because they were
	// over the byte cap, and omittedBytes their sizes.
	omitted      int32
	omittedBytes int64
}

// encoded sums up the encoding of a list of messages.
type encoded struct {
	changed      bool // the built-in rules changed a message
	blobs        bool // a message holds bytes
	omitted      int  // parts over the byte cap, recorded by reference
	omittedBytes int64
}

// maxHistoryBytes bounds the encoding the cache keeps between requests.
const maxHistoryBytes = 4 << 20

type msgID struct {
	role  harness.Role
	first *harness.Part
	n     int
}

func idOf(m *harness.Message) msgID {
	id := msgID{role: m.Role, n: len(m.Content)}
	if len(m.Content) > 0 {
		id.first = &m.Content[0]
	}
	return id
}

// encode returns msgs as the JSON of gen_ai.input.messages, its media
// parts encoded with e's options (e may be nil: by reference), and what
// the encoding did. ctx goes to the part uploader.
func (h *historyCache) encode(ctx context.Context, e *Extension, msgs []harness.Message) (string, encoded) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := 0
	for k < len(msgs) && k < len(h.ids) && h.ids[k] == idOf(&msgs[k]) {
		k++
	}
	// The IDs past k point into messages that are gone from the
	// conversation (a shorter one after a reset): clear them, so that the
	// garbage collector neither keeps those messages alive nor marks them.
	clear(h.ids[k:])
	h.ids, h.ends, h.info = h.ids[:k], h.ends[:k], h.info[:k]
	if cap(h.ids) > 256 && cap(h.ids) > 4*len(msgs) {
		// Room a long conversation made, kept for a short one: the
		// collector would scan it at every cycle.
		h.ids = append(make([]msgID, 0, len(msgs)), h.ids...)
		h.ends = append(make([]int, 0, len(msgs)), h.ends...)
		h.info = append(make([]msgInfo, 0, len(msgs)), h.info...)
	}
	if k == 0 {
		h.buf = append(h.buf[:0], '[')
	} else {
		h.buf = h.buf[:h.ends[k-1]]
	}
	for i := k; i < len(msgs); i++ {
		if i > 0 {
			h.buf = append(h.buf, ',')
		}
		start := len(h.buf)
		me := mediaEnc{ctx: ctx, e: e}
		h.buf = appendMessage(h.buf, &msgs[i], "", &me)
		info := msgInfo{blobs: len(me.holes) > 0, omitted: int32(me.omitted), omittedBytes: me.omittedBytes}
		id := idOf(&msgs[i])
		if h.red == nil {
			// no scan
		} else if me.suspect || (!h.knownCleanLocked(&msgs[i], id) && mayContainSecret(&msgs[i], "")) {
			enc := string(h.buf[start:])
			for j := range me.holes { // offsets in enc
				me.holes[j].start -= start
				me.holes[j].end -= start
			}
			if r, changed := redactAround(h.red, enc, me.holes); changed {
				h.buf = append(h.buf[:start], r...)
				info.changed = true
			}
		} else if msgs[i].Role != harness.RoleTool {
			h.noteTextsLocked(&msgs[i])
		}
		h.ids = append(h.ids, id)
		h.ends = append(h.ends, len(h.buf))
		h.info = append(h.info, info)
	}
	clear(h.cleanMsgs)
	clear(h.cleanResults)
	h.cleanMsgs, h.cleanResults = h.cleanMsgs[:0], h.cleanResults[:0]
	h.buf = append(h.buf, ']')
	out := string(h.buf)
	h.buf = h.buf[:len(h.buf)-1]
	var sum encoded
	for i := range h.info {
		in := &h.info[i]
		sum.changed = sum.changed || in.changed
		sum.blobs = sum.blobs || in.blobs
		sum.omitted += int(in.omitted)
		sum.omittedBytes += in.omittedBytes
	}
	h.last, h.lastChanged = out, sum.changed
	if len(h.buf) > maxHistoryBytes {
		h.ids, h.ends, h.info, h.buf = nil, nil, nil, nil
	}
	return out, sum
}

// redactedOutput reports whether v is the last output of encode, whose
// messages are redacted already, and whether the rules changed any.
// Comparing v with that output costs nothing when v is that string.
func (h *historyCache) redactedOutput(v string) (ok, changed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.red == nil || v != h.last {
		return false, false
	}
	return true, h.lastChanged
}

// ---- JSON in the OpenTelemetry GenAI parts schema ----

// appendRaw appends raw when it is valid JSON, or raw as a JSON string
// otherwise; empty raw is an empty object.
func appendRaw(b []byte, raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return append(b, '{', '}')
	}
	if json.Valid(raw) {
		return append(b, raw...)
	}
	return jsonenc.AppendString(b, string(raw))
}

func appendTextPart(b []byte, typ, text string) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","content":`...)
	b = jsonenc.AppendString(b, text)
	return append(b, '}')
}

// appendParts appends parts as a JSON array; me encodes the media parts
// (nil: by reference).
func appendParts(b []byte, parts []harness.Part, me *mediaEnc) []byte {
	b = append(b, '[')
	n := 0
	for i := range parts {
		p := &parts[i]
		if (p.Type == harness.PartToolCall && p.ToolCall == nil) || (p.Type == harness.PartToolResult && p.ToolResult == nil) {
			continue // malformed part: nothing to record
		}
		if n > 0 {
			b = append(b, ',')
		}
		switch p.Type {
		case harness.PartText:
			b = appendTextPart(b, "text", p.Text)
		case harness.PartReasoning:
			b = appendTextPart(b, "reasoning", p.Text)
		case harness.PartToolCall:
			b = append(b, `{"type":"tool_call","id":`...)
			b = jsonenc.AppendString(b, p.ToolCall.ID)
			b = append(b, `,"name":`...)
			b = jsonenc.AppendString(b, p.ToolCall.Name)
			b = append(b, `,"arguments":`...)
			b = appendRaw(b, p.ToolCall.Input)
			b = append(b, '}')
		case harness.PartToolResult:
			b = append(b, `{"type":"tool_call_response","id":`...)
			b = jsonenc.AppendString(b, p.ToolResult.CallID)
			b = append(b, `,"response":`...)
			b = jsonenc.AppendString(b, p.ToolResult.Content)
			if len(p.ToolResult.Parts) > 0 {
				// The parts the model reads after the text: the
				// schema's tool_call_response takes further members.
				b = append(b, `,"parts":`...)
				b = appendParts(b, p.ToolResult.Parts, me)
			}
			b = append(b, '}')
		case harness.PartImage, harness.PartDocument, harness.PartAudio:
			b = me.appendMedia(b, p)
		default:
			b = appendGenericPart(b, p.Type)
		}
		n++
	}
	return append(b, ']')
}

// mayContainSecret reports whether the built-in secret rules could change
// the encoding of m by appendMessage: whether one of the strings it
// writes may hold a secret, as JSON (redact.MayContainSecretInJSON). The
// rest of the encoding is this file's member names and punctuation, in
// which the rules find no candidate word. Scanning the strings alone
// spares the scan of that structure, which is most of a short message's
// bytes. It must read every string appendMessage and appendParts write
// but the bytes of media parts (as base64, which the rules skip: see
// redactAround) and an uploader's URIs (which the encoder scans:
// mediaEnc.suspect); TestMessageScanCoversEncoding checks it against the
// encoding.
func mayContainSecret(m *harness.Message, finish string) bool {
	if (!knownRole(m.Role) && redact.MayContainSecretInJSON(string(m.Role))) ||
		(!knownFinish(finish) && redact.MayContainSecretInJSON(finish)) {
		return true
	}
	return partsMayContainSecret(m.Content)
}

// knownRole reports whether r is one of the harness's roles, in which the
// rules find no candidate word (TestKnownWordsClean).
func knownRole(r harness.Role) bool {
	switch r {
	case harness.RoleUser, harness.RoleAssistant, harness.RoleTool:
		return true
	}
	return false
}

// knownFinish reports whether f is empty or one of the finish reasons
// finishReason maps to, in which the rules find no candidate word.
func knownFinish(f string) bool {
	switch f {
	case "", "stop", "length", "tool_call", "content_filter":
		return true
	}
	return false
}

// partMayContainSecret is mayContainSecret for one part.
func partMayContainSecret(p *harness.Part) bool {
	switch p.Type {
	case harness.PartText, harness.PartReasoning:
		return redact.MayContainSecretInJSON(p.Text)
	case harness.PartToolCall:
		if c := p.ToolCall; c != nil {
			return redact.MayContainSecretInJSON(c.ID) || redact.MayContainSecretInJSON(c.Name) ||
				redact.MayContainSecretInJSON(string(c.Input))
		}
	case harness.PartToolResult:
		if r := p.ToolResult; r != nil {
			return redact.MayContainSecretInJSON(r.CallID) || redact.MayContainSecretInJSON(r.Content) ||
				partsMayContainSecret(r.Parts)
		}
	case harness.PartImage, harness.PartDocument, harness.PartAudio:
		return mediaMayContainSecret(p)
	default:
		return redact.MayContainSecretInJSON(string(p.Type))
	}
	return false
}

// appendMessage appends one message; finish, when not empty, is its
// finish_reason (output messages). me encodes the media parts (nil: by
// reference).
func appendMessage(b []byte, m *harness.Message, finish string, me *mediaEnc) []byte {
	b = append(b, `{"role":`...)
	b = jsonenc.AppendString(b, string(m.Role))
	b = append(b, `,"parts":`...)
	b = appendParts(b, m.Content, me)
	if finish != "" {
		b = append(b, `,"finish_reason":`...)
		b = jsonenc.AppendString(b, finish)
	}
	return append(b, '}')
}

// appendMessages appends msgs as gen_ai.input.messages.
func appendMessages(b []byte, msgs []harness.Message, me *mediaEnc) []byte {
	b = append(b, '[')
	for i := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMessage(b, &msgs[i], "", me)
	}
	return append(b, ']')
}

// appendTextMessage appends a one-message list holding text.
func appendTextMessage(b []byte, role harness.Role, text, finish string) []byte {
	m := harness.Message{Role: role, Content: []harness.Part{{Type: harness.PartText, Text: text}}}
	b = append(b, '[')
	b = appendMessage(b, &m, finish, nil)
	return append(b, ']')
}

// appendToolDefs appends gen_ai.tool.definitions; without full, only the
// required type and name.
func appendToolDefs(b []byte, defs []harness.ToolDefinition, full bool) []byte {
	b = append(b, '[')
	for i := range defs {
		d := &defs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"function","name":`...)
		b = jsonenc.AppendString(b, d.Name)
		if full {
			if d.Description != "" {
				b = append(b, `,"description":`...)
				b = jsonenc.AppendString(b, d.Description)
			}
			b = append(b, `,"parameters":`...)
			b = appendRaw(b, d.InputSchema)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendUsage appends langsmith.usage_metadata; the audio and image
// input tokens (LangSmith's input_token_details take audio and other
// keys) when the provider reported them.
func appendUsage(b []byte, u *harness.Usage) []byte {
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, u.InputTokens, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, u.OutputTokens, 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, u.TotalTokens(), 10)
	b = append(b, `,"input_token_details":{"cache_read":`...)
	b = strconv.AppendInt(b, u.CacheReadInputTokens, 10)
	b = append(b, `,"cache_creation":`...)
	b = strconv.AppendInt(b, u.CacheCreationInputTokens, 10)
	if u.AudioInputTokens != 0 {
		b = append(b, `,"audio":`...)
		b = strconv.AppendInt(b, u.AudioInputTokens, 10)
	}
	if u.ImageInputTokens != 0 {
		b = append(b, `,"image":`...)
		b = strconv.AppendInt(b, u.ImageInputTokens, 10)
	}
	b = append(b, `},"output_token_details":{"reasoning":`...)
	b = strconv.AppendInt(b, u.ReasoningTokens, 10)
	return append(b, '}', '}')
}

// finishReason maps a harness stop reason onto the GenAI finish reasons
// (stop, length, content_filter, tool_call); others pass as they are.
func finishReason(s harness.StopReason) string {
	switch s {
	case harness.StopEndTurn, harness.StopSequence:
		return "stop"
	case harness.StopMaxTokens:
		return "length"
	case harness.StopToolUse:
		return "tool_call"
	case harness.StopContentFilter, harness.StopRefusal:
		return "content_filter"
	case "":
		return "stop"
	}
	return string(s)
}
