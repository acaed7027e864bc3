package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "flight example:", err)
		os.Exit(1)
	}
}

type configInput struct {
	Service string `json:"service" jsonschema:"the service whose configuration to fetch"`
}

type ordersInput struct {
	Limit int `json:"limit" jsonschema:"how many orders to list"`
}

func run(ctx context.Context, w io.Writer) error {
	dir := os.Getenv(flight.EnvDir)
	if dir == "" {
		d, err := os.MkdirTemp("", "harnessx-flight-")
		if err != nil {
			return err
		}
		dir = d
	}
	fmt.Fprintf(w, "recording into %s\n", dir)

	rec := flight.New(flight.WithDir(dir), flight.WithIncludeArtifacts(true))
	// The recorder registers its span processor on the tracing
	// extension's provider by itself.
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.WithoutCancel(ctx))

	fetchConfig, err := harness.NewTool("fetch_config", "Fetch a service's configuration.",
		func(_ context.Context, in configInput) (string, error) {
			// A careless tool that leaks credentials into its result.
			return fmt.Sprintf("service: %s\nANTHROPIC_API_KEY=sk-ant-api03-EXAMPLE0000SECRET\n"+
				"curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.example.signature' https://billing.internal/api\n", in.Service), nil
		})
	if err != nil {
		return err
	}
	listOrders, err := harness.NewTool("list_orders", "List recent orders as JSON.",
		func(_ context.Context, in ordersInput) (string, error) {
			var b strings.Builder
			b.WriteString("[")
			for i := range in.Limit {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `{"id":%d,"customer":"customer-%04d","total":%d.%02d,"status":"shipped"}`, 1000+i, i%97, 10+i%300, i%100)
			}
			b.WriteString("]")
			return b.String(), nil
		})
	if err != nil {
		return err
	}
	provider := harnesstest.NewScriptedProvider(
		harnesstest.Response{
			Text:      "Let me look at the billing configuration.",
			ToolCalls: []harness.ToolCall{harnesstest.Call("call_1", "fetch_config", map[string]string{"service": "billing"})},
			Usage:     harness.Usage{InputTokens: 512, OutputTokens: 40, CacheCreationInputTokens: 480},
		},
		harnesstest.Response{
			ToolCalls: []harness.ToolCall{harnesstest.Call("call_2", "list_orders", map[string]int{"limit": 2000})},
			Usage:     harness.Usage{InputTokens: 700, OutputTokens: 25, CacheReadInputTokens: 480},
		},
		harnesstest.Fail(errors.New("upstream model overloaded (scripted failure)")),
	)
	agent, err := harness.New(
		harness.WithName("billing-assistant"),
		harness.WithProvider(provider),
		harness.WithModel("scripted-model"),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithTools(fetchConfig, listOrders),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp)), spill.New(), rec),
	)
	if err != nil {
		return err
	}
	defer agent.Close(context.WithoutCancel(ctx))

	res, err := agent.Run(ctx, "Why was the last invoice run late?")
	fmt.Fprintf(w, "run %s: %s: %v\n", res.RunID, res.Status, err)
	// The bundle is written in the background: wait for it.
	if err := rec.Flush(ctx); err != nil {
		return err
	}
	incidents := rec.Incidents()
	if len(incidents) == 0 {
		return errors.New("no incident bundle was written")
	}
	path := incidents[len(incidents)-1]
	fmt.Fprintf(w, "incident bundle: %s\n\n", path)
	fmt.Fprintf(w, "read it with:\n  go run ./cmd/flightrec show %s\n", path)
	fmt.Fprintf(w, "verify it with:\n  go run ./cmd/flightrec verify %s\n", path)
	fmt.Fprintf(w, "list the recordings with:\n  go run ./cmd/flightrec list --dir %s\n", dir)
	return nil
}
