package openai

import (
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/provtest"
	"github.com/harnessx/harnessx/providers/internal/replay"
)

// TestAgentRoundTrip runs a full harness agent against the loopback
// server: the model calls a tool (two in the streamed script), the engine
// runs it and sends the results back, the model answers.
func TestAgentRoundTrip(t *testing.T) {
	provtest.AgentRoundTrip{
		Model:    model,
		Endpoint: endpoint,
		Serve: func(t *testing.T, srv *replay.Server) harness.Provider {
			return newTestProvider(t, srv, WithPromptCacheKey())
		},
		Calls: func(stream bool) int {
			if stream {
				return 2
			}
			return 1
		},
		Usage: func(bool) harness.Usage {
			return harness.Usage{InputTokens: 412 + 501, OutputTokens: 58 + 19, CacheReadInputTokens: 384}
		},
	}.Run(t)
}
