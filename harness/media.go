package harness

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// DefaultInlineLimit is the largest part, in bytes, that a run takes
// inline unless [WithInlineLimit] says otherwise: 5 MiB.
const DefaultInlineLimit = 5 << 20

// Media is the content of an image, document or audio [Part]: the bytes
// themselves (Data), a URI where the provider fetches them, or the ID of a
// file uploaded to the provider (FileID) — exactly one of the three — with
// the MIME type and an optional name.
//
// A Media is shared, not copied: the conversation, every model request
// made from it and the saved session refer to the same value, so its
// bytes are held once however many steps a run makes. Treat it as
// immutable once it is in a message: do not change Data's bytes or the
// fields. Sessions save Data as base64 (encoding/json's encoding of a
// []byte), so a saved session holds the bytes, not a reference to them.
type Media struct {
	// MIME is the media type: "image/png", "application/pdf", "audio/wav".
	// Required with Data; optional with URI or FileID.
	MIME string `json:"mime_type,omitempty"`
	// Name is an optional name, such as a file name; providers that take
	// one (a document's title, a file's name) send it.
	Name string `json:"name,omitempty"`
	// Data holds the bytes inline.
	Data []byte `json:"data,omitempty"`
	// URI is where the provider fetches the content (https://…).
	URI string `json:"uri,omitempty"`
	// FileID names a file uploaded to the provider's files API.
	FileID string `json:"file_id,omitempty"`

	sum atomic.Value // *mediaSum: the SHA-256 of Data, computed once
}

// mediaSum is a cached digest with the identity of the bytes it is of, so
// that a copy of a Media whose Data was replaced does not reuse it.
type mediaSum struct {
	data *byte
	n    int
	h    Hash
}

// SHA256 returns the SHA-256 of Data, computed on the first call and
// cached; the zero Hash when the part holds no bytes. It is safe for
// concurrent use.
func (m *Media) SHA256() Hash {
	if len(m.Data) == 0 {
		return Hash{}
	}
	if s, _ := m.sum.Load().(*mediaSum); s != nil && s.data == &m.Data[0] && s.n == len(m.Data) {
		return s.h
	}
	s := &mediaSum{data: &m.Data[0], n: len(m.Data), h: sha256.Sum256(m.Data)}
	m.sum.Store(s)
	return s.h
}

// Size returns the number of inline bytes (0 for a URI or a file ID).
func (m *Media) Size() int { return len(m.Data) }

// source names the one source a valid Media has.
func (m *Media) source() (string, error) {
	n := 0
	var src string
	if len(m.Data) > 0 {
		n, src = n+1, "data"
	}
	if m.URI != "" {
		n, src = n+1, "uri"
	}
	if m.FileID != "" {
		n, src = n+1, "file_id"
	}
	switch {
	case n == 0:
		return "", errors.New("no data, URI or file ID")
	case n > 1:
		return "", errors.New("more than one of data, URI and file ID")
	case src == "data" && m.MIME == "":
		return "", errors.New("inline data without a MIME type")
	}
	return src, nil
}

// IsMedia reports whether p is an image, document or audio part.
func (p *Part) IsMedia() bool {
	switch p.Type {
	case PartImage, PartDocument, PartAudio:
		return true
	}
	return false
}

// MIME returns the MIME type of a media part; "" for other parts.
func (p *Part) MIME() string {
	if p.Media == nil {
		return ""
	}
	return p.Media.MIME
}

// Text returns a text part.
func Text(s string) Part { return Part{Type: PartText, Text: s} }

// ImagePart returns an image part holding data inline, of MIME type mime
// ("image/png", "image/jpeg", "image/gif", "image/webp"). The part refers
// to data; it does not copy it.
func ImagePart(data []byte, mime string) Part {
	return mediaPart(PartImage, &Media{Data: data, MIME: mime})
}

// ImageURL returns an image part that the provider fetches from url.
func ImageURL(url string) Part { return mediaPart(PartImage, &Media{URI: url}) }

