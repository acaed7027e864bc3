// Package toolbin finds, and when needed builds, the Go programs that
// harnessx's tests run as real components (the pinned Jaeger, the versitygw
// S3 gateway): each is built from a module directory of the repository
// into a cache that its .ci script fills as well, so that CI builds it
// once and a developer's first test run builds it if the script did not.
package toolbin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// EnvCache names the cache directory; default $HOME/.cache/harnessx.
const EnvCache = "HARNESSX_CACHE"

// A Tool is one program.
type Tool struct {
	// Name names it in messages: "Jaeger".
	Name string
	// EnvBinary is the variable that gives a built binary.
	EnvBinary string
	// Script is the .ci script that builds it: ".ci/jaeger.sh".
	Script string
	// Dir is the module directory it is built in, relative to the
	// repository root, and Package what go build builds there.
	Dir, Package string
	// CacheName returns the binary's file name in the cache, from the
	// repository root (it names the pinned version).
	CacheName func(root string) (string, error)
	// BuildCost says what a cold build costs, for the log line.
	BuildCost string
	// Skipped says what -short skips without a binary.
	Skipped string
	// ErrNoBinary is the caller's sentinel that Find wraps when there is
	// no binary without building one.
	ErrNoBinary error
}

// Find returns the binary EnvBinary names (an error if it is not an
// executable file), else the cached one if present, else an error
// wrapping ErrNoBinary.
func (tl *Tool) Find() (string, error) {
	if p := os.Getenv(tl.EnvBinary); p != "" {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", tl.EnvBinary, p, err)
		}
		return p, nil
	}
	p, err := tl.cachePath()
	if err != nil {
		return "", fmt.Errorf("%w: %v", tl.ErrNoBinary, err)
	}
	if err := executable(p); err != nil {
		return "", fmt.Errorf("%w: %s unset and %s missing", tl.ErrNoBinary, tl.EnvBinary, p)
	}
	return p, nil
}

// Binary returns the binary, building it into the cache when there is
// none. It fails t when it cannot; with -short it skips t instead of
// building. The build stops in time to fail clearly before the test
// binary's deadline; what it compiled stays in the Go build cache.
func (tl *Tool) Binary(t testing.TB) string {
	t.Helper()
	p, err := tl.Find()
	if err == nil {
		return p
	}
	if !errors.Is(err, tl.ErrNoBinary) {
		t.Fatal(err)
	}
	if testing.Short() {
		t.Skipf("%v; -short skips %s (run %s and set %s)", err, tl.Skipped, tl.Script, tl.EnvBinary)
	}
	target, err := tl.cachePath()
	if err != nil {
		t.Fatal(err)
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s is unset and %s is missing; building %s (%s)", tl.EnvBinary, target, tl.Name, tl.BuildCost)
	ctx := context.Background()
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := dt.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
			defer cancel()
		}
	}
	start := time.Now()
	if err := tl.build(ctx, filepath.Join(root, tl.Dir), target); err != nil {
		if ctx.Err() != nil {
			t.Fatalf("building %s did not finish before the test timeout (%v spent): run %s and set %s, or use go test -timeout 30m: %v",
				tl.Name, time.Since(start).Round(time.Second), tl.Script, tl.EnvBinary, err)
		}
		t.Fatalf("building %s: %v", tl.Name, err)
	}
	t.Logf("built %s in %v", target, time.Since(start).Round(time.Second))
	return target
}

// staleLock is how old a build lock may grow before another test binary
// takes it over.
const staleLock = 30 * time.Minute

// build compiles the tool into target through a temporary file renamed
// into place, so that no one sees a partial binary. A lock file next to
// target keeps test binaries running in parallel (go test ./...) from
// building it twice: the others wait for the first.
func (tl *Tool) build(ctx context.Context, dir, target string) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	lock := target + ".lock"
	for {
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%d\n", os.Getpid())
			f.Close()
			break
		}
		if !errors.Is(err, os.ErrExist) {
			return err
		}
		if executable(target) == nil {
			return nil // built by another test binary meanwhile
		}
		if fi, err := os.Stat(lock); err == nil && time.Since(fi.ModTime()) > staleLock {
			os.Remove(lock)
			continue
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for another build (%s): %w", lock, ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
	defer os.Remove(lock)
	if executable(target) == nil {
		return nil
	}
	tmp := fmt.Sprintf("%s.tmp-%d", target, os.Getpid())
	defer os.Remove(tmp)
	gobin, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", tmp, tl.Package)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v\n%s", err, out)
	}
	return os.Rename(tmp, target)
}

// cachePath is where the tool's script puts the binary:
// ${HARNESSX_CACHE:-$HOME/.cache/harnessx}/<CacheName>.
func (tl *Tool) cachePath() (string, error) {
	dir := os.Getenv(EnvCache)
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no cache directory: set %s: %w", EnvCache, err)
		}
		dir = filepath.Join(home, ".cache", "harnessx")
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	name, err := tl.CacheName(root)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// RepoRoot finds the harnessx module's root from the working directory
// (a test runs in its package's directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(data), "module github.com/harnessx/harnessx\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("toolbin: not inside the harnessx module")
		}
		dir = parent
	}
}
