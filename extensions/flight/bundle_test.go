package flight_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/flight"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// sampleEvents is a small, deterministic run.
func sampleEvents() []flight.Event {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	base := flight.Event{Agent: "demo", SessionID: "s1", RunID: "run-1", TraceID: "0102030405060708090a0b0c0d0e0f10", SpanID: "0102030405060708"}
	mk := func(seq int, ms int, k flight.Kind, f func(e *flight.Event)) flight.Event {
		e := base
		e.Seq, e.Time, e.Kind = uint64(seq), at(ms), k
		if f != nil {
			f(&e)
		}
		return e
	}
	return []flight.Event{
		mk(1, 0, flight.KindRunStart, func(e *flight.Event) { e.Text = "What is in the report?" }),
		mk(2, 1, flight.KindModelRequest, func(e *flight.Event) { e.Step, e.Model, e.Messages = 1, "m1", 1 }),
		mk(3, 120, flight.KindModelResponse, func(e *flight.Event) {
			e.Step, e.Model, e.Provider, e.StopReason, e.Duration = 1, "m1", "scripted", "tool_use", 119*time.Millisecond
			e.InputTokens, e.OutputTokens, e.CacheReadTokens = 400, 30, 300
		}),
		mk(4, 121, flight.KindToolCall, func(e *flight.Event) { e.Step, e.Tool, e.CallID, e.Text = 1, "read_report", "c1", `{"id":7}` }),
		mk(5, 180, flight.KindToolResult, func(e *flight.Event) {
			e.Step, e.Tool, e.CallID, e.Status, e.Duration, e.Text = 1, "read_report", "c1", "ok", 59*time.Millisecond, "report: all green"
		}),
		mk(6, 181, flight.KindModelRequest, func(e *flight.Event) { e.Step, e.Model, e.Messages = 2, "m1", 3 }),
		mk(7, 300, flight.KindModelResponse, func(e *flight.Event) {
			e.Step, e.Model, e.Duration, e.Error, e.ErrorType = 2, "m1", 119*time.Millisecond, "harness: model request 2 (attempt 1): upstream overloaded", "*harness.ProviderError"
		}),
		mk(8, 301, flight.KindError, func(e *flight.Event) {
			e.Step, e.Error, e.ErrorType = 2, "harness: model request 2 (attempt 1): upstream overloaded", "*harness.ProviderError"
		}),
		mk(9, 302, flight.KindRunEnd, func(e *flight.Event) {
			e.Step, e.Status, e.InputTokens, e.OutputTokens, e.CacheReadTokens = 2, "failed", 400, 30, 300
			e.Error = "harness: model request 2 (attempt 1): upstream overloaded"
		}),
	}
}

