package tracing

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/redact"
)

// TestRedactAround: the rules read everything but the holes, which stay
// as they are even where they look like keys; without a change the
// string itself comes back.
func TestRedactAround(t *testing.T) {
	red := redact.Builtin()
	key := "AIza" + strings.Repeat("B", 36) // a Google API key to the rules
	secret := "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"
	tests := []struct {
		name    string
		parts   []string // text, hole, text, hole, … text
		changed bool
	}{
		{"no hole", []string{"hello " + secret}, true},
		{"clean", []string{`{"a":"`, key, `"} and `, key, ` end`}, false},
		{"secret before", []string{secret + ` {"c":"`, key, `"}`}, true},
		{"secret between", []string{`{"c":"`, key, `"} ` + secret + ` {"c":"`, key, `"}`}, true},
		{"secret after", []string{`{"c":"`, key, `"} ` + secret}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			var holes []hole
			for i, p := range tt.parts {
				if i%2 == 1 {
					holes = append(holes, hole{b.Len(), b.Len() + len(p)})
				}
				b.WriteString(p)
			}
			s := b.String()
			got, changed := redactAround(red, s, holes)
			if changed != tt.changed || (changed == (got == s)) {
				t.Fatalf("changed %v (%q), want %v", changed, got, tt.changed)
			}
			if strings.Contains(got, secret) {
				t.Errorf("the secret stays: %q", got)
			}
			if n := len(holes); n > 0 && strings.Count(got, key) != n {
				t.Errorf("the holes changed: %q", got)
			}
			if want := red.String(strings.ReplaceAll(s, key, "HOLE")); strings.ReplaceAll(got, key, "HOLE") != want {
				t.Errorf("outside the holes: %q, want %q", got, want)
			}
		})
	}
}

func TestModality(t *testing.T) {
	tests := []struct {
		t    harness.PartType
		mime string
		want string
	}{
		{harness.PartImage, "image/png", "image"},
		{harness.PartImage, "", "image"},
		{harness.PartAudio, "audio/wav", "audio"},
		{harness.PartAudio, "", "audio"},
		{harness.PartDocument, "application/pdf", "document"},
		{harness.PartDocument, "text/plain", "document"},
		{harness.PartDocument, "video/mp4", "video"},
		{harness.PartDocument, "IMAGE/PNG", "image"},
		{harness.PartImage, "application/octet-stream", "image"},
	}
	for _, tt := range tests {
		if got := modality(tt.t, tt.mime); got != tt.want {
			t.Errorf("modality(%s, %q) = %q, want %q", tt.t, tt.mime, got, tt.want)
		}
	}
}

func TestDataURI(t *testing.T) {
	png := []byte("\x89PNG bytes")
	tests := []struct {
		uri, mime string
		data      []byte
	}{
		{"data:image/png;base64," + base64.StdEncoding.EncodeToString(png), "image/png", png},
		{"DATA:image/png;BASE64," + base64.RawStdEncoding.EncodeToString(png), "image/png", png},
		{"data:text/plain;charset=utf-8,hello%20world", "text/plain", []byte("hello world")},
		{"data:,plain", "", []byte("plain")},
		{"data:image/png;base64,%%%not base64", "image/png", []byte("%%%not base64")},
	}
	for _, tt := range tests {
		data, mime, ok := dataURI(tt.uri)
		if !ok || mime != tt.mime || string(data) != string(tt.data) {
			t.Errorf("dataURI(%q) = %q, %q, %v; want %q, %q", tt.uri, data, mime, ok, tt.data, tt.mime)
		}
	}
	if _, _, ok := dataURI("https://example.com/x.png"); ok {
		t.Error("an https URL taken for a data: URI")
	}
}

// TestEmptyDataURI: a data: URI without bytes is recorded by the
// reference of no bytes, the SHA-256 of the empty string.
func TestEmptyDataURI(t *testing.T) {
	p := harness.ImageURL("data:image/png;base64,")
	got := string(appendMedia(nil, &p))
	want := `{"type":"uri","modality":"image","mime_type":"image/png","uri":"artifact:sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","size":0,"sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}`
	if got != want {
		t.Errorf("%s\nwant %s", got, want)
	}
}

func appendMedia(b []byte, p *harness.Part) []byte {
	var me *mediaEnc
	return me.appendMedia(b, p)
}
