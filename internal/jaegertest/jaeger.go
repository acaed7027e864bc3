package jaegertest

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessx/harnessx/internal/toolbin"
)

// Jaeger is a running Jaeger process. Its fields are set by [Start].
type Jaeger struct {
	// OTLPEndpoint is the base URL of the OTLP/HTTP receiver
	// (http://127.0.0.1:port); spans go to OTLPEndpoint + "/v1/traces".
	OTLPEndpoint string
	// QueryURL is the base URL of the query service: the HTTP API v3 and
	// the UI.
	QueryURL string
	// PID is the Jaeger process's ID.
	PID int

	client *http.Client
	log    *syncBuffer
}

// startTimeout bounds how long Jaeger may take to answer.
const startTimeout = 60 * time.Second

// Option changes how [Start] runs Jaeger.
type Option func(*startConfig)

type startConfig struct {
	configFile string
	set        []string
	env        []string
}

// WithConfigFile runs Jaeger with the configuration file at path
// (--config=file:path) instead of its built-in all-in-one configuration.
// The file must define the otlp receiver and the jaeger_storage and
// jaeger_query extensions: Start still overrides their endpoints with
// free loopback ports and the service's extensions and receivers, as
// [Args] lists; the file chooses the rest (processors, exporters,
// storage). A relative path is taken from the module root (the directory
// with tools/go.mod), so deploy/jaeger-tailsampling.yaml works from any
// package's test.
func WithConfigFile(path string) Option { return func(c *startConfig) { c.configFile = path } }

// WithSet adds --set=prop flags, after Start's own, e.g.
// "processors.tail_sampling.decision_wait=1s".
func WithSet(props ...string) Option {
	return func(c *startConfig) { c.set = append(c.set, props...) }
}

// WithEnv adds KEY=VALUE variables to Jaeger's environment, after
// [Env]'s; a configuration file reads them as ${env:KEY}.
func WithEnv(kv ...string) Option {
	return func(c *startConfig) { c.env = append(c.env, kv...) }
}

// Start runs Jaeger for the duration of t (see the package documentation)
// and returns once it accepts spans and queries. It fails t if Jaeger
// cannot start; the process is killed by its PID when t ends.
func Start(t testing.TB, opts ...Option) *Jaeger {
	t.Helper()
	bin := Binary(t)
	c, err := newStartConfig(opts)
	if err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for range 3 { // a free port may be taken between choosing and binding it
		j, err := startOn(t, bin, 0, c)
		if err == nil {
			return j
		}
		lastErr = err
		t.Logf("jaegertest: %v; retrying on other ports", err)
	}
	t.Fatalf("jaegertest: Jaeger did not start: %v", lastErr)
	return nil
}

// StartOTLPPort is [Start] with the OTLP/HTTP receiver on the given
// loopback port (4318 to stand where a local Jaeger listens by default),
// the query port free. It returns an error when Jaeger cannot start, for
// instance because another process took the port: the caller decides
// whether that skips or fails its test.
func StartOTLPPort(t testing.TB, otlpPort int, opts ...Option) (*Jaeger, error) {
	t.Helper()
	bin := Binary(t)
	c, err := newStartConfig(opts)
	if err != nil {
		return nil, err
	}
	return startOn(t, bin, otlpPort, c)
}

// newStartConfig applies opts and resolves and checks the config file.
func newStartConfig(opts []Option) (startConfig, error) {
	var c startConfig
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.configFile == "" {
		return c, nil
	}
	if !filepath.IsAbs(c.configFile) {
		root, err := toolbin.RepoRoot()
		if err != nil {
			return c, err
		}
		c.configFile = filepath.Join(root, c.configFile)
	}
	if fi, err := os.Stat(c.configFile); err != nil || fi.IsDir() {
		if err == nil {
			err = errors.New("is a directory")
		}
		return c, fmt.Errorf("jaegertest: config file: %w", err)
	}
	return c, nil
}

// command returns the arguments for the given ports: --config first when a
// file is given, then Args, then the extra --set flags.
func (c startConfig) command(queryPort, otlpPort int) []string {
	var args []string
	if c.configFile != "" {
		args = append(args, "--config=file:"+c.configFile)
	}
	args = append(args, Args(queryPort, otlpPort)...)
	for _, p := range c.set {
		args = append(args, "--set="+p)
	}
	return args
}

