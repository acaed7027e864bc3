package spill

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// urlStore is a memStore that hands out URLs: https://store.test/<id>
// with the content type and expiry in the query. failURL makes URL fail.
type urlStore struct {
	*memStore
	failURL bool
}

func (s *urlStore) URL(_ context.Context, id, contentType string, expiry time.Duration) (string, error) {
	if s.failURL {
		return "", errors.New("presigning refused: token=hunter2hunter2")
	}
	s.mu.Lock()
	_, ok := s.data[id]
	s.mu.Unlock()
	if !ok {
		return "", errors.New("no such id")
	}
	q := url.Values{"ct": {contentType}, "exp": {expiry.String()}}
	return "https://store.test/" + id + "?" + q.Encode(), nil
}

func (s *urlStore) bytes(t *testing.T, u string) []byte {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data[strings.TrimPrefix(pu.Path, "/")]
}

// urlProvider is a scripted provider that takes images and PDFs by URL,
// as providers/anthropic does.
type urlProvider struct{ *harnesstest.ScriptedProvider }

func (urlProvider) AcceptsURL(_ string, t harness.PartType, mime string) bool {
	return t == harness.PartImage || (t == harness.PartDocument && mime == "application/pdf")
}

// partsTool returns a short text and parts.
func partsTool(parts ...harness.Part) *harness.Tool {
	return harness.MustTool(harness.NewTool("render", "renders things",
		func(context.Context, struct{}) (harness.ToolOutput, error) {
			return harness.ToolOutput{Text: "rendered", Parts: parts}, nil
		}))
}

