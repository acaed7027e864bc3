package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/partref"
)

// partsRecording records a run whose user message carries two images,
// with the recorder keeping their bytes, and returns the root directory.
func partsRecording(t *testing.T, imgs ...[]byte) string {
	t.Helper()
	root := t.TempDir()
	rec := flight.New(flight.WithDir(root), flight.WithIncludeArtifacts(true))
	a, err := harness.New(
		harness.WithName("viewer"),
		harness.WithSessionID("parts"),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Reply("two images"))),
		harness.WithExtensions(rec),
	)
	if err != nil {
		t.Fatal(err)
	}
	parts := []harness.Part{harness.Text("compare")}
	for _, img := range imgs {
		parts = append(parts, harness.ImagePart(img, "image/png"))
	}
	if _, err := a.RunMessage(context.Background(), harness.UserParts(parts...)); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return root
}

// repackBundle rewrites a bundle file: edit returns each member's new
// body, or false to drop it; the manifest's entries are updated to match.
func repackBundle(t *testing.T, src, dst string, edit func(name string, body []byte) ([]byte, bool)) {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	type ent struct {
		h    *tar.Header
		body []byte
	}
	var ents []ent
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		if h.Name != flight.ManifestName {
			var keep bool
			if body, keep = edit(h.Name, body); !keep {
				continue
			}
		}
		ents = append(ents, ent{h, body})
	}
	var m flight.Manifest
	if err := json.Unmarshal(ents[0].body, &m); err != nil {
		t.Fatal(err)
	}
	var members []flight.Member
	for _, mm := range m.Members {
		for _, e := range ents {
			if e.h.Name == mm.Name {
				sum := sha256.Sum256(e.body)
				members = append(members, flight.Member{Name: mm.Name, Size: int64(len(e.body)), SHA256: hex.EncodeToString(sum[:])})
			}
		}
	}
	m.Members = members
	ents[0].body, _ = json.Marshal(m)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for _, e := range ents {
		e.h.Size = int64(len(e.body))
		tw.WriteHeader(e.h)
		tw.Write(e.body)
	}
	tw.Close()
	zw.Close()
	if err := os.WriteFile(dst, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestExportAndVerifyParts: export --include-artifacts includes each
// media part once under its hash, export without it includes no bytes,
// and verify fails on a part whose bytes do not match its name and on a
// reference without its part, naming the part.
func TestExportAndVerifyParts(t *testing.T) {
	a, b := bytes.Repeat([]byte("first image "), 100), bytes.Repeat([]byte("second image "), 100)
	root := partsRecording(t, a, b)
	out := t.TempDir()
	nameA, nameB := flight.PartMemberName(sha256.Sum256(a)), flight.PartMemberName(sha256.Sum256(b))

	plain := filepath.Join(out, "plain.tar.gz")
	if r := runCmd("export", "--dir", root, "-o", plain); r.err != nil || strings.Contains(r.stdout, "media part") {
		t.Fatalf("export: %v\n%s", r.err, r.stdout)
	}
	bundle, err := flight.ReadBundleFile(plain, flight.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(bundle.Parts()) != 0 {
		t.Errorf("a bundle without artifacts holds %v", bundle.Parts())
	}

	full := filepath.Join(out, "full.tar.gz")
	r := runCmd("export", "--dir", root, "--include-artifacts", "-o", full)
	if r.err != nil || !strings.Contains(r.stdout, "included the bytes of 2 media parts") {
		t.Fatalf("export --include-artifacts: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	r = runCmd("verify", full)
	if r.err != nil || !strings.Contains(r.stdout, "ok  "+nameA) || !strings.Contains(r.stdout, "ok  "+nameB) {
		t.Fatalf("verify: %v\n%s", r.err, r.stdout)
	}

	tampered := filepath.Join(out, "tampered.tar.gz")
	repackBundle(t, full, tampered, func(name string, body []byte) ([]byte, bool) {
		if name == nameA {
			body = bytes.Replace(body, []byte("first"), []byte("FIRST"), 1)
		}
		return body, true
	})
	r = runCmd("verify", tampered)
	if r.err == nil || !strings.Contains(r.stdout, "FAIL  "+nameA+"  content has sha256") || !strings.Contains(r.err.Error(), nameA) {
		t.Errorf("verify of a tampered part: %v\n%s", r.err, r.stdout)
	}

	missing := filepath.Join(out, "missing.tar.gz")
	repackBundle(t, full, missing, func(name string, body []byte) ([]byte, bool) { return body, name != nameB })
	r = runCmd("verify", missing)
	if r.err == nil || !strings.Contains(r.stdout, "FAIL  "+nameB+"  referenced by events.jsonl but not in the bundle") ||
		!strings.Contains(r.err.Error(), nameB) {
		t.Errorf("verify of a bundle without one part: %v\n%s", r.err, r.stdout)
	}

	// A part the recorder did not keep is named by export and by verify,
	// which passes: the bundle says it is missing.
	if err := os.Remove(filepath.Join(root, "parts", "parts", filepath.FromSlash(strings.TrimPrefix(nameB, flight.PartsDir)))); err != nil {
		t.Fatal(err)
	}
	lost := filepath.Join(out, "lost.tar.gz")
	r = runCmd("export", "--dir", root, "--include-artifacts", "-o", lost)
	refB := partref.URI(sha256.Sum256(b))
	if r.err != nil || !strings.Contains(r.stderr, "media part "+refB+" not included: the recording holds no copy") {
		t.Fatalf("export: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	r = runCmd("verify", lost)
	if r.err != nil || !strings.Contains(r.stdout, "missing  "+refB) {
		t.Errorf("verify: %v\n%s", r.err, r.stdout)
	}
}

// TestShowParts: show names an event's media parts by reference.
func TestShowParts(t *testing.T) {
	img := bytes.Repeat([]byte("an image "), 50)
	root := partsRecording(t, img)
	p := filepath.Join(t.TempDir(), "b.tar.gz")
	if r := runCmd("export", "--dir", root, "-o", p); r.err != nil {
		t.Fatal(r.err)
	}
	r := runCmd("show", p)
	want := "image image/png " + partref.URI(sha256.Sum256(img)) + " (450 bytes)"
	if r.err != nil || !strings.Contains(r.stdout, want) {
		t.Errorf("show: %v\n%s", r.err, r.stdout)
	}
}

// TestEventsReadsBinaryJournal: `flightrec events` on a recording the
// recorder wrote (binary journal lines) prints each event as a JSON line
// that decodes to the event ReadJournal reads, whole.
func TestEventsReadsBinaryJournal(t *testing.T) {
	root := partsRecording(t, []byte("\x89PNG one"), []byte("\x89PNG two"))
	r := runCmd("events", "--dir", root)
	if r.err != nil || r.stderr != "" {
		t.Fatalf("events: %v\n%s", r.err, r.stderr)
	}
	var want []flight.Event
	if _, err := flight.ReadJournal(filepath.Join(root, "parts"), func(e *flight.Event) error {
		want = append(want, *e)
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != len(want) || len(want) < 3 {
		t.Fatalf("%d lines for %d events:\n%s", len(lines), len(want), r.stdout)
	}
	for i, line := range lines {
		e, err := flight.ParseEvent([]byte(line))
		if err != nil {
			t.Fatalf("line %d: %v: %s", i, err, line)
		}
		if !reflect.DeepEqual(e, want[i]) {
			t.Errorf("line %d decodes to\n%+v\nwant\n%+v", i, e, want[i])
		}
		if e.Agent != "viewer" || e.SessionID != "parts" || e.RunID == "" {
			t.Errorf("line %d is not whole: %s", i, line)
		}
	}
	if !strings.Contains(r.stdout, `"parts":[{"type":"image"`) {
		t.Errorf("the model request's parts are missing:\n%s", r.stdout)
	}
}
