package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/harnessx/harnessx/examples/quickstart/internal/demo"
)

// livePackage is the program that calls a real model. It is a separate
// main package so that the offline quickstart never compiles the vendor
// SDKs, which take most of a first build.
const livePackage = "github.com/harnessx/harnessx/examples/quickstart/live"

func main() {
	ctx := context.Background()
	if key := liveKey(); key != "" {
		if err := runLive(ctx, key); err != nil {
			fmt.Fprintln(os.Stderr, "quickstart:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// run is the offline quickstart.
func run(ctx context.Context, w io.Writer) error { return demo.Run(ctx, w, demo.Offline()) }

// liveKey names the API key variable that selects a real model, or
// returns "" for the offline run.
func liveKey() string {
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"} {
		if os.Getenv(k) != "" {
			return k
		}
	}
	return ""
}

// runLive hands the run to the live program with go run, so the vendor
// SDKs compile only when a key asks for them.
func runLive(ctx context.Context, key string) error {
	fmt.Fprintf(os.Stderr, "quickstart: %s is set: running %s (the first run compiles the vendor SDKs)\n", key, livePackage)
	cmd := liveCommand(ctx, os.Stdin, os.Stdout, os.Stderr)
	err := cmd.Run()
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Errorf("the real-model path needs the go command: run go run %s", livePackage)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		os.Exit(ee.ExitCode())
	}
	return err
}

func liveCommand(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", "run", livePackage)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	return cmd
}
