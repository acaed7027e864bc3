package main

import (
	"context"
	"fmt"
	"os"

	"github.com/harnessx/harnessx/examples/quickstart/internal/demo"
	"github.com/harnessx/harnessx/providers/anthropic"
	"github.com/harnessx/harnessx/providers/openai"
)

func main() {
	b, err := chooseBackend()
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
	if err := demo.Run(context.Background(), os.Stdout, b); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// chooseBackend picks the model from the environment: Anthropic when
// ANTHROPIC_API_KEY is set, else OpenAI when OPENAI_API_KEY is set, else
// the offline scripted model. HARNESSX_MODEL overrides the model name.
func chooseBackend() (demo.Backend, error) {
	switch {
	case os.Getenv("ANTHROPIC_API_KEY") != "":
		p, err := anthropic.New(anthropic.WithPromptCaching())
		if err != nil {
			return demo.Backend{}, fmt.Errorf("anthropic provider: %w", err)
		}
		m := demo.Model("claude-haiku-5-5")
		return demo.Backend{Provider: p, Label: "anthropic, " + m, Model: m}, nil
	case os.Getenv("OPENAI_API_KEY") != "":
		p, err := openai.New(openai.WithPromptCacheKey())
		if err != nil {
			return demo.Backend{}, fmt.Errorf("openai provider: %w", err)
		}
		m := demo.Model("gpt-5.4-mini")
		return demo.Backend{Provider: p, Label: "openai, " + m, Model: m}, nil
	}
	return demo.Offline(), nil
}