func writeBundle(t testing.TB, evs []flight.Event, session string) []byte {
	t.Helper()
	var buf bytes.Buffer
	bw := flight.NewBundleWriter(&buf, nil)
	for i := range evs {
		bw.AddEvent(&evs[i])
	}
	bw.SetInfo("run_failure", "", "", 0)
	if session != "" {
		if err := bw.SetSession([]byte(session)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bw.Close(t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type entry struct {
	hdr  tar.Header
	data string
}

func reg(name, data string) entry {
	return entry{tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}, data}
}

func tarGz(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := e.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	gz.Close()
	return buf.Bytes()
}

// untar returns the entries of a bundle.
func untar(t testing.TB, data []byte) []entry {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out []entry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out = append(out, entry{*h, string(b)})
	}
}

func TestBundleRoundTrip(t *testing.T) {
	data := writeBundle(t, sampleEvents(), `{"version":1,"session_id":"s1","messages":[]}`)
	b, err := flight.ReadBundle(bytes.NewReader(data), flight.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Verify(); err != nil {
		t.Fatal(err)
	}
	evs, err := b.Events()
	if err != nil {
		t.Fatal(err)
	}
	want := sampleEvents()
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d", len(evs), len(want))
	}
	for i := range evs {
		if got, w := evs[i], want[i]; got.Kind != w.Kind || !got.Time.Equal(w.Time) || got.Text != w.Text ||
			got.Duration != w.Duration || got.InputTokens != w.InputTokens || got.Error != w.Error {
			t.Errorf("event %d: got %+v\nwant %+v", i, got, w)
		}
	}
	m := b.Manifest
	if m.Format != flight.BundleFormat || m.Version != flight.BundleVersion || m.Events != 9 || m.Counts["model_request"] != 2 ||
		!m.FirstEvent.Equal(t0) || !m.LastEvent.Equal(t0.Add(302*time.Millisecond)) || m.Agent != "demo" || m.Reason != "run_failure" {
		t.Errorf("manifest %+v", m)
	}
	names := []string{}
	for _, e := range untar(t, data) {
		names = append(names, e.hdr.Name)
	}
	if got := strings.Join(names, ","); got != "manifest.json,events.jsonl,spans.json,session.json" {
		t.Errorf("members %s", got)
	}
}

func TestVerifyTamper(t *testing.T) {
	orig := untar(t, writeBundle(t, sampleEvents(), `{"session_id":"s1"}`))
	tests := []struct {
		name   string
		change func([]entry) []entry
		member string
	}{
		{"changed byte in events", func(es []entry) []entry {
			es[1].data = strings.Replace(es[1].data, "all green", "all gre3n", 1)
			return es
		}, flight.EventsName},
		{"changed byte in session", func(es []entry) []entry {
			es[3].data = strings.Replace(es[3].data, "s1", "s2", 1)
			return es
		}, flight.SessionName},
		{"truncated spans", func(es []entry) []entry {
			es[2].data = es[2].data[:1]
			es[2].hdr.Size = 1
			return es
		}, flight.SpansName},
		{"missing member", func(es []entry) []entry { return es[:3] }, flight.SessionName},
		{"extra member", func(es []entry) []entry { return append(es, reg("notes.txt", "x")) }, "notes.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es := tt.change(append([]entry(nil), orig...))
			for i := range es {
				es[i].hdr.Size = int64(len(es[i].data))
			}
			b, err := flight.ReadBundle(bytes.NewReader(tarGz(t, es...)), flight.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = b.Verify()
			var ve *flight.VerifyError
			if !errors.As(err, &ve) || !errors.Is(err, flight.ErrChecksum) {
				t.Fatalf("Verify: %v, want a VerifyError", err)
			}
			if len(ve.Problems) != 1 || ve.Problems[0].Member != tt.member {
				t.Errorf("problems %+v, want one about %s", ve.Problems, tt.member)
			}
		})
	}
}

func TestReadBundleHostile(t *testing.T) {
	valid := writeBundle(t, sampleEvents(), "")
	manifest := untar(t, valid)[0]
	tests := []struct {
		name   string
		data   []byte
		opts   flight.ReadOptions
		reason string
	}{
		{"parent path", tarGz(t, manifest, reg("../evil", "x")), flight.ReadOptions{}, "unsafe path"},
		{"nested parent path", tarGz(t, manifest, reg("artifacts/../../evil", "x")), flight.ReadOptions{}, "unsafe path"},
		{"absolute path", tarGz(t, manifest, reg("/etc/passwd", "x")), flight.ReadOptions{}, "unsafe path"},
		{"backslash path", tarGz(t, manifest, reg(`..\evil`, "x")), flight.ReadOptions{}, "unsafe path"},
		{"symlink", tarGz(t, manifest, entry{tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}, ""}), flight.ReadOptions{}, "links are not allowed"},
		{"hardlink", tarGz(t, manifest, entry{tar.Header{Name: "hard", Typeflag: tar.TypeLink, Linkname: "manifest.json"}, ""}), flight.ReadOptions{}, "links are not allowed"},
		{"directory", tarGz(t, manifest, entry{tar.Header{Name: "artifacts", Typeflag: tar.TypeDir, Mode: 0o755}, ""}), flight.ReadOptions{}, "not a regular file"},
		{"oversized member", tarGz(t, manifest, reg("events.jsonl", strings.Repeat("x", 2000))), flight.ReadOptions{MaxMemberBytes: 1500}, "exceeds the cap"},
		{"oversized total", tarGz(t, manifest, reg("a", strings.Repeat("x", 900)), reg("b", strings.Repeat("x", 900))), flight.ReadOptions{MaxTotalBytes: 2500}, "exceeds the cap"},
		{"duplicate", tarGz(t, manifest, reg("a", "x"), reg("a", "y")), flight.ReadOptions{}, "duplicate member"},
		{"truncated gzip", valid[:len(valid)/2], flight.ReadOptions{}, "truncated archive"},
		{"truncated trailer", valid[:len(valid)-4], flight.ReadOptions{}, "truncated archive"},
		{"not gzip", []byte("PK\x03\x04 a zip file"), flight.ReadOptions{}, "not a gzip archive"},
		{"no manifest", tarGz(t, reg("events.jsonl", "")), flight.ReadOptions{}, "missing"},
		{"bad manifest", tarGz(t, reg("manifest.json", "{")), flight.ReadOptions{}, "malformed"},
		{"foreign format", tarGz(t, reg("manifest.json", `{"format":"other","version":1}`)), flight.ReadOptions{}, "unknown format"},
		{"future version", tarGz(t, reg("manifest.json", `{"format":"harnessx-flight-bundle","version":99}`)), flight.ReadOptions{}, "unsupported version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := flight.ReadBundle(bytes.NewReader(tt.data), tt.opts)
			var be *flight.BundleError
			if !errors.As(err, &be) || !errors.Is(err, flight.ErrBundle) {
				t.Fatalf("err %v, want a BundleError", err)
			}
			if !strings.Contains(be.Reason, tt.reason) {
				t.Errorf("reason %q, want %q", be.Reason, tt.reason)
			}
		})
	}
}

