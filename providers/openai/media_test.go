package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/provtest"
	"github.com/harnessx/harnessx/providers/internal/replay"
)

var (
	pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR fake image bytes")
	pdfBytes = []byte("%PDF-1.7\n1 0 obj << >> endobj\n%%EOF")
	wavBytes = []byte("RIFF\x24\x00\x00\x00WAVEfmt fake")
)

// TestMediaRequest sends image, file and audio parts, from the user and
// from a tool, to a loopback server and checks the body it received.
func TestMediaRequest(t *testing.T) {
	srv := replay.New(provtest.Fixture("plain.json"))
	defer srv.Close()
	p := newTestProvider(t, srv, WithPartSupport(func(string, harness.PartType) bool { return true }))
	req := &harness.ModelRequest{Model: "gpt-audio", Messages: []harness.Message{
		harness.UserParts(
			harness.Text("What is in these?"),
			harness.ImagePart(pngBytes, "image/png"),
			harness.ImageURL("https://example.com/cat.jpg"),
			harness.DocumentPart(pdfBytes, "application/pdf").Named("report.pdf"),
			harness.FilePart("file-abc123", "application/pdf"),
			harness.AudioPart(wavBytes, "audio/wav"),
		),
		{Role: harness.RoleAssistant, Content: []harness.Part{
			{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "call_S", Name: "screenshot", Input: json.RawMessage(`{}`)}},
			{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "call_T", Name: "time", Input: json.RawMessage(`{}`)}},
		}},
		{Role: harness.RoleTool, Content: []harness.Part{
			{Type: harness.PartToolResult, ToolResult: &harness.ToolResult{CallID: "call_S", Name: "screenshot", Content: "the page",
				Parts: []harness.Part{harness.ImagePart(pngBytes, "image/png"), harness.Text("and below the fold")}}},
			{Type: harness.PartToolResult, ToolResult: &harness.ToolResult{CallID: "call_T", Name: "time", Content: "noon"}},
		}},
	}}
	if _, err := p.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	endpoint.CheckRequest(t, srv, 0, "media.request.json")

	var body struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	want := []string{
		`{"role":"user","content":[` +
			`{"type":"text","text":"What is in these?"},` +
			`{"type":"image_url","image_url":{"url":"` + dataURL + `"}},` +
			`{"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"}},` +
			`{"type":"file","file":{"file_data":"data:application/pdf;base64,` + base64.StdEncoding.EncodeToString(pdfBytes) + `","filename":"report.pdf"}},` +
			`{"type":"file","file":{"file_id":"file-abc123"}},` +
			`{"type":"input_audio","input_audio":{"data":"` + base64.StdEncoding.EncodeToString(wavBytes) + `","format":"wav"}}]}`,
		`{"role":"assistant","tool_calls":[{"id":"call_S","type":"function","function":{"name":"screenshot","arguments":"{}"}},` +
			`{"id":"call_T","type":"function","function":{"name":"time","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"call_S","content":"the page\n\nand below the fold"}`,
		`{"role":"tool","tool_call_id":"call_T","content":"noon"}`,
		`{"role":"user","content":[{"type":"text","text":"Attachments of the result of tool call call_S (screenshot):"},` +
			`{"type":"image_url","image_url":{"url":"` + dataURL + `"}}]}`,
	}
	if len(body.Messages) != len(want) {
		t.Fatalf("%d messages: %s", len(body.Messages), body.Messages)
	}
	for i := range want {
		if got := canonical(t, body.Messages[i]); got != canonical(t, json.RawMessage(want[i])) {
			t.Errorf("message %d:\n%s\nwant\n%s", i, got, canonical(t, json.RawMessage(want[i])))
		}
	}
}

