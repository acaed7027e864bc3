//go:build openai

package main

import (
	"fmt"

	"github.com/harnessx/harnessx/examples/quickstart/internal/demo"
	"github.com/harnessx/harnessx/providers/openai"
)

// openaiBuilt says that this build compiled the OpenAI SDK (-tags openai).
const openaiBuilt = true

// newOpenAI is the -live model of a build with -tags openai.
func newOpenAI() (demo.Backend, error) {
	p, err := openai.New(openai.WithPromptCacheKey())
	if err != nil {
		return demo.Backend{}, fmt.Errorf("openai provider: %w", err)
	}
	m := demo.Model(openaiModel)
	return demo.Backend{Provider: p, Label: "openai, " + m, Model: m}, nil
}
