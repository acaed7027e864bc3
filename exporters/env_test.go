package exporters_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/internal/otlpjson"
)

func TestFromEnvSelects(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    []exporters.Backend // "{DIR}" in a target is the working directory
		wantErr error
	}{
		{
			name: "nothing named: the default file",
			want: []exporters.Backend{{Name: "file", Target: "{DIR}/.harnessx/traces.jsonl"}},
		},
		{
			name: "OTLP base endpoint",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/"},
			want: []exporters.Backend{{Name: "otlp", Target: "http://127.0.0.1:4318/v1/traces"}},
		},
		{
			name: "OTLP traces endpoint wins and is used as is",
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:9999/custom"},
			want: []exporters.Backend{{Name: "otlp", Target: "http://127.0.0.1:9999/custom"}},
		},
		{
			name: "OTLP, LangSmith and a file at once",
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
				"LANGSMITH_API_KEY": "k", "HARNESSX_TRACES_FILE": "out/t.jsonl"},
			want: []exporters.Backend{
				{Name: "otlp", Target: "http://127.0.0.1:4318/v1/traces"},
				{Name: "langsmith", Target: "https://api.smith.langchain.com/otel/v1/traces"},
				{Name: "file", Target: "{DIR}/out/t.jsonl"},
			},
		},
		{
			name: "LangSmith endpoint",
			env:  map[string]string{"LANGSMITH_API_KEY": "k", "LANGSMITH_ENDPOINT": "https://eu.api.smith.langchain.com"},
			want: []exporters.Backend{{Name: "langsmith", Target: "https://eu.api.smith.langchain.com/otel/v1/traces"}},
		},
		{
			name: "OTEL_TRACES_EXPORTER chooses",
			env:  map[string]string{"OTEL_TRACES_EXPORTER": " console , file,console", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
			want: []exporters.Backend{{Name: "stdout", Target: "stdout"}, {Name: "file", Target: "{DIR}/.harnessx/traces.jsonl"}},
		},
		{
			name: "OTEL_TRACES_EXPORTER none",
			env:  map[string]string{"OTEL_TRACES_EXPORTER": "none"},
			want: []exporters.Backend{},
		},
		{
			name:    "OTEL_TRACES_EXPORTER unknown",
			env:     map[string]string{"OTEL_TRACES_EXPORTER": "otlp,zipkin"},
			wantErr: exporters.ErrUnknownExporter,
		},
		{
			name:    "langsmith named without a key",
			env:     map[string]string{"OTEL_TRACES_EXPORTER": "langsmith"},
			wantErr: exporters.ErrNoAPIKey,
		},
		{
			name:    "bad endpoint",
			env:     map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"},
			wantErr: exporters.ErrInvalidEndpoint,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			dir := t.TempDir()
			t.Chdir(dir)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			ctx := context.Background()
			tp, err := exporters.FromEnv(ctx)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer tp.Shutdown(ctx)
			wd, _ := os.Getwd() // the temporary directory, symlinks resolved as Abs sees them
			got := tp.Backends()
			if len(got) != len(tt.want) {
				t.Fatalf("backends %+v, want %+v", got, tt.want)
			}
			for i, w := range tt.want {
				if w.Name == "file" {
					w.Target = filepath.Join(wd, w.Target[len("{DIR}/"):])
				}
				if got[i] != w {
					t.Errorf("backend %d = %+v, want %+v", i, got[i], w)
				}
			}
		})
	}
}

