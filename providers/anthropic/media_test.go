package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/media"
	"github.com/harnessx/harnessx/providers/internal/provtest"
	"github.com/harnessx/harnessx/providers/internal/replay"
)

var (
	pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR fake image bytes")
	pdfBytes = []byte("%PDF-1.7\n1 0 obj << >> endobj\n%%EOF")
)

// mediaHistory is a conversation with media in the user message and in a
// tool result.
func mediaHistory() []harness.Message {
	return []harness.Message{
		harness.UserParts(
			harness.Text("What is in these?"),
			harness.ImagePart(pngBytes, "image/png"),
			harness.ImageURL("https://example.com/cat.jpg"),
			harness.DocumentPart(pdfBytes, "application/pdf").Named("report.pdf"),
			harness.DocumentPart([]byte("plain notes"), "text/plain"),
			harness.DocumentURL("https://example.com/paper.pdf"),
			harness.FilePart("file_011CNha8iCJcU1wXNR6q4V8w", "image/png"),
		),
		{Role: harness.RoleAssistant, Content: []harness.Part{
			{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "toolu_S", Name: "screenshot", Input: json.RawMessage(`{}`)}},
		}},
		{Role: harness.RoleTool, Content: []harness.Part{
			{Type: harness.PartToolResult, ToolResult: &harness.ToolResult{CallID: "toolu_S", Name: "screenshot", Content: "the page",
				Parts: []harness.Part{harness.ImagePart(pngBytes, "image/png"), harness.Text("page 2:"), harness.FilePart("file_pdf", "application/pdf")}}},
		}},
	}
}

// TestMediaRequest sends image and document parts to a loopback server
// and checks the body it received: the blocks' sources, base64 data and
// media types, in user content and in the tool result.
func TestMediaRequest(t *testing.T) {
	srv := replay.New(provtest.Fixture("plain.json"))
	defer srv.Close()
	p := newTestProvider(t, srv, WithPromptCaching())
	req := &harness.ModelRequest{Model: model, Messages: mediaHistory()}
	if _, err := p.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	endpoint.CheckRequest(t, srv, 0, "media.request.json")

	var body struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(pngBytes)
	user := body.Messages[0].Content
	want := []string{
		`{"text":"What is in these?","type":"text"}`,
		`{"source":{"data":"` + b64 + `","media_type":"image/png","type":"base64"},"type":"image"}`,
		`{"source":{"url":"https://example.com/cat.jpg","type":"url"},"type":"image"}`,
		`{"source":{"data":"` + base64.StdEncoding.EncodeToString(pdfBytes) + `","media_type":"application/pdf","type":"base64"},"title":"report.pdf","type":"document"}`,
		`{"source":{"data":"plain notes","media_type":"text/plain","type":"text"},"type":"document"}`,
		`{"source":{"url":"https://example.com/paper.pdf","type":"url"},"type":"document"}`,
		`{"source":{"file_id":"file_011CNha8iCJcU1wXNR6q4V8w","type":"file"},"type":"image"}`,
	}
	if len(user) != len(want) {
		t.Fatalf("user content %s", user)
	}
	for i := range want {
		if got := canonical(t, user[i]); got != canonical(t, json.RawMessage(want[i])) {
			t.Errorf("user block %d:\n%s\nwant\n%s", i, got, want[i])
		}
	}
	result := canonical(t, body.Messages[2].Content[0])
	wantResult := canonical(t, json.RawMessage(`{"type":"tool_result","tool_use_id":"toolu_S","content":[`+
		`{"type":"text","text":"the page"},`+
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+b64+`"}},`+
		`{"type":"text","text":"page 2:"},`+
		`{"type":"document","source":{"type":"file","file_id":"file_pdf"}}]}`))
	if result != wantResult {
		t.Errorf("tool result:\n%s\nwant\n%s", result, wantResult)
	}
}

