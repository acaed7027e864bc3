//go:build !openai

package main

import "github.com/harnessx/harnessx/examples/quickstart/internal/demo"

// Without -tags openai the build does not compile the OpenAI SDK; -live says
// how to get it (see liveBackend).
const openaiBuilt = false

func newOpenAI() (demo.Backend, error) { return demo.Backend{}, errNotBuilt }
