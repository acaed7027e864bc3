package flight_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/partref"
	"github.com/harnessx/harnessx/internal/recording"
)

// mediaBytes returns n bytes that differ with seed and do not compress.
func mediaBytes(seed string, n int) []byte {
	out := make([]byte, 0, n+32)
	h := sha256.Sum256([]byte(seed))
	for len(out) < n {
		out = append(out, h[:]...)
		h = sha256.Sum256(h[:])
	}
	return out[:n]
}

type snapIn struct {
	N int `json:"n"`
}

// snapTool returns the image it is given in its result's parts, beside a
// small thumbnail: the big image a second time, and a new one.
func snapTool(big, thumb []byte) *harness.Tool {
	return harness.MustTool(harness.NewTool("snap", "Take a picture.", func(_ context.Context, in snapIn) (harness.ToolOutput, error) {
		return harness.ToolOutput{Text: "two pictures", Parts: []harness.Part{
			harness.ImagePart(big, "image/png"),
			harness.ImagePart(thumb, "image/jpeg").Named("thumb.jpg"),
		}}, nil
	}))
}

// partsRun runs an agent whose user message carries a 5 MiB image and
// whose tool returns it again with a thumbnail, and closes it. It returns
// the recording directory.
func partsRun(t *testing.T, big, thumb []byte, opts ...flight.Option) (string, *flight.Extension) {
	t.Helper()
	dir := t.TempDir()
	rec := flight.New(append([]flight.Option{flight.WithDir(dir)}, opts...)...)
	a, err := harness.New(
		harness.WithSessionID("s"),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithProvider(harnesstest.NewScriptedProvider(
			harnesstest.CallTool("c1", "snap", map[string]int{"n": 1}),
			harnesstest.Reply("a cat, twice"),
		)),
		harness.WithTools(snapTool(big, thumb)),
		harness.WithExtensions(rec),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := a.RunMessage(ctx, harness.UserParts(harness.Text("What is this?"), harness.ImagePart(big, "image/png").Named("cat.png"))); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "s"), rec
}

func refOf(data []byte) string { return partref.URI(sha256.Sum256(data)) }

func partName(data []byte) string { return flight.PartMemberName(sha256.Sum256(data)) }

