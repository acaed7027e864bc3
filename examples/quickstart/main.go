package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/providers/anthropic"
	"github.com/harnessx/harnessx/providers/openai"
)

type weatherInput struct {
	City string `json:"city" jsonschema:"the city to report on"`
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer) error {
	weather, err := harness.NewTool("get_weather", "Report the current weather of a city.",
		func(_ context.Context, in weatherInput) (string, error) {
			return fmt.Sprintf("%s: 18°C, light rain", in.City), nil
		})
	if err != nil {
		return err
	}
	provider, label, model := chooseProvider()
	agent, err := harness.New(
		harness.WithName("quickstart"),
		harness.WithProvider(provider),
		harness.WithModel(model),
		harness.WithSystemPrompt("You are a concise weather assistant. Use get_weather."),
		harness.WithTools(weather),
	)
	if err != nil {
		return err
	}
	defer agent.Close(ctx)

	fmt.Fprintf(w, "provider: %s\n\n", label)
	question := "What's the weather in Lisbon?"
	res, err := agent.Run(ctx, question)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "user: %s\n", question)
	printTranscript(w, res.Messages[1:])
	u := res.Usage
	fmt.Fprintf(w, "\nstatus: %s, steps: %d\n", res.Status, res.Steps)
	fmt.Fprintf(w, "usage: input %d (cache read %d, cache write %d), output %d (reasoning %d), total %d\n",
		u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens, u.ReasoningTokens, u.TotalTokens())
	return nil
}

func printTranscript(w io.Writer, msgs []harness.Message) {
	for _, m := range msgs {
		for _, p := range m.Content {
			switch p.Type {
			case harness.PartText:
				fmt.Fprintf(w, "%s: %s\n", m.Role, strings.TrimSpace(p.Text))
			case harness.PartReasoning:
				fmt.Fprintf(w, "%s (thinking): %s\n", m.Role, strings.TrimSpace(p.Text))
			case harness.PartToolCall:
				fmt.Fprintf(w, "%s → %s(%s)\n", m.Role, p.ToolCall.Name, p.ToolCall.Input)
			case harness.PartToolResult:
				fmt.Fprintf(w, "tool ← %s: %s\n", p.ToolResult.Name, p.ToolResult.Content)
			}
		}
	}
}

// chooseProvider picks the model backend from the environment: Anthropic
// when ANTHROPIC_API_KEY is set, OpenAI when OPENAI_API_KEY is set, and the
// offline scripted model otherwise. HARNESSX_MODEL overrides the model name.
func chooseProvider() (p harness.Provider, label, model string) {
	pick := func(def string) string {
		if m := os.Getenv("HARNESSX_MODEL"); m != "" {
			return m
		}
		return def
	}
	switch {
	case os.Getenv("ANTHROPIC_API_KEY") != "":
		ap, err := anthropic.New(anthropic.WithPromptCaching())
		if err == nil {
			model = pick("claude-haiku-5-5")
			return ap, "anthropic, " + model, model
		}
		fmt.Fprintln(os.Stderr, "quickstart: anthropic provider:", err)
	case os.Getenv("OPENAI_API_KEY") != "":
		op, err := openai.New(openai.WithPromptCacheKey())
		if err == nil {
			model = pick("gpt-5.4-mini")
			return op, "openai, " + model, model
		}
		fmt.Fprintln(os.Stderr, "quickstart: openai provider:", err)
	}
	return harnesstest.NewScriptedProvider(
		harnesstest.Response{
			Text:      "Let me check.",
			ToolCalls: []harness.ToolCall{harnesstest.Call("call_1", "get_weather", map[string]string{"city": "Lisbon"})},
			Usage:     harness.Usage{InputTokens: 412, OutputTokens: 31, CacheCreationInputTokens: 380},
		},
		harnesstest.Response{
			Text:  "Lisbon is at 18°C with light rain — take an umbrella.",
			Usage: harness.Usage{InputTokens: 468, OutputTokens: 22, CacheReadInputTokens: 380},
		},
	), "scripted (offline)", pick("scripted-model")
}
