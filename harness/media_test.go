package harness_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

// fakeImage returns n bytes that differ with seed.
func fakeImage(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i) ^ seed
	}
	return b
}

type shotIn struct {
	Page string `json:"page"`
}

// screenshotTool returns its text and an image made of shot.
func screenshotTool(shot []byte) *harness.Tool {
	return harness.MustTool(harness.NewTool("screenshot", "Screenshot a page.", func(_ context.Context, in shotIn) (harness.ToolOutput, error) {
		return harness.ToolOutput{Text: "screenshot of " + in.Page, Parts: []harness.Part{harness.ImagePart(shot, "image/png")}}, nil
	}))
}

// TestRunMessageSharesBytes runs three steps with an image from the user
// and one from a tool: every request holds the very bytes (same backing
// array) that the caller and the tool gave, never a copy.
func TestRunMessageSharesBytes(t *testing.T) {
	img := fakeImage(64<<10, 1)
	shot := fakeImage(32<<10, 2)
	var seen [][2]*byte
	p := harness.ProviderFunc(func(_ context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
		var got [2]*byte
		got[0] = &req.Messages[0].Content[1].Media.Data[0]
		for _, m := range req.Messages {
			for _, c := range m.Content {
				if c.ToolResult != nil && len(c.ToolResult.Parts) > 0 {
					got[1] = &c.ToolResult.Parts[0].Media.Data[0]
				}
			}
		}
		seen = append(seen, got)
		switch len(seen) {
		case 1:
			return &harness.ModelResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: []harness.Part{
				{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "c1", Name: "screenshot", Input: json.RawMessage(`{"page":"home"}`)}}}}}, nil
		case 2:
			return &harness.ModelResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: []harness.Part{
				{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "c2", Name: "screenshot", Input: json.RawMessage(`{"page":"about"}`)}}}}}, nil
		}
		return &harness.ModelResponse{Message: harness.AssistantMessage("a cat")}, nil
	})
	a := newAgent(t, p, harness.WithTools(screenshotTool(shot)))
	res, err := a.RunMessage(context.Background(), harness.UserParts(harness.Text("what is this?"), harness.ImagePart(img, "image/png")))
	if err != nil || res.Text != "a cat" || res.Steps != 3 {
		t.Fatalf("run: %v %+v", err, res)
	}
	if len(seen) != 3 {
		t.Fatalf("%d requests", len(seen))
	}
	for i, s := range seen {
		if s[0] != &img[0] {
			t.Errorf("request %d: the user's image is not the caller's backing array", i)
		}
		if i > 0 && s[1] != &shot[0] {
			t.Errorf("request %d: the tool's image is not the tool's backing array", i)
		}
	}
	msgs := a.Messages()
	if got := msgs[0].Text(); got != "what is this?" {
		t.Errorf("user text %q", got)
	}
	tr := msgs[2].Content[0].ToolResult
	if tr.Content != "screenshot of home" || len(tr.Parts) != 1 || tr.Parts[0].Type != harness.PartImage || tr.Parts[0].MIME() != "image/png" {
		t.Errorf("tool result %+v", tr)
	}
}