// partsRun runs one call of partsTool(parts) with ext and returns the
// result and the request that carried it to the model.
func partsRun(t *testing.T, p harness.Provider, sp *harnesstest.ScriptedProvider, ext *Extension, parts []harness.Part, opts ...harness.Option) (*harness.ToolResult, *harness.ToolResult) {
	t.Helper()
	a, err := harness.New(append([]harness.Option{harness.WithProvider(p), harness.WithStateDir(""),
		harness.WithTools(partsTool(parts...)), harness.WithExtensions(ext)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	var got, sent *harness.ToolResult
	for _, m := range res.Messages {
		for _, pt := range m.Content {
			if pt.ToolResult != nil {
				got = pt.ToolResult
			}
		}
	}
	reqs := sp.Requests()
	for _, m := range reqs[len(reqs)-1].Messages {
		for _, pt := range m.Content {
			if pt.ToolResult != nil {
				sent = pt.ToolResult
			}
		}
	}
	if got == nil || sent == nil {
		t.Fatalf("no tool result: %+v", res.Messages)
	}
	return got, sent
}

func script() *harnesstest.ScriptedProvider {
	return harnesstest.NewScriptedProvider(harnesstest.CallTool("c1", "render", map[string]any{}), harnesstest.Reply("done"))
}

// With a store that hands out URLs and a provider that takes the part by
// URL, a part over the threshold reaches the model as a URL of its bytes
// in the store, with its type, MIME type and name; smaller parts, and
// parts the provider takes inline only, stay inline; the tool's own parts
// are left as they were.
func TestPartsClaimChecked(t *testing.T) {
	big := bytes.Repeat([]byte("i"), DefaultPartThreshold+1)
	pdf := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("p"), 400<<10)...)
	audio := bytes.Repeat([]byte("a"), 400<<10)
	small := bytes.Repeat([]byte("s"), DefaultPartThreshold)
	parts := []harness.Part{
		harness.ImagePart(big, "image/png").Named("shot.png"),
		harness.DocumentPart(pdf, "application/pdf").Named("q3.pdf"),
		harness.AudioPart(audio, "audio/wav"),
		harness.ImagePart(small, "image/png"),
		harness.Text("a caption"),
	}
	st := &urlStore{memStore: &memStore{data: map[string][]byte{}}}
	sp := script()
	ext := New(WithStore(st), WithPartURLExpiry(time.Hour))
	got, sent := partsRun(t, urlProvider{sp}, sp, ext, parts)
	if got.IsError || len(got.Parts) != len(parts) {
		t.Fatalf("result %+v", got)
	}
	for i, want := range []struct {
		uri        bool
		typ        harness.PartType
		mime, name string
		data       []byte
	}{
		{true, harness.PartImage, "image/png", "shot.png", big},
		{true, harness.PartDocument, "application/pdf", "q3.pdf", pdf},
		{false, harness.PartAudio, "audio/wav", "", audio},
		{false, harness.PartImage, "image/png", "", small},
	} {
		p := sent.Parts[i]
		if p.Type != want.typ || p.Media.MIME != want.mime || p.Media.Name != want.name {
			t.Errorf("part %d: %s %+v", i, p.Type, p.Media)
		}
		if !want.uri {
			if p.Media.URI != "" || !bytes.Equal(p.Media.Data, want.data) {
				t.Errorf("part %d is not inline: %q", i, p.Media.URI)
			}
			continue
		}
		if p.Media.Data != nil || !strings.HasPrefix(p.Media.URI, "https://store.test/res_") {
			t.Errorf("part %d: URI %q, %d bytes inline", i, p.Media.URI, len(p.Media.Data))
			continue
		}
		if !strings.Contains(p.Media.URI, "ct="+url.QueryEscape(want.mime)) || !strings.Contains(p.Media.URI, "exp=1h0m0s") {
			t.Errorf("part %d: URL %q does not carry the type and the expiry", i, p.Media.URI)
		}
		if !bytes.Equal(st.bytes(t, p.Media.URI), want.data) {
			t.Errorf("part %d: the store does not hold its bytes", i)
		}
	}
	if sent.Parts[4].Type != harness.PartText || sent.Parts[4].Text != "a caption" {
		t.Errorf("text part %+v", sent.Parts[4])
	}
	if parts[0].Media.URI != "" || len(parts[0].Media.Data) != len(big) {
		t.Error("the tool's own part was changed")
	}
	if s := ext.Stats(); s.PartsStored != 2 || s.PartBytesStored != int64(len(big)+len(pdf)) || s.PartStoreFailures != 0 || s.Spilled != 0 {
		t.Errorf("Stats %+v", s)
	}
}

// A part stays inline, and nothing is stored, when the store cannot hand
// out URLs (the default temporary directory, WithDir), when the provider
// does not say that it takes parts by URL, and with WithPartThreshold(-1).
func TestPartsStayInline(t *testing.T) {
	big := bytes.Repeat([]byte("i"), 300<<10)
	for _, tc := range []struct {
		name string
		opts func(t *testing.T, st *urlStore) []Option
		urls bool // the provider takes parts by URL
	}{
		{"default store", func(t *testing.T, _ *urlStore) []Option { return []Option{WithTempParent(t.TempDir())} }, true},
		{"directory", func(t *testing.T, _ *urlStore) []Option { return []Option{WithDir(t.TempDir())} }, true},
		{"provider without URLs", func(_ *testing.T, st *urlStore) []Option { return []Option{WithStore(st)} }, false},
		{"threshold off", func(_ *testing.T, st *urlStore) []Option { return []Option{WithStore(st), WithPartThreshold(-1)} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &urlStore{memStore: &memStore{data: map[string][]byte{}}}
			sp := script()
			var p harness.Provider = sp
			if tc.urls {
				p = urlProvider{sp}
			}
			ext := New(tc.opts(t, st)...)
			_, sent := partsRun(t, p, sp, ext, []harness.Part{harness.ImagePart(big, "image/png")})
			if m := sent.Parts[0].Media; m.URI != "" || !bytes.Equal(m.Data, big) {
				t.Errorf("the part was not sent inline: %q", m.URI)
			}
			if len(st.data) != 0 || ext.Dir() != "" {
				t.Errorf("stored: %d in the store, directory %q", len(st.data), ext.Dir())
			}
			if s := ext.Stats(); s.PartsStored != 0 || s.PartStoreFailures != 0 {
				t.Errorf("Stats %+v", s)
			}
		})
	}
}

// A store that fails (Put, or URL) leaves the part inline: the model gets
// it whole, the failure is logged (redacted) and counted, and nothing is
// left in the store. A part over the agent's inline limit that was sent by
// URL passes the limit; one that could not be stored makes the engine's
// error result naming the limit.
func TestPartsStoreDown(t *testing.T) {
	big := bytes.Repeat([]byte("i"), 300<<10)
	for _, tc := range []struct {
		name string
		st   *urlStore
	}{
		{"put fails", &urlStore{memStore: &memStore{data: map[string][]byte{}, failPut: true}}},
		{"url fails", &urlStore{memStore: &memStore{data: map[string][]byte{}}, failURL: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			sp := script()
			ext := New(WithStore(tc.st), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			got, sent := partsRun(t, urlProvider{sp}, sp, ext, []harness.Part{harness.ImagePart(big, "image/png")})
			if got.IsError || sent.Parts[0].Media.URI != "" || !bytes.Equal(sent.Parts[0].Media.Data, big) {
				t.Fatalf("the part was not sent inline: %+v", got)
			}
			if !strings.Contains(logs.String(), "could not store a large part of a tool result; it is sent inline") {
				t.Errorf("log:\n%s", logs.String())
			}
			if strings.Contains(logs.String(), "hunter2hunter2") {
				t.Errorf("the log holds the secret:\n%s", logs.String())
			}
			if s := ext.Stats(); s.PartStoreFailures != 1 || s.PartsStored != 0 {
				t.Errorf("Stats %+v", s)
			}
			if len(tc.st.data) != 0 {
				t.Errorf("%d objects left in the store", len(tc.st.data))
			}

			sp = script()
			ext = New(WithStore(tc.st), WithLogger(slog.New(slog.DiscardHandler)))
			got, _ = partsRun(t, urlProvider{sp}, sp, ext, []harness.Part{harness.ImagePart(big, "image/png")}, harness.WithInlineLimit(100<<10))
			if !got.IsError || got.ErrorType != "part_too_large" || !strings.Contains(got.Content, "over the inline limit of 102400 bytes") {
				t.Errorf("over the inline limit, not stored: %+v", got)
			}
		})
	}
	st := &urlStore{memStore: &memStore{data: map[string][]byte{}}}
	sp := script()
	got, sent := partsRun(t, urlProvider{sp}, sp, New(WithStore(st)), []harness.Part{harness.ImagePart(big, "image/png")}, harness.WithInlineLimit(100<<10))
	if got.IsError || sent.Parts[0].Media.URI == "" {
		t.Errorf("over the inline limit, stored: %+v", got)
	}
}
