package openai

import (
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/provtest"
)

// TestSentParams checks that a response reports the parameters the request
// body really carried: max_completion_tokens and temperature only when the
// request set them (a temperature of 0 included), and streaming.
func TestSentParams(t *testing.T) {
	hi := []harness.Message{harness.UserMessage("Hi")}
	temp, zero := 0.7, 0.0
	tests := []provtest.SentCase[Option]{
		{
			Name:   "nothing set",
			Req:    harness.ModelRequest{Model: model, Messages: hi},
			Script: provtest.Fixture("plain.json"),
			Want:   harness.RequestParams{Model: model},
		},
		{
			Name:   "max tokens and temperature",
			Req:    harness.ModelRequest{Model: model, Messages: hi, MaxTokens: 64, Temperature: &temp},
			Script: provtest.Fixture("plain.json"),
			Want:   harness.RequestParams{Model: model, MaxTokens: 64, Temperature: 0.7, HasTemperature: true},
		},
		{
			Name:   "temperature zero",
			Req:    harness.ModelRequest{Model: model, Messages: hi, Temperature: &zero},
			Script: provtest.Fixture("plain.json"),
			Want:   harness.RequestParams{Model: model, HasTemperature: true},
		},
		{
			Name:   "stream",
			Req:    harness.ModelRequest{Model: model, Messages: hi, Stream: true, MaxTokens: 32},
			Script: provtest.Fixture("stream_text.sse"),
			Want:   harness.RequestParams{Model: model, MaxTokens: 32, Stream: true},
		},
	}
	provtest.Sent(t, "max_completion_tokens", tests, newTestProvider)
}
