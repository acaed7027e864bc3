package jaegertest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessx/harnessx/internal/jaegertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestDecodeTraces(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "find_traces.json"))
	if err != nil {
		t.Fatal(err)
	}
	spans, err := jaegertest.DecodeTraces(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	chat, root := spans[0], spans[1]
	tests := []struct {
		name      string
		got, want any
	}{
		{"trace id", chat.TraceID, "4b00000000000000000000abcdef0001"},
		{"parent", chat.ParentSpanID, root.SpanID},
		{"root parent", root.ParentSpanID, ""},
		{"kind number", chat.Kind, jaegertest.KindClient},
		{"kind name", root.Kind, jaegertest.KindInternal},
		{"status number", chat.StatusCode, 2},
		{"status name", root.StatusCode, 0},
		{"int as string", chat.Attributes["gen_ai.usage.input_tokens"], int64(1 << 40)},
		{"int as number", chat.Attributes["n"], int64(7)},
		{"double", chat.Attributes["gen_ai.request.temperature"], 0.25},
		{"bool", chat.Attributes["gen_ai.request.stream"], false},
		{"array", chat.Attributes["reasons"], []any{"stop"}},
		{"events", chat.Events, []string{"new_token"}},
		{"resource", chat.Resource["service.name"], "svc"},
		{"scope", chat.Scope, "github.com/harnessx/harnessx/extensions/tracing"},
		{"start", chat.Start.UnixNano(), int64(1767323045001006000)},
		{"end from a number", chat.End.UnixNano(), int64(1767323045003006000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("got %#v, want %#v", tt.got, tt.want)
			}
		})
	}
}

func TestDecodeTracesErrors(t *testing.T) {
	for _, body := range []string{`{`, `{"result":{"resourceSpans":[{"scopeSpans":[{"spans":[{"kind":"SPAN_KIND_WHAT"}]}]}]}}`} {
		if _, err := jaegertest.DecodeTraces([]byte(body)); err == nil {
			t.Errorf("DecodeTraces(%s) succeeded", body)
		}
	}
}

func TestPinnedVersion(t *testing.T) {
	v, err := jaegertest.PinnedVersion(filepath.Join("..", "..", "tools", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v, "v1.") {
		t.Errorf("pinned Jaeger version %q, want v1.x (Jaeger v2 binaries are released as module v1.x)", v)
	}
	if _, err := jaegertest.PinnedVersion(filepath.Join("testdata", "find_traces.json")); err == nil {
		t.Error("a file without the requirement gave a version")
	}
}

func TestFindBinaryEnv(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "jaeger")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, bin, cache string
		want             string
		wantErr          bool
		wantNoBinary     bool
	}{
		{name: "env executable", bin: exe, want: exe},
		{name: "env missing", bin: filepath.Join(dir, "nope"), wantErr: true},
		{name: "env not executable", bin: plain, wantErr: true},
		{name: "empty cache", cache: t.TempDir(), wantErr: true, wantNoBinary: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(jaegertest.EnvBinary, tt.bin)
			t.Setenv(jaegertest.EnvCache, tt.cache)
			got, err := jaegertest.FindBinary()
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("FindBinary() = %q, %v", got, err)
			}
			if errors.Is(err, jaegertest.ErrNoBinary) != tt.wantNoBinary {
				t.Errorf("errors.Is(%v, ErrNoBinary) = %v", err, !tt.wantNoBinary)
			}
		})
	}
}

