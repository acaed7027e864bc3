package tracing_test

import (
	"context"
	"fmt"
	"sort"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// An agent with the tracing extension records one span tree per run. Here
// the spans go to an in-memory exporter; an application would use an OTLP
// exporter to Jaeger or LangSmith instead.
func Example() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())

	weather := harness.MustTool(harness.NewTool("weather", "Weather of a city.",
		func(_ context.Context, in struct {
			City string `json:"city"`
		}) (string, error) {
			return "sunny in " + in.City, nil
		}))
	provider := harnesstest.NewScriptedProvider(
		harnesstest.CallTool("call_1", "weather", `{"city":"Paris"}`),
		harnesstest.Reply("It is sunny in Paris."),
	)
	ext := tracing.New(tracing.WithTracerProvider(tp))
	agent, err := harness.New(
		harness.WithProvider(provider),
		harness.WithModel("claude-sonnet-5-5"),
		harness.WithName("weatherbot"),
		harness.WithTools(weather),
		harness.WithExtensions(ext),
	)
	if err != nil {
		panic(err)
	}
	defer agent.Close(context.Background())

	if _, err := agent.Run(context.Background(), "What is the weather in Paris?"); err != nil {
		panic(err)
	}

	got := exp.GetSpans()
	sort.Slice(got, func(i, j int) bool { return got[i].StartTime.Before(got[j].StartTime) })
	for _, s := range got {
		indent := ""
		if s.Parent.IsValid() {
			indent = "  "
		}
		kind := ""
		for _, kv := range s.Attributes {
			if kv.Key == tracing.KeyLangSmithSpanKind {
				kind = kv.Value.AsString()
			}
		}
		fmt.Printf("%s%s (%s)\n", indent, s.Name, kind)
	}
	fmt.Printf("%+v\n", ext.Stats())
	// Output:
	// invoke_agent weatherbot (chain)
	//   chat claude-sonnet-5-5 (llm)
	//   execute_tool weather (tool)
	//   chat claude-sonnet-5-5 (llm)
	// {Runs:1 ModelRequests:2 ToolCalls:1 Errors:0 Redacted:0 Truncated:0 TruncatedBytes:0 UploadErrors:0}
}

// Content capture can be turned off, and what is captured can be redacted.
func ExampleWithRedactor() {
	ext := tracing.New(
		tracing.WithRedactor(func(key, value string) string {
			if key == "gen_ai.tool.call.arguments" {
				return "[arguments withheld]"
			}
			return value
		}),
		tracing.WithMaxAttributeBytes(16<<10),
	)
	fmt.Println(ext.Name(), ext.CaptureContent())
	// Output: tracing true
}

// An image in a user message is recorded by reference: its bytes stay
// out of the spans unless WithCaptureMediaBytes lets small ones in. Here
// an uploader stores the bytes and the span records its URI instead.
func ExampleWithPartUploader() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())

	store := map[string][]byte{} // an application's object store
	upload := func(_ context.Context, p harness.Part) (string, error) {
		uri := fmt.Sprintf("https://store.example/media/%d.png", len(store)+1)
		store[uri] = p.Media.Data
		return uri, nil
	}
	agent, err := harness.New(
		harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Reply("A red square."))),
		harness.WithModel("m"),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp), tracing.WithPartUploader(upload))),
	)
	if err != nil {
		panic(err)
	}
	defer agent.Close(context.Background())

	png := []byte("\x89PNG\r\n\x1a\n…a red square")
	msg := harness.UserParts(harness.Text("What is this?"), harness.ImagePart(png, "image/png"))
	if _, err := agent.RunMessage(context.Background(), msg); err != nil {
		panic(err)
	}
	for _, s := range exp.GetSpans() {
		for _, kv := range s.Attributes {
			if s.Name == "chat m" && kv.Key == "gen_ai.input.messages" {
				fmt.Println(kv.Value.AsString())
			}
		}
	}
	// Output:
	// [{"role":"user","parts":[{"type":"text","content":"What is this?"},{"type":"uri","modality":"image","mime_type":"image/png","uri":"https://store.example/media/1.png","size":23,"sha256":"85b57fd5235ee59c2fba54bf40fe5db0dabbc077d02c88f9cbc6fe8f71267774"}]}]
}
