package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	rtrace "runtime/trace"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// execTraceBundle makes a real incident bundle with the Go execution
// trace: a failed run of an agent whose recorder was given a running
// flight recorder. It returns the bundle's path.
func execTraceBundle(t *testing.T, fr *rtrace.FlightRecorder) string {
	t.Helper()
	rec := flight.New(flight.WithDir(t.TempDir()), flight.WithExecutionTrace(fr))
	a, err := harness.New(
		harness.WithName("tracer"),
		harness.WithSessionID("exec"),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Fail(errors.New("upstream overloaded")))),
		harness.WithExtensions(rec),
	)
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := a.Run(context.Background(), "go"); res.Status != harness.StatusFailed {
		t.Fatalf("status %s", res.Status)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	inc := rec.Incidents()
	if len(inc) != 1 {
		t.Fatalf("incidents %v", inc)
	}
	return inc[0]
}

func TestShowAndVerifyExecutionTrace(t *testing.T) {
	fr := rtrace.NewFlightRecorder(rtrace.FlightRecorderConfig{MaxBytes: 4 << 20})
	if err := fr.Start(); err != nil {
		t.Skipf("cannot start a flight recorder: %v", err)
	}
	path := execTraceBundle(t, fr)
	fr.Stop()

	r := runCmd("show", path)
	if r.err != nil {
		t.Fatalf("show: %v\n%s", r.err, r.stderr)
	}
	wantOpen := "tar -xzf " + path + " runtime/flight.trace && go tool trace runtime/flight.trace"
	if !strings.Contains(r.stdout, "go trace:  runtime/flight.trace (") || !strings.Contains(r.stdout, wantOpen) {
		t.Fatalf("show does not point to the execution trace:\n%s", r.stdout)
	}
	r = runCmd("show", "--json", path)
	var tl struct {
		Totals struct {
			ExecutionTrace *struct {
				Member string `json:"member"`
				Size   int64  `json:"size"`
				Open   string `json:"open"`
			} `json:"execution_trace"`
		} `json:"totals"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &tl); err != nil || tl.Totals.ExecutionTrace == nil ||
		tl.Totals.ExecutionTrace.Member != flight.ExecutionTraceName || tl.Totals.ExecutionTrace.Size == 0 || tl.Totals.ExecutionTrace.Open != wantOpen {
		t.Fatalf("show --json: %v %+v\n%s", err, tl.Totals.ExecutionTrace, r.stdout)
	}

	r = runCmd("verify", path)
	if r.err != nil || !strings.Contains(r.stdout, "ok  runtime/flight.trace") {
		t.Fatalf("verify: %v\n%s", r.err, r.stdout)
	}
	// Tampered: one byte of the trace changed.
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.tar.gz")
	data := rewriteMember(t, orig, flight.ExecutionTraceName, func(s string) string {
		return s[:len(s)-1] + string(s[len(s)-1]^0xff)
	})
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCmd("verify", bad)
	if r.err == nil || !strings.Contains(r.stdout, "FAIL  runtime/flight.trace") || !strings.Contains(r.err.Error(), "runtime/flight.trace") {
		t.Fatalf("verify of a tampered trace: %v\n%s", r.err, r.stdout)
	}
}

// TestShowExecutionTraceNote: a recorder given a flight recorder that is
// not running says so in show.
func TestShowExecutionTraceNote(t *testing.T) {
	path := execTraceBundle(t, rtrace.NewFlightRecorder(rtrace.FlightRecorderConfig{}))
	r := runCmd("show", path)
	if r.err != nil || !strings.Contains(r.stdout, "go trace:  none: the flight recorder given with WithExecutionTrace was not running") {
		t.Fatalf("show: %v\n%s", r.err, r.stdout)
	}
}
