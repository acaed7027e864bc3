package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/internal/otlpjson"
	"github.com/harnessx/harnessx/internal/otlpspans"
	"github.com/harnessx/harnessx/internal/recording"
	"github.com/harnessx/harnessx/internal/redact"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const fakeSecret = "sk-ant-api03-EXAMPLE0000SECRET"

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fixture writes a recording root with two sessions: "alpha" (a
// completed run, then a failed run) and "beta" (a run cut short by a
// crash, with a torn last line).
func fixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tid := "0102030405060708090a0b0c0d0e0f10"
	alpha := []flight.Event{
		{Kind: flight.KindRunStart, Time: at(0), RunID: "run-a1", Text: "Summarize the report"},
		{Kind: flight.KindModelRequest, Time: at(1), RunID: "run-a1", Step: 1, Model: "m1", Messages: 1},
		{Kind: flight.KindModelResponse, Time: at(100), RunID: "run-a1", Step: 1, Model: "m1", Provider: "scripted", StopReason: "end_turn",
			Duration: 99 * time.Millisecond, InputTokens: 300, OutputTokens: 20},
		{Kind: flight.KindRunEnd, Time: at(101), RunID: "run-a1", Step: 1, Status: "completed", InputTokens: 300, OutputTokens: 20, Text: "All good."},
		{Kind: flight.KindRunStart, Time: at(5000), RunID: "run-a2", Text: "Fetch the billing config"},
		{Kind: flight.KindModelRequest, Time: at(5001), RunID: "run-a2", Step: 1, Model: "m1", Messages: 3},
		{Kind: flight.KindModelResponse, Time: at(5100), RunID: "run-a2", Step: 1, Model: "m1", Provider: "scripted", StopReason: "tool_use",
			Duration: 99 * time.Millisecond, InputTokens: 500, OutputTokens: 30, CacheReadTokens: 280},
		{Kind: flight.KindToolCall, Time: at(5101), RunID: "run-a2", Step: 1, Tool: "fetch_config", CallID: "c1", Text: `{"service":"billing"}`},
		{Kind: flight.KindToolResult, Time: at(5150), RunID: "run-a2", Step: 1, Tool: "fetch_config", CallID: "c1", Status: "ok",
			Duration: 49 * time.Millisecond, Text: "ANTHROPIC_API_KEY=" + fakeSecret},
		{Kind: flight.KindModelRequest, Time: at(5151), RunID: "run-a2", Step: 2, Model: "m1", Messages: 5},
		{Kind: flight.KindModelResponse, Time: at(5400), RunID: "run-a2", Step: 2, Model: "m1", Duration: 249 * time.Millisecond,
			Error: "harness: model request 2 (attempt 1): upstream overloaded", ErrorType: "*harness.ProviderError"},
		{Kind: flight.KindError, Time: at(5401), RunID: "run-a2", Step: 2, Error: "harness: model request 2 (attempt 1): upstream overloaded"},
		{Kind: flight.KindRunEnd, Time: at(5402), RunID: "run-a2", Step: 2, Status: "failed", InputTokens: 500, OutputTokens: 30,
			Error: "harness: model request 2 (attempt 1): upstream overloaded"},
	}
	beta := []flight.Event{
		{Kind: flight.KindRunStart, Time: at(9000), RunID: "run-b1", Text: "Run the migration"},
		{Kind: flight.KindModelRequest, Time: at(9001), RunID: "run-b1", Step: 1, Model: "m2", Messages: 1},
		{Kind: flight.KindModelResponse, Time: at(9050), RunID: "run-b1", Step: 1, Model: "m2", StopReason: "tool_use", Duration: 49 * time.Millisecond,
			InputTokens: 100, OutputTokens: 10},
		{Kind: flight.KindToolCall, Time: at(9051), RunID: "run-b1", Step: 1, Tool: "migrate", CallID: "c9", Text: `{"dry_run":false}`},
	}
	for i := range alpha {
		alpha[i].Seq, alpha[i].Agent, alpha[i].SessionID, alpha[i].TraceID, alpha[i].SpanID = uint64(i+1), "billing", "alpha", tid, "0102030405060708"
	}
	for i := range beta {
		beta[i].Seq, beta[i].Agent, beta[i].SessionID = uint64(i+1), "migrator", "beta"
	}
	writeRecording(t, filepath.Join(root, "alpha"), "billing", alpha, `{"version":1,"session_id":"alpha","messages":[{"role":"user","content":[{"type":"text","text":"key `+fakeSecret+`"}]}]}`)
	writeRecording(t, filepath.Join(root, "beta"), "migrator", beta, "")
	// The crash tore beta's last line.
	segs, _ := recording.Segments(filepath.Join(root, "beta"))
	f, err := os.OpenFile(filepath.Join(root, "beta", segs[len(segs)-1]), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":5,"time":"2026-11-30T12:00:09.1Z","kind":"tool_re`)
	f.Close()
	// Spans of alpha's trace.
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: strVal("billing")}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{
			span(tid, "0102030405060708", "", "invoke_agent billing", at(5000), at(5402)),
			span(tid, "1112131415161718", "0102030405060708", "execute_tool fetch_config", at(5101), at(5150)),
			span("ffffffffffffffffffffffffffffffff", "2122232425262728", "", "other trace", at(0), at(1)),
		}}},
	}}}
	otlpspans.Redact(req, redact.New(nil))
	data, err := otlpjson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "alpha", recording.SpansSnapshot), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func strVal(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}

func span(traceID, spanID, parent, name string, start, end time.Time) *tracepb.Span {
	dec := func(s string) []byte {
		if s == "" {
			return nil
		}
		var b []byte
		fmt.Sscanf(s, "%x", &b)
		return b
	}
	return &tracepb.Span{TraceId: dec(traceID), SpanId: dec(spanID), ParentSpanId: dec(parent), Name: name,
		StartTimeUnixNano: uint64(start.UnixNano()), EndTimeUnixNano: uint64(end.UnixNano()),
		Attributes: []*commonpb.KeyValue{{Key: "http.request.header.authorization", Value: strVal("Bearer abcdefghijk")}}}
}

func writeRecording(t *testing.T, dir, agent string, evs []flight.Event, session string) {
	t.Helper()
	j, err := recording.Open(dir, recording.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		j.Append(append(line, '\n'))
	}
	if err := j.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(recording.Info{Format: "harnessx-flight-recording", Version: 1, Agent: agent, SessionID: filepath.Base(dir), Created: t0})
	if err := os.WriteFile(filepath.Join(dir, recording.InfoName), info, 0o644); err != nil {
		t.Fatal(err)
	}
	if session != "" {
		if err := os.WriteFile(filepath.Join(dir, recording.SessionSnapshot), []byte(session), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type result struct {
	stdout, stderr string
	err            error
}

func runCmd(args ...string) result {
	var out, errb bytes.Buffer
	err := run(&out, &errb, args)
	return result{out.String(), errb.String(), err}
}

var (
	createdText = regexp.MustCompile(`(?m)^created:   .*$`)
	createdJSON = regexp.MustCompile(`"created": "[^"]*"`)
)

