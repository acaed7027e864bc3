package exporters_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/harnessx/harnessx/exporters"
)

// otlpReceiver is a loopback OTLP/HTTP receiver that decodes protobuf
// export requests and records them with their paths and headers.
type otlpReceiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	paths   []string
	headers []http.Header
	reqs    []*coltracepb.ExportTraceServiceRequest
	errs    []error
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		msg := &coltracepb.ExportTraceServiceRequest{}
		if err == nil {
			if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
				err = errors.New("content type " + ct)
			} else {
				err = proto.Unmarshal(body, msg)
			}
		}
		r.mu.Lock()
		r.paths = append(r.paths, req.URL.Path)
		r.headers = append(r.headers, req.Header.Clone())
		if err != nil {
			r.errs = append(r.errs, err)
		} else {
			r.reqs = append(r.reqs, msg)
		}
		r.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *otlpReceiver) snapshot() (paths []string, headers []http.Header, reqs []*coltracepb.ExportTraceServiceRequest, errs []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.paths...), append([]http.Header(nil), r.headers...),
		append([]*coltracepb.ExportTraceServiceRequest(nil), r.reqs...), append([]error(nil), r.errs...)
}

// clearEnv empties the variables the builders read, so that the
// machine's environment cannot change a test.
func clearEnv(t *testing.T) {
	for _, k := range []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
		"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_EXPORTER", "OTEL_TRACES_SAMPLER",
		"LANGSMITH_API_KEY", "LANGSMITH_PROJECT", "LANGSMITH_ENDPOINT",
		"HARNESSX_TRACES_FILE",
	} {
		t.Setenv(k, "")
	}
}

func TestLangSmith(t *testing.T) {
	tests := []struct {
		name        string
		env         map[string]string // {URL} in a value is the receiver's URL
		opts        func(url string) []exporters.Option
		wantKey     string
		wantProject string // "" means no Langsmith-Project header
	}{
		{
			name: "options",
			opts: func(url string) []exporters.Option {
				return []exporters.Option{exporters.WithLangSmithEndpoint(url), exporters.WithAPIKey("lsv2_opt"), exporters.WithProject("agents")}
			},
			wantKey: "lsv2_opt", wantProject: "agents",
		},
		{
			name:    "environment",
			env:     map[string]string{"LANGSMITH_ENDPOINT": "{URL}/", "LANGSMITH_API_KEY": "lsv2_env", "LANGSMITH_PROJECT": "from-env"},
			wantKey: "lsv2_env", wantProject: "from-env",
		},
		{
			name: "options override environment; no project",
			env:  map[string]string{"LANGSMITH_ENDPOINT": "http://127.0.0.1:1", "LANGSMITH_API_KEY": "lsv2_env"},
			opts: func(url string) []exporters.Option {
				return []exporters.Option{exporters.WithLangSmithEndpoint(url), exporters.WithAPIKey("lsv2_opt")}
			},
			wantKey: "lsv2_opt",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			recv := newOTLPReceiver(t)
			for k, v := range tt.env {
				if v == "{URL}/" {
					v = recv.srv.URL + "/"
				}
				t.Setenv(k, v)
			}
			var opts []exporters.Option
			if tt.opts != nil {
				opts = tt.opts(recv.srv.URL)
			}
			ctx := context.Background()
			tp, err := exporters.NewLangSmith(ctx, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := tp.Backends()[0].Target, recv.srv.URL+"/otel/v1/traces"; got != want {
				t.Errorf("target %q, want %q", got, want)
			}
			run(t, newTracedAgent(t, tp))
			if err := tp.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			paths, headers, reqs, errs := recv.snapshot()
			if len(errs) > 0 {
				t.Fatalf("receiver errors: %v", errs)
			}
			if len(paths) == 0 {
				t.Fatal("LangSmith received nothing")
			}
			for i, p := range paths {
				if p != "/otel/v1/traces" {
					t.Errorf("path %q, want /otel/v1/traces", p)
				}
				h := headers[i]
				if got := h.Get("x-api-key"); got != tt.wantKey {
					t.Errorf("x-api-key %q, want %q", got, tt.wantKey)
				}
				if got, ok := h["Langsmith-Project"]; tt.wantProject == "" && ok {
					t.Errorf("Langsmith-Project %q sent without a project", got)
				} else if got := h.Get("Langsmith-Project"); got != tt.wantProject {
					t.Errorf("Langsmith-Project %q, want %q", got, tt.wantProject)
				}
			}
			checkLangSmithSpans(t, allSpans(reqs...))
			if st := tp.Stats(); st.Exported != spansPerRun || st.Lost() != 0 {
				t.Errorf("stats %+v, want %d exported and none lost", st, spansPerRun)
			}
		})
	}
}

// checkLangSmithSpans checks the keys LangSmith needs on the spans of one
// newTracedAgent run.
func checkLangSmithSpans(t *testing.T, spans []*tracepb.Span) {
	t.Helper()
	if len(spans) != spansPerRun {
		t.Fatalf("%d spans, want %d: %v", len(spans), spansPerRun, spanNames(spans))
	}
	kinds := map[string]int{}
	for _, s := range spans {
		kind, ok := attr(s, "langsmith.span.kind")
		if !ok {
			t.Errorf("span %q has no langsmith.span.kind", s.GetName())
		}
		kinds[kind]++
		if name, _ := attr(s, "langsmith.trace.name"); name != s.GetName() {
			t.Errorf("span %q: langsmith.trace.name %q", s.GetName(), name)
		}
		if kind != "llm" {
			continue
		}
		for _, k := range []string{"langsmith.metadata.ls_model_name", "langsmith.metadata.ls_provider", "langsmith.usage_metadata", "langsmith.metadata.prefix_key"} {
			if v, ok := attr(s, k); !ok || v == "" {
				t.Errorf("chat span %q: %s missing", s.GetName(), k)
			}
		}
		if p, _ := attr(s, "langsmith.metadata.ls_provider"); p != "scripted" {
			t.Errorf("chat span %q: ls_provider %q, want scripted", s.GetName(), p)
		}
	}
	if want := map[string]int{"chain": 2, "llm": 3, "tool": 2}; !mapsEqual(kinds, want) {
		t.Errorf("langsmith.span.kind counts %v, want %v", kinds, want)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestLangSmithNeedsAPIKey(t *testing.T) {
	clearEnv(t)
	_, err := exporters.NewLangSmith(context.Background(), exporters.WithProject("p"))
	if !errors.Is(err, exporters.ErrNoAPIKey) {
		t.Fatalf("err %v, want ErrNoAPIKey", err)
	}
}
