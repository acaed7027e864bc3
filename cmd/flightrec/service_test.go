package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/internal/otlpjson"
	"github.com/harnessx/harnessx/internal/otlpspans"
	"github.com/harnessx/harnessx/internal/recording"
	"github.com/harnessx/harnessx/internal/redact"
)

// tracedRecording writes a recording of agent "weatherbot" whose events
// carry a trace ID; with service it also writes the span snapshot, whose
// resource says service.name = service.
func tracedRecording(t *testing.T, root, service string) {
	t.Helper()
	tid := "0a0b0c0d0e0f10111213141516171819"
	evs := []flight.Event{
		{Kind: flight.KindRunStart, Time: t0, RunID: "run-w1", Text: "weather?"},
		{Kind: flight.KindRunEnd, Time: t0.Add(10e6), RunID: "run-w1", Status: "failed", Error: "boom"},
	}
	for i := range evs {
		evs[i].Seq, evs[i].Agent, evs[i].SessionID, evs[i].TraceID, evs[i].SpanID = uint64(i+1), "weatherbot", "w", tid, "0102030405060708"
	}
	dir := filepath.Join(root, "w")
	writeRecording(t, dir, "weatherbot", evs, "")
	if service == "" {
		return
	}
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: strVal(service)}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{
			span(tid, "0102030405060708", "", "invoke_agent weatherbot", t0, t0.Add(10e6)),
		}}},
	}}}
	otlpspans.Redact(req, redact.New(nil))
	data, err := otlpjson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, recording.SpansSnapshot), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPushNamesService: spans recorded with the SDK's default resource
// ("unknown_service:…") are pushed under the bundle's service (the agent's
// name), or under --service; a named service is kept.
func TestPushNamesService(t *testing.T) {
	var mu sync.Mutex
	var services []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					services = append(services, kv.GetValue().GetStringValue())
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	tests := []struct {
		name, recorded string
		flags          []string
		want           string
	}{
		{"the SDK default takes the agent's name", "unknown_service:flight", nil, "weatherbot"},
		{"--service wins over the default", "unknown_service:flight", []string{"--service", "ops"}, "ops"},
		{"a named service is kept", "checkout", []string{"--service", "ops"}, "checkout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			tracedRecording(t, root, tt.recorded)
			p := filepath.Join(root, "b.tar.gz")
			if r := runCmd("export", "--dir", root, "-o", p); r.err != nil {
				t.Fatalf("%v %s", r.err, r.stderr)
			}
			mu.Lock()
			services = nil
			mu.Unlock()
			args := append([]string{"push", "--endpoint", srv.URL}, tt.flags...)
			if r := runCmd(append(args, p)...); r.err != nil {
				t.Fatalf("%v %s", r.err, r.stderr)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(services) != 1 || services[0] != tt.want {
				t.Errorf("pushed service.name %v, want %q", services, tt.want)
			}
		})
	}
}

// TestExportSaysWhyNoSpans: an export whose events were traced but which
// holds no span says why on stderr, and push refuses it with the reason.
func TestExportSaysWhyNoSpans(t *testing.T) {
	root := t.TempDir()
	tracedRecording(t, root, "")
	p := filepath.Join(root, "b.tar.gz")
	r := runCmd("export", "--dir", root, "-o", p)
	if r.err != nil {
		t.Fatalf("%v %s", r.err, r.stderr)
	}
	if !strings.Contains(r.stderr, "0 spans: the events carry 1 trace IDs but the recorder kept no span") {
		t.Errorf("stderr %q does not say why there are no spans", r.stderr)
	}
	r = runCmd("push", "--endpoint", "http://127.0.0.1:1", "--timeout", "1ms", p)
	if r.err == nil || !strings.Contains(r.err.Error(), "span processor was not registered") {
		t.Errorf("push: %v", r.err)
	}
}