// normalize replaces the temporary directory and the bundle creation
// time, which change from run to run.
func normalize(s, root string) string {
	s = strings.ReplaceAll(s, root, "$DIR")
	s = createdText.ReplaceAllString(s, "created:   $$CREATED")
	return createdJSON.ReplaceAllString(s, `"created": "$$CREATED"`)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (run go test -update to accept):\n--- got\n%s\n--- want\n%s", p, got, want)
	}
}

func transcript(r result, args []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "$ flightrec %s\n", strings.Join(args, " "))
	if r.stdout != "" {
		fmt.Fprintf(&b, "--- stdout\n%s", r.stdout)
	}
	if r.stderr != "" {
		fmt.Fprintf(&b, "--- stderr\n%s", r.stderr)
	}
	if r.err != nil {
		var ue *usageError
		code := 1
		if errors.As(r.err, &ue) {
			code = 2
		}
		fmt.Fprintf(&b, "--- error (exit %d)\n%s\n", code, r.err)
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	root := fixture(t)
	out := t.TempDir()
	bundle := filepath.Join(out, "last.tar.gz")
	whole := filepath.Join(out, "alpha.tar.gz")
	tampered := filepath.Join(out, "tampered.tar.gz")
	// ensure makes the show and verify cases independent of the export
	// cases, so that each can run alone.
	ensure := func(p string, args ...string) func(t *testing.T) {
		return func(t *testing.T) {
			if _, err := os.Stat(p); err == nil {
				return
			}
			if r := runCmd(append(args, "-o", p)...); r.err != nil {
				t.Fatal(r.err)
			}
		}
	}
	lastBundle := ensure(bundle, "export", "--dir", root, "--last")
	wholeBundle := ensure(whole, "export", "--dir", root, "--recording", "alpha")
	tests := []struct {
		name string
		args []string
		prep func(t *testing.T)
	}{
		{name: "list", args: []string{"list", "--dir", root}},
		{name: "list_json", args: []string{"list", "--json", "--dir", root}},
		{name: "export_last", args: []string{"export", "--dir", root, "--last", "-o", bundle}},
		{name: "export_run", args: []string{"export", "--dir", root, "--run", "run-a2", "-o", whole}},
		{name: "export_recording", args: []string{"export", "--dir", root, "--recording", "alpha", "-o", whole}},
		{name: "show_crash", args: []string{"show", bundle}, prep: lastBundle},
		{name: "show_failure", args: []string{"show", whole}, prep: wholeBundle},
		{name: "show_json", args: []string{"show", whole, "--json"}, prep: wholeBundle},
		{name: "verify_ok", args: []string{"verify", whole}, prep: wholeBundle},
		{name: "verify_tampered", args: []string{"verify", tampered}, prep: func(t *testing.T) { wholeBundle(t); tamper(t, whole, tampered) }},
		{name: "export_unknown_run", args: []string{"export", "--dir", root, "--run", "nope", "-o", bundle}},
		{name: "events_recording", args: []string{"events", "--dir", root, "--recording", "alpha"}},
		{name: "events_run", args: []string{"events", "--dir", root, "--run", "run-a1"}},
		{name: "events_last", args: []string{"events", "--dir", root, "--last"}},
		{name: "events_unknown_recording", args: []string{"events", "--dir", root, "--recording", "nope"}},
		{name: "usage_events_run_and_last", args: []string{"events", "--run", "x", "--last"}},
		{name: "usage_no_command", args: []string{}},
		{name: "usage_unknown", args: []string{"frobnicate"}},
		{name: "usage_export_no_output", args: []string{"export", "--dir", root, "--last"}},
		{name: "usage_run_and_last", args: []string{"export", "--run", "x", "--last", "-o", bundle}},
		{name: "usage_show_no_file", args: []string{"show"}},
		{name: "show_not_a_bundle", args: []string{"show", filepath.Join(root, "alpha", recording.InfoName)}},
		{name: "show_directory", args: []string{"show", filepath.Join(root, "alpha")}},
		{name: "show_missing_file", args: []string{"show", filepath.Join(out, "missing.tar.gz")}},
		{name: "show_bogus_flag", args: []string{"show", "--bogus", whole}},
		{name: "show_help", args: []string{"show", "-h"}},
		{name: "verify_help", args: []string{"verify", "--help"}},
		{name: "export_missing_dir", args: []string{"export", "--dir", root, "--last", "-o", filepath.Join(out, "no", "such", "b.tar.gz")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.prep != nil {
				tt.prep(t)
			}
			r := runCmd(tt.args...)
			got := transcript(r, tt.args)
			got = normalize(normalize(got, root), out)
			golden(t, tt.name, got)
		})
	}
}

