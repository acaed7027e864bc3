package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/internal/otlpjson"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

func intVal(n int64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: n}}
}

func kv(k string, v *commonpb.AnyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: v}
}

// traceLine returns one trace-file line holding a run of agent with a
// chat, a tool call and a failed chat, at offset ms from t0.
func traceLine(t *testing.T, traceID, runID, agent string, ms int) []byte {
	t.Helper()
	at := func(d int) time.Time { return t0.Add(time.Duration(ms+d) * time.Millisecond) }
	root := span(traceID, "0102030405060708", "", "invoke_agent "+agent, at(0), at(402))
	root.Attributes = []*commonpb.KeyValue{kv("gen_ai.operation.name", strVal("invoke_agent")), kv("gen_ai.agent.name", strVal(agent)),
		kv("harnessx.run.id", strVal(runID)), kv("harnessx.run.status", strVal("failed")), kv("error.type", strVal("*harness.ProviderError")),
		kv("gen_ai.usage.input_tokens", intVal(500)), kv("gen_ai.usage.output_tokens", intVal(30)),
		kv("gen_ai.usage.cache_read.input_tokens", intVal(280))}
	root.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "upstream overloaded"}
	chat := span(traceID, "1112131415161718", "0102030405060708", "chat m1", at(1), at(100))
	chat.Attributes = []*commonpb.KeyValue{kv("gen_ai.operation.name", strVal("chat")),
		kv("gen_ai.usage.input_tokens", intVal(500)), kv("gen_ai.usage.output_tokens", intVal(30)),
		kv("harnessx.cost.usd", &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 0.0041199999999999995}}),
		kv("gen_ai.usage.cache_read.input_tokens", intVal(280))}
	tool := span(traceID, "2122232425262728", "0102030405060708", "execute_tool fetch_config", at(101), at(150))
	tool.Attributes = []*commonpb.KeyValue{kv("gen_ai.operation.name", strVal("execute_tool")), kv("harnessx.tool.status", strVal("ok"))}
	fail := span(traceID, "3132333435363738", "0102030405060708", "chat m1", at(151), at(400))
	fail.Attributes = []*commonpb.KeyValue{kv("gen_ai.operation.name", strVal("chat")), kv("error.type", strVal("*harness.ProviderError")),
		kv("harnessx.prefix_key.changed", &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{
			Values: []*commonpb.AnyValue{strVal("tools")}}}})}
	fail.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "upstream overloaded"}
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", strVal(agent))}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{chat, tool, fail, root}}},
	}}}
	line, err := otlpjson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return append(line, '\n')
}

// traceFixture writes a trace file with two runs.
func traceFixture(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "traces.jsonl")
	data := append(traceLine(t, "0102030405060708090a0b0c0d0e0f10", "run-a2", "billing", 0),
		traceLine(t, "a1a2a3a4a5a6a7a8a9aaabacadaeafb0", "run-c1", "support", 60_000)...)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestViewGolden(t *testing.T) {
	root := fixture(t)
	traces := traceFixture(t)
	dir := filepath.Dir(traces)
	tests := []struct {
		name string
		args []string
	}{
		{"runs", []string{"runs", "--traces", traces, "--dir", root}},
		{"runs_n1", []string{"runs", "--traces", traces, "--dir", root, "-n", "1"}},
		{"runs_none", []string{"runs", "--traces", filepath.Join(dir, "none.jsonl"), "--dir", filepath.Join(dir, "none")}},
		{"trace_last", []string{"trace", "--traces", traces, "--dir", root}},
		{"trace_run", []string{"trace", "--traces", traces, "--dir", root, "run-a2"}},
		{"trace_trace_id", []string{"trace", "--traces", traces, "--dir", root, "a1a2a3a4a5a6a7a8a9aaabacadaeafb0"}},
		{"trace_unknown", []string{"trace", "--traces", traces, "--dir", root, "nope"}},
		{"usage_trace_id_and_follow", []string{"trace", "--follow", "run-a2"}},
		{"usage_trace_two_ids", []string{"trace", "a", "b"}},
		{"ui_refuses_any", []string{"ui", "--addr", "0.0.0.0:0"}},
		{"ui_refuses_empty_host", []string{"ui", "--addr", ":7318"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(tt.args...)
			got := normalize(normalize(transcript(r, tt.args), root), dir)
			golden(t, tt.name, got)
		})
	}
}

