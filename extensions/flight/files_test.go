package flight_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/otlpjson"
	"github.com/harnessx/harnessx/internal/otlpspans"
	"github.com/harnessx/harnessx/internal/recording"
)

// TestRecordingFiles checks that every file of a recording is private
// (0600, journal segments included) and that spans.json is OTLP/JSON with
// hex IDs.
func TestRecordingFiles(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	s := newAgent(t, []harnesstest.Response{
		harnesstest.CallTool("c1", "echo", map[string]string{"text": "hi"}),
		harnesstest.Reply("done"),
	}, []*harness.Tool{echoTool()})
	if _, err := s.agent.Run(t.Context(), "hello"); err != nil {
		t.Fatal(err)
	}
	s.close(t)
	rec := filepath.Join(s.dir, "sess-1")
	segs, err := recording.Segments(rec)
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments %v %v", segs, err)
	}
	for _, name := range append(segs, recording.InfoName, recording.SessionSnapshot, recording.SpansSnapshot) {
		fi, err := os.Stat(filepath.Join(rec, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", name, fi.Mode().Perm())
		}
	}
	filepath.WalkDir(rec, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, _ := d.Info(); fi != nil && fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s has mode %v, readable by others", p, fi.Mode().Perm())
			}
		}
		return nil
	})

	data, err := os.ReadFile(filepath.Join(rec, recording.SpansSnapshot))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []struct {
					TraceID      string `json:"traceId"`
					SpanID       string `json:"spanId"`
					ParentSpanID string `json:"parentSpanId"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	hex32, hex16 := regexp.MustCompile(`^[0-9a-f]{32}$`), regexp.MustCompile(`^[0-9a-f]{16}$`)
	n := 0
	for _, rs := range doc.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				n++
				if !hex32.MatchString(sp.TraceID) || !hex16.MatchString(sp.SpanID) || sp.ParentSpanID != "" && !hex16.MatchString(sp.ParentSpanID) {
					t.Errorf("span IDs not hex: trace %q span %q parent %q", sp.TraceID, sp.SpanID, sp.ParentSpanID)
				}
			}
		}
	}
	if n == 0 {
		t.Fatalf("spans.json holds no span: %s", data)
	}
	// The bundle reader reads them back.
	req, err := otlpjson.Unmarshal(data)
	if err != nil || otlpspans.Count(req) != n {
		t.Fatalf("UnmarshalSpans: %d spans, %v", otlpspans.Count(req), err)
	}
	if !strings.Contains(string(data), `"traceId":"`) {
		t.Errorf("no traceId in %s", data)
	}
}

// TestRecordingDirectoriesPrivate checks that every directory the
// recorder creates, .harnessx itself included, is 0700: they hold prompts
// and tool results.
func TestRecordingDirectoriesPrivate(t *testing.T) {
	state := filepath.Join(t.TempDir(), ".harnessx")
	s := newAgent(t, []harnesstest.Response{{Err: errors.New("upstream failed")}}, nil,
		flight.WithDir(filepath.Join(state, "flight")), flight.WithIncludeArtifacts(true))
	_, _ = s.agent.Run(t.Context(), "hello")
	s.close(t)
	if len(s.rec.Incidents()) == 0 {
		t.Fatal("no incident bundle: the incidents directory was not made")
	}
	n := 0
	filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		n++
		if fi, err := d.Info(); err == nil && fi.Mode().Perm() != 0o700 {
			t.Errorf("%s has mode %v, want 0700", p, fi.Mode().Perm())
		}
		return nil
	})
	if n < 4 { // .harnessx, flight, the recording, incidents
		t.Errorf("%d directories under %s", n, state)
	}
}
