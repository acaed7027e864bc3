package mcp_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/extensions/mcp"
	"github.com/harnessx/harnessx/extensions/mcp/internal/testserver"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// wantPart is a media part a result must carry.
type wantPart struct {
	typ  harness.PartType
	mime string
	data []byte
	name string
}

// mediaCase is one call of the test server's media tool and what its
// result must be.
type mediaCase struct {
	kind    string
	bytes   int
	parts   []wantPart
	text    []string // in the result's content, in order
	isError bool
	errType string
}

var mediaCases = []mediaCase{
	{kind: "image", parts: []wantPart{{harness.PartImage, "image/png", testserver.PNG, ""}},
		text: []string{"[image: image/png, 29 bytes; attached as part 1]"}},
	{kind: "audio", parts: []wantPart{{harness.PartAudio, "audio/wav", testserver.WAV, ""}},
		text: []string{"[audio: audio/wav,"}},
	{kind: "pdf", parts: []wantPart{{harness.PartDocument, "application/pdf", testserver.PDF, "q3.pdf"}},
		text: []string{"[resource media://reports/q3.pdf: document, application/pdf, 33 bytes; attached as part 1]"}},
	{kind: "chart", parts: []wantPart{{harness.PartImage, "image/png", testserver.PNG, "chart.png"}},
		text: []string{"[resource media://reports/chart.png: image, image/png"}},
	{kind: "text_resource", text: []string{testserver.NotesText}},
	{kind: "text_blob", text: []string{"a,b\n1,2\n"}},
	{kind: "zip", text: []string{"[resource: media://bundle.zip, application/zip, 19 bytes; not shown: the model takes images, audio, PDF and text]"}},
	{kind: "untyped_blob", text: []string{"[resource: media://blob, application/octet-stream, 19 bytes; not shown"}},
	{kind: "mixed", parts: []wantPart{{harness.PartImage, "image/png", testserver.PNG, ""}},
		text: []string{"Here is the chart:\n[image: image/png, 29 bytes; attached as part 1]\nSales rose."}},
	{kind: "bad_mime", isError: true, errType: "invalid_content",
		text: []string{`image content 0 has a malformed MIME type "png"`}},
	{kind: "no_mime", isError: true, errType: "invalid_content", text: []string{"image content 0 has no MIME type"}},
	{kind: "wrong_kind", isError: true, errType: "invalid_content",
		text: []string{`image content 0 has the MIME type "application/pdf", not image/*`}},
	{kind: "empty", isError: true, errType: "invalid_content", text: []string{"image content 0 (image/png) has no data"}},
	{kind: "bad_base64", isError: true, errType: "invalid_content", text: []string{"base64"}},
	{kind: "big_image", bytes: 4000, isError: true, errType: "part_too_large",
		text: []string{"is 4000 bytes, over the inline limit of 3000 bytes (WithInlineLimit)"}},
	{kind: "big_image", bytes: 2000, parts: []wantPart{{typ: harness.PartImage, mime: "image/png"}}},
	{kind: "error_image", isError: true, errType: "tool_error",
		text: []string{"rendering failed; partial frame:\n[image: image/png, 29 bytes]"}},
}