func TestUIServes(t *testing.T) {
	traces := traceFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	a := newApp(ctx, &out, &errb)
	urls := make(chan string, 1)
	a.serving = func(u string) { urls <- u }
	done := make(chan error, 1)
	go func() {
		done <- a.run([]string{"ui", "--addr", "127.0.0.1:0", "--traces", traces, "--dir", t.TempDir()})
	}()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("ui ended: %v", err)
	}
	res, err := http.Get(url + "api/runs")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"id":"run-a2"`) {
		t.Errorf("%d %s", res.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "serving the runs of ") || !strings.Contains(out.String(), url) {
		t.Errorf("stdout %q", out.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestTraceFollow(t *testing.T) {
	traces := traceFixture(t) // two runs there before: not printed
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	a := newApp(ctx, &out, &errb)
	a.pollInterval = 5 * time.Millisecond
	done := make(chan error, 1)
	go func() { done <- a.run([]string{"trace", "--follow", "--traces", traces, "--dir", t.TempDir()}) }()
	time.Sleep(50 * time.Millisecond)
	f, err := os.OpenFile(traces, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	line := traceLine(t, "c1c2c3c4c5c6c7c8c9cacbcccdcecfd0", "run-new", "newcomer", 120_000)
	f.Write(line[:40]) // a writer in the middle of a line
	time.Sleep(30 * time.Millisecond)
	f.Write(line[40:])
	f.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "run run-new") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.HasPrefix(got, "run run-new  trace c1c2c3c4c5c6c7c8c9cacbcccdcecfd0  error") || strings.Contains(got, "run-a2") ||
		!strings.Contains(got, "└── chat m1") {
		t.Errorf("stdout:\n%s", got)
	}
	if !strings.Contains(errb.String(), "following "+traces) {
		t.Errorf("stderr %q", errb.String())
	}
}

func TestHelpExitsZero(t *testing.T) {
	for _, cmd := range []string{"list", "export", "show", "verify", "push", "runs", "trace", "ui"} {
		for _, h := range []string{"-h", "--help"} {
			r := runCmd(cmd, h)
			if r.err != nil || !strings.HasPrefix(r.stdout, "usage: flightrec "+cmd+" [flags]") || r.stderr != "" {
				t.Errorf("%s %s: err %v stdout %q stderr %q", cmd, h, r.err, r.stdout, r.stderr)
			}
		}
	}
}

func TestExportProgress(t *testing.T) {
	root := fixture(t)
	var out, errb bytes.Buffer
	a := newApp(context.Background(), &out, &errb)
	a.progressDelay = -1 // an export past the delay, without waiting a second
	p := filepath.Join(t.TempDir(), "b.tar.gz")
	start := time.Now()
	if err := a.run([]string{"export", "--dir", root, "--recording", "alpha", "-o", p}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	// Lines (stderr is no terminal) of all bytes and events, a rate only
	// past a tenth of a second. A loaded machine may take longer than
	// that, and print a line more.
	got := errb.String()
	if !strings.HasPrefix(got, "exporting alpha: 3.6 KiB of 3.6 KiB (100%), 13 of 13 events, ") || strings.Count(got, "\n") < 1 {
		t.Errorf("progress %q", got)
	}
	if took < 100*time.Millisecond && (strings.Contains(got, "/s") || strings.Count(got, "\n") != 1) {
		t.Errorf("an export of %v: one line without a rate expected: %q", took, got)
	}
	// Under the default delay, a fast export shows nothing.
	errb.Reset()
	a.progressDelay = time.Second
	if err := a.run([]string{"export", "--dir", root, "--recording", "alpha", "-o", p}); err != nil {
		t.Fatal(err)
	}
	if errb.Len() != 0 {
		t.Errorf("progress of a fast export: %q", errb.String())
	}
}

// exportFixtureBundle exports the whole alpha recording.
func exportFixtureBundle(t *testing.T) string {
	t.Helper()
	root := fixture(t)
	p := filepath.Join(t.TempDir(), "b.tar.gz")
	if r := runCmd("export", "--dir", root, "--recording", "alpha", "-o", p); r.err != nil {
		t.Fatal(r.err)
	}
	return p
}

// TestPushDefaultEndpoint: without --endpoint or environment, push sends
// plain HTTP to localhost:4318, as documented (it used to try TLS).
func TestPushDefaultEndpoint(t *testing.T) {
	p := exportFixtureBundle(t)
	ln, err := net.Listen("tcp", "127.0.0.1:4318")
	if err != nil {
		t.Skipf("port 4318 is taken: %v", err)
	}
	got := make(chan string, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.URL.Path:
		default:
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	})}
	go srv.Serve(ln)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	// localhost may resolve to ::1 first; only 127.0.0.1 listens.
	r := runCmd("push", "--timeout", "5s", p)
	if r.err != nil {
		t.Fatalf("%v", r.err)
	}
	if path := <-got; path != "/v1/traces" || r.stdout != "pushed 2 spans to http://localhost:4318/v1/traces\n" {
		t.Errorf("path %s stdout %q", path, r.stdout)
	}
}

// freePort returns a loopback port that nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestPushRetriesUntilTimeout(t *testing.T) {
	p := exportFixtureBundle(t)

	t.Run("backend starts late", func(t *testing.T) {
		addr := freePort(t)
		served := make(chan struct{})
		srvDone := make(chan struct{})
		var srv *http.Server
		var mu sync.Mutex
		stopped := false
		go func() {
			defer close(srvDone)
			time.Sleep(300 * time.Millisecond)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("listen again on %s: %v", addr, err)
				return
			}
			mu.Lock()
			if stopped {
				mu.Unlock()
				ln.Close()
				return
			}
			srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/x-protobuf")
				select {
				case <-served:
				default:
					close(served)
				}
			})}
			mu.Unlock()
			srv.Serve(ln)
		}()
		defer func() {
			mu.Lock()
			stopped = true
			if srv != nil {
				srv.Close()
			}
			mu.Unlock()
			<-srvDone
		}()
		start := time.Now()
		r := runCmd("push", "--endpoint", "http://"+addr, "--timeout", "10s", p)
		if r.err != nil {
			t.Fatalf("push failed: %v", r.err)
		}
		select {
		case <-served:
		default:
			t.Error("nothing reached the backend")
		}
		if el := time.Since(start); el < 250*time.Millisecond {
			t.Errorf("succeeded after %s, before the backend listened", el)
		}
	})

	t.Run("nothing listens", func(t *testing.T) {
		addr := freePort(t)
		start := time.Now()
		r := runCmd("push", "--endpoint", "http://"+addr, "--timeout", "1s", p)
		el := time.Since(start)
		if r.err == nil {
			t.Fatal("push succeeded")
		}
		msg := r.err.Error()
		if !strings.HasPrefix(msg, "flightrec: push: http://"+addr+"/v1/traces: no success within --timeout 1s (") ||
			!strings.Contains(msg, "connection refused") {
			t.Errorf("message %q", msg)
		}
		if el < 700*time.Millisecond || el > 5*time.Second {
			t.Errorf("gave up after %s, want about the 1s timeout", el)
		}
		var ue *usageError
		if errors.As(r.err, &ue) {
			t.Error("a usage error")
		}
	})
}

func TestListKilledRunTokens(t *testing.T) {
	root := t.TempDir()
	evs := []flight.Event{
		{Seq: 1, Kind: flight.KindRunStart, Time: t0, RunID: "k1"},
		{Seq: 2, Kind: flight.KindModelResponse, Time: t0.Add(time.Millisecond), RunID: "k1", Step: 1, InputTokens: 120, OutputTokens: 7},
		{Seq: 3, Kind: flight.KindModelResponse, Time: t0.Add(2 * time.Millisecond), RunID: "k1", Step: 2, InputTokens: 200, OutputTokens: 9},
	}
	writeRecording(t, filepath.Join(root, "killed"), "a", evs, "")
	r := runCmd("list", "--dir", root)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !strings.Contains(r.stdout, "  k1   running  3       2026-11-30T12:00:00.000Z  2ms       0      320/16         0\n") {
		t.Errorf("list:\n%s", r.stdout)
	}
}
