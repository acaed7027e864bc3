package s3store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/extensions/spill/s3store"
	"github.com/harnessx/harnessx/extensions/spill/s3store/s3test"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// urlProvider is a scripted provider that takes images and PDFs by URL,
// as providers/anthropic does.
type urlProvider struct{ *harnesstest.ScriptedProvider }

func (urlProvider) AcceptsURL(_ string, t harness.PartType, mime string) bool {
	return t == harness.PartImage || (t == harness.PartDocument && mime == "application/pdf")
}

// runParts runs one call of a tool that returns parts, with ext, and
// returns the result as the model's last request carried it.
func runParts(t *testing.T, urls bool, ext *spill.Extension, parts ...harness.Part) *harness.ToolResult {
	t.Helper()
	sp := harnesstest.NewScriptedProvider(harnesstest.CallTool("c1", "render", map[string]any{}), harnesstest.Reply("done"))
	var p harness.Provider = sp
	if urls {
		p = urlProvider{sp}
	}
	tool := harness.MustTool(harness.NewTool("render", "renders",
		func(context.Context, struct{}) (harness.ToolOutput, error) {
			return harness.ToolOutput{Text: "rendered", Parts: parts}, nil
		}))
	a, err := harness.New(harness.WithProvider(p), harness.WithStateDir(""), harness.WithTools(tool), harness.WithExtensions(ext))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	reqs := sp.Requests()
	for _, m := range reqs[len(reqs)-1].Messages {
		for _, pt := range m.Content {
			if pt.ToolResult != nil {
				return pt.ToolResult
			}
		}
	}
	t.Fatal("no tool result in the last request")
	return nil
}

// fetch GETs u (on loopback) and returns the status, Content-Type and body.
func fetch(t *testing.T, u string) (int, string, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), body
}

// With the S3 store and a provider that takes images and PDFs by URL, a
// large image and a large PDF of a tool result reach the model as
// presigned URLs of the gateway (loopback), with their MIME types and
// names; a GET of each, without credentials, answers the same bytes
// (SHA-256) with the part's Content-Type. A URL stops working when it
// expires.
func TestPartsPresigned(t *testing.T) {
	g := s3test.Start(t)
	s := newStore(t, g, g.Bucket(t))
	img := bytes.Repeat([]byte("\x89PNG image bytes "), 64<<10) // 1.1 MiB
	pdf := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("page "), 80<<10)...)
	ext := spill.New(spill.WithStore(s))
	sent := runParts(t, true, ext,
		harness.ImagePart(img, "image/png").Named("chart.png"),
		harness.DocumentPart(pdf, "application/pdf").Named("q3.pdf"))
	for i, want := range []struct {
		mime, name string
		data       []byte
	}{{"image/png", "chart.png", img}, {"application/pdf", "q3.pdf", pdf}} {
		m := sent.Parts[i].Media
		if m.Data != nil || m.MIME != want.mime || m.Name != want.name {
			t.Fatalf("part %d: %d bytes inline, %q %q", i, len(m.Data), m.MIME, m.Name)
		}
		u, err := url.Parse(m.URI)
		if err != nil || u.Query().Get("X-Amz-Signature") == "" || !strings.HasPrefix(m.URI, g.Endpoint+"/") {
			t.Fatalf("part %d: %q is not a presigned URL of the gateway (%v)", i, m.URI, err)
		}
		if strings.Contains(m.URI, g.SecretKey) {
			t.Fatalf("part %d: the URL holds the secret key", i)
		}
		status, ctype, body := fetch(t, m.URI)
		if status != http.StatusOK || sha256.Sum256(body) != sha256.Sum256(want.data) {
			t.Fatalf("part %d: GET %s: %d, %d bytes, want the part's %d", i, m.URI, status, len(body), len(want.data))
		}
		if ctype != want.mime {
			t.Errorf("part %d: Content-Type %q, want %q", i, ctype, want.mime)
		}
	}
	if st := ext.Stats(); st.PartsStored != 2 || st.PartBytesStored != int64(len(img)+len(pdf)) {
		t.Errorf("Stats %+v", st)
	}

	// A URL that expired answers 403.
	ext = spill.New(spill.WithStore(s), spill.WithPartURLExpiry(time.Second))
	sent = runParts(t, true, ext, harness.ImagePart(img, "image/png"))
	time.Sleep(2100 * time.Millisecond)
	if status, _, _ := fetch(t, sent.Parts[0].Media.URI); status != http.StatusForbidden {
		t.Errorf("an expired URL answered %d", status)
	}
}

// With a provider that does not take parts by URL, the part is sent
// inline and nothing is written to the store.
func TestPartsInlineForProviderWithoutURLs(t *testing.T) {
	g := s3test.Start(t)
	bucket := g.Bucket(t)
	s := newStore(t, g, bucket)
	img := bytes.Repeat([]byte("i"), 1<<20)
	ext := spill.New(spill.WithStore(s))
	sent := runParts(t, false, ext, harness.ImagePart(img, "image/png"))
	if m := sent.Parts[0].Media; m.URI != "" || !bytes.Equal(m.Data, img) {
		t.Fatalf("the part was not sent inline: %q", m.URI)
	}
	n := 0
	for o := range g.Client(t).ListObjectsIter(context.Background(), bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		n++
	}
	if n != 0 {
		t.Errorf("%d objects written", n)
	}
}

// With the store down (nothing listens at its endpoint), the part is sent
// inline, whole, within seconds; the failure is logged and counted.
func TestPartsInlineWhenStoreDown(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := closed.Addr().String()
	closed.Close()
	s, err := s3store.New(s3store.Config{Endpoint: "http://" + dead, Bucket: "hx-down", AccessKeyID: "AKIATEST", SecretAccessKey: "test-secret-key-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	ext := spill.New(spill.WithStore(s), spill.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	img := bytes.Repeat([]byte("i"), 1<<20)
	start := time.Now()
	sent := runParts(t, true, ext, harness.ImagePart(img, "image/png"))
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the store held the run for %v", d)
	}
	if m := sent.Parts[0].Media; m.URI != "" || !bytes.Equal(m.Data, img) {
		t.Fatalf("the part was not sent inline: %q", m.URI)
	}
	if st := ext.Stats(); st.PartStoreFailures != 1 || st.PartsStored != 0 {
		t.Errorf("Stats %+v", st)
	}
	if !strings.Contains(logs.String(), "it is sent inline") || !strings.Contains(logs.String(), "unreachable") {
		t.Errorf("log:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "test-secret-key") {
		t.Error("the log holds the secret key")
	}
}
