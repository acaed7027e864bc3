package toolbin

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var errNoHello = errors.New("no hello binary")

func hello() *Tool {
	return &Tool{
		Name: "hello", EnvBinary: "TOOLBIN_TEST_HELLO_BIN", Script: "(none)",
		Dir: filepath.Join("internal", "toolbin", "testdata", "hello"), Package: ".",
		CacheName:   func(string) (string, error) { return "hello-v1", nil },
		BuildCost:   "seconds",
		Skipped:     "the toolbin test",
		ErrNoBinary: errNoHello,
	}
}

// TestFindAndBuild: without a binary Find says so; Binary builds it into
// the cache, and Find then returns it; the variable wins when set, and a
// variable naming no executable is an error, not "no binary".
func TestFindAndBuild(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(EnvCache, cache)
	t.Setenv("TOOLBIN_TEST_HELLO_BIN", "")
	tl := hello()
	if _, err := tl.Find(); !errors.Is(err, errNoHello) {
		t.Fatalf("Find with an empty cache: %v", err)
	}
	if testing.Short() {
		t.Skip("-short: no build")
	}
	bin := tl.Binary(t)
	if bin != filepath.Join(cache, "hello-v1") {
		t.Fatalf("built %s", bin)
	}
	out, err := exec.Command(bin).Output()
	if err != nil || strings.TrimSpace(string(out)) != "hello from a built tool" {
		t.Fatalf("the built tool: %q, %v", out, err)
	}
	if p, err := tl.Find(); err != nil || p != bin {
		t.Fatalf("Find after the build: %q, %v", p, err)
	}
	if _, err := os.Stat(bin + ".lock"); !os.IsNotExist(err) {
		t.Fatalf("the build lock stayed: %v", err)
	}

	t.Setenv("TOOLBIN_TEST_HELLO_BIN", bin)
	if p, err := tl.Find(); err != nil || p != bin {
		t.Fatalf("Find with the variable: %q, %v", p, err)
	}
	t.Setenv("TOOLBIN_TEST_HELLO_BIN", cache) // a directory
	if _, err := tl.Find(); err == nil || errors.Is(err, errNoHello) || !strings.Contains(err.Error(), "TOOLBIN_TEST_HELLO_BIN") {
		t.Fatalf("Find with a directory in the variable: %v", err)
	}
}