// Media content of a real MCP server becomes parts of the tool result,
// with the server's MIME type, over each transport: image and audio
// content, embedded PDF and image resources; embedded text is text, a
// blob of another type a note. A missing, malformed or mismatched MIME
// type, no data and malformed base64 give a clear error result (error
// type invalid_content), and a part over the agent's inline limit one
// naming the limit; the run goes on. The model's next request carries the
// parts.
func TestMediaContentBecomesParts(t *testing.T) {
	raw := &testserver.Raw{Replace: [][2]string{testserver.BadBase64Replace}}
	transports := map[string]func(t *testing.T) mcp.Transport{
		"memory": func(t *testing.T) mcp.Transport {
			return memServerWith(t, testserver.New(testserver.Options{}), raw.Wrap)
		},
		"http": func(t *testing.T) mcp.Transport {
			return mcp.StreamableHTTP(rawHTTPServer(t, testserver.New(testserver.Options{}), raw))
		},
		// The stdio server cannot break its base64.
		"stdio": func(*testing.T) mcp.Transport { return stdioServer() },
	}
	for name, tr := range transports {
		t.Run(name, func(t *testing.T) {
			script := []harnesstest.Response{enable("c0", "srv")}
			for i, c := range mediaCases {
				in := map[string]any{"kind": c.kind}
				if c.bytes > 0 {
					in["bytes"] = c.bytes
				}
				script = append(script, harnesstest.CallTool(callID(i), "srv__media", in))
			}
			p := harnesstest.NewScriptedProvider(append(script, harnesstest.Reply("done"))...)
			a := newAgent(t, p, mcp.New(mcp.WithServer("srv", tr(t))), harness.WithInlineLimit(3000))
			r := run(t, a, "go")
			res := results(r)
			for i, c := range mediaCases {
				if name == "stdio" && c.kind == "bad_base64" {
					continue
				}
				got := res[callID(i)]
				if got == nil {
					t.Errorf("%s: no result", c.kind)
					continue
				}
				checkMediaResult(t, c, got)
				// The next request carries the result as the model reads it.
				if !c.isError {
					sent := sentResult(p.Requests()[i+2], callID(i))
					if sent == nil || len(sent.Parts) != len(got.Parts) {
						t.Errorf("%s: the model's request carries %+v", c.kind, sent)
					}
				}
			}
			if r.Text != "done" {
				t.Errorf("run ended with %q", r.Text)
			}
		})
	}
}

func callID(i int) string { return "m" + string(rune('a'+i)) }

func checkMediaResult(t *testing.T, c mediaCase, got *harness.ToolResult) {
	t.Helper()
	if got.IsError != c.isError {
		t.Errorf("%s: IsError = %v, want %v: %q", c.kind, got.IsError, c.isError, got.Content)
	}
	if c.errType != "" && got.ErrorType != c.errType {
		t.Errorf("%s: ErrorType = %q, want %q (%q)", c.kind, got.ErrorType, c.errType, got.Content)
	}
	for _, w := range c.text {
		if !strings.Contains(got.Content, w) {
			t.Errorf("%s: content lacks %q:\n%s", c.kind, w, got.Content)
		}
	}
	if len(got.Parts) != len(c.parts) {
		t.Errorf("%s: %d parts, want %d", c.kind, len(got.Parts), len(c.parts))
		return
	}
	for j, w := range c.parts {
		p := got.Parts[j]
		if p.Type != w.typ || p.Media == nil || p.Media.MIME != w.mime || p.Media.Name != w.name {
			t.Errorf("%s: part %d = %s %+v, want %s %s name %q", c.kind, j, p.Type, p.Media, w.typ, w.mime, w.name)
			continue
		}
		if w.data != nil && !bytes.Equal(p.Media.Data, w.data) {
			t.Errorf("%s: part %d holds %q, want %q", c.kind, j, p.Media.Data, w.data)
		}
		if w.data == nil && len(p.Media.Data) != c.bytes {
			t.Errorf("%s: part %d holds %d bytes, want %d", c.kind, j, len(p.Media.Data), c.bytes)
		}
	}
}

// sentResult finds the result of call id in a model request.
func sentResult(req harness.ModelRequest, id string) *harness.ToolResult {
	for _, m := range req.Messages {
		for _, p := range m.Content {
			if p.ToolResult != nil && p.ToolResult.CallID == id {
				return p.ToolResult
			}
		}
	}
	return nil
}

// read_resource of an image resource returns it as an image part.
func TestReadResourceImage(t *testing.T) {
	srv := testserver.New(testserver.Options{})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	p := harnesstest.NewScriptedProvider(enable("c1", "srv"),
		harnesstest.CallTool("c2", "srv__read_resource", map[string]string{"uri": testserver.ChartURI}),
		harnesstest.Reply("done"))
	a := newAgent(t, p, mcp.New(mcp.WithServer("srv", mcp.StreamableHTTP(hs.URL))))
	got := results(run(t, a, "go"))["c2"]
	checkMediaResult(t, mediaCase{kind: "read_resource",
		parts: []wantPart{{harness.PartImage, "image/png", testserver.PNG, "chart.png"}},
		text:  []string{"[resource media://reports/chart.png: image, image/png, 29 bytes; attached as part 1]"}}, got)
}