func TestRunMessageRefusesBadParts(t *testing.T) {
	small := fakeImage(100, 3)
	tests := []struct {
		name string
		msg  harness.Message
		want error
		text []string
	}{
		{"too large", harness.UserParts(harness.Text("hi"), harness.ImagePart(fakeImage(2000, 1), "image/png")), harness.ErrPartTooLarge,
			[]string{"part 1 of the user message", "image/png", "2000 bytes", "inline limit of 1000 bytes"}},
		{"no bytes", harness.UserParts(harness.ImagePart(nil, "image/png")), harness.ErrInvalidPart, []string{"part 0", "no data"}},
		{"no mime", harness.UserParts(harness.DocumentPart(small, "")), harness.ErrInvalidPart, []string{"without a MIME type"}},
		{"two sources", harness.UserParts(harness.Part{Type: harness.PartImage, Media: &harness.Media{URI: "https://x/y.png", FileID: "file_1"}}),
			harness.ErrInvalidPart, []string{"more than one"}},
		{"tool call", harness.UserParts(harness.Part{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{Name: "x"}}), harness.ErrInvalidPart, nil},
		{"assistant", harness.Message{Role: harness.RoleAssistant, Content: []harness.Part{harness.Text("x")}}, harness.ErrInvalidPart, nil},
		{"empty", harness.UserParts(), harness.ErrInvalidPart, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ht.NewScriptedProvider(ht.Reply("no"))
			a := newAgent(t, p, harness.WithInlineLimit(1000))
			res, err := a.RunMessage(context.Background(), tt.msg)
			if !errors.Is(err, tt.want) || res != nil {
				t.Fatalf("err %v res %+v, want %v", err, res, tt.want)
			}
			for _, s := range tt.text {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if len(p.Requests()) != 0 || len(a.Messages()) != 0 {
				t.Error("a refused message was sent or stored")
			}
		})
	}
	var se *harness.PartSizeError
	_, err := newAgent(t, ht.NewScriptedProvider(), harness.WithInlineLimit(10)).RunMessage(context.Background(), harness.UserParts(harness.AudioPart(small, "audio/wav")))
	if !errors.As(err, &se) || se.Limit != 10 || se.Size != 100 || se.Part != 0 || se.Type != harness.PartAudio {
		t.Errorf("%#v", se)
	}
	// The default limit is 5 MiB; a reference has no inline bytes.
	a := newAgent(t, ht.NewScriptedProvider(ht.Reply("ok"), ht.Reply("ok")))
	if _, err := a.RunMessage(context.Background(), harness.UserParts(harness.ImagePart(make([]byte, harness.DefaultInlineLimit+1), "image/png"))); !errors.Is(err, harness.ErrPartTooLarge) ||
		!strings.Contains(err.Error(), strconv.Itoa(harness.DefaultInlineLimit)) {
		t.Errorf("over the default limit: %v", err)
	}
	if _, err := a.RunMessage(context.Background(), harness.UserParts(harness.ImagePart(make([]byte, harness.DefaultInlineLimit), "image/png"))); err != nil {
		t.Errorf("at the default limit: %v", err)
	}
	if _, err := a.RunMessage(context.Background(), harness.UserParts(harness.ImageURL("https://example.com/big.png"))); err != nil {
		t.Errorf("a URL: %v", err)
	}
}

// A tool result with a part over the limit becomes an error result that
// names the limit; the bytes never reach the model.
func TestToolResultOverInlineLimit(t *testing.T) {
	p := ht.NewScriptedProvider(ht.CallTool("c1", "screenshot", `{"page":"home"}`), ht.Reply("sorry"))
	a := newAgent(t, p, harness.WithTools(screenshotTool(fakeImage(5000, 1))), harness.WithInlineLimit(4096))
	if _, err := a.Run(context.Background(), "shoot"); err != nil {
		t.Fatal(err)
	}
	tr := p.Requests()[1].Messages[2].Content[0].ToolResult
	if !tr.IsError || tr.Status != harness.ToolError || tr.ErrorType != "part_too_large" || len(tr.Parts) != 0 {
		t.Fatalf("result %+v", tr)
	}
	for _, s := range []string{`result of tool "screenshot"`, "5000 bytes", "inline limit of 4096 bytes"} {
		if !strings.Contains(tr.Content, s) {
			t.Errorf("content %q lacks %q", tr.Content, s)
		}
	}
}

// A literal tool adds parts with AddResultParts; outside a call it fails.
func TestAddResultParts(t *testing.T) {
	pdf := []byte("%PDF-1.7 fake")
	tool := &harness.Tool{Name: "fetch", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(ctx context.Context, _ json.RawMessage) (string, error) {
			if err := harness.AddResultParts(ctx, harness.Part{Type: harness.PartImage}); !errors.Is(err, harness.ErrInvalidPart) {
				return "", errors.New("a part without media was accepted")
			}
			return "fetched", harness.AddResultParts(ctx, harness.DocumentPart(pdf, "application/pdf").Named("report.pdf"), harness.Text("page 1"))
		}}
	p := ht.NewScriptedProvider(ht.CallTool("c1", "fetch", `{}`), ht.Reply("done"))
	a := newAgent(t, p, harness.WithTools(tool))
	if _, err := a.Run(context.Background(), "get it"); err != nil {
		t.Fatal(err)
	}
	tr := p.Requests()[1].Messages[2].Content[0].ToolResult
	if tr.IsError || len(tr.Parts) != 2 || tr.Parts[0].Media.Name != "report.pdf" || &tr.Parts[0].Media.Data[0] != &pdf[0] || tr.Parts[1].Text != "page 1" {
		t.Fatalf("result %+v", tr)
	}
	if err := harness.AddResultParts(context.Background(), harness.Text("x")); !errors.Is(err, harness.ErrNotInToolCall) {
		t.Errorf("outside a call: %v", err)
	}
}

