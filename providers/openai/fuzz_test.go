package openai

import (
	"testing"

	"github.com/harnessx/harnessx/providers/internal/provtest"
)

// FuzzStream feeds arbitrary server-sent event bodies to a streaming
// request. Whatever the bytes, Generate must not panic, must fail with one
// of the package's error types or return a response that encodes as JSON
// (a session can store it) with valid tool inputs.
func FuzzStream(f *testing.F) { provtest.FuzzStream(f, Name, model, dial) }