// TracesURL returns the OTLP/HTTP traces URL.
func (j *Jaeger) TracesURL() string { return j.OTLPEndpoint + "/v1/traces" }

// Log returns what Jaeger has written to its stdout and stderr so far.
func (j *Jaeger) Log() string { return j.log.String() }

// Args returns the command-line flags Start passes to the Jaeger binary for
// the given loopback ports: the query HTTP API and UI on queryPort, OTLP/HTTP
// on otlpPort, their gRPC twins on ephemeral ports, and only the OTLP
// receiver and the storage and query extensions running, so no other
// default port (4317, 5778, 5779, 6831, 6832, 9411, 13133, 14250, 14268,
// 16685, 27777, 27778, 8888) is bound.
func Args(queryPort, otlpPort int) []string {
	return []string{
		"--set=extensions.jaeger_query.http.endpoint=127.0.0.1:" + strconv.Itoa(queryPort),
		"--set=extensions.jaeger_query.grpc.endpoint=127.0.0.1:0",
		"--set=receivers.otlp.protocols.http.endpoint=127.0.0.1:" + strconv.Itoa(otlpPort),
		"--set=receivers.otlp.protocols.grpc.endpoint=127.0.0.1:0",
		"--set=service.telemetry.metrics.level=none",
		"--set=service.extensions=[jaeger_storage,jaeger_query]",
		"--set=service.pipelines.traces.receivers=[otlp]",
	}
}

// Env returns the environment variables Start adds for Jaeger: no traces
// of its own, every listener on loopback.
func Env() []string {
	return []string{"OTEL_TRACES_SAMPLER=always_off", "JAEGER_LISTEN_HOST=127.0.0.1"}
}

// startOn starts Jaeger with OTLP/HTTP on otlpPort, a free port when 0.
func startOn(t testing.TB, bin string, otlpPort int, c startConfig) (*Jaeger, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	queryPort := ports[0]
	if otlpPort == 0 {
		otlpPort = ports[1]
	}
	j := &Jaeger{
		OTLPEndpoint: "http://127.0.0.1:" + strconv.Itoa(otlpPort),
		QueryURL:     "http://127.0.0.1:" + strconv.Itoa(queryPort),
		client:       &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}},
		log:          &syncBuffer{},
	}
	cmd := exec.Command(bin, c.command(queryPort, otlpPort)...)
	cmd.Env = append(append(os.Environ(), Env()...), c.env...)
	cmd.Dir = t.TempDir()
	cmd.Stdout, cmd.Stderr = j.log, j.log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	j.PID = cmd.Process.Pid
	// exited is closed once the process is reaped, and waitErr set: a
	// closed channel tells every reader, so that stop, after waitReady saw
	// the exit, does not wait for a second one.
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		// Only our child, by its PID: interrupt, then kill if it lingers.
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		j.client.CloseIdleConnections()
	}

	if err := j.waitReady(exited, func() error { return waitErr }); err != nil {
		stop()
		return nil, fmt.Errorf("%w\n--- jaeger log ---\n%s", err, tail(j.log.String(), 40))
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("--- jaeger log (pid %d) ---\n%s", j.PID, tail(j.log.String(), 60))
		}
	})
	return j, nil
}

// waitReady polls the query API and the OTLP port until both answer, the
// process exits or startTimeout passes.
func (j *Jaeger) waitReady(exited <-chan struct{}, waitErr func() error) error {
	deadline := time.Now().Add(startTimeout)
	otlpHost := strings.TrimPrefix(j.OTLPEndpoint, "http://")
	for {
		select {
		case <-exited:
			return fmt.Errorf("jaeger exited during start: %v", waitErr())
		default:
		}
		if j.ready(otlpHost) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("jaeger not ready after %v", startTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (j *Jaeger) ready(otlpHost string) bool {
	resp, err := j.client.Get(j.QueryURL + "/api/v3/services")
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	c, err := net.DialTimeout("tcp", otlpHost, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// freePorts returns n distinct free loopback TCP ports.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// syncBuffer collects a process's output; safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
