package jaegertest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/internal/toolbin"
)

// Environment variables read by this package.
const (
	// EnvBinary names a Jaeger binary to use.
	EnvBinary = "HARNESSX_JAEGER_BIN"
	// EnvCache names the cache directory; default $HOME/.cache/harnessx.
	EnvCache = toolbin.EnvCache
)

// jaegerModule is the module path pinned as a tool in tools/go.mod.
const jaegerModule = "github.com/jaegertracing/jaeger"

// ErrNoBinary is returned by [FindBinary] when no Jaeger binary is
// available without building one.
var ErrNoBinary = errors.New("jaegertest: no Jaeger binary")

// tool is Jaeger as internal/toolbin builds it: from tools/, into the
// cache as jaeger-<version>, where .ci/jaeger.sh puts it too.
func tool() *toolbin.Tool {
	return &toolbin.Tool{
		Name: "Jaeger", EnvBinary: EnvBinary, Script: ".ci/jaeger.sh",
		Dir: "tools", Package: jaegerModule + "/cmd/jaeger",
		CacheName: func(root string) (string, error) {
			v, err := PinnedVersion(filepath.Join(root, "tools", "go.mod"))
			return "jaeger-" + v, err
		},
		BuildCost:   "several minutes and ~2 GB on a cold build cache",
		Skipped:     "the Jaeger end-to-end test",
		ErrNoBinary: ErrNoBinary,
	}
}

// Binary returns the path of a Jaeger binary, building it if needed (see
// the package documentation). It fails t when there is none; with -short
// it skips t instead of building.
func Binary(t testing.TB) string {
	t.Helper()
	return tool().Binary(t)
}

// FindBinary returns HARNESSX_JAEGER_BIN when set (an error if it is not
// an executable file), else the cached binary if present, else an error
// wrapping [ErrNoBinary].
func FindBinary() (string, error) {
	p, err := tool().Find()
	if err != nil && !errors.Is(err, ErrNoBinary) {
		return "", fmt.Errorf("jaegertest: %w", err)
	}
	return p, err
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
