package mcp

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/harnessx/harnessx/harness"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// errorTypeInvalidContent is the error.type of a call whose result holds
// media content that cannot become a part: a missing or malformed MIME
// type, one that does not match the content's kind, or no data.
const errorTypeInvalidContent = "invalid_content"

// maxPartName bounds the name a media part takes from a resource's URI.
const maxPartName = 128

// content is what the model gets of a tool result or a resource: text,
// and the media parts that follow it.
type content struct {
	text  []string
	parts []harness.Part
}

// contentError is media content of a server that cannot become a part.
type contentError struct{ msg string }

func (e *contentError) Error() string { return e.msg }

// resultContent converts a tools/call result's content into text and
// parts:
//
//   - text content is text;
//   - image and audio content become image and audio parts of the
//     server's MIME type (its bytes, as the SDK decoded them from base64,
//     shared, not copied), with a note in the text naming the part;
//   - an embedded resource is converted as [resourceContent] does;
//   - a resource link is a note naming its URI (and readTool, the server's
//     read_resource tool, when there is one); it is not fetched;
//   - other content is its JSON.
//
// With no content, the text is the structured content's JSON. Media
// content with a missing or malformed MIME type, one of another kind
// (image content of type application/pdf) or no data is a
// *contentError naming it. An isError result (media=false) keeps the
// notes only: error results carry no parts.
func resultContent(res *sdk.CallToolResult, readTool string, media bool) (content, error) {
	var c content
	for i, block := range res.Content {
		switch b := block.(type) {
		case *sdk.TextContent:
			c.text = append(c.text, b.Text)
		case *sdk.ImageContent:
			if err := c.media(harness.PartImage, "image", i, b.MIMEType, b.Data, "", media); err != nil {
				return c, err
			}
		case *sdk.AudioContent:
			if err := c.media(harness.PartAudio, "audio", i, b.MIMEType, b.Data, "", media); err != nil {
				return c, err
			}
		case *sdk.ResourceLink:
			if readTool != "" {
				c.text = append(c.text, fmt.Sprintf("[resource: %s %s; %s reads it]", b.Name, b.URI, readTool))
			} else {
				c.text = append(c.text, fmt.Sprintf("[resource: %s %s]", b.Name, b.URI))
			}
		case *sdk.EmbeddedResource:
			if b.Resource != nil {
				if err := c.resource(b.Resource, fmt.Sprintf("content %d", i), media); err != nil {
					return c, err
				}
			}
		default:
			if raw, err := json.Marshal(b); err == nil {
				c.text = append(c.text, string(raw))
			}
		}
	}
	if len(c.text) == 0 && len(c.parts) == 0 && res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			c.text = append(c.text, string(raw))
		}
	}
	return c, nil
}

// resourceContent converts the contents of a resources/read result as
// resultContent converts embedded resources.
func resourceContent(contents []*sdk.ResourceContents) (content, error) {
	var c content
	for i, r := range contents {
		if r == nil {
			continue
		}
		if err := c.resource(r, fmt.Sprintf("contents %d", i), true); err != nil {
			return c, err
		}
	}
	return c, nil
}

