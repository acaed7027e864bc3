package main

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestVision(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "LANGSMITH_API_KEY", "OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME"} {
		t.Setenv(k, "")
	}
	file := filepath.Join(t.TempDir(), "traces.jsonl")
	t.Setenv("HARNESSX_TRACES_FILE", file)
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, re := range []string{
		`(?m)^user: What is in this picture\?$`,
		`(?m)^user: \[image image/png "scene.png", \d+ bytes, sha256 [0-9a-f]{12}…\]$`,
		`(?m)^assistant → zoom\(\{"factor":3\}\)$`,
		`(?m)^tool ← zoom: the centre, enlarged 3 times$`,
		`(?m)^tool ← zoom: \[image image/png "zoom.png", \d+ bytes, sha256 [0-9a-f]{12}…\]$`,
		`(?m)^assistant: A gradient from red`,
		`(?m)^status: completed, steps: 2$`,
		`(?m)^the user's image was the same bytes in 2 of 2 model requests$`,
		`(?m)^traces: 4 spans to file ` + regexp.QuoteMeta(file) + `$`,
	} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("output lacks %s:\n%s", re, got)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no traces file: %v", err)
	}
	if !bytes.Contains(data, []byte("execute_tool zoom")) {
		t.Error("the traces file has no tool span")
	}
	if bytes.Contains(data, []byte("iVBOR")) { // base64 of a PNG's signature
		t.Error("the spans hold an image's bytes")
	}
}

func TestImages(t *testing.T) {
	scene, err := drawScene(96)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(scene))
	if err != nil || img.Bounds().Dx() != 96 {
		t.Fatalf("scene: %v", err)
	}
	closer, err := zoom(scene, 3)
	if err != nil {
		t.Fatal(err)
	}
	z, err := png.Decode(bytes.NewReader(closer))
	if err != nil || z.Bounds().Dx() != 96 {
		t.Fatalf("zoom: %v %v", err, z.Bounds())
	}
	if r, g, b, _ := z.At(48, 48).RGBA(); r>>8 != 255 || g>>8 != 255 || b>>8 != 255 {
		t.Error("the centre of the zoom is not white")
	}
	if !strings.Contains(string(closer[:8]), "PNG") {
		t.Error("not a PNG")
	}
}