// TestMediaJSONRoundTrip: a tool result and a model response with parts
// survive encoding/json, as a durable runtime records them; the bytes
// travel as base64.
func TestMediaJSONRoundTrip(t *testing.T) {
	img := fakeImage(300, 7)
	tr := &harness.ToolResult{CallID: "c1", Name: "shot", Content: "see", Status: harness.ToolOK, Parts: []harness.Part{
		harness.ImagePart(img, "image/png").Named("a.png"), harness.ImageURL("https://example.com/b.png"),
		harness.FilePart("file_9", "application/pdf"), harness.AudioPart([]byte("RIFF"), "audio/wav"), harness.Text("t"),
	}}
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"data":"`+base64.StdEncoding.EncodeToString(img)+`"`)) || !bytes.Contains(b, []byte(`"mime_type":"image/png"`)) {
		t.Errorf("JSON %s", b)
	}
	var back harness.ToolResult
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	checkSameParts(t, back.Parts, tr.Parts)
	if back.Parts[2].Type != harness.PartDocument || back.Parts[2].Media.FileID != "file_9" {
		t.Errorf("file part %+v", back.Parts[2])
	}
	resp := &harness.ModelResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: []harness.Part{harness.Text("x"), harness.ImagePart(img, "image/png")}}}
	b, _ = json.Marshal(resp)
	var r2 harness.ModelResponse
	if err := json.Unmarshal(b, &r2); err != nil {
		t.Fatal(err)
	}
	checkSameParts(t, r2.Message.Content, resp.Message.Content)
}

func checkSameParts(t *testing.T, got, want []harness.Part) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d parts, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Type != w.Type || g.Text != w.Text || (g.Media == nil) != (w.Media == nil) {
			t.Errorf("part %d: %+v, want %+v", i, g, w)
			continue
		}
		if w.Media != nil {
			gm, wm := g.Media, w.Media
			if gm.MIME != wm.MIME || gm.Name != wm.Name || gm.URI != wm.URI || gm.FileID != wm.FileID || !bytes.Equal(gm.Data, wm.Data) || gm.SHA256() != wm.SHA256() {
				t.Errorf("part %d media %+v, want %+v", i, gm, wm)
			}
		}
	}
}

// TestMediaSessionAndApproval: a paused run whose finished call returned
// an image, and a user image, survive a saved session (bytes as base64);
// the resumed run sends both.
func TestMediaSessionAndApproval(t *testing.T) {
	img, shot := fakeImage(1000, 4), fakeImage(800, 5)
	danger := harness.MustTool(harness.NewTool("delete", "Delete.", func(context.Context, echoIn) (string, error) { return "deleted", nil }))
	danger.Permission = harness.PermissionAsk
	script := []ht.Response{{ToolCalls: []harness.ToolCall{ht.Call("c1", "screenshot", `{"page":"x"}`), ht.Call("c2", "delete", `{"text":"y"}`)}}, ht.Reply("done")}
	opts := func(p harness.Provider) []harness.Option {
		return []harness.Option{harness.WithProvider(p), harness.WithModel("m"), harness.WithTools(screenshotTool(shot), danger)}
	}
	p1 := ht.NewScriptedProvider(script[0])
	a, err := harness.New(opts(p1)...)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	res, err := a.RunMessage(context.Background(), harness.UserParts(harness.Text("look"), harness.ImagePart(img, "image/png")))
	if err != nil || res.Status != harness.StatusPaused {
		t.Fatalf("%v %+v", err, res)
	}
	data, err := a.SaveSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{img, shot} {
		if !bytes.Contains(data, []byte(base64.StdEncoding.EncodeToString(b))) {
			t.Error("the session does not hold the bytes as base64")
		}
	}
	p2 := ht.NewScriptedProvider(script[1])
	b, err := harness.LoadSession(context.Background(), data, opts(p2)...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	if res, err := b.Resume(context.Background(), harness.Approve("c2")); err != nil || res.Text != "done" {
		t.Fatalf("%v %+v", err, res)
	}
	req := p2.Requests()[0]
	if m := req.Messages[0].Content[1].Media; !bytes.Equal(m.Data, img) || m.SHA256() != sha256.Sum256(img) {
		t.Error("the user image did not survive the session")
	}
	tr := req.Messages[2].Content[0].ToolResult
	if len(tr.Parts) != 1 || !bytes.Equal(tr.Parts[0].Media.Data, shot) {
		t.Errorf("the tool image did not survive the session: %+v", tr)
	}
	if tr2 := req.Messages[2].Content[1].ToolResult; tr2.Content != "deleted" {
		t.Errorf("approved call: %+v", tr2)
	}
}

func TestLoadSessionRefusesBadMedia(t *testing.T) {
	for name, part := range map[string]string{
		"no media":        `{"type":"image"}`,
		"no source":       `{"type":"image","media":{"mime_type":"image/png"}}`,
		"data no mime":    `{"type":"document","media":{"data":"AAAA"}}`,
		"media on text":   `{"type":"text","text":"x","media":{"uri":"https://x"}}`,
		"bad result part": `{"type":"tool_result","tool_result":{"call_id":"c","name":"n","content":"","parts":[{"type":"audio"}]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			role := "user"
			if strings.Contains(part, "tool_result") {
				role = "tool"
			}
			data := `{"version":1,"session_id":"s","messages":[{"role":"` + role + `","content":[` + part + `]}]}`
			_, err := harness.LoadSession(context.Background(), []byte(data), harness.WithProvider(ht.NewScriptedProvider()))
			if !errors.Is(err, harness.ErrSession) {
				t.Errorf("loaded: %v", err)
			}
		})
	}
}