// DocumentPart returns a document part holding data inline, of MIME type
// mime ("application/pdf", "text/plain"). The part refers to data; it does
// not copy it.
func DocumentPart(data []byte, mime string) Part {
	return mediaPart(PartDocument, &Media{Data: data, MIME: mime})
}

// DocumentURL returns a document part that the provider fetches from url.
func DocumentURL(url string) Part { return mediaPart(PartDocument, &Media{URI: url}) }

// AudioPart returns an audio part holding data inline, of MIME type mime
// ("audio/wav", "audio/mpeg"). The part refers to data; it does not copy
// it.
func AudioPart(data []byte, mime string) Part {
	return mediaPart(PartAudio, &Media{Data: data, MIME: mime})
}

// FilePart returns a part that refers to a file uploaded to the provider's
// files API by its ID. Its kind follows mime: an image for image/*, audio
// for audio/*, a document otherwise.
func FilePart(fileID, mime string) Part {
	t := PartDocument
	switch {
	case strings.HasPrefix(mime, "image/"):
		t = PartImage
	case strings.HasPrefix(mime, "audio/"):
		t = PartAudio
	}
	return mediaPart(t, &Media{FileID: fileID, MIME: mime})
}

func mediaPart(t PartType, m *Media) Part { return Part{Type: t, Media: m} }

// Named returns a copy of the media part p whose Media has the name name
// (a file name, a document's title). The bytes are shared, not copied. A
// part without Media is returned as it is.
func (p Part) Named(name string) Part {
	if p.Media == nil {
		return p
	}
	m := p.Media
	p.Media = &Media{MIME: m.MIME, Name: name, Data: m.Data, URI: m.URI, FileID: m.FileID}
	return p
}

// UserParts returns a user message of parts: text and media.
//
//	harness.UserParts(harness.Text("What is this?"), harness.ImagePart(png, "image/png"))
func UserParts(parts ...Part) Message { return Message{Role: RoleUser, Content: parts} }

// ToolOutput is a tool's result with parts: [NewTool] recognises it (or a
// pointer to it) as the result type of its function, and the model reads
// Text followed by Parts. Parts may hold text and media parts; a part
// larger than the agent's inline limit ([WithInlineLimit]) turns the
// result into an error result that says so.
type ToolOutput struct {
	Text  string
	Parts []Part
}

// AddResultParts adds parts to the result of the tool call ctx belongs to:
// a [Tool.Handler] returns its text and adds the images, documents or
// audio it produced with AddResultParts. They become [ToolResult.Parts],
// after those of earlier calls. Outside a tool call it fails with
// [ErrNotInToolCall]; a part that is neither text nor valid media fails
// with [ErrInvalidPart] and adds nothing.
func AddResultParts(ctx context.Context, parts ...Part) error {
	s, _ := ctx.Value(scopeKey{}).(*toolScope)
	if s == nil {
		return fmt.Errorf("%w: AddResultParts is called from a tool handler", ErrNotInToolCall)
	}
	for i := range parts {
		if err := checkContentPart(&parts[i]); err != nil {
			return fmt.Errorf("%w: part %d: %v", ErrInvalidPart, i, err)
		}
	}
	s.mu.Lock()
	s.parts = append(s.parts, parts...)
	s.mu.Unlock()
	return nil
}

// checkContentPart checks a part of user content or of a tool result: text
// or media with one source.
func checkContentPart(p *Part) error {
	switch {
	case p.Type == PartText:
		if p.ToolCall != nil || p.ToolResult != nil || p.Media != nil {
			return errors.New("text part with other content")
		}
		return nil
	case !p.IsMedia():
		return fmt.Errorf("a %q part is not content", p.Type)
	case p.Media == nil:
		return fmt.Errorf("%s part without media", p.Type)
	case p.ToolCall != nil || p.ToolResult != nil:
		return fmt.Errorf("%s part with other content", p.Type)
	}
	if _, err := p.Media.source(); err != nil {
		return fmt.Errorf("%s part: %v", p.Type, err)
	}
	return nil
}

