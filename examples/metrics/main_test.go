package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func setEnv(t *testing.T, endpoint string) string {
	file := filepath.Join(t.TempDir(), "metrics.jsonl")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "")
	t.Setenv("OTEL_METRICS_EXPORTER", "")
	t.Setenv("HARNESSX_PRICES", "")
	t.Setenv("HARNESSX_METRICS_FILE", file)
	return file
}

func TestRunToFileAndOTLP(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/v1/metrics" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			posts.Add(1)
		}
	}))
	defer srv.Close()
	file := setEnv(t, srv.URL)
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"metrics go to otlp: " + srv.URL + "/v1/metrics", "metrics go to file: " + file,
		"gen_ai.token.type=input        6 requests,  27600", "harnessx.token.type=cache_read   5 requests,  24576",
		"harnessx.client.cost", "harnessx.run.status=completed   3,"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if posts.Load() == 0 {
		t.Error("the OTLP receiver got no metrics")
	}
	data, err := os.ReadFile(file)
	if err != nil || !bytes.Contains(data, []byte(`"gen_ai.client.token.usage"`)) {
		t.Errorf("file: %v %.200s", err, data)
	}
}

func TestRunCollectorAway(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	setEnv(t, closed)
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "the OTLP collector did not take the metrics") {
		t.Errorf("output:\n%s", out.String())
	}
}
