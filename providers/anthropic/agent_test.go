package anthropic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/provtest"
	"github.com/harnessx/harnessx/providers/internal/replay"
)

// TestAgentRoundTrip runs a full harness agent against the loopback
// server: the model calls a tool, the engine runs it and sends the result
// back, the model answers.
func TestAgentRoundTrip(t *testing.T) {
	provtest.AgentRoundTrip{
		Model:    model,
		Endpoint: endpoint,
		Serve: func(t *testing.T, srv *replay.Server) harness.Provider {
			return newTestProvider(t, srv, WithPromptCaching())
		},
		Calls: func(bool) int { return 1 },
		Usage: func(stream bool) harness.Usage {
			if stream {
				return harness.Usage{InputTokens: 472 + 400 + 35 + 466, OutputTokens: 89 + 19, CacheReadInputTokens: 466, CacheCreationInputTokens: 400, ReasoningTokens: 12}
			}
			return harness.Usage{InputTokens: 412 + 35 + 466, OutputTokens: 58 + 19, CacheReadInputTokens: 466}
		},
	}.Run(t)
}

// TestAgentRetriesCutStream: a stream cut mid-message is a retryable
// error, so an agent with harness.WithRetry sends the request again and the
// run completes; without the retry policy the run fails with ErrStream.
func TestAgentRetriesCutStream(t *testing.T) {
	cut := replay.Response{Body: replay.Truncate(provtest.Fixture("stream_final.sse").Body, "event: message_delta")}
	tests := []struct {
		name     string
		attempts int
		want     harness.Status
	}{
		{"with retry", 2, harness.StatusCompleted},
		{"without retry", 1, harness.StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := replay.New(cut, provtest.Fixture("stream_final.sse"))
			defer srv.Close()
			agent, err := harness.New(
				harness.WithProvider(newTestProvider(t, srv)),
				harness.WithModel(model),
				harness.WithStreaming(true),
				harness.WithRetry(harness.RetryPolicy{MaxAttempts: tt.attempts}),
			)
			if err != nil {
				t.Fatal(err)
			}
			defer agent.Close(context.Background())
			res, _ := agent.Run(context.Background(), "Weather?")
			if res.Status != tt.want {
				t.Fatalf("status %s, want %s (err %v)", res.Status, tt.want, res.Err)
			}
			if tt.want == harness.StatusFailed && !errors.Is(res.Err, ErrStream) {
				t.Errorf("run error %v, want ErrStream", res.Err)
			}
			if tt.want == harness.StatusCompleted && res.Text != "Lisbon is at 18°C with light rain — take an umbrella." {
				t.Errorf("text %q", res.Text)
			}
		})
	}
}

// TestSessionKeepsThinking: a thinking tool-use turn that pauses for
// approval is saved, loaded into an agent with a NEW provider (another
// process, as far as the provider can tell) and resumed; the next request
// sends the thinking blocks back with their signature and redacted data,
// which ride in the session as the parts' ProviderData.
func TestSessionKeepsThinking(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			first, second := provtest.Fixture("thinking.json"), provtest.Fixture("final.json")
			sig := "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
			if stream {
				first, second = provtest.Fixture("stream_tool.sse"), provtest.Fixture("stream_final.sse")
				sig = "EqQBCgIYAhIMStreamSig"
			}
			ctx := context.Background()
			ask := provtest.Weather()
			ask.Permission = harness.PermissionAsk
			opts := func(p *Provider) []harness.Option {
				return []harness.Option{
					harness.WithProvider(p),
					harness.WithModel(model),
					harness.WithTools(ask),
					harness.WithStreaming(stream),
				}
			}

			srv1 := replay.New(first)
			defer srv1.Close()
			agent, err := harness.New(opts(newTestProvider(t, srv1, WithThinking(1024)))...)
			if err != nil {
				t.Fatal(err)
			}
			defer agent.Close(ctx)
			res, err := agent.Run(ctx, "Weather in Lisbon?")
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != harness.StatusPaused || len(res.Pending) != 1 {
				t.Fatalf("status %s pending %+v err %v", res.Status, res.Pending, res.Err)
			}
			saved, err := agent.SaveSession(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(saved, []byte(`"provider_data":{"provider":"anthropic","signature":"`+sig+`"}`)) {
				t.Errorf("the session does not hold the signature:\n%s", saved)
			}

			srv2 := replay.New(second)
			defer srv2.Close()
			loaded, err := harness.LoadSession(ctx, saved, opts(newTestProvider(t, srv2, WithThinking(1024)))...)
			if err != nil {
				t.Fatal(err)
			}
			defer loaded.Close(ctx)
			res, err = loaded.Resume(ctx, harness.Approve(res.Pending[0].ID))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != harness.StatusCompleted || res.Text != "Lisbon is at 18°C with light rain — take an umbrella." {
				t.Fatalf("status %s text %q err %v", res.Status, res.Text, res.Err)
			}
			endpoint.CheckRequest(t, srv2, 0, fmt.Sprintf("session_resume_stream_%v.request.json", stream))
			if n := len(srv2.Requests()); n != 1 {
				t.Errorf("%d requests after the resume, want 1", n)
			}
		})
	}
}