// checkInline returns a *PartSizeError for the first of parts whose inline
// bytes exceed limit.
func checkInline(parts []Part, limit int64, where string) error {
	for i := range parts {
		if m := parts[i].Media; m != nil && int64(len(m.Data)) > limit {
			return &PartSizeError{Where: where, Part: i, Type: parts[i].Type, MIME: m.MIME, Size: int64(len(m.Data)), Limit: limit}
		}
	}
	return nil
}

// PartSizeError reports a part whose inline bytes exceed the agent's
// inline limit ([WithInlineLimit]). It matches [ErrPartTooLarge].
type PartSizeError struct {
	// Where says where the part entered: "user message" or
	// `result of tool "name"`.
	Where string
	// Part is the part's index in the message's content (or in the
	// result's parts).
	Part int
	// Type and MIME describe the part.
	Type PartType
	MIME string
	// Size is the part's inline size and Limit the limit, in bytes.
	Size, Limit int64
}

func (e *PartSizeError) Error() string {
	return fmt.Sprintf("harness: part %d of the %s (%s, %s) is %d bytes, over the inline limit of %d bytes (WithInlineLimit)",
		e.Part, e.Where, e.Type, e.MIME, e.Size, e.Limit)
}

// Unwrap returns ErrPartTooLarge.
func (e *PartSizeError) Unwrap() error { return ErrPartTooLarge }

// UnsupportedPartError reports a part that a provider or model cannot
// take, found before the request is sent. It matches [ErrUnsupportedPart].
type UnsupportedPartError struct {
	// Provider and Model name the provider and the request's model.
	Provider, Model string
	// Message is the index of the message in [ModelRequest.Messages] and
	// Part the index of the part in its content.
	Message, Part int
	// ResultPart is the index in [ToolResult.Parts] when the part is in a
	// tool result, and -1 otherwise.
	ResultPart int
	// Type and MIME describe the part.
	Type PartType
	MIME string
	// Reason says what the model lacks.
	Reason string
}

func (e *UnsupportedPartError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: model %q cannot take ", e.Provider, e.Model)
	if e.ResultPart >= 0 {
		fmt.Fprintf(&b, "part %d of the tool result in part %d", e.ResultPart, e.Part)
	} else {
		fmt.Fprintf(&b, "part %d", e.Part)
	}
	mime := e.MIME
	if mime == "" {
		mime = "no MIME type"
	}
	fmt.Fprintf(&b, " of message %d (%s, %s)", e.Message, e.Type, mime)
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	return b.String()
}

// Unwrap returns ErrUnsupportedPart.
func (e *UnsupportedPartError) Unwrap() error { return ErrUnsupportedPart }

// URLAccepter is implemented by providers that can say whether they send a
// media part by URL ([Media].URI, which the model's API then fetches)
// rather than only inline or by file ID. An extension that could replace a
// part's bytes by a URL, such as one that stores large parts and hands the
// model a link to them, asks [Agent.AcceptsURL] first. providers/anthropic
// and providers/openai implement it.
type URLAccepter interface {
	// AcceptsURL reports whether a part of type t and MIME type mime (""
	// when unknown), given by URL, can be sent to model: the provider
	// sends it by URL and the API takes that type by URL. It must not
	// block and must be safe for concurrent use.
	AcceptsURL(model string, t PartType, mime string) bool
}

// AcceptsURL reports whether the agent's provider takes a media part of
// type t and MIME type mime by URL for the agent's model ([WithModel]), as
// its [URLAccepter] says; false when the provider does not implement it.
// It is safe for concurrent use.
func (a *Agent) AcceptsURL(t PartType, mime string) bool {
	u, ok := a.cfg.provider.(URLAccepter)
	return ok && u.AcceptsURL(a.cfg.model, t, mime)
}