// TestPartsByReference: a 5 MiB image goes into the journal, the session
// snapshot and a bundle without artifacts by reference only, never as
// base64; with artifacts the bundle holds each part's bytes once, under
// its hash.
func TestPartsByReference(t *testing.T) {
	big, thumb := mediaBytes("big", harness.DefaultInlineLimit), mediaBytes("thumb", 3000)
	b64 := base64.StdEncoding.EncodeToString(big[:3000])[:64]
	for _, include := range []bool{false, true} {
		t.Run(fmt.Sprintf("include=%v", include), func(t *testing.T) {
			recDir, rec := partsRun(t, big, thumb, flight.WithIncludeArtifacts(include))

			// The journal names the parts by reference.
			evs, _ := journalEvents(t, recDir)
			req := find(evs, flight.KindModelRequest)
			res := find(evs, flight.KindToolResult)
			if req == nil || res == nil {
				t.Fatalf("events %v", kinds(evs))
			}
			wantReq := []flight.PartRef{{Type: "image", MIME: "image/png", Name: "cat.png", URI: refOf(big), Size: int64(len(big))}}
			if !slices.Equal(req.Parts, wantReq) {
				t.Errorf("model request parts %+v, want %+v", req.Parts, wantReq)
			}
			wantRes := []flight.PartRef{
				{Type: "image", MIME: "image/png", URI: refOf(big), Size: int64(len(big))},
				{Type: "image", MIME: "image/jpeg", Name: "thumb.jpg", URI: refOf(thumb), Size: int64(len(thumb))},
			}
			if !slices.Equal(res.Parts, wantRes) {
				t.Errorf("tool result parts %+v, want %+v", res.Parts, wantRes)
			}
			// The second request names nothing new: the thumbnail came
			// with the tool result.
			var reqs []flight.Event
			for _, e := range evs {
				if e.Kind == flight.KindModelRequest {
					reqs = append(reqs, e)
				}
			}
			if len(reqs) != 2 || len(reqs[1].Parts) != 0 {
				t.Errorf("requests %+v", reqs)
			}

			// No file of the recording but the part store holds the bytes.
			filepath.WalkDir(recDir, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() || strings.Contains(p, string(filepath.Separator)+"parts"+string(filepath.Separator)) {
					return err
				}
				data, _ := os.ReadFile(p)
				if bytes.Contains(data, []byte(b64)) || bytes.Contains(data, big[:64]) {
					t.Errorf("%s holds the image's bytes", p)
				}
				if fi, _ := d.Info(); fi.Size() > 1<<20 && !strings.HasSuffix(p, ".tar.gz") {
					t.Errorf("%s has %d bytes", p, fi.Size())
				}
				return nil
			})
			session, err := os.ReadFile(filepath.Join(recDir, recording.SessionSnapshot))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(session, []byte(`"uri":"`+refOf(big)+`"`)) || bytes.Contains(session, []byte(`"data"`)) {
				t.Errorf("session snapshot does not name the image by reference: %.600s", session)
			}

			// The part store.
			stored, _ := filepath.Glob(filepath.Join(recDir, "parts", "*"))
			st := rec.Stats()
			if !include {
				if len(stored) != 0 || st.PartsKept != 0 {
					t.Errorf("without artifacts the recording keeps parts: %v %+v", stored, st)
				}
			} else {
				want := []string{filepath.Join(recDir, filepath.FromSlash(partName(big))), filepath.Join(recDir, filepath.FromSlash(partName(thumb)))}
				slices.Sort(want)
				if !slices.Equal(stored, want) || st.PartsKept != 2 || st.PartsSkipped != 0 {
					t.Errorf("stored %v (stats %+v), want %v", stored, st, want)
				}
				for _, p := range stored {
					data, _ := os.ReadFile(p)
					if sum := sha256.Sum256(data); "sha256-"+hex.EncodeToString(sum[:]) != filepath.Base(p) {
						t.Errorf("%s holds other bytes", p)
					}
					if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
						t.Errorf("%s has mode %v", p, fi.Mode())
					}
				}
			}

			// A bundle without artifacts: references, no bytes.
			b := exportWith(t, recDir, flight.ExportOptions{})
			if len(b.Parts()) != 0 || b.Manifest.IncludedArtifacts {
				t.Errorf("bundle without artifacts holds parts %v", b.Parts())
			}
			for _, m := range b.Members {
				if m.Size > 1<<20 {
					t.Errorf("member %s has %d bytes", m.Name, m.Size)
				}
			}
			if !bytes.Contains(member(t, b, flight.EventsName), []byte(refOf(thumb))) {
				t.Error("events.jsonl does not name the thumbnail")
			}

			// A bundle with artifacts: each part once, under its hash.
			b = exportWith(t, recDir, flight.ExportOptions{IncludeArtifacts: true})
			if !b.Manifest.IncludedArtifacts {
				t.Error("manifest does not say artifacts were included")
			}
			if !include {
				if len(b.Parts()) != 0 || len(b.Manifest.MissingParts) != 2 {
					t.Errorf("parts %v, missing %+v", b.Parts(), b.Manifest.MissingParts)
				}
				for _, mp := range b.Manifest.MissingParts {
					if !strings.Contains(mp.Reason, "WithIncludeArtifacts") {
						t.Errorf("missing part reason %q", mp.Reason)
					}
				}
				return
			}
			want := []string{partName(big), partName(thumb)}
			if got := b.Parts(); !slices.Equal(got, want) || len(b.Manifest.MissingParts) != 0 {
				t.Errorf("parts %v (missing %+v), want %v", got, b.Manifest.MissingParts, want)
			}
			if data, _ := b.Member(partName(big)); !bytes.Equal(data, big) {
				t.Error("the bundle's copy of the image differs")
			}
		})
	}
}

