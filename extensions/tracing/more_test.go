package tracing_test

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// TestOnlyOTelAPI checks that the library code imports the OTel API and
// never the SDK: the application chooses the SDK.
func TestOnlyOTelAPI(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{"go.opentelemetry.io/otel", "go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/codes",
		"go.opentelemetry.io/otel/trace", "go.opentelemetry.io/otel/semconv/v1.41.0",
		// The metrics API, and the GenAI instruments of the conventions.
		"go.opentelemetry.io/otel/metric", "go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			checked++
			if strings.HasPrefix(p, "go.opentelemetry.io/") && !contains(allowed, p) {
				t.Errorf("%s imports %s; only the OTel API is allowed", f, p)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no imports checked")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestProviderName(t *testing.T) {
	tests := []struct {
		name   string
		namer  bool // the provider implements harness.ProviderNamer
		opts   []tracing.Option
		script []harnesstest.Response
		want   []string // ls_provider of each chat span
	}{
		{"unknown before any response", false, nil, []harnesstest.Response{harnesstest.Fail(errors.New("down"))}, []string{"unknown"}},
		{"option for failed requests", false, []tracing.Option{tracing.WithProviderName("anthropic")},
			[]harnesstest.Response{harnesstest.Fail(errors.New("down"))}, []string{"anthropic"}},
		{"learnt from a response", false, nil,
			[]harnesstest.Response{harnesstest.Reply("ok"), harnesstest.Fail(errors.New("down"))}, []string{"scripted", "scripted"}},
		{"named by the provider before any response", true, []tracing.Option{tracing.WithProviderName("other")},
			[]harnesstest.Response{harnesstest.Fail(errors.New("down"))}, []string{"scripted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, sr := recorderTP(t)
			ext := tracing.New(append([]tracing.Option{tracing.WithTracerProvider(tp)}, tt.opts...)...)
			var popts []harness.Option
			if !tt.namer {
				// A provider that does not implement harness.ProviderNamer.
				sp := harnesstest.NewScriptedProvider(tt.script...)
				popts = append(popts, harness.WithProvider(harness.ProviderFunc(sp.Generate)))
			}
			a := newAgentExt(t, ext, tt.script, popts...)
			for range tt.script {
				_, _ = a.Run(context.Background(), "go")
			}
			chats := byName(spans(sr), "chat m")
			if len(chats) != len(tt.want) {
				t.Fatalf("%d chat spans", len(chats))
			}
			for i, s := range chats {
				if got := str(s, tracing.KeyLangSmithProvider); got != tt.want[i] {
					t.Errorf("span %d ls_provider %q, want %q", i, got, tt.want[i])
				}
				if str(s, semconv.GenAIProviderNameKey) != str(s, tracing.KeyLangSmithProvider) {
					t.Error("gen_ai.provider.name differs from ls_provider")
				}
			}
		})
	}
}

// switchModel changes the model of every request.
type switchModel struct{}

func (switchModel) BeforeModelRequest(_ context.Context, req *harness.ModelRequest) error {
	req.Model = "m-large"
	return nil
}

func TestMiddlewareChangesModel(t *testing.T) {
	tp, sr := recorderTP(t)
	a, _ := newAgent(t, tp, []harnesstest.Response{harnesstest.Reply("ok")}, harness.WithMiddleware(switchModel{}))
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	all := spans(sr)
	chats := byName(all, "chat m-large")
	if len(chats) != 1 {
		t.Fatalf("spans %q", names(all))
	}
	for k, want := range map[string]string{"gen_ai.request.model": "m-large", "langsmith.trace.name": "chat m-large", "langsmith.metadata.ls_model_name": "m-large"} {
		if got := attrs(chats[0]); got[attrKey(k)].Emit() != want {
			t.Errorf("%s = %q, want %q", k, got[attrKey(k)].Emit(), want)
		}
	}
}

// TestHooksSeeTheSpans checks that hooks (the flight recorder's way in)
// receive the context of the span they belong to.
func TestHooksSeeTheSpans(t *testing.T) {
	tp, sr := recorderTP(t)
	seen := map[harness.HookEvent]trace.SpanID{}
	hook := func(ctx context.Context, ev *harness.Event) error {
		seen[ev.Type] = trace.SpanContextFromContext(ctx).SpanID()
		return nil
	}
	a, _ := newAgent(t, tp, weatherScript, harness.WithHooks(hook, harness.EventModelRequestStart, harness.EventToolCallEnd, harness.EventRunStart))
	if _, err := a.Run(context.Background(), "weather?"); err != nil {
		t.Fatal(err)
	}
	all := spans(sr)
	tests := []struct {
		ev   harness.HookEvent
		span string
	}{
		{harness.EventRunStart, "invoke_agent weatherbot"},
		{harness.EventModelRequestStart, "chat m"}, // the last request's
		{harness.EventToolCallEnd, "execute_tool weather"},
	}
	for _, tt := range tests {
		t.Run(tt.ev.String(), func(t *testing.T) {
			ss := byName(all, tt.span)
			if got, want := seen[tt.ev], ss[len(ss)-1].SpanContext().SpanID(); got != want {
				t.Errorf("hook saw span %v, want %s's %v", got, tt.span, want)
			}
		})
	}
}

func TestLangSmithPromptKeys(t *testing.T) {
	tests := []struct {
		name string
		opts []tracing.Option
		want bool
	}{
		{"default off", nil, false},
		{"on", []tracing.Option{tracing.WithLangSmithPromptKeys(true)}, true},
		{"on but capture off", []tracing.Option{tracing.WithLangSmithPromptKeys(true), tracing.WithCaptureContent(false)}, false},
	}
	pairs := map[string][2]attribute.Key{
		"invoke_agent weatherbot": {semconv.GenAIInputMessagesKey, semconv.GenAIOutputMessagesKey},
		"chat m":                  {semconv.GenAIInputMessagesKey, semconv.GenAIOutputMessagesKey},
		"execute_tool weather":    {semconv.GenAIToolCallArgumentsKey, semconv.GenAIToolCallResultKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, sr := recorderTP(t)
			a := newAgentExt(t, tracing.New(append([]tracing.Option{tracing.WithTracerProvider(tp)}, tt.opts...)...), weatherScript)
			if _, err := a.Run(context.Background(), "weather?"); err != nil {
				t.Fatal(err)
			}
			for _, s := range spans(sr) {
				m := attrs(s)
				p, hasP := m[tracing.KeyPrompt]
				c, hasC := m[tracing.KeyCompletion]
				if hasP != tt.want || hasC != tt.want {
					t.Errorf("%s: prompt %v completion %v, want %v", s.Name(), hasP, hasC, tt.want)
					continue
				}
				if tt.want {
					k := pairs[s.Name()]
					if p != m[k[0]] || c != m[k[1]] {
						t.Errorf("%s: copies differ from %s / %s", s.Name(), k[0], k[1])
					}
				}
			}
		})
	}
}

// TestTracerProviderAccessor checks that other extensions can find the
// provider the spans come from: nil before Install, the given one after.
func TestTracerProviderAccessor(t *testing.T) {
	tp, _ := recorderTP(t)
	ext := tracing.New(tracing.WithTracerProvider(tp))
	if got := ext.TracerProvider(); got != nil {
		t.Fatalf("before Install: %v", got)
	}
	newAgentExt(t, ext, nil)
	if got := ext.TracerProvider(); got != tp {
		t.Fatalf("after Install: %v, want the given provider", got)
	}
}
