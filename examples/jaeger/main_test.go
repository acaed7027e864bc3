package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func setEnv(t *testing.T, endpoint string) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("HARNESSX_PRICES", "")
}

func TestRun(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
	}))
	defer srv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()

	tests := []struct {
		name     string
		endpoint string
		want     []*regexp.Regexp
	}{
		{"collector up", srv.URL, []*regexp.Regexp{
			regexp.MustCompile(`(?m)^7 spans exported\.$`),
			regexp.MustCompile(`Open http://127\.0\.0\.1:16686/trace/[0-9a-f]{32}\n`),
			regexp.MustCompile(`cache read 2048, cache write 1664\), output 149 \(reasoning 67\)`),
			// claude-sonnet-5-5 at 2/10/0.10/2.50 USD per million tokens:
			// (108+180)x2 + (256+1792)x0.10 + (1536+128)x2.50 + (45+37+40+27)x10.
			regexp.MustCompile(`cost \$0\.006431 for the planner's requests at the prices of \d{4}-\d{2}-\d{2}`),
		}},
		{"nothing listening", closed, []*regexp.Regexp{
			regexp.MustCompile(`0 spans exported, 7 lost: nothing accepted them at ` + regexp.QuoteMeta(closed) + `/v1/traces`),
			// The suggested command must be one that works from the
			// repository root: Jaeger is a tool of tools/go.mod, not go.mod.
			regexp.MustCompile(`(?m)^  OTEL_TRACES_SAMPLER=always_off go tool -modfile=tools/go\.mod jaeger `),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, tt.endpoint)
			var out bytes.Buffer
			start := time.Now()
			if err := run(context.Background(), &out); err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v, want a quick exit", d)
			}
			for _, re := range tt.want {
				if !re.MatchString(out.String()) {
					t.Errorf("output lacks %s:\n%s", re, out.String())
				}
			}
			if !strings.Contains(out.String(), `as service "harnessx-example"`) {
				t.Errorf("output does not name the service:\n%s", out.String())
			}
		})
	}
	if posts.Load() == 0 {
		t.Error("the collector received nothing")
	}
}