func TestArgsBindOnlyGivenPorts(t *testing.T) {
	args := strings.Join(jaegertest.Args(1111, 2222), " ")
	for _, want := range []string{"jaeger_query.http.endpoint=127.0.0.1:1111", "otlp.protocols.http.endpoint=127.0.0.1:2222",
		"metrics.level=none", "service.extensions=[jaeger_storage,jaeger_query]", "receivers=[otlp]"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
}

// TestStartTwice runs two Jaegers at once, as parallel test binaries do:
// neither may collide with the other on a default port.
func TestStartTwice(t *testing.T) {
	a, b := jaegertest.Start(t), jaegertest.Start(t)
	if a.QueryURL == b.QueryURL || a.OTLPEndpoint == b.OTLPEndpoint || a.PID == b.PID {
		t.Fatalf("two Jaegers share an address: %+v %+v", a, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, j := range []*jaegertest.Jaeger{a, b} {
		spans, err := j.FindTraces(ctx, jaegertest.Query{Service: "nobody", StartMin: time.Now().Add(-time.Hour), StartMax: time.Now()})
		if err != nil || len(spans) != 0 {
			t.Errorf("empty Jaeger: %d spans, %v", len(spans), err)
		}
		// Not listening on the default OTLP or UI ports is what lets
		// them run side by side; the receiver is where Start says.
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(j.OTLPEndpoint, "http://"), time.Second)
		if err != nil {
			t.Errorf("OTLP receiver not listening: %v", err)
		} else {
			c.Close()
		}
	}
	// A bad query is reported at once, not waited on.
	_, err := a.WaitForSpans(ctx, jaegertest.Query{Service: "x", StartMin: time.Now().Add(-time.Hour), StartMax: time.Now(), NumTraces: 1 << 30}, 1)
	var se *jaegertest.StatusError
	if !errors.As(err, &se) {
		t.Errorf("a search deeper than Jaeger allows: %v, want a StatusError", err)
	}
}

// otlpJSONSpan is one root span in an OTLP/JSON export request.
func otlpJSONSpan(service, traceID, name string, status int) string {
	now := time.Now().UnixNano()
	return fmt.Sprintf(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":%q}}]},
"scopeSpans":[{"scope":{"name":"t"},"spans":[{"traceId":%q,"spanId":"00000000000000a1","name":%q,"kind":1,
"startTimeUnixNano":"%d","endTimeUnixNano":"%d","status":{"code":%d}}]}]}]}`, service, traceID, name, now-int64(time.Millisecond), now, status)
}

// TestStartWithConfigFile runs Jaeger with the tail-sampling configuration
// at a 0% share: an errored trace is stored, an ordinary one is not (with
// the built-in configuration both would be).
func TestStartWithConfigFile(t *testing.T) {
	j := jaegertest.Start(t,
		jaegertest.WithConfigFile("deploy/jaeger-tailsampling.yaml"),
		jaegertest.WithEnv("HARNESSX_TAIL_PERCENT=0"),
		jaegertest.WithSet("processors.tail_sampling.decision_wait=1s"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	service := fmt.Sprintf("jaegertest-config-%d", time.Now().UnixNano())
	begin := time.Now()
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	for _, s := range []struct {
		id, name string
		status   int
	}{
		{"0000000000000000000000000000f001", "ordinary", 0},
		{"0000000000000000000000000000f002", "failed", 2},
	} {
		resp, err := hc.Post(j.TracesURL(), "application/json", strings.NewReader(otlpJSONSpan(service, s.id, s.name, s.status)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %s", s.name, resp.Status)
		}
	}
	q := jaegertest.Query{Service: service, StartMin: begin.Add(-time.Minute), StartMax: time.Now().Add(time.Minute)}
	spans, err := j.WaitForSpans(ctx, q, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The ordinary trace was decided in the same decision tick; give a
	// wrongly kept one time to show anyway.
	time.Sleep(2 * time.Second)
	if spans, err = j.FindTraces(ctx, q); err != nil {
		t.Fatal(err)
	}
	if len(spans) != 1 || spans[0].Name != "failed" || spans[0].StatusCode != 2 {
		t.Fatalf("stored %+v, want the failed span only", spans)
	}
}

func TestStartConfigFileMissing(t *testing.T) {
	_, err := jaegertest.StartOTLPPort(t, 0, jaegertest.WithConfigFile("deploy/no-such-file.yaml"))
	if err == nil || !strings.Contains(err.Error(), "no-such-file") {
		t.Fatalf("err %v, want one naming the missing file", err)
	}
}

// TestStartOnATakenPort: Jaeger exits at once when its OTLP port is
// taken; StartOTLPPort reports that, promptly, instead of waiting on an
// exit it has already seen.
func TestStartOnATakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	type result struct {
		j   *jaegertest.Jaeger
		err error
	}
	done := make(chan result, 1)
	go func() {
		j, err := jaegertest.StartOTLPPort(t, port)
		done <- result{j, err}
	}()
	select {
	case r := <-done:
		if r.err == nil || !strings.Contains(r.err.Error(), "exited during start") {
			t.Fatalf("Jaeger on a taken port: %+v, %v", r.j, r.err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("StartOTLPPort still waiting a minute after Jaeger could not bind its port")
	}
}