// tamper copies a bundle, changing one byte of events.jsonl.
func tamper(t *testing.T, src, dst string) {
	t.Helper()
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	data := rewriteMember(t, orig, flight.EventsName, func(s string) string {
		i := strings.Index(s, "upstream")
		if i < 0 {
			t.Fatal("nothing to tamper with")
		}
		return s[:i] + "U" + s[i+1:]
	})
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rewriteMember re-packs a tar.gz with one member's content changed.
func rewriteMember(t *testing.T, data []byte, name string, change func(string) string) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		if h.Name == name {
			body = []byte(change(string(body)))
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write(body)
	}
	tw.Close()
	zw.Close()
	return out.Bytes()
}

func TestRedactedExport(t *testing.T) {
	root := fixture(t)
	p := filepath.Join(t.TempDir(), "b.tar.gz")
	if r := runCmd("export", "--dir", root, "--recording", "alpha", "-o", p); r.err != nil {
		t.Fatal(r.err)
	}
	b, err := flight.ReadBundleFile(p, flight.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{flight.EventsName, flight.SpansName, flight.SessionName} {
		data, ok := b.Member(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		if strings.Contains(string(data), fakeSecret) || strings.Contains(string(data), "abcdefghijk") {
			t.Errorf("%s holds a secret", name)
		}
	}
	if b.Manifest.Spans != 2 {
		t.Errorf("spans %d, want the 2 of the recording's trace", b.Manifest.Spans)
	}
}

func TestPush(t *testing.T) {
	root := fixture(t)
	p := filepath.Join(t.TempDir(), "b.tar.gz")
	if r := runCmd("export", "--dir", root, "--recording", "alpha", "-o", p); r.err != nil {
		t.Fatal(r.err)
	}
	type got struct {
		path    string
		headers http.Header
		names   []string
	}
	var mu sync.Mutex
	var reqs []got
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		g := got{path: r.URL.Path, headers: r.Header.Clone()}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					g.names = append(g.names, s.Name)
				}
			}
		}
		mu.Lock()
		reqs = append(reqs, g)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(nil)
	}))
	defer srv.Close()

	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		path     string
		headers  map[string]string
		wantOut  string
		usageErr bool
	}{
		{name: "endpoint flag", args: []string{"push", "--endpoint", srv.URL, p}, path: "/v1/traces",
			wantOut: "pushed 2 spans to " + srv.URL + "/v1/traces\n"},
		{name: "environment", args: []string{"push", p}, env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL},
			path: "/v1/traces", wantOut: "pushed 2 spans to " + srv.URL + "/v1/traces\n"},
		{name: "langsmith", args: []string{"push", "--langsmith", p},
			env:  map[string]string{"LANGSMITH_ENDPOINT": srv.URL, "LANGSMITH_API_KEY": "ls-test-key", "LANGSMITH_PROJECT": "incidents"},
			path: "/otel/v1/traces", headers: map[string]string{"X-Api-Key": "ls-test-key", "Langsmith-Project": "incidents"},
			wantOut: "pushed 2 spans to " + srv.URL + "/otel/v1/traces\n"},
		{name: "langsmith without key", args: []string{"push", "--langsmith", p}, env: map[string]string{"LANGSMITH_API_KEY": ""}, usageErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			mu.Lock()
			reqs = nil
			mu.Unlock()
			r := runCmd(tt.args...)
			if tt.usageErr {
				var ue *usageError
				if !errors.As(r.err, &ue) {
					t.Fatalf("err %v, want a usage error", r.err)
				}
				return
			}
			if r.err != nil {
				t.Fatalf("%v\n%s", r.err, r.stderr)
			}
			if r.stdout != tt.wantOut {
				t.Errorf("stdout %q, want %q", r.stdout, tt.wantOut)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			g := reqs[0]
			if g.path != tt.path || strings.Join(g.names, ",") != "invoke_agent billing,execute_tool fetch_config" {
				t.Errorf("path %s spans %v", g.path, g.names)
			}
			for k, v := range tt.headers {
				if g.headers.Get(k) != v {
					t.Errorf("header %s = %q, want %q", k, g.headers.Get(k), v)
				}
			}
		})
	}
}

