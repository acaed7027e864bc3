package e2e_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/jaegertest"
)

// TestPushToLocalJaegerWithNoFlags is the newcomer's path: an incident
// bundle recorded with an SDK provider that names no service is pushed
// with `flightrec push FILE` and nothing else, and shows in a Jaeger
// listening where it does by default (OTLP/HTTP on localhost:4318), under
// the agent's name.
func TestPushToLocalJaegerWithNoFlags(t *testing.T) {
	if l, err := net.Listen("tcp", "127.0.0.1:4318"); err != nil {
		t.Skipf("port 4318 is taken (%v): this test needs Jaeger on the default port", err)
	} else {
		l.Close()
	}
	j, err := jaegertest.StartOTLPPort(t, 4318)
	if err != nil {
		// Another test of the run may hold the port for a moment (the
		// flightrec default-endpoint test listens there too).
		if l, lerr := net.Listen("tcp", "127.0.0.1:4318"); lerr != nil {
			t.Skipf("port 4318 was taken while Jaeger started: %v", lerr)
		} else {
			l.Close()
		}
		t.Fatalf("Jaeger did not start on port 4318: %v", err)
	}

	// A bundle recorded the README's way, with a provider built without a
	// resource: its spans say service.name=unknown_service:….
	ctx := context.Background()
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(ctx)
	agentName := "pushed-" + time.Now().Format("150405.000000")
	rec := flight.New(flight.WithDir(t.TempDir()))
	a, err := harness.New(
		harness.WithName(agentName),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithModel("scripted-model"),
		harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Response{Err: errors.New("upstream failed")})),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp)), rec),
	)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _ = a.Run(ctx, "hello")
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	inc := rec.Incidents()
	if len(inc) != 1 {
		t.Fatalf("incidents %v, want one bundle", inc)
	}

	bin := filepath.Join(t.TempDir(), "flightrec")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/flightrec").CombinedOutput(); err != nil {
		t.Fatalf("go build flightrec: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "push", inc[0])
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") && !strings.HasPrefix(kv, "LANGSMITH_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flightrec push: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "to http://localhost:4318/v1/traces") {
		t.Errorf("flightrec push said %q", out)
	}

	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	spans, err := j.WaitForSpans(wctx, jaegertest.Query{Service: agentName, StartMin: start.Add(-time.Minute),
		StartMax: time.Now().Add(time.Minute)}, 2)
	if err != nil {
		t.Fatalf("Jaeger has %d spans of service %q: %v", len(spans), agentName, err)
	}
	names := map[string]bool{}
	for _, s := range spans {
		names[s.Name] = true
	}
	for _, want := range []string{"invoke_agent " + agentName, "chat scripted-model"} {
		if !names[want] {
			t.Errorf("Jaeger lacks span %q; has %v", want, names)
		}
	}
}
