package tracing

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/jsonenc"
	"github.com/harnessx/harnessx/internal/partref"
	"github.com/harnessx/harnessx/internal/redact"
)

// DefaultMaxMediaBytes is the default cap on the bytes of one media part
// that [WithCaptureMediaBytes] records inline: 32 KiB, whose base64
// (about 43 KiB) fits in the default attribute cap with room to spare.
const DefaultMaxMediaBytes = 32 << 10

// PartUploader stores the bytes of a media part (p.Media.Data) somewhere
// the application chooses and returns a URI for them, which the span
// records in place of the part's artifact reference. See
// [WithPartUploader].
type PartUploader func(ctx context.Context, p harness.Part) (uri string, err error)

// hole is the byte range of a blob's base64 content in an encoding: the
// built-in secret rules do not read it (see redactAround).
type hole struct{ start, end int }

// mediaEnc encodes the media parts of messages and tool results and
// collects what it did. A nil *mediaEnc, or one without an extension,
// records every inline part by its reference, without an uploader.
type mediaEnc struct {
	ctx context.Context
	e   *Extension
	// noBytes makes every inline part a reference: the LangSmith copies
	// of the messages never carry bytes.
	noBytes bool

	// holes are the blob contents written, as offsets in the buffer.
	holes []hole
	// suspect says that an uploader's URI may hold a secret: the built-in
	// rules must read the encoding.
	suspect bool
	// omitted counts the inline parts recorded by reference because they
	// were over the byte cap, and omittedBytes their sizes.
	omitted      int
	omittedBytes int64
}

// newMediaEnc returns an encoder with the extension's options; ctx is
// given to the uploader, without its cancellation (recording ignores it).
func (e *Extension) newMediaEnc(ctx context.Context) mediaEnc {
	return mediaEnc{ctx: ctx, e: e}
}

// summary returns what the encoding did.
func (me *mediaEnc) summary() encoded {
	return encoded{blobs: len(me.holes) > 0, omitted: me.omitted, omittedBytes: me.omittedBytes}
}

// appendMedia appends a media part (image, document, audio) in the GenAI
// parts schema: a blob, uri or file part with its modality and MIME type.
func (me *mediaEnc) appendMedia(b []byte, p *harness.Part) []byte {
	m := p.Media
	if m == nil {
		return appendGenericPart(b, p.Type)
	}
	switch {
	case len(m.Data) > 0:
		return me.appendInline(b, p, m)
	case m.URI != "":
		if data, mime, ok := dataURI(m.URI); ok {
			// A data: URI holds the bytes: record it as inline bytes,
			// never as a URI.
			if m.MIME != "" {
				mime = m.MIME
			}
			inline := *p
			inline.Media = &harness.Media{MIME: mime, Name: m.Name, Data: data}
			return me.appendInline(b, &inline, inline.Media)
		}
		b = appendMediaHead(b, "uri", p.Type, m.MIME)
		b = append(b, `,"uri":`...)
		b = jsonenc.AppendString(b, m.URI)
	case m.FileID != "":
		b = appendMediaHead(b, "file", p.Type, m.MIME)
		b = append(b, `,"file_id":`...)
		b = jsonenc.AppendString(b, m.FileID)
	default:
		return appendGenericPart(b, p.Type)
	}
	b = appendName(b, m.Name)
	return append(b, '}')
}

// appendInline appends a part whose bytes are inline: a blob part when
// the bytes are captured and within the cap, else a uri part with the
// uploader's URI or the artifact reference. Either way with the size and
// the SHA-256 of the bytes.
func (me *mediaEnc) appendInline(b []byte, p *harness.Part, m *harness.Media) []byte {
	sum := m.SHA256()
	size := len(m.Data)
	if size == 0 { // an empty data: URI; SHA256 is zero without bytes
		sum = sha256.Sum256(nil)
	}
	var e *Extension
	if me != nil {
		e = me.e
	}
	captured := e != nil && e.cfg.mediaBytes && !me.noBytes
	if captured && size <= e.cfg.maxMediaBytes {
		b = appendMediaHead(b, "blob", p.Type, m.MIME)
		b = appendName(b, m.Name)
		b = appendSizeSum(b, size, sum)
		b = append(b, `,"content":"`...)
		start := len(b)
		b = base64.StdEncoding.AppendEncode(b, m.Data)
		me.holes = append(me.holes, hole{start, len(b)})
		return append(b, '"', '}')
	}
	uri := ""
	if e != nil && e.cfg.uploader != nil {
		uri = e.upload(me.ctx, p, sum)
		if uri != "" && redact.MayContainSecretInJSON(uri) {
			me.suspect = true
		}
	}
	if uri == "" {
		uri = partref.URI(sum)
	}
	b = appendMediaHead(b, "uri", p.Type, m.MIME)
	b = append(b, `,"uri":`...)
	b = jsonenc.AppendString(b, uri)
	b = appendName(b, m.Name)
	b = appendSizeSum(b, size, sum)
	if captured { // over the cap
		b = append(b, `,"truncated":true`...)
		me.omitted++
		me.omittedBytes += int64(size)
	}
	return append(b, '}')
}

