package provtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/replay"
)

// GenerateCase is one request to a provider built with Opts, answered with
// Script. Its request body must match testdata/<Name>.request.json and its
// response testdata/<Name>.response.json.
type GenerateCase[O any] struct {
	Name   string
	Opts   []O
	Req    harness.ModelRequest
	Script []replay.Response
	// Check makes the case's own assertions on the response.
	Check func(t *testing.T, r *harness.ModelResponse)
}

// Generate runs each case against a replay server with a provider from
// newProvider. Every response must come from provider, with an ID, a model
// that modelOK accepts (given the response's and the request's model) and
// the assistant role; exactly one request must reach the server, as ep
// describes.
func Generate[O any, P harness.Provider](t *testing.T, provider string, ep Endpoint, cases []GenerateCase[O],
	newProvider func(t *testing.T, srv *replay.Server, opts ...O) P, modelOK func(got, requested string) bool) {
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			srv := replay.New(tt.Script...)
			defer srv.Close()
			p := newProvider(t, srv, tt.Opts...)
			resp, err := p.Generate(context.Background(), &tt.Req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Provider != provider || !modelOK(resp.Model, tt.Req.Model) || resp.ID == "" {
				t.Errorf("provider %q model %q id %q", resp.Provider, resp.Model, resp.ID)
			}
			if resp.Message.Role != harness.RoleAssistant {
				t.Errorf("role %q", resp.Message.Role)
			}
			tt.Check(t, resp)
			ep.CheckRequest(t, srv, 0, tt.Name+".request.json")
			CheckGolden(t, tt.Name+".response.json", ResponseJSON(t, resp))
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

// AgentRoundTrip describes a full harness agent run against the loopback
// server, streamed and not: the model calls get_weather (tool_use.json or
// stream_tool.sse), the engine runs it and sends the results back, the
// model answers (final.json or stream_final.sse).
type AgentRoundTrip struct {
	Model string
	// Endpoint checks the second request against
	// testdata/agent_step2_stream_<stream>.request.json.
	Endpoint Endpoint
	// Serve builds the provider, with the options the goldens expect.
	Serve Serve
	// Calls is how many tool calls the model makes in the step.
	Calls func(stream bool) int
	// Usage is the run's total usage.
	Usage func(stream bool) harness.Usage
}

// Run runs the agent and checks its result: completed in two steps with
// the recorded answer, the tool results, the usage and the second request.
func (a AgentRoundTrip) Run(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			first, second := Fixture("tool_use.json"), Fixture("final.json")
			if stream {
				first, second = Fixture("stream_tool.sse"), Fixture("stream_final.sse")
			}
			srv := replay.New(first, second)
			defer srv.Close()
			agent, err := harness.New(
				harness.WithProvider(a.Serve(t, srv)),
				harness.WithModel(a.Model),
				harness.WithSystemPrompt("You are a concise weather assistant. Use get_weather."),
				harness.WithTools(Weather()),
				harness.WithStreaming(stream),
			)
			if err != nil {
				t.Fatal(err)
			}
			defer agent.Close(context.Background())
			res, err := agent.Run(context.Background(), "What's the weather in Lisbon?")
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != harness.StatusCompleted || res.Steps != 2 {
				t.Fatalf("status %s steps %d err %v", res.Status, res.Steps, res.Err)
			}
			if res.Text != "Lisbon is at 18°C with light rain — take an umbrella." {
				t.Errorf("text %q", res.Text)
			}
			// messages: user, assistant(tool calls), tool(results), assistant
			if len(res.Messages) != 4 || res.Messages[2].Role != harness.RoleTool || len(res.Messages[2].Content) != a.Calls(stream) {
				t.Fatalf("messages %+v", res.Messages)
			}
			if tr := res.Messages[2].Content[0].ToolResult; tr.Content != "Lisbon: 18°C, light rain" || tr.IsError {
				t.Errorf("tool result %+v", tr)
			}
			if want := a.Usage(stream); res.Usage != want {
				t.Errorf("usage %+v, want %+v", res.Usage, want)
			}
			a.Endpoint.CheckRequest(t, srv, 1, fmt.Sprintf("agent_step2_stream_%v.request.json", stream))
		})
	}
}
