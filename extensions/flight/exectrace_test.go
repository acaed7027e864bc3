package flight_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	rtrace "runtime/trace"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// startFlightRecorder starts the process's execution-trace flight
// recorder for the test, as an application would.
func startFlightRecorder(t *testing.T) *rtrace.FlightRecorder {
	t.Helper()
	fr := rtrace.NewFlightRecorder(rtrace.FlightRecorderConfig{MaxBytes: 8 << 20})
	if err := fr.Start(); err != nil {
		t.Skipf("cannot start a flight recorder (one is already active?): %v", err)
	}
	t.Cleanup(fr.Stop)
	return fr
}

// failedRunBundle runs one failing run (a tool call, then a model error)
// and returns its automatic bundle.
func failedRunBundle(t *testing.T, opts ...flight.Option) (*flight.Bundle, string, *agentSetup) {
	t.Helper()
	s := newAgent(t, []harnesstest.Response{
		harnesstest.CallTool("c1", "echo", map[string]string{"text": "hi"}),
		harnesstest.Fail(errors.New("upstream overloaded")),
	}, []*harness.Tool{echoTool()}, opts...)
	res, _ := s.agent.Run(context.Background(), "go")
	if res.Status != harness.StatusFailed {
		t.Fatalf("status %s", res.Status)
	}
	if err := s.rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	inc := s.rec.Incidents()
	if len(inc) != 1 {
		t.Fatalf("incidents %v, want 1", inc)
	}
	b, err := flight.ReadBundleFile(inc[0], flight.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return b, inc[0], s
}

func TestBundleHoldsExecutionTrace(t *testing.T) {
	fr := startFlightRecorder(t)
	b, path, _ := failedRunBundle(t, flight.WithExecutionTrace(fr))
	if err := b.Verify(); err != nil {
		t.Fatalf("verify: %v", err)
	}
	data, ok := b.Member(flight.ExecutionTraceName)
	if !ok {
		t.Fatalf("no %s in the bundle; note %q", flight.ExecutionTraceName, b.Manifest.ExecutionTraceNote)
	}
	sum := sha256.Sum256(data)
	var listed bool
	for _, m := range b.Manifest.Members {
		if m.Name == flight.ExecutionTraceName {
			listed = m.SHA256 == hex.EncodeToString(sum[:]) && m.Size == int64(len(data))
		}
	}
	if !listed {
		t.Fatalf("manifest members %+v do not list %s with its checksum", b.Manifest.Members, flight.ExecutionTraceName)
	}
	if !bytes.HasPrefix(data, []byte("go 1.")) {
		t.Fatalf("member starts %q, not a Go execution trace", data[:min(16, len(data))])
	}
	// The annotations are in the trace's string table: the run's task
	// type, the tool's region, the run ID and the OTel trace ID logged.
	evs, err := b.Events()
	if err != nil {
		t.Fatal(err)
	}
	var runID, traceID string
	for _, e := range evs {
		if e.Kind == flight.KindRunStart {
			runID, traceID = e.RunID, e.TraceID
		}
	}
	if runID == "" || traceID == "" {
		t.Fatalf("no traced run_start event in %+v", evs)
	}
	for _, want := range []string{flight.RunTaskType, flight.ToolRegionPrefix + "echo", flight.LogTraceID, traceID, flight.LogRunID, runID} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("the execution trace lacks %q", want)
		}
	}

	// A changed trace fails verification, naming the member.
	bad := rewriteBundle(t, path, flight.ExecutionTraceName, func(d []byte) []byte {
		d = bytes.Clone(d)
		d[len(d)-1] ^= 0xff
		return d
	}, false)
	var ve *flight.VerifyError
	if err := bad.Verify(); !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Member != flight.ExecutionTraceName {
		t.Fatalf("tampered trace: %v", err)
	}
	// So does a member that is not an execution trace, even with its
	// checksum in the manifest.
	bad = rewriteBundle(t, path, flight.ExecutionTraceName, func([]byte) []byte { return []byte(`{"not":"a trace"}`) }, true)
	if err := bad.Verify(); !errors.As(err, &ve) || !strings.Contains(err.Error(), "not a Go execution trace") {
		t.Fatalf("a JSON file as the trace: %v", err)
	}
}

func TestBundleExecutionTraceAbsent(t *testing.T) {
	t.Run("no option", func(t *testing.T) {
		b, _, _ := failedRunBundle(t)
		if _, ok := b.Member(flight.ExecutionTraceName); ok || b.Manifest.ExecutionTraceNote != "" {
			t.Fatalf("member present %v, note %q", ok, b.Manifest.ExecutionTraceNote)
		}
	})
	t.Run("recorder not started", func(t *testing.T) {
		fr := rtrace.NewFlightRecorder(rtrace.FlightRecorderConfig{})
		b, _, _ := failedRunBundle(t, flight.WithExecutionTrace(fr))
		if _, ok := b.Member(flight.ExecutionTraceName); ok {
			t.Fatal("a trace from a stopped recorder")
		}
		if !strings.Contains(b.Manifest.ExecutionTraceNote, "not running") {
			t.Fatalf("note %q", b.Manifest.ExecutionTraceNote)
		}
		if fr.Enabled() {
			t.Fatal("the recorder started the flight recorder by itself")
		}
		if err := b.Verify(); err != nil {
			t.Fatal(err)
		}
	})
}

// rewriteBundle re-packs the bundle at path with one member changed and,
// when fixManifest is set, the manifest's checksum of it updated; it
// returns the bundle read back.
func rewriteBundle(t *testing.T, path, member string, change func([]byte) []byte, fixManifest bool) *flight.Bundle {
	t.Helper()
	raw, err := os.ReadFile(path)
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
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == member {
			body = change(body)
		}
		ents = append(ents, ent{h, body})
	}
	if fixManifest {
		var m flight.Manifest
		if err := json.Unmarshal(ents[0].body, &m); err != nil {
			t.Fatal(err)
		}
		for i := range m.Members {
			for _, e := range ents {
				if e.h.Name == m.Members[i].Name {
					sum := sha256.Sum256(e.body)
					m.Members[i].SHA256, m.Members[i].Size = hex.EncodeToString(sum[:]), int64(len(e.body))
				}
			}
		}
		if ents[0].body, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for _, e := range ents {
		e.h.Size = int64(len(e.body))
		if err := tw.WriteHeader(e.h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := flight.ReadBundle(&out, flight.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