// imageSwap replaces the image of the first message with other when set.
type imageSwap struct{ other *[]byte }

func (s imageSwap) BeforeModelRequest(_ context.Context, req *harness.ModelRequest) error {
	if *s.other == nil {
		return nil
	}
	msgs := slices.Clone(req.Messages)
	c := slices.Clone(msgs[0].Content)
	c[1] = harness.ImagePart(*s.other, "image/png")
	msgs[0].Content = c
	req.Messages = msgs
	return nil
}

// TestPrefixKeyImageBreak: the prefix key covers an image by its hash, and
// changing the image is reported as a break at that part, with the old and
// new SHA-256.
func TestPrefixKeyImageBreak(t *testing.T) {
	img, other := fakeImage(4096, 1), fakeImage(4096, 9)
	var swap []byte
	p := ht.NewScriptedProvider(ht.Reply("one"), ht.Reply("two"), ht.Reply("three"))
	a := newAgent(t, p, harness.WithMiddleware(imageSwap{&swap}))
	ctx := context.Background()
	if _, err := a.RunMessage(ctx, harness.UserParts(harness.Text("what?"), harness.ImagePart(img, "image/png"))); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(ctx, "and?"); err != nil {
		t.Fatal(err)
	}
	swap = other
	if _, err := a.Run(ctx, "now?"); err != nil {
		t.Fatal(err)
	}
	keys := []harness.PrefixKey{p.Requests()[0].PrefixKey, p.Requests()[1].PrefixKey, p.Requests()[2].PrefixKey}
	if len(keys[1].Changed) != 0 || keys[1].Break != nil {
		t.Errorf("growth reported as a break: %v %v", keys[1].Changed, keys[1].Break)
	}
	if !slices.Equal(keys[2].Changed, []string{harness.PrefixPartMessages}) {
		t.Fatalf("changed %v", keys[2].Changed)
	}
	br := keys[2].Break
	want := harness.PrefixBreak{Message: 0, Part: 1, ResultPart: -1, Type: harness.PartImage, Old: sha256.Sum256(img), New: sha256.Sum256(other)}
	if br == nil || *br != want {
		t.Fatalf("break %+v, want %+v", br, want)
	}
	if got := br.String(); got != "messages[0].content[1] (image)" {
		t.Errorf("String %q", got)
	}
}

// shotSwap replaces the image of the tool result in message 2.
type shotSwap struct{ other *[]byte }

