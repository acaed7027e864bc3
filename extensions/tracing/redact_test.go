package tracing_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// The secrets of TestBuiltinRedaction, one per place content is captured.
const (
	secretSystem  = "sysPassw0rdValue"                                                             // system prompt
	secretToolDef = "toolDefTokenValue"                                                            // tool description
	secretArgs    = "argApiKeyValue"                                                               // tool call arguments
	secretResult  = "resultDbPassValue"                                                            // tool result
	secretUser    = "sk-ant-api03-userMessageSecret"                                               // user message
	secretOutput  = "outputUrlPassValue"                                                           // model output
	secretError   = "-----BEGIN RSA PRIVATE KEY-----\nMIIEerrorKey\n-----END RSA PRIVATE KEY-----" // tool error
)

var allSecrets = []string{secretSystem, secretToolDef, secretArgs, secretResult, secretUser, secretOutput, "MIIEerrorKey"}

type lookupIn struct {
	APIKey string `json:"api_key,omitempty"`
	Fail   bool   `json:"fail,omitempty"`
}

func lookupTool() *harness.Tool {
	return harness.MustTool(harness.NewTool("lookup", "Looks up a record; example: GET /lookup?token="+secretToolDef+"&id=2",
		func(_ context.Context, in lookupIn) (string, error) {
			if in.Fail {
				return "", errors.New("cannot parse key file " + secretError)
			}
			return `config: export DB_PASSWORD="` + secretResult + `"`, nil
		}))
}

// runWithSecrets runs an agent whose system prompt, tool definition, tool
// arguments, tool results, error, user message and reply each hold a
// secret, and returns everything the spans carry as text.
func runWithSecrets(t *testing.T, opts ...tracing.Option) (string, *tracing.Extension) {
	t.Helper()
	tp, sr := recorderTP(t)
	ext := tracing.New(append([]tracing.Option{tracing.WithTracerProvider(tp), tracing.WithLangSmithPromptKeys(true)}, opts...)...)
	a := newAgentExt(t, ext, []harnesstest.Response{
		harnesstest.CallTool("c1", "lookup", map[string]any{"api_key": secretArgs}),
		harnesstest.CallTool("c2", "lookup", map[string]any{"fail": true}),
		harnesstest.Reply("use postgres://app:" + secretOutput + "@db:5432/x"),
	}, harness.WithSystemPrompt("You are helpful. client_secret: '"+secretSystem+"'"), harness.WithTools(lookupTool()))
	if _, err := a.Run(context.Background(), "my key is "+secretUser); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, s := range spans(sr) {
		b.WriteString(s.Name() + "\n" + s.Status().Description + "\n")
		for _, kv := range s.Attributes() {
			b.WriteString(string(kv.Key) + "=" + kv.Value.Emit() + "\n")
		}
		for _, ev := range s.Events() {
			b.WriteString(ev.Name + "\n")
			for _, kv := range ev.Attributes {
				b.WriteString(string(kv.Key) + "=" + kv.Value.Emit() + "\n")
			}
		}
	}
	return b.String(), ext
}

func TestBuiltinRedaction(t *testing.T) {
	got, ext := runWithSecrets(t)
	for _, s := range allSecrets {
		if strings.Contains(got, s) {
			t.Errorf("a span holds %q", s)
		}
	}
	for _, m := range []string{"[REDACTED:secret-assignment]", "[REDACTED:secret-json-field]", "[REDACTED:anthropic-key]",
		"[REDACTED:url-password]", "[REDACTED:private-key]"} {
		if !strings.Contains(got, m) {
			t.Errorf("no %s on the spans", m)
		}
	}
	if ext.Stats().Redacted == 0 {
		t.Error("Stats().Redacted is 0")
	}
	if t.Failed() {
		t.Log(got)
	}
}

func TestBuiltinRedactionOff(t *testing.T) {
	got, ext := runWithSecrets(t, tracing.WithBuiltinRedaction(false))
	for _, s := range allSecrets {
		if !strings.Contains(got, s) {
			t.Errorf("the spans lack %q with the built-in rules off", s)
		}
	}
	if strings.Contains(got, "[REDACTED:") {
		t.Error("a marker with the built-in rules off")
	}
	if n := ext.Stats().Redacted; n != 0 {
		t.Errorf("Stats().Redacted is %d", n)
	}
}

// TestBuiltinRedactionWithRedactor checks that a redactor function runs
// after the built-in rules and sees their markers.
func TestBuiltinRedactionWithRedactor(t *testing.T) {
	seen := make(chan string, 64)
	got, _ := runWithSecrets(t, tracing.WithRedactor(func(key, v string) string {
		if key == "gen_ai.tool.call.result" {
			select {
			case seen <- v:
			default:
			}
		}
		return strings.ReplaceAll(v, "helpful", "[HELPFUL]")
	}))
	if strings.Contains(got, secretSystem) || !strings.Contains(got, "[HELPFUL]") {
		t.Errorf("built-in rules then redactor not both applied:\n%s", got)
	}
	close(seen)
	n := 0
	for v := range seen {
		n++
		if strings.Contains(v, secretResult) || strings.Contains(v, "MIIEerrorKey") {
			t.Errorf("the redactor saw a secret: %q", v)
		}
	}
	if n == 0 {
		t.Error("the redactor saw no tool result")
	}
}

// TestHistoryRedactedOnce checks that a long conversation holding a secret
// is redacted in every request's input messages.
func TestHistoryRedactedOnce(t *testing.T) {
	tp, sr := recorderTP(t)
	ext := tracing.New(tracing.WithTracerProvider(tp))
	var script []harnesstest.Response
	for range 5 {
		script = append(script, harnesstest.CallTool("c", "weather", map[string]string{"city": "Paris"}))
	}
	script = append(script, harnesstest.Reply("done"))
	a := newAgentExt(t, ext, script)
	if _, err := a.Run(context.Background(), "TOKEN="+secretArgs+" weather?"); err != nil {
		t.Fatal(err)
	}
	chats := 0
	for _, s := range spans(sr) {
		in, ok := attrs(s)["gen_ai.input.messages"]
		if !ok || !strings.HasPrefix(s.Name(), "chat") {
			continue
		}
		chats++
		if v := in.AsString(); strings.Contains(v, secretArgs) || !strings.Contains(v, "TOKEN=[REDACTED:secret-assignment]") {
			t.Errorf("%s: input messages %s", s.Name(), v)
		}
	}
	if chats != 6 {
		t.Errorf("%d chat spans", chats)
	}
}

// BenchmarkTracedRunWithoutBuiltinRedaction is BenchmarkTracedRun with the
// built-in secret rules off: the difference is their cost on secret-free
// content.
func BenchmarkTracedRunWithoutBuiltinRedaction(b *testing.B) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	a := benchAgent(b, harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp), tracing.WithBuiltinRedaction(false))))
	runLoop(b, a, exp.Reset)
}
