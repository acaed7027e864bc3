package jaegertest

import (
	"bufio"
	"bytes"
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

// Environment variables read by this package.
const (
	// EnvBinary names a Jaeger binary to use.
	EnvBinary = "HARNESSX_JAEGER_BIN"
	// EnvCache names the cache directory; default $HOME/.cache/harnessx.
	EnvCache = "HARNESSX_CACHE"
)

// jaegerModule is the module path pinned as a tool in tools/go.mod.
const jaegerModule = "github.com/jaegertracing/jaeger"

// ErrNoBinary is returned by [FindBinary] when no Jaeger binary is
// available without building one.
var ErrNoBinary = errors.New("jaegertest: no Jaeger binary")

// Binary returns the path of a Jaeger binary, building it if needed (see
// the package documentation). It fails t when there is none; with -short
// it skips t instead of building.
func Binary(t testing.TB) string {
	t.Helper()
	path, err := FindBinary()
	if err == nil {
		return path
	}
	if !errors.Is(err, ErrNoBinary) {
		t.Fatal(err)
	}
	if testing.Short() {
		t.Skipf("%v; -short skips the Jaeger end-to-end test (run .ci/jaeger.sh and set %s)", err, EnvBinary)
	}
	target, err := cachePath()
	if err != nil {
		t.Fatalf("jaegertest: %v", err)
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("jaegertest: %v", err)
	}
	t.Logf("jaegertest: %s is unset and %s is missing; building Jaeger with go build in tools/ (several minutes and ~2 GB on a cold build cache)", EnvBinary, target)
	ctx := context.Background()
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		d, ok := dt.Deadline()
		if !ok {
			d = time.Now().Add(24 * time.Hour)
		}
		// Stop in time to fail with a clear message rather than be killed
		// by the test timeout; the compiled packages stay in the Go build
		// cache, so the next attempt continues where this one stopped.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		defer cancel()
	}
	start := time.Now()
	if err := build(ctx, filepath.Join(root, "tools"), target); err != nil {
		if ctx.Err() != nil {
			t.Fatalf("jaegertest: building Jaeger did not finish before the test timeout (%v spent): run .ci/jaeger.sh and set %s, or use go test -timeout 30m: %v",
				time.Since(start).Round(time.Second), EnvBinary, err)
		}
		t.Fatalf("jaegertest: building Jaeger: %v", err)
	}
	t.Logf("jaegertest: built %s in %v", target, time.Since(start).Round(time.Second))
	return target
}

// FindBinary returns HARNESSX_JAEGER_BIN when set (an error if it is not
// an executable file), else the cached binary if present, else an error
// wrapping [ErrNoBinary].
func FindBinary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("jaegertest: %s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	p, err := cachePath()
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoBinary, err)
	}
	if err := executable(p); err != nil {
		return "", fmt.Errorf("%w: %s unset and %s missing", ErrNoBinary, EnvBinary, p)
	}
	return p, nil
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

// cachePath is where .ci/jaeger.sh puts the binary:
// ${HARNESSX_CACHE:-$HOME/.cache/harnessx}/jaeger-<version>.
func cachePath() (string, error) {
	dir := os.Getenv(EnvCache)
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no cache directory: set %s: %w", EnvCache, err)
		}
		dir = filepath.Join(home, ".cache", "harnessx")
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	v, err := PinnedVersion(filepath.Join(root, "tools", "go.mod"))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "jaeger-"+v), nil
}

// PinnedVersion returns the Jaeger module version required by the go.mod
// file at path (tools/go.mod).
func PinnedVersion(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("jaegertest: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 && f[0] == "require" {
			f = f[1:]
		}
		if len(f) >= 2 && f[0] == jaegerModule && strings.HasPrefix(f[1], "v") {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("jaegertest: %s does not require %s", path, jaegerModule)
}

// repoRoot finds the harnessx module root from the working directory (a
// test runs in its package directory).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "tools", "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("jaegertest: no module root with tools/go.mod above the working directory")
		}
		dir = parent
	}
}

// staleLock is how old a build lock may grow before another test binary
// takes it over.
const staleLock = 30 * time.Minute

// build compiles Jaeger into target, through a temporary file renamed into
// place, so that no one sees a partial binary. A lock file next to target
// keeps test binaries running in parallel (go test ./...) from building
// it twice: the others wait for the first.
func build(ctx context.Context, toolsDir, target string) error {
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
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", tmp, jaegerModule+"/cmd/jaeger")
	cmd.Dir = toolsDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v\n%s", err, out)
	}
	return os.Rename(tmp, target)
}