func (s shotSwap) BeforeModelRequest(_ context.Context, req *harness.ModelRequest) error {
	if *s.other == nil || len(req.Messages) < 3 {
		return nil
	}
	msgs := slices.Clone(req.Messages)
	tr := *msgs[2].Content[0].ToolResult
	tr.Parts = []harness.Part{harness.ImagePart(*s.other, "image/png")}
	msgs[2].Content = []harness.Part{{Type: harness.PartToolResult, ToolResult: &tr}}
	req.Messages = msgs
	return nil
}

func TestPrefixKeyToolImageBreak(t *testing.T) {
	shot, other := fakeImage(2048, 1), fakeImage(2048, 3)
	var swap []byte
	p := ht.NewScriptedProvider(ht.CallTool("c1", "screenshot", `{"page":"a"}`), ht.Reply("one"), ht.Reply("two"), ht.Reply("three"))
	a := newAgent(t, p, harness.WithTools(screenshotTool(shot)), harness.WithMiddleware(shotSwap{&swap}))
	ctx := context.Background()
	if _, err := a.Run(ctx, "shoot"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(ctx, "more"); err != nil {
		t.Fatal(err)
	}
	swap = other
	if _, err := a.Run(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	if br := p.Requests()[2].PrefixKey.Break; br != nil {
		t.Errorf("growth reported as a break at %v", br)
	}
	br := p.Requests()[3].PrefixKey.Break
	want := harness.PrefixBreak{Message: 2, Part: 0, ResultPart: 0, Type: harness.PartImage, Old: sha256.Sum256(shot), New: sha256.Sum256(other)}
	if br == nil || *br != want {
		t.Fatalf("break %+v, want %+v", br, want)
	}
	if got := br.String(); got != "messages[2].content[0].parts[0] (image)" {
		t.Errorf("String %q", got)
	}
}

// The digest is cached per Media and follows a replaced Data.
func TestMediaSHA256(t *testing.T) {
	img := fakeImage(100, 1)
	p := harness.ImagePart(img, "image/png")
	if p.Media.SHA256() != sha256.Sum256(img) || p.Media.SHA256() != sha256.Sum256(img) {
		t.Fatal("digest")
	}
	m2 := harness.Media{MIME: "image/png", Data: fakeImage(100, 2)}
	if m2.SHA256() != sha256.Sum256(m2.Data) {
		t.Error("a second media's digest")
	}
	m2.Data = img
	if m2.SHA256() != sha256.Sum256(img) {
		t.Error("a replaced Data kept the old digest")
	}
	if (&harness.Media{URI: "https://x"}).SHA256() != (harness.Hash{}) {
		t.Error("a reference has a digest")
	}
	n := p.Named("cat.png")
	if n.Media == p.Media || n.Media.Name != "cat.png" || &n.Media.Data[0] != &img[0] || p.Media.Name != "" {
		t.Error("Named")
	}
	if harness.FilePart("f", "image/jpeg").Type != harness.PartImage || harness.FilePart("f", "audio/mpeg").Type != harness.PartAudio ||
		harness.FilePart("f", "application/pdf").Type != harness.PartDocument {
		t.Error("FilePart kinds")
	}
}

// jsonSteps is a step runner that records outcomes as JSON, as a durable
// runtime does, and replays them decoded.
type jsonSteps struct {
	mu     sync.Mutex
	models map[string][]byte
	tools  map[string][]byte
}

func (r *jsonSteps) Model(ctx context.Context, s *harness.Step, fn func(context.Context) (*harness.ModelResponse, error)) (*harness.ModelResponse, error) {
	r.mu.Lock()
	b, ok := r.models[s.Key]
	r.mu.Unlock()
	if ok {
		var resp harness.ModelResponse
		return &resp, json.Unmarshal(b, &resp)
	}
	resp, err := fn(ctx)
	if err == nil {
		b, err = json.Marshal(resp)
		r.mu.Lock()
		r.models[s.Key] = b
		r.mu.Unlock()
	}
	return resp, err
}

func (r *jsonSteps) Tools(ctx context.Context, steps []*harness.Step, fn func(ctx context.Context, i int) *harness.ToolResult) []*harness.ToolResult {
	out := make([]*harness.ToolResult, len(steps))
	for i, s := range steps {
		r.mu.Lock()
		b, ok := r.tools[s.Key]
		r.mu.Unlock()
		if ok {
			out[i] = new(harness.ToolResult)
			if err := json.Unmarshal(b, out[i]); err != nil {
				panic(err)
			}
			continue
		}
		out[i] = fn(ctx, i)
		b, err := json.Marshal(out[i])
		if err != nil {
			panic(err)
		}
		r.mu.Lock()
		r.tools[s.Key] = b
		r.mu.Unlock()
	}
	return out
}

// TestMediaDurableRecovery: a run whose user message and tool result carry
// images crashes before its last model step; recovered from the JSON its
// runner recorded, the tool does not run again and the model receives
// both images' bytes.
func TestMediaDurableRecovery(t *testing.T) {
	img, shot := fakeImage(3000, 1), fakeImage(2000, 2)
	runs := 0
	tool := harness.MustTool(harness.NewTool("screenshot", "Screenshot.", func(context.Context, shotIn) (harness.ToolOutput, error) {
		runs++
		return harness.ToolOutput{Text: "shot", Parts: []harness.Part{harness.ImagePart(shot, "image/png")}}, nil
	}))
	steps := &jsonSteps{models: map[string][]byte{}, tools: map[string][]byte{}}
	crash := errors.New("process stopped")
	p1 := ht.NewScriptedProvider(ht.CallTool("c1", "screenshot", `{"page":"a"}`), ht.Fail(crash))
	a := newAgent(t, p1, harness.WithTools(tool), harness.WithStepRunner(steps))
	ctx := harness.ContextWithRunID(context.Background(), "run-1")
	msg := harness.UserParts(harness.Text("look"), harness.ImagePart(img, "image/png"))
	if _, err := a.RunMessage(ctx, msg); !errors.Is(err, crash) {
		t.Fatalf("first execution: %v", err)
	}
	p2 := ht.NewScriptedProvider(ht.Reply("a screen"))
	b := newAgent(t, p2, harness.WithTools(tool), harness.WithStepRunner(steps))
	res, err := b.RunMessage(harness.ContextRecovered(ctx, 2), msg)
	if err != nil || res.Text != "a screen" {
		t.Fatalf("recovery: %v %+v", err, res)
	}
	if runs != 1 {
		t.Errorf("the tool ran %d times", runs)
	}
	req := p2.Requests()[0]
	tr := req.Messages[2].Content[0].ToolResult
	if len(tr.Parts) != 1 || !bytes.Equal(tr.Parts[0].Media.Data, shot) || tr.Parts[0].MIME() != "image/png" || tr.Parts[0].Media.SHA256() != sha256.Sum256(shot) {
		t.Errorf("recovered tool result %+v", tr)
	}
	if !bytes.Equal(req.Messages[0].Content[1].Media.Data, img) {
		t.Error("the user image")
	}
}

// urlProvider takes images by URL for the model "vision".
type urlProvider struct{ harness.Provider }

func (urlProvider) AcceptsURL(model string, t harness.PartType, mime string) bool {
	return model == "vision" && t == harness.PartImage && mime == "image/png"
}

// Agent.AcceptsURL asks the provider's URLAccepter with the agent's
// model; a provider without one takes nothing by URL.
func TestAgentAcceptsURL(t *testing.T) {
	for _, tt := range []struct {
		p     harness.Provider
		model string
		t     harness.PartType
		mime  string
		want  bool
	}{
		{urlProvider{ht.NewScriptedProvider()}, "vision", harness.PartImage, "image/png", true},
		{urlProvider{ht.NewScriptedProvider()}, "vision", harness.PartImage, "image/gif", false},
		{urlProvider{ht.NewScriptedProvider()}, "text", harness.PartImage, "image/png", false},
		{ht.NewScriptedProvider(), "vision", harness.PartImage, "image/png", false},
	} {
		a, err := harness.New(harness.WithProvider(tt.p), harness.WithModel(tt.model), harness.WithStateDir(""))
		if err != nil {
			t.Fatal(err)
		}
		if got := a.AcceptsURL(tt.t, tt.mime); got != tt.want {
			t.Errorf("%T %s: AcceptsURL(%s, %s) = %v, want %v", tt.p, tt.model, tt.t, tt.mime, got, tt.want)
		}
		a.Close(context.Background())
	}
}
