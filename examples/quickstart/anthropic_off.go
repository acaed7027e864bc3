//go:build !anthropic

package main

import "github.com/harnessx/harnessx/examples/quickstart/internal/demo"

// Without -tags anthropic the build does not compile the Anthropic SDK; -live says
// how to get it (see liveBackend).
const anthropicBuilt = false

func newAnthropic() (demo.Backend, error) { return demo.Backend{}, errNotBuilt }
