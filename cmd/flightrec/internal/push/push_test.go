package push

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"syscall"
	"testing"
)

func TestResolve(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	tests := []struct {
		name      string
		endpoint  string
		langsmith bool
		getenv    func(string) string
		want      Target
		err       error
		anyErr    bool
	}{
		{name: "default", getenv: env(), want: Target{URL: "http://localhost:4318/v1/traces", Display: "http://localhost:4318/v1/traces"}},
		{name: "otlp env", getenv: env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
			want: Target{URL: "http://collector:4318/v1/traces", Display: "http://collector:4318/v1/traces"}},
		{name: "traces env", getenv: env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318/custom"),
			want: Target{URL: "http://c:4318/custom", Display: "http://c:4318/custom"}},
		{name: "flag without path", endpoint: "http://127.0.0.1:4318", getenv: env(),
			want: Target{URL: "http://127.0.0.1:4318/v1/traces", Display: "http://127.0.0.1:4318/v1/traces"}},
		{name: "flag with path", endpoint: "https://otel.example.com/api/traces", getenv: env(),
			want: Target{URL: "https://otel.example.com/api/traces", Display: "https://otel.example.com/api/traces"}},
		{name: "bad flag", endpoint: "localhost:4318", getenv: env(), anyErr: true},
		{name: "langsmith default", langsmith: true, getenv: env("LANGSMITH_API_KEY", "k"),
			want: Target{URL: "https://api.smith.langchain.com/otel/v1/traces", Display: "https://api.smith.langchain.com/otel/v1/traces",
				Headers: map[string]string{"x-api-key": "k"}}},
		{name: "langsmith endpoint and project", langsmith: true,
			getenv: env("LANGSMITH_API_KEY", "k", "LANGSMITH_ENDPOINT", "https://eu.api.smith.langchain.com/", "LANGSMITH_PROJECT", "p"),
			want: Target{URL: "https://eu.api.smith.langchain.com/otel/v1/traces", Display: "https://eu.api.smith.langchain.com/otel/v1/traces",
				Headers: map[string]string{"x-api-key": "k", "Langsmith-Project": "p"}}},
		{name: "langsmith without key", langsmith: true, getenv: env(), err: ErrNoAPIKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(tt.endpoint, tt.langsmith, tt.getenv)
			switch {
			case tt.err != nil || tt.anyErr:
				if err == nil || (tt.err != nil && !errors.Is(err, tt.err)) {
					t.Fatalf("err %v, want %v", err, tt.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestCause(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("failed to send: %w", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), "connection refused"},
		{fmt.Errorf("post: %w", io.ErrUnexpectedEOF), "connection reset"},
		{fmt.Errorf("post: %w", context.DeadlineExceeded), "no answer"},
		{errors.New("failed to send to http://127.0.0.1:1/v1/traces: 503 Service Unavailable"), "HTTP 503"},
		{errors.New("something else"), "something else"},
	} {
		if got := Cause(tt.err); got != tt.want {
			t.Errorf("Cause(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