func appendGenericPart(b []byte, t harness.PartType) []byte {
	b = append(b, `{"type":`...)
	b = jsonenc.AppendString(b, string(t))
	return append(b, '}')
}

func appendMediaHead(b []byte, typ string, t harness.PartType, mime string) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","modality":`...)
	b = jsonenc.AppendString(b, modality(t, mime))
	if mime != "" {
		b = append(b, `,"mime_type":`...)
		b = jsonenc.AppendString(b, mime)
	}
	return b
}

func appendName(b []byte, name string) []byte {
	if name == "" {
		return b
	}
	b = append(b, `,"name":`...)
	return jsonenc.AppendString(b, name)
}

func appendSizeSum(b []byte, size int, sum harness.Hash) []byte {
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, int64(size), 10)
	b = append(b, `,"sha256":"`...)
	b = hex.AppendEncode(b, sum[:])
	return append(b, '"')
}

// modality returns the GenAI modality of a media part: image, audio or
// video from its MIME type, else from its kind; a document is "document"
// (the conventions' modality is image, video, audio or any other string,
// and a PDF is not an image).
func modality(t harness.PartType, mime string) string {
	if i := strings.IndexByte(mime, '/'); i > 0 {
		switch top := mime[:i]; {
		case strings.EqualFold(top, "image"):
			return "image"
		case strings.EqualFold(top, "audio"):
			return "audio"
		case strings.EqualFold(top, "video"):
			return "video"
		}
	}
	switch t {
	case harness.PartImage:
		return "image"
	case harness.PartAudio:
		return "audio"
	case harness.PartDocument:
		return "document"
	}
	return string(t)
}

// isDataURI reports whether uri is a data: URI, which holds its bytes.
func isDataURI(uri string) bool {
	return len(uri) >= 5 && strings.EqualFold(uri[:5], "data:")
}

// dataURI returns the bytes and the MIME type of a data: URI (RFC 2397).
// Bytes it cannot decode are returned as written, so that they are still
// recorded by reference and never as a URI.
func dataURI(uri string) (data []byte, mime string, ok bool) {
	if !isDataURI(uri) {
		return nil, "", false
	}
	meta, payload, _ := strings.Cut(uri[5:], ",")
	b64 := false
	if i := strings.IndexByte(meta, ';'); i >= 0 {
		for _, param := range strings.Split(meta[i+1:], ";") {
			if strings.EqualFold(param, "base64") {
				b64 = true
			}
		}
		meta = meta[:i]
	}
	mime = meta
	if b64 {
		if d, err := base64.StdEncoding.DecodeString(payload); err == nil {
			return d, mime, true
		}
		if d, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(payload, "=")); err == nil {
			return d, mime, true
		}
	} else if d, err := url.PathUnescape(payload); err == nil {
		return []byte(d), mime, true
	}
	return []byte(payload), mime, true
}

// dataURIHead returns the part of a data: URI before its payload (the
// MIME type and parameters), the only part the encoding may write.
func dataURIHead(uri string) string {
	head, _, _ := strings.Cut(uri, ",")
	return head
}

// ---- the uploader ----

// maxUploads bounds the cache of uploaded URIs.
const maxUploads = 1024

// uploadCache remembers the URI the uploader gave for the bytes of a
// SHA-256, so that a part recorded again (a tool's image on its
// execute_tool span, then in the conversation) is uploaded once.
type uploadCache struct {
	mu   sync.Mutex
	uris map[harness.Hash]string
}

func (c *uploadCache) get(h harness.Hash) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.uris[h]
	return u, ok
}

