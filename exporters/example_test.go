package exporters_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// A traced agent whose spans go to the OTLP JSON-lines exporter, read back
// afterwards. With exporters.WithFile (or nothing: .harnessx/traces.jsonl)
// the lines go to a file.
func ExampleNewFile() {
	ctx := context.Background()
	var lines bytes.Buffer
	tp, err := exporters.NewFile(ctx, exporters.WithFileWriter(&lines))
	if err != nil {
		panic(err)
	}
	agent, err := harness.New(
		harness.WithName("greeter"),
		harness.WithModel("demo-model"),
		harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Reply("Hello!"))),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))),
	)
	if err != nil {
		panic(err)
	}
	if _, err := agent.Run(ctx, "Hi"); err != nil {
		panic(err)
	}
	_ = agent.Close(ctx)
	if err := tp.Shutdown(ctx); err != nil { // flushes
		panic(err)
	}

	// Each line is an OTLP/JSON export request.
	dec := json.NewDecoder(&lines)
	for dec.More() {
		var req struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []struct {
						Name       string
						Attributes []struct {
							Key   string
							Value struct{ StringValue string }
						}
					}
				}
			}
		}
		if err := dec.Decode(&req); err != nil {
			panic(err)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					op := ""
					for _, a := range s.Attributes {
						if a.Key == "gen_ai.operation.name" {
							op = a.Value.StringValue
						}
					}
					fmt.Printf("%s (%s)\n", s.Name, op)
				}
			}
		}
	}
	fmt.Println("exported:", tp.Stats().Exported)
	// Output:
	// chat demo-model (chat)
	// invoke_agent greeter (invoke_agent)
	// exported: 2
}

// FromEnv fans out to every backend named by the environment or the
// options; here an OTLP endpoint and LangSmith are named by options.
func ExampleFromEnv() {
	ctx := context.Background()
	tp, err := exporters.FromEnv(ctx,
		exporters.WithEndpointURL("http://localhost:4318/v1/traces"),
		exporters.WithAPIKey("lsv2_example"),
		exporters.WithProject("harnessx-demo"),
	)
	if err != nil {
		panic(err)
	}
	defer tp.Shutdown(ctx)
	for _, b := range tp.Backends() {
		fmt.Println(b.Name, b.Target)
	}
	// Output:
	// otlp http://localhost:4318/v1/traces
	// langsmith https://api.smith.langchain.com/otel/v1/traces
}

// NewLangSmith posts to {LANGSMITH_ENDPOINT}/otel/v1/traces with the
// x-api-key and Langsmith-Project headers.
func ExampleNewLangSmith() {
	ctx := context.Background()
	tp, err := exporters.NewLangSmith(ctx,
		exporters.WithLangSmithEndpoint("https://eu.api.smith.langchain.com"),
		exporters.WithAPIKey("lsv2_example"),
		exporters.WithProject("harnessx-demo"),
	)
	if err != nil {
		panic(err)
	}
	defer tp.Shutdown(ctx)
	fmt.Println(tp.Backends()[0].Target)
	// Output:
	// https://eu.api.smith.langchain.com/otel/v1/traces
}

// NewOTLP sends to Jaeger or a collector; a backend that is down costs
// the program nothing but the lost spans, which are counted.
func ExampleNewOTLP() {
	ctx := context.Background()
	tp, err := exporters.NewOTLP(ctx, exporters.WithEndpointURL("http://127.0.0.1:4318/v1/traces"))
	if err != nil {
		panic(err)
	}
	fmt.Println(tp.Backends()[0].Name, tp.Backends()[0].Target)
	_ = tp.Shutdown(ctx)
	fmt.Println("lost:", tp.Stats().Lost())
	// Output:
	// otlp http://127.0.0.1:4318/v1/traces
	// lost: 0
}
