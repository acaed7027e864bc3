package tracing_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// A whole traced agent: a tool, a model, the tracing extension on an
// exporters provider, and one run. This is the example that opens the
// harness package's documentation (TestHarnessDocExample keeps the two
// identical).
func Example_agent() {
	ctx := context.Background()

	// A tool: its input schema is inferred from the struct.
	weather := harness.MustTool(harness.NewTool("get_weather", "Report the weather of a city.",
		func(ctx context.Context, in struct {
			City string `json:"city"`
		}) (string, error) {
			return in.City + ": 18°C, light rain", nil
		}))

	// A model: scripted here; providers/anthropic or providers/openai for real.
	model := harnesstest.NewScriptedProvider(
		harnesstest.CallTool("call_1", "get_weather", `{"city":"Lisbon"}`),
		harnesstest.Reply("Lisbon: 18°C with light rain."),
	)

	// Spans: OTLP JSON lines into a buffer here; exporters.FromEnv(ctx)
	// sends them to Jaeger, LangSmith or .harnessx/traces.jsonl, as the
	// environment says.
	var spans bytes.Buffer
	tp, err := exporters.NewFile(ctx, exporters.WithFileWriter(&spans))
	if err != nil {
		panic(err)
	}

	agent, err := harness.New(
		harness.WithName("weather"),
		harness.WithProvider(model),
		harness.WithModel("claude-haiku-5-5"),
		harness.WithSystemPrompt("You are a concise weather assistant."),
		harness.WithTools(weather),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))),
	)
	if err != nil {
		panic(err)
	}
	res, err := agent.Run(ctx, "What's the weather in Lisbon?")
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Steps, res.Text)

	_ = agent.Close(ctx)
	_ = tp.Shutdown(ctx) // flushes the spans
	fmt.Println("spans:", tp.Stats().Exported)
	// Output:
	// completed 2 Lisbon: 18°C with light rain.
	// spans: 4
}

// TestHarnessDocExample keeps the example that opens the harness
// package's documentation identical to Example_agent, which compiles and
// runs it.
func TestHarnessDocExample(t *testing.T) {
	src, err := os.ReadFile("example_agent_test.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	start := slices.Index(lines, "func Example_agent() {") + 1
	var body []string
	for _, l := range lines[start:] {
		if strings.HasPrefix(l, "\t// Output:") {
			break
		}
		body = append(body, strings.TrimPrefix(l, "\t"))
	}
	doc, err := os.ReadFile("../../harness/doc.go")
	if err != nil {
		t.Fatal(err)
	}
	// The doc's code block: the indented lines after the heading, with
	// the blank comment lines between them.
	var block []string
	in := false
	for _, l := range strings.Split(string(doc), "\n")[1:] {
		switch {
		case !in && l == "// # A traced agent":
			in = true
		case in && strings.HasPrefix(l, "//\t"):
			block = append(block, strings.TrimPrefix(l, "//\t"))
		case in && l == "//":
			if len(block) > 0 {
				block = append(block, "")
			}
		case in && len(block) > 0:
			in = false
		}
	}
	trim := func(s []string) string { return strings.TrimSpace(strings.Join(s, "\n")) }
	if len(block) == 0 || trim(block) != trim(body) {
		t.Errorf("harness/doc.go's example differs from Example_agent:\n--- doc\n%s\n--- Example_agent\n%s", trim(block), trim(body))
	}
}
