package testserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bytes the tool "media" returns. They need not be valid images,
// recordings or documents: the client passes bytes on without decoding
// them.
var (
	PNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR a test image")
	WAV = []byte("RIFF\x24\x00\x00\x00WAVEfmt  a test recording")
	PDF = []byte("%PDF-1.4\n% a test document\n%%EOF\n")
	ZIP = []byte("PK\x03\x04 a test archive")
)

// BadBase64 is the image data of the "media" kind "bad_base64": the client
// gets it with its base64 replaced by something that is not base64
// (Raw.Replace with BadBase64Replace).
var (
	BadBase64        = []byte("these bytes are replaced on the wire")
	BadBase64Replace = [2]string{"dGhlc2UgYnl0ZXMgYXJlIHJlcGxhY2VkIG9uIHRoZSB3aXJl", "!!not*base64!!"}
)

// The URIs of the resources of the "media" tool and of the server.
const (
	ChartURI = "media://reports/chart.png"
	PDFURI   = "media://reports/q3.pdf"
	NotesTxt = "media://notes.txt"
)

type mediaIn struct {
	Kind  string `json:"kind" jsonschema:"what to return"`
	Bytes int    `json:"bytes,omitempty" jsonschema:"how many bytes of image, for kind big_image"`
}

// addMedia adds the tool "media", whose result's content is, by kind:
//
//	image          an image (PNG, image/png)
//	audio          audio (WAV, audio/wav)
//	pdf            an embedded PDF resource (PDF, at PDFURI)
//	chart          an embedded image resource (PNG, at ChartURI)
//	text_resource  an embedded text resource
//	text_blob      an embedded resource whose blob is text/csv
//	zip            an embedded application/zip resource
//	untyped_blob   an embedded resource blob without a MIME type
//	mixed          text, an image, text
//	bad_mime       an image of MIME type "png"
//	no_mime        an image without a MIME type
//	wrong_kind     an image of MIME type application/pdf
//	empty          an image without data
//	bad_base64     an image whose data Raw.Replace breaks (BadBase64)
//	big_image      an image of Bytes bytes
//	error_image    an isError result with text and an image
//
// and the resource ChartURI.
func addMedia(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "media", Description: "Return media content of a kind.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in mediaIn) (*mcp.CallToolResult, any, error) {
			c, err := mediaContent(in)
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: c, IsError: in.Kind == "error_image"}, nil, nil
		})
	s.AddResource(&mcp.Resource{Name: "chart", URI: ChartURI, MIMEType: "image/png"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "image/png", Blob: PNG}}}, nil
		})
}

func mediaContent(in mediaIn) ([]mcp.Content, error) {
	image := func(mime string, data []byte) mcp.Content { return &mcp.ImageContent{MIMEType: mime, Data: data} }
	blob := func(uri, mime string, data []byte) mcp.Content {
		return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uri, MIMEType: mime, Blob: data}}
	}
	switch in.Kind {
	case "image":
		return []mcp.Content{image("image/png", PNG)}, nil
	case "audio":
		return []mcp.Content{&mcp.AudioContent{MIMEType: "audio/wav", Data: WAV}}, nil
	case "pdf":
		return []mcp.Content{blob(PDFURI, "application/pdf", PDF)}, nil
	case "chart":
		return []mcp.Content{blob(ChartURI, "image/png", PNG)}, nil
	case "text_resource":
		return []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: NotesTxt, MIMEType: "text/plain", Text: NotesText}}}, nil
	case "text_blob":
		return []mcp.Content{blob("media://table.csv", "text/csv; charset=utf-8", []byte("a,b\n1,2\n"))}, nil
	case "zip":
		return []mcp.Content{blob("media://bundle.zip", "application/zip", ZIP)}, nil
	case "untyped_blob":
		return []mcp.Content{blob("media://blob", "", ZIP)}, nil
	case "mixed":
		return []mcp.Content{&mcp.TextContent{Text: "Here is the chart:"}, image("image/png", PNG), &mcp.TextContent{Text: "Sales rose."}}, nil
	case "bad_mime":
		return []mcp.Content{image("png", PNG)}, nil
	case "no_mime":
		return []mcp.Content{image("", PNG)}, nil
	case "wrong_kind":
		return []mcp.Content{image("application/pdf", PDF)}, nil
	case "empty":
		return []mcp.Content{image("image/png", nil)}, nil
	case "bad_base64":
		return []mcp.Content{image("image/png", BadBase64)}, nil
	case "big_image":
		data := make([]byte, in.Bytes)
		copy(data, PNG)
		return []mcp.Content{image("image/png", data)}, nil
	case "error_image":
		return []mcp.Content{&mcp.TextContent{Text: "rendering failed; partial frame:"}, image("image/png", PNG)}, nil
	}
	return nil, fmt.Errorf("unknown kind %q", in.Kind)
}