// TestMediaUsage: the image and audio prompt tokens the API reports apart
// (prompt_tokens_details.image_tokens and audio_tokens) are carried as
// parts of InputTokens, which stays prompt_tokens.
func TestMediaUsage(t *testing.T) {
	srv := replay.New(provtest.Fixture("media_usage.json"))
	defer srv.Close()
	p := newTestProvider(t, srv, WithPartSupport(func(string, harness.PartType) bool { return true }))
	resp, err := p.Generate(context.Background(), &harness.ModelRequest{Model: "gpt-audio", Messages: []harness.Message{
		harness.UserParts(harness.Text("What is in these?"), harness.ImagePart(pngBytes, "image/png"), harness.AudioPart(wavBytes, "audio/wav")),
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := harness.Usage{InputTokens: 1210, OutputTokens: 9, ImageInputTokens: 1020, AudioInputTokens: 150}
	if resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
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

// TestUnsupportedMedia: a part the model or the API cannot take fails
// before any request, naming the part, its MIME type and the model.
func TestUnsupportedMedia(t *testing.T) {
	tool := func(parts ...harness.Part) []harness.Message {
		return []harness.Message{
			harness.UserMessage("go"),
			{Role: harness.RoleAssistant, Content: []harness.Part{{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "t1", Name: "rec", Input: json.RawMessage(`{}`)}}}},
			{Role: harness.RoleTool, Content: []harness.Part{{Type: harness.PartToolResult, ToolResult: &harness.ToolResult{CallID: "t1", Name: "rec", Parts: parts}}}},
		}
	}
	tests := []struct {
		name, model string
		msgs        []harness.Message
		want        harness.UnsupportedPartError
		phrase      string
	}{
		{"audio to a text model", model, []harness.Message{harness.UserParts(harness.Text("listen"), harness.AudioPart(wavBytes, "audio/wav"))},
			harness.UnsupportedPartError{Part: 1, ResultPart: -1, Type: harness.PartAudio, MIME: "audio/wav"}, "takes no audio input"},
		{"document to gpt-3.5", "gpt-3.5-turbo", []harness.Message{harness.UserParts(harness.DocumentPart(pdfBytes, "application/pdf"))},
			harness.UnsupportedPartError{Part: 0, ResultPart: -1, Type: harness.PartDocument, MIME: "application/pdf"}, "takes no document input"},
		{"image to an audio model", "gpt-4o-audio-preview", tool(harness.ImagePart(pngBytes, "image/png")),
			harness.UnsupportedPartError{Message: 2, Part: 0, ResultPart: 0, Type: harness.PartImage, MIME: "image/png"}, "part 0 of the tool result in part 0 of message 2"},
		{"ogg", "gpt-audio", []harness.Message{harness.UserParts(harness.AudioPart([]byte("OggS"), "audio/ogg"))},
			harness.UnsupportedPartError{Part: 0, ResultPart: -1, Type: harness.PartAudio, MIME: "audio/ogg"}, "audio/wav and audio/mpeg"},
		{"document URL", model, []harness.Message{harness.UserParts(harness.DocumentURL("https://example.com/a.pdf"))},
			harness.UnsupportedPartError{Part: 0, ResultPart: -1, Type: harness.PartDocument}, "not by URL"},
		{"assistant image", model, []harness.Message{harness.UserMessage("hi"), {Role: harness.RoleAssistant, Content: []harness.Part{harness.ImagePart(pngBytes, "image/png")}}},
			harness.UnsupportedPartError{Message: 1, Part: 0, ResultPart: -1, Type: harness.PartImage, MIME: "image/png"}, "assistant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := replay.New(provtest.Fixture("plain.json"))
			defer srv.Close()
			p := newTestProvider(t, srv)
			_, err := p.Generate(context.Background(), &harness.ModelRequest{Model: tt.model, Messages: tt.msgs})
			var ue *harness.UnsupportedPartError
			if !errors.Is(err, harness.ErrUnsupportedPart) || !errors.As(err, &ue) {
				t.Fatalf("err %v", err)
			}
			want := tt.want
			want.Provider, want.Model, want.Reason = Name, tt.model, ue.Reason
			if *ue != want {
				t.Errorf("error %+v, want %+v", *ue, want)
			}
			for _, s := range []string{tt.model, tt.want.MIME, tt.phrase} {
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

func TestDefaultPartSupport(t *testing.T) {
	for _, tt := range []struct {
		model string
		t     harness.PartType
		want  bool
	}{
		{"gpt-5.4-mini", harness.PartImage, true},
		{"gpt-4o", harness.PartDocument, true},
		{"gpt-4o", harness.PartAudio, false},
		{"gpt-4o-audio-preview", harness.PartAudio, true},
		{"gpt-4o-audio-preview", harness.PartImage, false},
		{"openai/gpt-audio", harness.PartAudio, true},
		{"o3-mini", harness.PartImage, false},
		{"gpt-3.5-turbo", harness.PartDocument, false},
		{"gpt-4o", harness.PartText, false},
	} {
		if got := DefaultPartSupport(tt.model, tt.t); got != tt.want {
			t.Errorf("DefaultPartSupport(%q, %s) = %v", tt.model, tt.t, got)
		}
	}
}

// TestLargeMediaStreamed: parts of 16 KiB or more are streamed into the
// body; the server receives their full encodings on the first attempt
// and on a retry, for a plain and a streamed reply.
func TestLargeMediaStreamed(t *testing.T) {
	big := make([]byte, 200_002)
	for i := range big {
		big[i] = byte(i * 11)
	}
	b64 := base64.StdEncoding.EncodeToString(big)
	for _, stream := range []bool{false, true} {
		final := provtest.Fixture("plain.json")
		if stream {
			final = provtest.Fixture("stream_text.sse")
		}
		srv := replay.New(replay.Status(500, `{"error":{"type":"server_error","message":"try again"}}`, nil), final)
		p := newTestProvider(t, srv, WithPartSupport(func(string, harness.PartType) bool { return true }))
		req := &harness.ModelRequest{Model: model, Stream: stream, Messages: []harness.Message{harness.UserParts(harness.Text("look"),
			harness.ImagePart(big, "image/png"), harness.DocumentPart(big, "application/pdf"), harness.AudioPart(big, "audio/mpeg"))}}
		if _, err := p.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		srv.Close()
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		for i, r := range reqs {
			var body struct {
				Messages []struct {
					Content []struct {
						ImageURL struct{ URL string } `json:"image_url"`
						File     struct {
							FileData string `json:"file_data"`
						} `json:"file"`
						InputAudio struct{ Data, Format string } `json:"input_audio"`
					} `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			c := body.Messages[0].Content
			if c[1].ImageURL.URL != "data:image/png;base64,"+b64 || c[2].File.FileData != "data:application/pdf;base64,"+b64 ||
				c[3].InputAudio.Data != b64 || c[3].InputAudio.Format != "mp3" {
				t.Errorf("stream=%v request %d: the media were not sent whole: %d %d %d %q", stream, i, len(c[1].ImageURL.URL), len(c[2].File.FileData), len(c[3].InputAudio.Data), c[3].InputAudio.Format)
			}
		}
	}
}

// AcceptsURL says yes for images to a model that takes images, and no for
// documents and audio, which Chat Completions takes inline or by file ID
// only; a part it accepts, by URL in a tool result, is sent, and one it
// refuses fails before anything is sent.
func TestAcceptsURL(t *testing.T) {
	for _, tt := range []struct {
		model string
		t     harness.PartType
		mime  string
		want  bool
	}{
		{model, harness.PartImage, "image/png", true},
		{model, harness.PartImage, "", true},
		{model, harness.PartImage, "application/pdf", false},
		{"o3-mini", harness.PartImage, "image/png", false},
		{model, harness.PartDocument, "application/pdf", false},
		{"gpt-4o-audio-preview", harness.PartAudio, "audio/wav", false},
	} {
		srv := replay.New(provtest.Fixture("plain.json"))
		p := newTestProvider(t, srv)
		var a harness.URLAccepter = p
		got := a.AcceptsURL(tt.model, tt.t, tt.mime)
		if got != tt.want {
			t.Errorf("AcceptsURL(%s, %s, %q) = %v, want %v", tt.model, tt.t, tt.mime, got, tt.want)
		}
		part := harness.Part{Type: tt.t, Media: &harness.Media{URI: "https://example.com/x", MIME: tt.mime}}
		msgs := []harness.Message{
			harness.UserMessage("go"),
			{Role: harness.RoleAssistant, Content: []harness.Part{{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "t1", Name: "rec", Input: json.RawMessage(`{}`)}}}},
			{Role: harness.RoleTool, Content: []harness.Part{{Type: harness.PartToolResult, ToolResult: &harness.ToolResult{CallID: "t1", Name: "rec", Parts: []harness.Part{part}}}}},
		}
		_, err := p.Generate(context.Background(), &harness.ModelRequest{Model: tt.model, Messages: msgs})
		switch {
		case got && err != nil:
			t.Errorf("%s %q by URL: %v", tt.t, tt.mime, err)
		case got && !strings.Contains(string(srv.Requests()[0].Body), `"url":"https://example.com/x"`):
			t.Errorf("%s %q: the request does not carry the URL", tt.t, tt.mime)
		case !got && tt.t != harness.PartImage && !errors.Is(err, harness.ErrUnsupportedPart):
			t.Errorf("%s %q by URL, refused by AcceptsURL, was sent: %v", tt.t, tt.mime, err)
		}
		srv.Close()
	}
}
