// Package s3test starts a real S3-compatible server for tests: the
// versitygw gateway (github.com/versity/versitygw, Apache-2.0) over a posix
// backend in a temporary directory, as a child process on a free loopback
// port.
//
// The gateway is the program in tools/versitygw, a separate module so that
// its many dependencies stay out of the main module; .ci/versitygw.sh
// builds it once into a cache. The binary is HARNESSX_VERSITYGW_BIN, else
// the cached ${HARNESSX_CACHE:-$HOME/.cache/harnessx}/versitygw-<version>-<hash>
// that the script writes. When neither exists, [Start] skips the test with
// -short and otherwise builds it into the cache first (about five minutes
// on a cold build cache).
package s3test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/harnessx/harnessx/internal/toolbin"
)

// Environment variables read by this package.
const (
	EnvBinary = "HARNESSX_VERSITYGW_BIN"
	EnvCache  = toolbin.EnvCache
)

// Gateway is a running versitygw.
type Gateway struct {
	// Endpoint is http://127.0.0.1:<port>.
	Endpoint string
	// AccessKey and SecretKey are the root credentials, random per gateway.
	AccessKey, SecretKey string
	// Root is the posix backend's directory: bucket b's object k is the
	// file Root/b/k (tests tamper with or delete objects through it).
	Root string
	// Stderr collects what the gateway printed.
	Stderr *strings.Builder

	cmd       *exec.Cmd
	mu        sync.Mutex
	client    *minio.Client
	transport *http.Transport
}

// Start starts a gateway for t and stops it at t's cleanup.
func Start(t testing.TB) *Gateway {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	g := &Gateway{AccessKey: "AKIA" + randomHex(8), SecretKey: "vgw-secret-" + randomHex(16), Root: filepath.Join(dir, "root")}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		addr, err := freePort()
		if err != nil {
			t.Fatalf("s3test: %v", err)
		}
		if err := g.start(bin, addr, filepath.Join(dir, "meta")); err != nil {
			lastErr = err
			continue // the port was taken meanwhile: another one
		}
		t.Cleanup(g.stop)
		return g
	}
	t.Fatalf("s3test: starting versitygw: %v", lastErr)
	return nil
}

func (g *Gateway) start(bin, addr, meta string) error {
	cmd := exec.Command(bin, "-addr", addr, "-root", g.Root, "-meta", meta)
	cmd.Env = append(os.Environ(), "VGW_ACCESS_KEY="+g.AccessKey, "VGW_SECRET_KEY="+g.SecretKey)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	g.Stderr = &strings.Builder{}
	cmd.Stderr = &lockedWriter{b: g.Stderr}
	if err := cmd.Start(); err != nil {
		return err
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- nil
				for sc.Scan() { // keep draining
				}
				return
			}
		}
		ready <- errors.New("exited before it was ready")
	}()
	select {
	case err := <-ready:
		if err != nil {
			_ = cmd.Wait()
			return fmt.Errorf("%v: %s", err, g.Stderr.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("not ready after 30s: %s", g.Stderr.String())
	}
	g.cmd = cmd
	g.Endpoint = "http://" + addr
	return nil
}

func (g *Gateway) stop() {
	g.mu.Lock()
	if g.transport != nil {
		g.transport.CloseIdleConnections()
	}
	g.mu.Unlock()
	if g.cmd == nil || g.cmd.Process == nil {
		return
	}
	_ = g.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = g.cmd.Process.Kill()
		<-done
	}
}

// Client returns a minio-go client with the root credentials.
func (g *Gateway) Client(t testing.TB) *minio.Client {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.client == nil {
		g.transport = http.DefaultTransport.(*http.Transport).Clone()
		g.transport.DisableCompression = true
		c, err := minio.New(strings.TrimPrefix(g.Endpoint, "http://"), &minio.Options{
			Creds: credentials.NewStaticV4(g.AccessKey, g.SecretKey, ""), Region: "us-east-1", BucketLookup: minio.BucketLookupPath,
			Transport: g.transport})
		if err != nil {
			t.Fatal(err)
		}
		g.client = c
	}
	return g.client
}

// Bucket creates a bucket with a fresh name and returns it.
func (g *Gateway) Bucket(t testing.TB) string {
	t.Helper()
	name := "hx-" + randomHex(6)
	if err := g.Client(t).MakeBucket(context.Background(), name, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		t.Fatalf("s3test: creating bucket %s: %v", name, err)
	}
	return name
}

// Env returns the environment variables of a program using the gateway:
// HARNESSX_ARTIFACTS=s3://bucket/prefix and the AWS_* variables.
func (g *Gateway) Env(bucket, prefix string) []string {
	loc := "s3://" + bucket
	if prefix != "" {
		loc += "/" + prefix
	}
	return []string{
		"HARNESSX_ARTIFACTS=" + loc,
		"AWS_ACCESS_KEY_ID=" + g.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + g.SecretKey,
		"AWS_REGION=us-east-1",
		"AWS_ENDPOINT_URL_S3=" + g.Endpoint,
	}
}

type lockedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	l.Close()
	return addr, nil
}

// ErrNoBinary is returned by [FindBinary] when no gateway binary is
// available without building one.
var ErrNoBinary = errors.New("s3test: no versitygw binary")

// tool is the gateway as internal/toolbin builds it: from
// tools/versitygw, into the cache as versitygw-<version>-<hash>, where
// .ci/versitygw.sh puts it too.
func tool() *toolbin.Tool {
	return &toolbin.Tool{
		Name: "versitygw", EnvBinary: EnvBinary, Script: ".ci/versitygw.sh",
		Dir: filepath.Join("tools", "versitygw"), Package: ".",
		CacheName:   cacheName,
		BuildCost:   "about 5 minutes on a cold build cache",
		Skipped:     "the tests against a real S3 server",
		ErrNoBinary: ErrNoBinary,
	}
}

// Binary returns the gateway binary, building it into the cache if
// needed; with -short it skips t instead of building.
func Binary(t testing.TB) string {
	t.Helper()
	return tool().Binary(t)
}

// FindBinary returns HARNESSX_VERSITYGW_BIN when set (an error if it is
// not an executable file), else the cached binary if present, else an
// error wrapping [ErrNoBinary].
func FindBinary() (string, error) {
	p, err := tool().Find()
	if err != nil && !errors.Is(err, ErrNoBinary) {
		return "", fmt.Errorf("s3test: %w", err)
	}
	return p, err
}

// cacheName is the binary's name in the cache, as .ci/versitygw.sh names
// it: versitygw-<version>-<first 12 hex digits of the SHA-256 of
// tools/versitygw/go.mod followed by main.go>.
func cacheName(root string) (string, error) {
	tool := filepath.Join(root, "tools", "versitygw")
	mod, err := os.ReadFile(filepath.Join(tool, "go.mod"))
	if err != nil {
		return "", err
	}
	main, err := os.ReadFile(filepath.Join(tool, "main.go"))
	if err != nil {
		return "", err
	}
	version := ""
	for _, line := range strings.Split(string(mod), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "github.com/versity/versitygw" {
			version = f[1]
		} else if len(f) >= 3 && f[0] == "require" && f[1] == "github.com/versity/versitygw" {
			version = f[2]
		}
	}
	if version == "" {
		return "", errors.New("tools/versitygw/go.mod does not require github.com/versity/versitygw")
	}
	h := sha256.New()
	h.Write(mod)
	h.Write(main)
	return "versitygw-" + version + "-" + hex.EncodeToString(h.Sum(nil))[:12], nil
}
