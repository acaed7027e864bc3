//go:build anthropic

package main

import (
	"fmt"

	"github.com/harnessx/harnessx/examples/quickstart/internal/demo"
	"github.com/harnessx/harnessx/providers/anthropic"
)

// anthropicBuilt says that this build compiled the Anthropic SDK (-tags anthropic).
const anthropicBuilt = true

// newAnthropic is the -live model of a build with -tags anthropic.
func newAnthropic() (demo.Backend, error) {
	p, err := anthropic.New(anthropic.WithPromptCaching())
	if err != nil {
		return demo.Backend{}, fmt.Errorf("anthropic provider: %w", err)
	}
	m := demo.Model(anthropicModel)
	return demo.Backend{Provider: p, Label: "anthropic, " + m, Model: m}, nil
}