// TestMediaBreakpoint: an image that ends the stable prefix carries the
// cache breakpoint.
func TestMediaBreakpoint(t *testing.T) {
	p, err := New(WithAPIKey("k"), WithPromptCaching())
	if err != nil {
		t.Fatal(err)
	}
	var in media.Inliner
	params, err := p.params(&harness.ModelRequest{Model: model, Messages: []harness.Message{
		harness.UserParts(harness.Text("see"), harness.ImagePart(pngBytes, "image/png")), harness.UserMessage("and?")}}, &in)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(params.Messages[0].OfUser.Content[1])
	if !strings.Contains(string(b), `"cache_control":{"type":"ephemeral"}`) {
		t.Errorf("image block %s has no breakpoint", b)
	}
}

// canonical re-encodes JSON with sorted keys.
func canonical(t *testing.T, b json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestUnsupportedMedia: a part the API cannot take fails before any
// request, naming the part, its MIME type and the model.
func TestUnsupportedMedia(t *testing.T) {
	tool := func(parts ...harness.Part) []harness.Message {
		return []harness.Message{
			harness.UserMessage("go"),
			{Role: harness.RoleAssistant, Content: []harness.Part{{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "t1", Name: "rec", Input: json.RawMessage(`{}`)}}}},
			{Role: harness.RoleTool, Content: []harness.Part{{Type: harness.PartToolResult, ToolResult: &harness.ToolResult{CallID: "t1", Name: "rec", Parts: parts}}}},
		}
	}
	tests := []struct {
		name   string
		msgs   []harness.Message
		want   harness.UnsupportedPartError
		phrase string
	}{
		{"audio", []harness.Message{harness.UserParts(harness.Text("listen"), harness.AudioPart([]byte("RIFF...."), "audio/wav"))},
			harness.UnsupportedPartError{Message: 0, Part: 1, ResultPart: -1, Type: harness.PartAudio, MIME: "audio/wav"}, "takes no audio"},
		{"bmp", []harness.Message{harness.UserParts(harness.ImagePart([]byte("BM"), "image/bmp"))},
			harness.UnsupportedPartError{Message: 0, Part: 0, ResultPart: -1, Type: harness.PartImage, MIME: "image/bmp"}, "image/jpeg, image/png"},
		{"docx", []harness.Message{harness.UserParts(harness.DocumentPart([]byte("PK"), "application/vnd.openxmlformats-officedocument.wordprocessingml.document"))},
			harness.UnsupportedPartError{Message: 0, Part: 0, ResultPart: -1, Type: harness.PartDocument, MIME: "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}, "application/pdf and text/plain"},
		{"audio result", tool(harness.Text("x"), harness.AudioPart([]byte("ID3"), "audio/mpeg")),
			harness.UnsupportedPartError{Message: 2, Part: 0, ResultPart: 1, Type: harness.PartAudio, MIME: "audio/mpeg"}, "part 1 of the tool result in part 0 of message 2"},
		{"assistant image", []harness.Message{harness.UserMessage("hi"), {Role: harness.RoleAssistant, Content: []harness.Part{harness.ImagePart(pngBytes, "image/png")}}},
			harness.UnsupportedPartError{Message: 1, Part: 0, ResultPart: -1, Type: harness.PartImage, MIME: "image/png"}, "assistant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := replay.New(provtest.Fixture("plain.json"))
			defer srv.Close()
			p := newTestProvider(t, srv)
			_, err := p.Generate(context.Background(), &harness.ModelRequest{Model: model, Messages: tt.msgs})
			var ue *harness.UnsupportedPartError
			if !errors.Is(err, harness.ErrUnsupportedPart) || !errors.As(err, &ue) {
				t.Fatalf("err %v", err)
			}
			want := tt.want
			want.Provider, want.Model, want.Reason = Name, model, ue.Reason
			if *ue != want {
				t.Errorf("error %+v, want %+v", *ue, want)
			}
			for _, s := range []string{model, tt.want.MIME, tt.phrase} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q lacks %q", err, s)
				}
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// TestLargeMediaStreamed: an image of 64 KiB or more is streamed into the
// body as base64; the body the server receives, on the first attempt and
// on a retry, holds its full encoding, streamed or not, for a plain and a
// streamed reply.
func TestLargeMediaStreamed(t *testing.T) {
	big := make([]byte, 300_001)
	for i := range big {
		big[i] = byte(i * 7)
	}
	for _, stream := range []bool{false, true} {
		final := provtest.Fixture("plain.json")
		if stream {
			final = provtest.Fixture("stream_text.sse")
		}
		srv := replay.New(replay.Status(500, `{"type":"error","error":{"type":"api_error","message":"try again"}}`, nil), final)
		p := newTestProvider(t, srv)
		req := &harness.ModelRequest{Model: model, Stream: stream, Messages: []harness.Message{
			harness.UserParts(harness.Text("look"), harness.ImagePart(big, "image/png"), harness.DocumentPart(big, "application/pdf"))}}
		if _, err := p.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		srv.Close()
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		want := base64.StdEncoding.EncodeToString(big)
		for i, r := range reqs {
			var body struct {
				Messages []struct {
					Content []struct {
						Source struct {
							Data      string `json:"data"`
							MediaType string `json:"media_type"`
						} `json:"source"`
					} `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			c := body.Messages[0].Content
			if c[1].Source.Data != want || c[1].Source.MediaType != "image/png" || c[2].Source.Data != want || c[2].Source.MediaType != "application/pdf" {
				t.Errorf("stream=%v request %d: the media were not sent whole", stream, i)
			}
			if strings.Contains(string(r.Body), "hxmedia-") {
				t.Errorf("stream=%v request %d: a token reached the server", stream, i)
			}
		}
	}
}

// AcceptsURL says yes for the image types and PDFs that the Messages API
// takes by URL, and no for audio and other types; a part it accepts, by
// URL in a tool result, is sent.
func TestAcceptsURL(t *testing.T) {
	for _, tt := range []struct {
		t    harness.PartType
		mime string
		want bool
	}{
		{harness.PartImage, "image/png", true},
		{harness.PartImage, "image/webp", true},
		{harness.PartImage, "", true},
		{harness.PartImage, "image/bmp", false},
		{harness.PartDocument, "application/pdf", true},
		{harness.PartDocument, "text/plain", false},
		{harness.PartAudio, "audio/wav", false},
		{harness.PartText, "", false},
	} {
		srv := replay.New(provtest.Fixture("plain.json"))
		p := newTestProvider(t, srv)
		var a harness.URLAccepter = p
		got := a.AcceptsURL(model, tt.t, tt.mime)
		if got != tt.want {
			t.Errorf("AcceptsURL(%s, %q) = %v, want %v", tt.t, tt.mime, got, tt.want)
		}
		if got {
			part := harness.Part{Type: tt.t, Media: &harness.Media{URI: "https://example.com/x", MIME: tt.mime}}
			msgs := []harness.Message{
				harness.UserMessage("go"),
				{Role: harness.RoleAssistant, Content: []harness.Part{{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "t1", Name: "rec", Input: json.RawMessage(`{}`)}}}},
				{Role: harness.RoleTool, Content: []harness.Part{{Type: harness.PartToolResult, ToolResult: &harness.ToolResult{CallID: "t1", Name: "rec", Parts: []harness.Part{part}}}}},
			}
			if _, err := p.Generate(context.Background(), &harness.ModelRequest{Model: model, Messages: msgs}); err != nil {
				t.Errorf("%s %q by URL: %v", tt.t, tt.mime, err)
			} else if body := string(srv.Requests()[0].Body); !strings.Contains(body, `"url":"https://example.com/x"`) {
				t.Errorf("%s %q: the request does not carry the URL: %s", tt.t, tt.mime, body)
			}
		}
		srv.Close()
	}
}
