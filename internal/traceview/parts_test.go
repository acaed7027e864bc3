package traceview

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/partref"
)

// pngBytes draws a small PNG.
func pngBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(40 * x), 90, uint8(60 * y), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Hostile parts: script in an SVG and in HTML, each setting a marker in
// the page's storage and opening a dialog if it ever runs.
const (
	hostileSVG = `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10" onload="localStorage.setItem('pwned','svg-onload');alert('svg')">` +
		`<script>localStorage.setItem('pwned','svg-script');window.top.__pwned='svg';alert('svg')</script><rect width="10" height="10" fill="red"/></svg>`
	hostileHTML = `<!DOCTYPE html><html><body onload="localStorage.setItem('pwned','html-onload')">` +
		`<script>localStorage.setItem('pwned','html-script');window.top.__pwned='html';alert('html')</script>` +
		`<img src=x onerror="localStorage.setItem('pwned','html-img')"></body></html>`
)

func fileName(data []byte) string { return partref.FileName(sha256.Sum256(data)) }

func uri(data []byte) string { return partref.URI(sha256.Sum256(data)) }

// writeParts stores parts in a recording directory as the recorder does.
func writeParts(t testing.TB, rec string, parts ...[]byte) {
	t.Helper()
	dir := filepath.Join(rec, "parts")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if err := os.WriteFile(filepath.Join(dir, fileName(p)), p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// bundleWithParts records a run whose user message carries parts with a
// recorder that keeps part bytes, exports an incident bundle, and removes
// the recording's own copy, so that only the bundle holds the part.
func bundleWithParts(t testing.TB, root, session string, parts ...harness.Part) string {
	t.Helper()
	rec := flight.New(flight.WithDir(root), flight.WithIncludeArtifacts(true))
	a, err := harness.New(
		harness.WithName("viewer"),
		harness.WithSessionID(session),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Reply("seen"))),
		harness.WithExtensions(rec),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := a.RunMessage(ctx, harness.UserParts(append([]harness.Part{harness.Text("look")}, parts...)...)); err != nil {
		t.Fatal(err)
	}
	path, err := rec.Trigger(ctx, "manual")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, session, "parts")); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPartHandler(t *testing.T) {
	root := t.TempDir()
	pic, other := pngBytes(t, 6, 4), pngBytes(t, 3, 3)
	svg, html := []byte(hostileSVG), []byte(hostileHTML)
	rec := filepath.Join(root, "rec-a")
	writeParts(t, rec, pic, svg, html)
	// A damaged copy: the bytes of pic under the name of other.
	if err := os.WriteFile(filepath.Join(rec, "parts", fileName(other)), pic, 0o600); err != nil {
		t.Fatal(err)
	}
	// A link to a file outside the recording, named by its digest.
	outside := filepath.Join(t.TempDir(), "secret")
	secret := []byte("not a part")
	os.WriteFile(outside, secret, 0o600)
	if err := os.Symlink(outside, filepath.Join(rec, "parts", fileName(secret))); err != nil {
		t.Fatal(err)
	}
	// A part only an incident bundle holds.
	gif := []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")
	bundleWithParts(t, root, "rec-b", harness.ImagePart(gif, "image/gif"))
	h := Handler(HandlerOptions{Sources: Sources{FlightDirs: []string{root}}})

	const partCSP = "default-src 'none'; img-src 'self'; sandbox; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	tests := []struct {
		name, path  string
		code        int
		ctype       string
		disposition string // "inline", "attachment" or "" (none)
		body        []byte
	}{
		{"png as png", "/parts/" + fileName(pic) + "?type=image/png", 200, "image/png", "inline", pic},
		{"gif from a bundle", "/parts/" + fileName(gif) + "?type=image/gif", 200, "image/gif", "inline", gif},
		{"png without a type", "/parts/" + fileName(pic), 200, "application/octet-stream", "attachment", pic},
		{"png claimed as jpeg", "/parts/" + fileName(pic) + "?type=image/jpeg", 415, "text/plain; charset=utf-8", "", nil},
		{"svg as svg", "/parts/" + fileName(svg) + "?type=image/svg%2Bxml", 200, "application/octet-stream", "attachment", svg},
		{"svg claimed as png", "/parts/" + fileName(svg) + "?type=image/png", 415, "text/plain; charset=utf-8", "", nil},
		{"html claimed as png", "/parts/" + fileName(html) + "?type=image/png", 415, "text/plain; charset=utf-8", "", nil},
		{"html as html", "/parts/" + fileName(html) + "?type=text/html", 200, "application/octet-stream", "attachment", html},
		{"damaged copy", "/parts/" + fileName(other) + "?type=image/png", 404, "text/plain; charset=utf-8", "", nil},
		{"link out of the recording", "/parts/" + fileName(secret), 404, "text/plain; charset=utf-8", "", nil},
		{"unknown part", "/parts/sha256-" + strings.Repeat("0", 64), 404, "text/plain; charset=utf-8", "", nil},
		{"upper-case digest", "/parts/sha256-" + strings.ToUpper(hex.EncodeToString(sha256Of(pic))) + "?type=image/png", 400, "text/plain; charset=utf-8", "", nil},
		{"short digest", "/parts/sha256-" + strings.Repeat("a", 63), 400, "text/plain; charset=utf-8", "", nil},
		{"the reference itself", "/parts/" + uri(pic), 400, "text/plain; charset=utf-8", "", nil},
		{"escaped traversal", "/parts/..%2F..%2Fetc%2Fpasswd", 400, "text/plain; charset=utf-8", "", nil},
		{"escaped traversal to a part", "/parts/..%2Frec-a%2Fparts%2F" + fileName(pic), 400, "text/plain; charset=utf-8", "", nil},
		{"other name", "/parts/seg-00000001.jsonl", 400, "text/plain; charset=utf-8", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := get(t, h, "127.0.0.1:7318", tt.path)
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.code || res.Header.Get("Content-Type") != tt.ctype {
				t.Fatalf("%d %q (%s), want %d %q", res.StatusCode, res.Header.Get("Content-Type"), body, tt.code, tt.ctype)
			}
			if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q", got)
			}
			if got := res.Header.Get("Content-Security-Policy"); got != partCSP {
				t.Errorf("CSP %q", got)
			}
			cd := res.Header.Get("Content-Disposition")
			switch tt.disposition {
			case "":
				if cd != "" {
					t.Errorf("Content-Disposition %q", cd)
				}
			default:
				if want := tt.disposition + `; filename="` + fileName(tt.body) + `"`; cd != want {
					t.Errorf("Content-Disposition %q, want %q", cd, want)
				}
			}
			if tt.body != nil && !bytes.Equal(body, tt.body) {
				t.Errorf("body of %d bytes differs", len(body))
			}
			if tt.code == 200 && "sha256-"+hex.EncodeToString(sha256Of(body)) != strings.TrimPrefix(strings.SplitN(tt.path, "?", 2)[0], "/parts/") {
				t.Errorf("served bytes do not match the reference")
			}
		})
	}

	// An unescaped traversal never reaches the handler's files.
	for _, p := range []string{"/parts/../../etc/passwd", "/parts/../rec-a/parts/" + fileName(pic)} {
		res := get(t, h, "127.0.0.1", p)
		if res.StatusCode == 200 {
			t.Errorf("%s: 200", p)
		}
	}
	// The host check still applies.
	if res := get(t, h, "evil.example", "/parts/"+fileName(pic)+"?type=image/png"); res.StatusCode != 403 {
		t.Errorf("foreign host: %d", res.StatusCode)
	}
}

func sha256Of(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}
