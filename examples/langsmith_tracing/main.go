package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "langsmith_tracing:", err)
		os.Exit(1)
	}
}

// newProvider sends to LangSmith when an API key is set, else to the file.
func newProvider(ctx context.Context, w io.Writer) (*exporters.Provider, error) {
	opts := []exporters.Option{exporters.WithExportTimeout(5 * time.Second)}
	if os.Getenv("OTEL_SERVICE_NAME") == "" {
		opts = append(opts, exporters.WithServiceName("harnessx-langsmith-example"))
	}
	if strings.TrimSpace(os.Getenv("LANGSMITH_API_KEY")) != "" {
		tp, err := exporters.NewLangSmith(ctx, opts...)
		if err != nil {
			return nil, err
		}
		project := os.Getenv("LANGSMITH_PROJECT")
		if project == "" {
			project = "default"
		}
		fmt.Fprintf(w, "tracing to LangSmith at %s, project %q\n\n", tp.Backends()[0].Target, project)
		return tp, nil
	}
	tp, err := exporters.NewFile(ctx, opts...)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "LANGSMITH_API_KEY is not set: writing spans to %s (OTLP JSON lines) instead.\n", tp.Backends()[0].Target)
	fmt.Fprintf(w, "Set LANGSMITH_API_KEY (and LANGSMITH_PROJECT) to send them to LangSmith.\n\n")
	return tp, nil
}

func run(ctx context.Context, w io.Writer) error {
	tp, err := newProvider(ctx, w)
	if err != nil {
		return err
	}
	runErr := runAgents(ctx, w, tp)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = tp.Shutdown(sctx)
	if runErr != nil {
		return runErr
	}
	st := tp.Stats()
	if err != nil && !errors.Is(err, exporters.ErrSpansLost) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	b := tp.Backends()[0]
	if st.Lost() > 0 {
		fmt.Fprintf(w, "\n%d spans exported, %d lost on the way to %s (see the warning above).\n", st.Exported, st.Lost(), b.Target)
		return nil
	}
	fmt.Fprintf(w, "\n%d spans exported to %s.\n", st.Exported, b.Target)
	if b.Name == "langsmith" {
		fmt.Fprintln(w, "Open the project in LangSmith: the trace is named \"invoke_agent coordinator\".")
	}
	return nil
}

type lookupInput struct {
	Topic string `json:"topic" jsonschema:"what to look up"`
}

// runAgents runs a coordinator that asks a writer subagent for a summary;
// each agent is traced by its own extension. A LangSmith provider turns
// LangSmith's mirror attributes on by itself; the option keeps them in the
// file that stands in for LangSmith when no key is set.
func runAgents(ctx context.Context, w io.Writer, tp *exporters.Provider) error {
	lookup, err := harness.NewTool("lookup_notes", "Look up the team's notes on a topic.",
		func(_ context.Context, in lookupInput) (string, error) {
			return "Notes on " + in.Topic + ": release slipped one week; QA found two blockers, both fixed.", nil
		})
	if err != nil {
		return err
	}
	writer, err := harness.New(
		harness.WithName("writer"),
		harness.WithModel("claude-haiku-5-5"),
		// Invocation parameters: each chat span records them, with the
		// model and whether the reply streamed.
		harness.WithMaxTokens(512),
		harness.WithTemperature(0.7),
		harness.WithSystemPrompt("You write two-sentence status summaries."),
		harness.WithTools(lookup),
		harness.WithProvider(harnesstest.NewScriptedProvider(
			harnesstest.Response{
				ToolCalls: []harness.ToolCall{harnesstest.Call("toolu_w1", "lookup_notes", map[string]string{"topic": "release 2.4"})},
				Usage:     harness.Usage{InputTokens: 820, OutputTokens: 31, CacheCreationInputTokens: 700},
			},
			harnesstest.Response{
				Reasoning: "Lead with the slip, then the good news.",
				Text:      "Release 2.4 slipped a week. Both QA blockers are fixed and it is on track.",
				Usage:     harness.Usage{InputTokens: 910, OutputTokens: 44, CacheReadInputTokens: 700, ReasoningTokens: 12},
			},
		)),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp), tracing.WithLangSmithMirror(true))),
	)
	if err != nil {
		return err
	}
	defer writer.Close(ctx)

	coordinator, err := harness.New(
		harness.WithName("coordinator"),
		harness.WithModel("claude-sonnet-5-5"),
		harness.WithMaxTokens(1024),
		harness.WithTemperature(0.2),
		harness.WithSystemPrompt("You coordinate status reports. Delegate writing to the writer."),
		harness.WithTools(harness.AgentTool(writer, "writer", "Ask the writer subagent for a summary.")),
		harness.WithProvider(harnesstest.NewScriptedProvider(
			harnesstest.Response{
				Text:      "I'll ask the writer.",
				ToolCalls: []harness.ToolCall{harnesstest.Call("toolu_c1", "writer", map[string]string{"task": "Summarize the status of release 2.4."})},
				Usage:     harness.Usage{InputTokens: 1500, OutputTokens: 52, CacheCreationInputTokens: 1200, ReasoningTokens: 18},
			},
			harnesstest.Response{
				Text:  "Status: release 2.4 slipped a week; both QA blockers are fixed and it is on track.",
				Usage: harness.Usage{InputTokens: 1620, OutputTokens: 38, CacheReadInputTokens: 1200, ReasoningTokens: 6},
			},
		)),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp), tracing.WithLangSmithMirror(true))),
	)
	if err != nil {
		return err
	}
	defer coordinator.Close(ctx)

	q := "Give me the status of release 2.4."
	res, err := coordinator.Run(ctx, q)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "user: %s\ncoordinator: %s\n", q, res.Text)
	u := res.Usage
	fmt.Fprintf(w, "coordinator usage: input %d (cache read %d, cache write %d), output %d (reasoning %d)\n",
		u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens, u.ReasoningTokens)
	return nil
}