func (c *uploadCache) put(h harness.Hash, uri string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.uris == nil || len(c.uris) >= maxUploads {
		c.uris = make(map[harness.Hash]string)
	}
	c.uris[h] = uri
}

// upload returns the uploader's URI for the bytes of p, or "" when it
// declined or failed; a failure (an error or a panic) is counted and
// logged, never returned: the span records the artifact reference.
func (e *Extension) upload(ctx context.Context, p *harness.Part, sum harness.Hash) string {
	if u, ok := e.uploads.get(sum); ok {
		return u
	}
	if ctx == nil {
		ctx = context.Background()
	}
	uri, err := e.callUploader(context.WithoutCancel(ctx), *p)
	if err != nil {
		e.stats.uploadErrors.Add(1)
		if e.logger != nil {
			e.logger.WarnContext(ctx, "tracing: the part uploader failed; the span records the part's artifact reference",
				"error", err, "sha256", hex.EncodeToString(sum[:]), "mime_type", p.MIME())
		}
		return ""
	}
	if uri != "" {
		e.uploads.put(sum, uri)
	}
	return uri
}

func (e *Extension) callUploader(ctx context.Context, p harness.Part) (uri string, err error) {
	defer func() {
		if v := recover(); v != nil {
			uri, err = "", fmt.Errorf("part uploader panicked: %v", v)
		}
	}()
	return e.cfg.uploader(ctx, p)
}

// ---- redaction around blobs ----

// redactAround applies the built-in rules to s except inside holes
// (offsets in s): base64 content is no text, and the rules, which would
// scan it for nothing, could take a run of it for a key. It reports
// whether the rules changed s.
func redactAround(red *redact.Redactor, s string, holes []hole) (string, bool) {
	if len(holes) == 0 {
		r := red.String(s)
		return r, r != s
	}
	var out []byte // nil until a segment changes
	prev := 0
	for _, h := range holes {
		out = redactSegment(red, s, prev, h.start, out)
		if out != nil {
			out = append(out, s[h.start:h.end]...)
		}
		prev = h.end
	}
	out = redactSegment(red, s, prev, len(s), out)
	if out == nil {
		return s, false
	}
	return string(out), true
}

// redactSegment applies the rules to s[from:to] and appends the result
// to out; while out is nil (nothing changed so far) it appends nothing,
// and the first change copies s[:from] into a new out.
func redactSegment(red *redact.Redactor, s string, from, to int, out []byte) []byte {
	seg := s[from:to]
	r := red.String(seg)
	if out == nil {
		if r == seg {
			return nil
		}
		out = make([]byte, 0, len(s)+64)
		out = append(out, s[:from]...)
	}
	return append(out, r...)
}

// partsMayContainSecret is mayContainSecret for a list of parts.
func partsMayContainSecret(parts []harness.Part) bool {
	for i := range parts {
		if partMayContainSecret(&parts[i]) {
			return true
		}
	}
	return false
}

// mediaMayContainSecret reports whether the strings the encoding of a
// media part writes may hold a secret: the MIME type, the name, the URI
// (of a data: URI only its head: the payload is recorded by reference)
// and the file ID. The bytes are not text.
func mediaMayContainSecret(p *harness.Part) bool {
	m := p.Media
	if m == nil {
		return redact.MayContainSecretInJSON(string(p.Type))
	}
	uri := m.URI
	if isDataURI(uri) {
		uri = dataURIHead(uri)
	}
	return redact.MayContainSecretInJSON(m.MIME) || redact.MayContainSecretInJSON(m.Name) ||
		redact.MayContainSecretInJSON(uri) || redact.MayContainSecretInJSON(m.FileID)
}

// appendOutput appends a list of one message: gen_ai.output.messages of
// a response, or the user message of a run.
func appendOutput(b []byte, m *harness.Message, finish string, me *mediaEnc) []byte {
	b = append(b, '[')
	b = appendMessage(b, m, finish, me)
	return append(b, ']')
}

// encodeNoBytes returns what enc appends with every inline part by
// reference: the value of LangSmith's copy of a value that holds bytes.
func (e *Extension) encodeNoBytes(ctx context.Context, enc func([]byte, *mediaEnc) []byte) string {
	b := e.getBuf()
	me := mediaEnc{ctx: ctx, e: e, noBytes: true}
	*b = enc(*b, &me)
	s := string(*b)
	e.putBuf(b)
	return s
}
