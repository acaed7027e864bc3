package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// build compiles the example into a temporary directory.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "durable")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func command(ctx context.Context, bin, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, append([]string{"-db", filepath.Join(dir, "runs.db")}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HARNESSX_TRACES_FILE="+filepath.Join(dir, "traces.jsonl"), "OTEL_TRACES_EXPORTER=", "OTEL_EXPORTER_OTLP_ENDPOINT=",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=", "LANGSMITH_API_KEY=")
	return cmd
}

func TestCrashAndResume(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	out, err := command(ctx, bin, dir).Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("first invocation: %v, want death by SIGKILL\n%s", err, out)
	}
	if !strings.Contains(string(out), "dies in the middle of the charge") || !strings.Contains(string(out), "run the same command again") {
		t.Fatalf("first invocation:\n%s", out)
	}

	out, err = command(ctx, bin, dir).Output()
	if err != nil {
		t.Fatalf("second invocation: %v\n%s", err, out)
	}
	for _, want := range []string{
		"run charge-demo: recovered, execution 2",
		"model request 1: replayed from the database",
		"model request 2: replayed from the database",
		"model request 3: ran",
		"tool lookup (c1): skipped, its result replayed from the database",
		"tool charge (c2): reported interrupted, not run again",
		"run charge-demo completed: The charge's outcome is interrupted",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("second invocation lacks %q:\n%s", want, out)
		}
	}
	// The recovered run's span is in the trace file, marked recovered
	// and linked to the crashed attempt's span.
	traces, err := os.ReadFile(filepath.Join(dir, "traces.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"harnessx.recovered"`, `"links":[{`, `invoke_agent`} {
		if !strings.Contains(string(traces), want) {
			t.Errorf("the trace file lacks %s", want)
		}
	}
}

func TestDatabaseFlag(t *testing.T) {
	for _, c := range []struct{ in, dsn, file, err string }{
		{"runs.db", "sqlite:runs.db", "runs.db", ""},
		{"sqlite:/tmp/x.db", "sqlite:/tmp/x.db", "/tmp/x.db", ""},
		{"postgres://u:secret@127.0.0.1:5432/runs", "postgres://u:secret@127.0.0.1:5432/runs", "", ""},
		{"postgresql://127.0.0.1/runs", "postgresql://127.0.0.1/runs", "", ""},
		{"mysql://u:secret@127.0.0.1/runs", "", "", "not a SQLite file nor a postgres:// URL"},
		{"host=127.0.0.1 password=secret", "", "", "not a SQLite file"},
		{"sqlite:", "", "", "empty file name"},
	} {
		dsn, file, err := database(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "secret") {
				t.Errorf("%q: %v", c.in, err)
			}
			continue
		}
		if err != nil || dsn != c.dsn || file != c.file {
			t.Errorf("%q: %q %q %v", c.in, dsn, file, err)
		}
	}
}

func TestAskAnsweredByAnotherInvocation(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	waiter := command(ctx, bin, dir, "-ask")
	stdout, err := waiter.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	t.Cleanup(func() {
		if !exited {
			_ = waiter.Process.Kill() // ours, by PID
			_ = waiter.Wait()
		}
	})
	sc := bufio.NewScanner(stdout)
	runID := ""
	re := regexp.MustCompile(`^run (\S+) asks "Deploy to which environment\?"`)
	for runID == "" && sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			runID = m[1]
		}
	}
	if runID == "" {
		t.Fatal("the waiting invocation announced no question")
	}
	out, err := command(ctx, bin, dir, "-reply", runID, "staging").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `answered "staging"`) {
		t.Fatalf("reply: %v\n%s", err, out)
	}
	var rest strings.Builder
	for sc.Scan() {
		rest.WriteString(sc.Text() + "\n")
	}
	err = waiter.Wait()
	exited = true
	if err != nil {
		t.Fatalf("waiter: %v\n%s", err, rest.String())
	}
	if want := "run " + runID + " completed: Done: deployed to staging."; !strings.Contains(rest.String(), want) {
		t.Fatalf("waiter printed %q, want %q", rest.String(), want)
	}
	// Answering again is refused: the question is closed.
	out, err = command(ctx, bin, dir, "-reply", runID, "prod").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no open question") {
		t.Fatalf("second reply: %v\n%s", err, out)
	}
}

// TestTwoWorkers starts two -worker invocations on one database and a
// -submit client: every run completes, on one of the two workers, and the
// workers stop cleanly on SIGTERM.
func TestTwoWorkers(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	type worker struct {
		cmd  *exec.Cmd
		out  strings.Builder
		done chan error
	}
	var workers []*worker
	for _, id := range []string{"w1", "w2"} {
		w := &worker{cmd: command(ctx, bin, dir, "-worker", id), done: make(chan error, 1)}
		stdout, err := w.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.cmd.Process.Kill() }) // ours, by PID; a no-op once it exited
		sc := bufio.NewScanner(stdout)
		if !sc.Scan() || !strings.Contains(sc.Text(), "worker "+id+": waiting for runs") {
			t.Fatalf("worker %s did not start: %q", id, sc.Text())
		}
		go func() {
			for sc.Scan() {
				w.out.WriteString(sc.Text() + "\n")
			}
			w.done <- w.cmd.Wait()
		}()
		workers = append(workers, w)
	}

	out, err := command(ctx, bin, dir, "-submit", "6").CombinedOutput()
	if err != nil {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	re := regexp.MustCompile(`(?m)^run (\S+) completed: handled by (w1|w2)$`)
	done := re.FindAllStringSubmatch(string(out), -1)
	if len(done) != 6 {
		t.Fatalf("%d runs completed on a worker, want 6:\n%s", len(done), out)
	}
	for _, w := range workers {
		if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	ran := map[string]string{}
	for i, w := range workers {
		if err := <-w.done; err != nil {
			t.Fatalf("worker %d: %v\n%s", i+1, err, w.out.String())
		}
		for _, m := range regexp.MustCompile(`(?m)^worker (w1|w2): runs (\S+)/tool/`).FindAllStringSubmatch(w.out.String(), -1) {
			ran[m[2]] = m[1]
		}
		if !strings.Contains(w.out.String(), "stopping") {
			t.Errorf("worker %d did not stop cleanly:\n%s", i+1, w.out.String())
		}
	}
	for _, m := range done {
		if ran[m[1]] != m[2] {
			t.Errorf("run %s: the client says %s ran it, the workers say %q", m[1], m[2], ran[m[1]])
		}
	}
}