func TestArtifacts(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "result.txt")
	if err := os.WriteFile(p, []byte("line 1\nAuthorization: Bearer abcdef0123456789token\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	bw := flight.NewBundleWriter(&buf, nil)
	evs := sampleEvents()
	bw.AddEvent(&evs[0])
	bw.AddArtifact("spill/r1.txt", p, "")
	bw.AddArtifact("spill/gone.txt", filepath.Join(dir, "gone.txt"), "")
	bw.AddArtifact("../escape", p, "")
	bw.AddArtifact("spill/changed.txt", p, strings.Repeat("0", 64))
	m, err := bw.Close(t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.MissingArtifacts) != 3 {
		t.Errorf("missing %v", m.MissingArtifacts)
	}
	b, err := flight.ReadBundle(&buf, flight.ReadOptions{KeepArtifacts: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Verify(); err != nil {
		t.Fatal(err)
	}
	if got := b.Artifacts(); len(got) != 1 || got[0] != "artifacts/spill/r1.txt" {
		t.Fatalf("artifacts %v", got)
	}
	data, _ := b.Member("artifacts/spill/r1.txt")
	if want := "line 1\nAuthorization: Bearer [REDACTED:bearer-token]\n"; string(data) != want {
		t.Errorf("artifact %q, want %q", data, want)
	}
}

func FuzzReadBundle(f *testing.F) {
	f.Add(writeBundle(f, sampleEvents(), `{"session_id":"s1"}`))
	f.Add(tarGz(f, reg("manifest.json", `{"format":"harnessx-flight-bundle","version":1,"members":[{"name":"a","size":1,"sha256":"00"}]}`), reg("a", "x")))
	f.Add(tarGz(f, reg("../x", "x")))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := flight.ReadBundle(bytes.NewReader(data), flight.ReadOptions{MaxMemberBytes: 1 << 20, MaxTotalBytes: 4 << 20})
		if err != nil {
			if !errors.Is(err, flight.ErrBundle) {
				t.Fatalf("error does not wrap ErrBundle: %v", err)
			}
			return
		}
		for _, m := range b.Members {
			if strings.Contains(m.Name, "..") || strings.HasPrefix(m.Name, "/") {
				t.Fatalf("unsafe member accepted: %q", m.Name)
			}
		}
		if b.Verify() == nil {
			// A verified bundle's events must decode and re-encode to an
			// equally valid bundle.
			evs, err := b.Events()
			if err != nil {
				return
			}
			again, err := flight.ReadBundle(bytes.NewReader(writeBundle(t, evs, "")), flight.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := again.Verify(); err != nil {
				t.Fatal(err)
			}
			evs2, err := again.Events()
			if err != nil || len(evs2) != len(evs) {
				t.Fatalf("round trip: %d events, want %d (%v)", len(evs2), len(evs), err)
			}
		}
	})
}