// resource adds a resource's contents: its text as text (when it has
// both, as the adapter always did); a blob by its
// MIME type: image/* an image part, audio/* an audio part,
// application/pdf a document part, text (text/*, JSON, XML) in valid
// UTF-8 text, and any other type (application/octet-stream when the
// server gives none) a note naming the URI, the type and the size, since
// no provider takes it. A MIME type that is present must be well formed.
// Without media (an isError result) a blob is only a note.
func (c *content) resource(r *sdk.ResourceContents, where string, media bool) error {
	if r.Text != "" || len(r.Blob) == 0 {
		c.text = append(c.text, r.Text)
		return nil
	}
	if !media {
		c.text = append(c.text, fmt.Sprintf("[resource: %s, %s, %d bytes]", r.URI, shortName(r.MIMEType), len(r.Blob)))
		return nil
	}
	what := "resource " + where
	mt := "application/octet-stream"
	if r.MIMEType != "" {
		var err error
		if mt, err = mediaType(r.MIMEType); err != nil {
			return &contentError{fmt.Sprintf("%s (%s) has a malformed MIME type %s: %v", what, shownName(r.URI), shownName(r.MIMEType), err)}
		}
	}
	major, _, _ := strings.Cut(mt, "/")
	switch {
	case major == "image":
		return c.media(harness.PartImage, what, -1, mt, r.Blob, r.URI, media)
	case major == "audio":
		return c.media(harness.PartAudio, what, -1, mt, r.Blob, r.URI, media)
	case mt == "application/pdf":
		return c.media(harness.PartDocument, what, -1, mt, r.Blob, r.URI, media)
	case isText(mt) && utf8.Valid(r.Blob):
		c.text = append(c.text, string(r.Blob))
		return nil
	}
	c.text = append(c.text, fmt.Sprintf("[resource: %s, %s, %d bytes; not shown: the model takes images, audio, PDF and text]", r.URI, mt, len(r.Blob)))
	return nil
}

// media adds a media part of type t, or only a note when parts are not
// wanted. index is the content block's index (-1 for a resource, whose
// MIME type was checked already).
func (c *content) media(t harness.PartType, what string, index int, mimeType string, data []byte, uri string, parts bool) error {
	if index >= 0 {
		what = fmt.Sprintf("%s content %d", what, index)
		if !parts {
			c.text = append(c.text, fmt.Sprintf("[%s: %s, %d bytes]", t, shortName(mimeType), len(data)))
			return nil
		}
		mt, err := mediaType(mimeType)
		switch {
		case mimeType == "":
			return &contentError{fmt.Sprintf("%s has no MIME type", what)}
		case err != nil:
			return &contentError{fmt.Sprintf("%s has a malformed MIME type %s: %v", what, shownName(mimeType), err)}
		case !strings.HasPrefix(mt, string(t)+"/"):
			return &contentError{fmt.Sprintf("%s has the MIME type %s, not %s/*", what, shownName(mimeType), t)}
		}
		mimeType = mt
	}
	if len(data) == 0 {
		return &contentError{fmt.Sprintf("%s (%s) has no data", what, mimeType)}
	}
	m := &harness.Media{MIME: mimeType, Data: data, Name: partName(uri)}
	c.parts = append(c.parts, harness.Part{Type: t, Media: m})
	note := fmt.Sprintf("[%s: %s, %d bytes; attached as part %d]", t, mimeType, len(data), len(c.parts))
	if uri != "" {
		note = fmt.Sprintf("[resource %s: %s, %s, %d bytes; attached as part %d]", uri, t, mimeType, len(data), len(c.parts))
	}
	c.text = append(c.text, note)
	return nil
}

// mediaType returns the media type of a MIME type, lower case and
// without parameters, or an error when it is not type/subtype (RFC 6838:
// tokens of at most 127 characters).
func mediaType(s string) (string, error) {
	mt, _, err := mime.ParseMediaType(s)
	if err != nil {
		return "", err
	}
	typ, sub, ok := strings.Cut(mt, "/")
	switch {
	case !ok || typ == "" || sub == "":
		return "", fmt.Errorf("want type/subtype")
	case len(typ) > 127 || len(sub) > 127:
		return "", fmt.Errorf("its type or subtype is longer than 127 characters")
	}
	return mt, nil
}

// isText reports whether a blob of media type mt is text the model reads
// as such.
func isText(mt string) bool {
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || mt == "application/xml" ||
		strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml")
}

// partName is the name of a part from a resource's URI: the last element
// of its path, when there is one, at most maxPartName bytes.
func partName(uri string) string {
	if uri == "" {
		return ""
	}
	u, err := url.Parse(uri)
	if err != nil {
		return ""
	}
	p := u.Path
	if p == "" {
		p = u.Opaque
	}
	name := path.Base(p)
	if name == "." || name == "/" || name == "" {
		return ""
	}
	if len(name) > maxPartName {
		name = strings.ToValidUTF8(name[:maxPartName], "")
	}
	return name
}