// TestFromEnvFansOut sends one run to an OTLP receiver and a file at
// once, named by the environment, and checks both got every span.
func TestFromEnvFansOut(t *testing.T) {
	clearEnv(t)
	recv := newOTLPReceiver(t)
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.srv.URL)
	t.Setenv("HARNESSX_TRACES_FILE", path)
	t.Setenv("OTEL_SERVICE_NAME", "fan-out")
	var stdout bytes.Buffer
	ctx := context.Background()
	tp, err := exporters.FromEnv(ctx, exporters.WithStdoutWriter(&stdout))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tp.Backends()); n != 3 {
		t.Fatalf("backends %+v, want otlp, file and stdout", tp.Backends())
	}
	run(t, newTracedAgent(t, tp))
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	paths, _, reqs, errs := recv.snapshot()
	if len(errs) > 0 || len(paths) == 0 || paths[0] != "/v1/traces" {
		t.Fatalf("receiver: paths %v, errors %v", paths, errs)
	}
	fromFile, err := otlpjson.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, spans := range map[string]int{"otlp": len(allSpans(reqs...)), "file": len(allSpans(fromFile...)),
		"stdout": bytes.Count(stdout.Bytes(), []byte(`"SpanContext"`))} {
		if spans != spansPerRun {
			t.Errorf("%s got %d spans, want %d", name, spans, spansPerRun)
		}
	}
	for _, r := range append(reqs, fromFile...) {
		for _, kv := range r.GetResourceSpans()[0].GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" && kv.GetValue().GetStringValue() != "fan-out" {
				t.Errorf("service.name %q, want OTEL_SERVICE_NAME's fan-out", kv.GetValue().GetStringValue())
			}
		}
	}
	st := tp.Stats()
	if len(st.Backends) != 3 || st.Exported != 3*spansPerRun || st.Lost() != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestServiceNameOptionWins(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_SERVICE_NAME", "from-env")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
	var buf bytes.Buffer
	ctx := context.Background()
	tp, err := exporters.NewFile(ctx, exporters.WithFileWriter(&buf), exporters.WithServiceName("from-option"))
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer("t").Start(ctx, "s")
	span.End()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	req, err := otlpjson.Unmarshal(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range req.GetResourceSpans()[0].GetResource().GetAttributes() {
		got[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	if got["service.name"] != "from-option" || got["deployment.environment"] != "test" {
		t.Errorf("resource %v: want service.name from the option and OTEL_RESOURCE_ATTRIBUTES kept", got)
	}
}

func TestTracesFile(t *testing.T) {
	tests := []struct {
		name, env string
		opts      []exporters.Option
		want      string
	}{
		{"default", "", nil, ".harnessx/traces.jsonl"},
		{"environment", "/var/tmp/t.jsonl", nil, "/var/tmp/t.jsonl"},
		{"option wins", "/var/tmp/t.jsonl", []exporters.Option{exporters.WithFile("x.jsonl")}, "x.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HARNESSX_TRACES_FILE", tt.env)
			if got := exporters.TracesFile(tt.opts...); got != tt.want {
				t.Errorf("TracesFile() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestOTLPHeadersAndStdout checks WithHeaders on the OTLP backend and
// NewStdout's pretty output.
func TestOTLPHeadersAndStdout(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "from-env=1")
	ctx := context.Background()
	recv := newOTLPReceiver(t)
	otlp, err := exporters.NewOTLP(ctx, exporters.WithEndpointURL(recv.srv.URL+"/custom/path"),
		exporters.WithHeaders(map[string]string{"Authorization": "Bearer t0k"}))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	stdout, err := exporters.NewStdout(ctx, exporters.WithStdoutWriter(&out), exporters.WithPrettyPrint())
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range []*exporters.Provider{otlp, stdout} {
		_, span := tp.Tracer("t").Start(ctx, "hello")
		span.End()
		if err := tp.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	paths, headers, reqs, _ := recv.snapshot()
	if len(paths) != 1 || paths[0] != "/custom/path" || len(allSpans(reqs...)) != 1 {
		t.Fatalf("receiver got paths %v, %d spans", paths, len(allSpans(reqs...)))
	}
	if got := headers[0].Get("Authorization"); got != "Bearer t0k" {
		t.Errorf("Authorization %q", got)
	}
	if got := headers[0].Get("from-env"); got != "" {
		t.Errorf("WithHeaders should replace OTEL_EXPORTER_OTLP_HEADERS, got from-env=%q", got)
	}
	if !bytes.Contains(out.Bytes(), []byte("\n\t\"Name\": \"hello\"")) {
		t.Errorf("stdout output is not the pretty span:\n%s", out.String())
	}
}

// TestFromEnvAnnounces checks that FromEnv says once, at startup, where
// the spans go and how to view the default file.
func TestFromEnvAnnounces(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []string // substrings of the log, in order
	}{
		{"the default file", nil, []string{
			`level=INFO msg="exporters: spans go to a local file" file={DIR}/.harnessx/traces.jsonl`,
			`view="flightrec runs --traces {DIR}/.harnessx/traces.jsonl; flightrec ui --traces {DIR}/.harnessx/traces.jsonl"`,
			`install="in a clone of github.com/harnessx/harnessx: go install ./cmd/flightrec"`,
		}},
		{"an OTLP endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, []string{
			`msg="exporters: spans go to an OTLP/HTTP endpoint" url=http://127.0.0.1:4318/v1/traces`,
		}},
		{"none", map[string]string{"OTEL_TRACES_EXPORTER": "none"}, []string{
			`msg="exporters: spans are discarded (OTEL_TRACES_EXPORTER=none)"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			t.Chdir(t.TempDir())
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			wd, _ := os.Getwd()
			var log bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&log, nil))
			ctx := context.Background()
			tp, err := exporters.FromEnv(ctx, exporters.WithLogger(logger))
			if err != nil {
				t.Fatal(err)
			}
			defer tp.Shutdown(ctx)
			got := log.String()
			if n := strings.Count(got, "\n"); n != len(tp.Backends()) && !(n == 1 && len(tp.Backends()) == 0) {
				t.Errorf("%d log lines for %d backends:\n%s", n, len(tp.Backends()), got)
			}
			rest := got
			for _, w := range tt.want {
				w = strings.ReplaceAll(w, "{DIR}", wd)
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("log lacks %q:\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

// TestRegisterSpanProcessor checks that a processor registered on the
// provider (the flight recorder's, say) sees the spans, and stops seeing
// them once unregistered.
func TestRegisterSpanProcessor(t *testing.T) {
	clearEnv(t)
	ctx := context.Background()
	tp, err := exporters.FromEnv(ctx, exporters.WithFileWriter(io.Discard), exporters.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Shutdown(ctx)
	sr := tracetest.NewSpanRecorder()
	tp.RegisterSpanProcessor(sr)
	_, s := tp.Tracer("t").Start(ctx, "seen")
	s.End()
	tp.UnregisterSpanProcessor(sr)
	_, s = tp.Tracer("t").Start(ctx, "unseen")
	s.End()
	var names []string
	for _, s := range sr.Ended() {
		names = append(names, s.Name())
	}
	if strings.Join(names, ",") != "seen" {
		t.Errorf("the processor saw %v, want [seen]", names)
	}
}