func member(t *testing.T, b *flight.Bundle, name string) []byte {
	t.Helper()
	data, ok := b.Member(name)
	if !ok {
		t.Fatalf("no member %s", name)
	}
	return data
}

// TestIncidentBundleParts: an incident bundle of a recorder with
// artifacts holds the parts of its events, and one without holds none.
func TestIncidentBundleParts(t *testing.T) {
	img := mediaBytes("incident", 2048)
	for _, include := range []bool{false, true} {
		t.Run(fmt.Sprintf("include=%v", include), func(t *testing.T) {
			s := newAgent(t, []harnesstest.Response{harnesstest.Reply("ok")}, nil, flight.WithIncludeArtifacts(include))
			ctx := context.Background()
			if _, err := s.agent.RunMessage(ctx, harness.UserParts(harness.Text("look"), harness.ImagePart(img, "image/gif"))); err != nil {
				t.Fatal(err)
			}
			path, err := s.rec.Trigger(ctx, "manual")
			if err != nil {
				t.Fatal(err)
			}
			b, err := flight.ReadBundleFile(path, flight.ReadOptions{KeepArtifacts: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Verify(); err != nil {
				t.Fatal(err)
			}
			session := member(t, b, flight.SessionName)
			if !bytes.Contains(session, []byte(refOf(img))) || bytes.Contains(session, []byte(base64.StdEncoding.EncodeToString(img[:30]))) {
				t.Errorf("session: %.400s", session)
			}
			if !include {
				if len(b.Parts()) != 0 {
					t.Errorf("parts %v", b.Parts())
				}
				return
			}
			if got := b.Parts(); !slices.Equal(got, []string{partName(img)}) {
				t.Errorf("parts %v", got)
			}
		})
	}
}

// TestPartsLimit: parts share the artifact limit; the least recently
// named part is deleted to make room, and an export names it missing.
func TestPartsLimit(t *testing.T) {
	dir := t.TempDir()
	imgs := [][]byte{mediaBytes("a", 1000), mediaBytes("b", 1000), mediaBytes("c", 1000)}
	rec := flight.New(flight.WithDir(dir), flight.WithIncludeArtifacts(true), flight.WithArtifactLimit(2500))
	var script []harnesstest.Response
	for range imgs {
		script = append(script, harnesstest.Reply("seen"))
	}
	a, err := harness.New(
		harness.WithSessionID("s"),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithProvider(harnesstest.NewScriptedProvider(script...)),
		harness.WithExtensions(rec),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Each run sends the history again: image a is named by every run, so
	// b is the least recently named when c arrives.
	if _, err := a.RunMessage(ctx, harness.UserParts(harness.ImagePart(imgs[0], "image/png"))); err != nil {
		t.Fatal(err)
	}
	if _, err := a.RunMessage(ctx, harness.UserParts(harness.ImagePart(imgs[1], "image/png"))); err != nil {
		t.Fatal(err)
	}
	a.Close(ctx)
	recDir := filepath.Join(dir, "s")
	// A new process on the same session adopts the stored parts.
	rec2 := flight.New(flight.WithDir(dir), flight.WithIncludeArtifacts(true), flight.WithArtifactLimit(2500))
	a2, err := harness.New(
		harness.WithSessionID("s"),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Reply("seen"))),
		harness.WithExtensions(rec2),
	)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a2.RunMessage(ctx, harness.UserParts(harness.ImagePart(imgs[2], "image/png"))); err != nil {
		t.Fatal(err)
	}
	a2.Close(ctx)
	st := rec2.Stats()
	if st.PartsKept != 1 || st.PartsEvicted != 1 {
		t.Errorf("stats %+v, want 1 kept and 1 evicted", st)
	}
	stored, _ := filepath.Glob(filepath.Join(recDir, "parts", "*"))
	if len(stored) != 2 {
		t.Fatalf("stored %v", stored)
	}
	b := exportWith(t, recDir, flight.ExportOptions{IncludeArtifacts: true})
	if len(b.Parts()) != 2 || len(b.Manifest.MissingParts) != 1 {
		t.Fatalf("parts %v, missing %+v", b.Parts(), b.Manifest.MissingParts)
	}
	// The evicted part is the oldest one (a): the second process never
	// named b or a, and adopted both with the same age.
	if mp := b.Manifest.MissingParts[0]; mp.URI != refOf(imgs[0]) && mp.URI != refOf(imgs[1]) {
		t.Errorf("missing %+v", mp)
	}
}

// repack re-packs a bundle: edit returns a member's new body, or false
// to drop it; the manifest's entries follow when fixManifest is set.
func repack(t *testing.T, raw []byte, edit func(name string, body []byte) ([]byte, bool), fixManifest bool) *flight.Bundle {
	t.Helper()
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
	if fixManifest {
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
	}
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
	b, err := flight.ReadBundle(&out, flight.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVerifyParts: verify checks each part's bytes against its name, and
// that each reference of a bundle with artifacts has its part.
func TestVerifyParts(t *testing.T) {
	big, thumb := mediaBytes("big", 10000), mediaBytes("thumb", 300)
	recDir, _ := partsRun(t, big, thumb, flight.WithIncludeArtifacts(true))
	var buf bytes.Buffer
	if _, err := flight.ExportJournal(context.Background(), recDir, &buf, flight.ExportOptions{IncludeArtifacts: true}); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	same := func(_ string, body []byte) ([]byte, bool) { return body, true }
	if err := repack(t, raw, same, false).Verify(); err != nil {
		t.Fatalf("untouched bundle: %v", err)
	}
	problems := func(b *flight.Bundle) []flight.Problem {
		t.Helper()
		err := b.Verify()
		var ve *flight.VerifyError
		if !errors.As(err, &ve) {
			t.Fatalf("Verify: %v, want a VerifyError", err)
		}
		return ve.Problems
	}

	t.Run("tampered", func(t *testing.T) {
		// The manifest is fixed too: only the name still tells.
		b := repack(t, raw, func(name string, body []byte) ([]byte, bool) {
			if name == partName(thumb) {
				body = append([]byte(nil), body...)
				body[0] ^= 1
			}
			return body, true
		}, true)
		ps := problems(b)
		if len(ps) != 1 || ps[0].Member != partName(thumb) || !strings.Contains(ps[0].Reason, "not the one its name says") {
			t.Errorf("problems %+v", ps)
		}
	})
	t.Run("missing", func(t *testing.T) {
		b := repack(t, raw, func(name string, body []byte) ([]byte, bool) { return body, name != partName(big) }, true)
		ps := problems(b)
		if len(ps) != 1 || ps[0].Member != partName(big) || ps[0].Reason != "referenced by events.jsonl but not in the bundle" {
			t.Errorf("problems %+v", ps)
		}
	})
	t.Run("declared missing", func(t *testing.T) {
		// A part the manifest names missing is no failure.
		b := repack(t, raw, func(name string, body []byte) ([]byte, bool) { return body, name != partName(big) }, true)
		b.Manifest.MissingParts = append(b.Manifest.MissingParts, flight.MissingPart{URI: refOf(big), Reason: "test"})
		if err := b.Verify(); err != nil {
			t.Errorf("Verify: %v", err)
		}
	})
}

// TestPartsFromOldSession: ExportJournal of a recording whose session
// snapshot still holds inline bytes (an older recorder) includes them
// from there, and writes the session by reference.
func TestPartsFromOldSession(t *testing.T) {
	dir := t.TempDir()
	img := mediaBytes("old", 500)
	session := fmt.Sprintf(`{"version":1,"session_id":"s","messages":[{"role":"user","content":[{"type":"image","media":{"mime_type":"image/png","data":%q}}]}]}`,
		base64.StdEncoding.EncodeToString(img))
	os.WriteFile(filepath.Join(dir, recording.SessionSnapshot), []byte(session), 0o600)
	os.WriteFile(filepath.Join(dir, "seg-00000001.jsonl"), []byte(`{"seq":1,"time":"2026-11-30T12:00:00Z","kind":"run_start","run_id":"r"}`+"\n"), 0o600)
	b := exportWith(t, dir, flight.ExportOptions{IncludeArtifacts: true})
	if got := b.Parts(); !slices.Equal(got, []string{partName(img)}) {
		t.Errorf("parts %v (missing %+v)", got, b.Manifest.MissingParts)
	}
	if s := member(t, b, flight.SessionName); bytes.Contains(s, []byte(`"data"`)) || !bytes.Contains(s, []byte(refOf(img))) {
		t.Errorf("session %s", s)
	}
	b = exportWith(t, dir, flight.ExportOptions{})
	if s := member(t, b, flight.SessionName); bytes.Contains(s, []byte(`"data"`)) || len(b.Parts()) != 0 {
		t.Errorf("session %s, parts %v", s, b.Parts())
	}
}

// partsChildEnv, when set, makes the test binary run runPartsChild: an
// agent whose user message and tool result carry images, then blocks in
// a tool until killed.
const partsChildEnv = "FLIGHT_TEST_PARTS_DIR"

// childImages are the images of runPartsChild: the user's, the tool's.
func childImages() ([]byte, []byte) { return mediaBytes("user", 1<<20), mediaBytes("tool", 4096) }

func runPartsChild() int {
	dir := os.Getenv(partsChildEnv)
	user, shot := childImages()
	rec := flight.New(flight.WithDir(dir), flight.WithIncludeArtifacts(true))
	block := harness.MustTool(harness.NewTool("wait", "Block.", func(ctx context.Context, in echoIn) (string, error) {
		fmt.Println("blocked")
		select {} // until SIGKILL
	}))
	a, err := harness.New(
		harness.WithSessionID("crash"),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithProvider(harnesstest.NewScriptedProvider(
			harnesstest.CallTool("c1", "snap", map[string]int{"n": 1}),
			harnesstest.CallTool("w", "wait", map[string]string{"text": "x"}),
		)),
		harness.WithTools(snapTool(shot, shot), block),
		harness.WithExtensions(rec),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	a.RunMessage(context.Background(), harness.UserParts(harness.Text("look"), harness.ImagePart(user, "image/png")))
	return 1
}

// TestPartsSIGKILL: a process killed during a run leaves a recording
// whose export holds the run's parts, whole, and verifies.
func TestPartsSIGKILL(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), partsChildEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "blocked" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			t.Fatalf("child ended; stderr:\n%s", stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not block in time; stderr:\n%s", stderr.String())
	}
	user, shot := childImages()
	rec := filepath.Join(dir, "crash")
	stored := func() int {
		n := 0
		for _, img := range [][]byte{user, shot} {
			if _, err := os.Stat(filepath.Join(rec, filepath.FromSlash(partName(img)))); err == nil {
				n++
			}
		}
		return n
	}
	// The parts are written as the hooks see them, without waiting for the
	// end of the run: wait until both are there, and the journal names the
	// blocking call (its batches are written a few milliseconds late),
	// then kill.
	start := time.Now()
	for (stored() < 2 || !journalHas(rec, "wait")) && time.Since(start) < 10*time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("%d parts stored %v after the child blocked", stored(), time.Since(start).Round(time.Millisecond))
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	b := exportWith(t, rec, flight.ExportOptions{IncludeArtifacts: true})
	if got, want := b.Parts(), []string{partName(user), partName(shot)}; !slices.Equal(got, want) {
		t.Errorf("parts %v (missing %+v), want %v", got, b.Manifest.MissingParts, want)
	}
}
