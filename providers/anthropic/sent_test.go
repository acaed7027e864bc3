package anthropic

import (
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/provtest"
)

// TestSentParams checks that a response reports the parameters the request
// body really carried: the default max_tokens filled in for a request
// without one, and no temperature, which the provider never sends.
func TestSentParams(t *testing.T) {
	hi := []harness.Message{harness.UserMessage("Hi")}
	temp := 0.7
	tests := []provtest.SentCase[Option]{
		{
			Name:   "default max_tokens",
			Req:    harness.ModelRequest{Model: model, Messages: hi},
			Script: provtest.Fixture("plain.json"),
			Want:   harness.RequestParams{Model: model, MaxTokens: DefaultMaxTokens},
		},
		{
			Name:   "configured default max_tokens",
			Opts:   []Option{WithDefaultMaxTokens(1000)},
			Req:    harness.ModelRequest{Model: model, Messages: hi},
			Script: provtest.Fixture("plain.json"),
			Want:   harness.RequestParams{Model: model, MaxTokens: 1000},
		},
		{
			Name:   "request max_tokens",
			Opts:   []Option{WithDefaultMaxTokens(1000)},
			Req:    harness.ModelRequest{Model: model, Messages: hi, MaxTokens: 8},
			Script: provtest.Fixture("max_tokens.json"),
			Want:   harness.RequestParams{Model: model, MaxTokens: 8},
		},
		{
			Name:   "temperature not sent",
			Req:    harness.ModelRequest{Model: model, Messages: hi, MaxTokens: 256, Temperature: &temp},
			Script: provtest.Fixture("plain.json"),
			Want:   harness.RequestParams{Model: model, MaxTokens: 256},
		},
		{
			Name:   "stream",
			Req:    harness.ModelRequest{Model: model, Messages: hi, Stream: true, Temperature: &temp},
			Script: provtest.Fixture("stream_text.sse"),
			Want:   harness.RequestParams{Model: model, MaxTokens: DefaultMaxTokens, Stream: true},
		},
	}
	provtest.Sent(t, "max_tokens", tests, newTestProvider)
}
