package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/harnessx/harnessx/internal/otlpjson"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const wantSpans = 8 // 2 agents, 4 chats, execute_tool writer, execute_tool lookup_notes

func clearEnv(t *testing.T) {
	for _, k := range []string{"LANGSMITH_API_KEY", "LANGSMITH_PROJECT", "LANGSMITH_ENDPOINT", "HARNESSX_TRACES_FILE",
		"OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		t.Setenv(k, "")
	}
}

func TestRunWithoutKeyWritesFile(t *testing.T) {
	clearEnv(t)
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	t.Setenv("HARNESSX_TRACES_FILE", path)
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "LANGSMITH_API_KEY is not set: writing spans to "+path) {
		t.Errorf("output does not say where the spans went:\n%s", out.String())
	}
	reqs, err := otlpjson.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checkSpans(t, reqs)
}

func TestRunWithKeySendsToLangSmith(t *testing.T) {
	clearEnv(t)
	var (
		mu      sync.Mutex
		reqs    []*coltracepb.ExportTraceServiceRequest
		headers []http.Header
		paths   []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		msg := &coltracepb.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(body, msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		reqs, headers, paths = append(reqs, msg), append(headers, r.Header.Clone()), append(paths, r.URL.Path)
		mu.Unlock()
	}))
	defer srv.Close()
	t.Setenv("LANGSMITH_API_KEY", "lsv2_test")
	t.Setenv("LANGSMITH_PROJECT", "example-project")
	t.Setenv("LANGSMITH_ENDPOINT", srv.URL)
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `tracing to LangSmith at `+srv.URL+`/otel/v1/traces, project "example-project"`) {
		t.Errorf("output:\n%s", out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range paths {
		if paths[i] != "/otel/v1/traces" || headers[i].Get("x-api-key") != "lsv2_test" || headers[i].Get("Langsmith-Project") != "example-project" {
			t.Errorf("request %d: path %s, headers %v", i, paths[i], headers[i])
		}
	}
	checkSpans(t, reqs)
}

// checkSpans checks the one tree of the run: the writer's invoke_agent
// under the coordinator's execute_tool writer, and LangSmith's keys.
func checkSpans(t *testing.T, reqs []*coltracepb.ExportTraceServiceRequest) {
	t.Helper()
	var spans []*tracepb.Span
	for _, r := range reqs {
		for _, rs := range r.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				spans = append(spans, ss.GetSpans()...)
			}
		}
	}
	if len(spans) != wantSpans {
		t.Fatalf("%d spans, want %d", len(spans), wantSpans)
	}
	byName := map[string]*tracepb.Span{}
	kinds := map[string]int{}
	for _, s := range spans {
		byName[s.GetName()] = s
		for _, kv := range s.GetAttributes() {
			if kv.GetKey() == "langsmith.span.kind" {
				kinds[kv.GetValue().GetStringValue()]++
			}
		}
		if !bytes.Equal(s.GetTraceId(), spans[0].GetTraceId()) {
			t.Errorf("%s is in another trace", s.GetName())
		}
	}
	if kinds["chain"] != 2 || kinds["llm"] != 4 || kinds["tool"] != 2 {
		t.Errorf("langsmith.span.kind counts %v", kinds)
	}
	child, tool := byName["invoke_agent writer"], byName["execute_tool writer"]
	if child == nil || tool == nil || !bytes.Equal(child.GetParentSpanId(), tool.GetSpanId()) {
		t.Errorf("the writer's run is not under the coordinator's execute_tool writer span")
	}
	if root := byName["invoke_agent coordinator"]; root == nil || len(root.GetParentSpanId()) != 0 {
		t.Errorf("invoke_agent coordinator is not the root")
	}
	checkInvocationParams(t, spans)
}

// checkInvocationParams checks that every chat span lists the invocation
// parameters the agents set: model, max_tokens, temperature, streaming.
func checkInvocationParams(t *testing.T, spans []*tracepb.Span) {
	t.Helper()
	want := map[string]map[string]string{
		"chat claude-sonnet-5-5": {
			"gen_ai.request.model": "claude-sonnet-5-5", "gen_ai.request.max_tokens": "1024",
			"gen_ai.request.temperature": "0.2", "gen_ai.request.stream": "false",
		},
		"chat claude-haiku-5-5": {
			"gen_ai.request.model": "claude-haiku-5-5", "gen_ai.request.max_tokens": "512",
			"gen_ai.request.temperature": "0.7", "gen_ai.request.stream": "false",
		},
	}
	chats := 0
	for _, s := range spans {
		w, ok := want[s.GetName()]
		if !ok {
			continue
		}
		chats++
		got := map[string]string{}
		for _, kv := range s.GetAttributes() {
			if _, ok := w[kv.GetKey()]; ok {
				got[kv.GetKey()] = anyString(kv.GetValue())
			}
		}
		for k, v := range w {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", s.GetName(), k, got[k], v)
			}
		}
	}
	if chats != 4 {
		t.Errorf("%d chat spans with invocation parameters, want 4", chats)
	}
}

// anyString renders an attribute value as the tests spell it.
func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	}
	return v.String()
}