func TestPushRefusesTampered(t *testing.T) {
	root := fixture(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "b.tar.gz")
	if r := runCmd("export", "--dir", root, "--recording", "alpha", "-o", p); r.err != nil {
		t.Fatal(r.err)
	}
	bad := filepath.Join(dir, "bad.tar.gz")
	tamper(t, p, bad)
	r := runCmd("push", "--endpoint", "http://127.0.0.1:1", bad)
	if r.err == nil || !strings.Contains(r.err.Error(), "refusing to push") {
		t.Fatalf("err %v", r.err)
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader in
// different goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPushSaysItWaits pushes to a loopback port where nothing listens and
// to one that accepts connections and never answers: within a second,
// push says on stderr that it is waiting, for which endpoint, why, and
// until when, instead of staying silent until --timeout.
func TestPushSaysItWaits(t *testing.T) {
	root := fixture(t)
	p := filepath.Join(t.TempDir(), "b.tar.gz")
	if r := runCmd("export", "--dir", root, "--recording", "alpha", "-o", p); r.err != nil {
		t.Fatal(r.err)
	}
	// A port with nothing listening: one that was free a moment ago.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := l.Addr().String()
	l.Close()
	// A port that accepts and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	hold := make(chan struct{})
	conns.Add(1)
	go func() {
		defer conns.Done()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				<-hold
				c.Close()
			}()
		}
	}()
	defer func() {
		silent.Close()
		close(hold)
		conns.Wait()
	}()

	for _, tt := range []struct{ name, addr, why string }{
		{"nothing listening", closedAddr, "connection refused"},
		{"never answers", silent.Addr().String(), "still sending after 500ms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var errb lockedBuffer
			a := newApp(ctx, io.Discard, &errb)
			url := "http://" + tt.addr + "/v1/traces"
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- a.run([]string{"push", "--endpoint", url, "--timeout", "20s", p}) }()
			want := "flightrec: push: waiting for " + url + " to take 2 spans: " + tt.why +
				"; retrying until --timeout 20s (interrupt to stop)\n"
			for !strings.Contains(errb.String(), want) {
				if time.Since(start) > time.Second {
					t.Fatalf("after %s stderr is %q, want %q", time.Since(start), errb.String(), want)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if n := strings.Count(errb.String(), "waiting for"); n != 1 {
				t.Errorf("said it waits %d times: %q", n, errb.String())
			}
			cancel() // as an interrupt does
			select {
			case err := <-done:
				if err == nil {
					t.Error("an interrupted push succeeded")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("push did not stop when interrupted")
			}
		})
	}
}
