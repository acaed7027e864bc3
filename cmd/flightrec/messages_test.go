package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportIntoDirectory is -o naming a directory: the bundle is written
// into it, named after the recording (and the run), as cp would, where it
// once failed with "file exists".
func TestExportIntoDirectory(t *testing.T) {
	root := fixture(t)
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		name string
	}{
		{[]string{"--recording", "alpha"}, "incident-alpha.tar.gz"},
		{[]string{"--run", "run-a2"}, "incident-alpha-run-a2.tar.gz"},
	} {
		r := runCmd(append([]string{"export", "--dir", root, "-o", dir}, tt.args...)...)
		if r.err != nil {
			t.Fatalf("export %v: %v", tt.args, r.err)
		}
		want := filepath.Join(dir, tt.name)
		if !strings.HasPrefix(r.stdout, "wrote "+want+": ") {
			t.Errorf("stdout %q, want it to name %s", r.stdout, want)
		}
		if r := runCmd("verify", want); r.err != nil {
			t.Errorf("verify %s: %v", want, r.err)
		}
	}
	if got := bundleName("a/b", "run 1"); got != "incident-a_b-run_1.tar.gz" {
		t.Errorf("bundleName = %q", got)
	}
}

// TestUIPortTaken is ui on a port another program holds: the error says
// the port is taken and how to choose another, not the raw bind error.
func TestUIPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	r := runCmd("ui", "--addr", addr, "--traces", filepath.Join(t.TempDir(), "t.jsonl"))
	want := "flightrec: ui: " + addr + " is taken (another flightrec ui?): pick another port with --addr, " +
		"as in --addr 127.0.0.1:7319, or --addr 127.0.0.1:0 for any free one"
	if r.err == nil || r.err.Error() != want {
		t.Errorf("err\n%v\nwant\n%s", r.err, want)
	}
}

// TestMissingSources is runs and trace given a --dir or --traces that
// does not exist: both name it, even when the other source has runs;
// "no runs" says which default paths do not exist.
func TestMissingSources(t *testing.T) {
	tmp := t.TempDir()
	t.Chdir(tmp)
	t.Setenv("HARNESSX_TRACES_FILE", "")
	t.Setenv("HARNESSX_FLIGHT_DIR", "")
	nope := filepath.Join(tmp, "nope")
	empty := filepath.Join(tmp, "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	root := fixture(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"runs", "--dir", nope}, "flightrec: runs: --dir " + nope + ": the directory does not exist"},
		{[]string{"trace", "--traces", nope + ".jsonl"}, "flightrec: trace: --traces " + nope + ".jsonl: the file does not exist"},
		{[]string{"runs", "--traces", nope + ".jsonl", "--dir", root}, "flightrec: runs: --traces " + nope + ".jsonl: the file does not exist"},
		{[]string{"trace", "--last", "--traces", empty, "--dir", nope}, "flightrec: trace: --dir " + nope + ": the directory does not exist"},
		{[]string{"runs", "--traces", nope + ".jsonl", "--dir", nope},
			"flightrec: runs: --dir " + nope + ": the directory does not exist; --traces " + nope + ".jsonl: the file does not exist"},
		{[]string{"runs"}, "flightrec: runs: no runs in .harnessx/traces.jsonl (does not exist) and .harnessx/flight (does not exist)"},
		{[]string{"trace", "--traces", empty}, "flightrec: trace: no runs in " + empty + " and .harnessx/flight (does not exist)"},
	} {
		r := runCmd(tt.args...)
		if r.err == nil || r.err.Error() != tt.want {
			t.Errorf("%v:\n got %v\nwant %s", tt.args, r.err, tt.want)
		}
	}
}
