package main

import (
	"bufio"
	"context"
	"errors"
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
	if !strings.Contains(string(out), "dies in the middle of the charge") {
		t.Fatalf("first invocation:\n%s", out)
	}

	out, err = command(ctx, bin, dir).Output()
	if err != nil {
		t.Fatalf("second invocation: %v\n%s", err, out)
	}
	for _, want := range []string{
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
