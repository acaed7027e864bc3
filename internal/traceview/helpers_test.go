package traceview

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type weatherIn struct {
	City string `json:"city"`
}

// recordRun runs a real agent (scripted provider, one tool call) with the
// tracing extension and exporters.NewFile writing to path, and returns
// when the spans are in the file. result is what the tool returns.
func recordRun(t *testing.T, path, agentName, result string) {
	t.Helper()
	recordRunWith(t, runSetup{path: path, agent: agentName, result: result})
}

// runSetup configures recordRunWith.
type runSetup struct {
	path, agent, result string
	fileOpts            []exporters.Option  // more options of exporters.NewFile
	exts                []harness.Extension // more extensions
	afterRun            func(ctx context.Context)
	model               string                 // default scripted-model
	script              []harnesstest.Response // default: a tool call, then an answer
	mayFail             bool                   // a failed run is expected
	opts                []harness.Option       // more agent options
}

func recordRunWith(t *testing.T, rs runSetup) {
	t.Helper()
	path, agentName, result := rs.path, rs.agent, rs.result
	ctx := context.Background()
	tp, err := exporters.NewFile(ctx, append([]exporters.Option{exporters.WithFile(path), exporters.WithServiceName("traceview-test")}, rs.fileOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	tool, err := harness.NewTool("get_weather", "Report the weather of a city.",
		func(_ context.Context, in weatherIn) (string, error) { return result, nil })
	if err != nil {
		t.Fatal(err)
	}
	script := []harnesstest.Response{
		{
			Text:      "Let me check.",
			ToolCalls: []harness.ToolCall{harnesstest.Call("call_1", "get_weather", map[string]string{"city": "Lisbon"})},
			Usage:     harness.Usage{InputTokens: 412, OutputTokens: 31, CacheCreationInputTokens: 380},
		},
		{
			Text:  "Lisbon is at 18°C.",
			Usage: harness.Usage{InputTokens: 468, OutputTokens: 22, CacheReadInputTokens: 380},
		},
	}
	if rs.script != nil {
		script = rs.script
	}
	prov := harnesstest.NewScriptedProvider(script...)
	model := rs.model
	if model == "" {
		model = "scripted-model"
	}
	agent, err := harness.New(append([]harness.Option{
		harness.WithName(agentName),
		harness.WithProvider(prov),
		harness.WithModel(model),
		harness.WithSystemPrompt("You are a concise weather assistant."),
		harness.WithTools(tool),
		harness.WithExtensions(append([]harness.Extension{tracing.New(tracing.WithTracerProvider(tp), tracing.WithMaxAttributeBytes(8<<20))}, rs.exts...)...),
	}, rs.opts...)...,
	)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Run(ctx, "What's the weather in Lisbon?"); err != nil && !rs.mayFail {
		t.Fatal(err)
	}
	if rs.afterRun != nil {
		rs.afterRun(ctx)
	}
	if err := agent.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
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
		t.Errorf("%s differs (go test -update to accept):\n--- got\n%s\n--- want\n%s", p, got, want)
	}
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

func str(k, v string) Attr { return Attr{k, Value{Type: TypeString, Str: v}} }
func num(k string, n int64) Attr {
	return Attr{k, Value{Type: TypeInt, Int: n}}
}
func list(k string, vs ...string) Attr {
	v := Value{Type: TypeArray}
	for _, s := range vs {
		v.Array = append(v.Array, Value{Type: TypeString, Str: s})
	}
	return Attr{k, v}
}

// id returns a hex ID of n bytes made from seed.
func id(seed, n int) string { return strings.Repeat(fmt.Sprintf("%02x", seed), n) }
