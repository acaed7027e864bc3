package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"go.uber.org/goleak"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/provtest"
	"github.com/harnessx/harnessx/providers/internal/replay"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const model = "claude-sonnet-5-5"

// endpoint is what every request of the test provider must look like.
var endpoint = provtest.Endpoint{
	Path:   "/v1/messages",
	APIKey: "sk-ant-test",
	Header: func(t *testing.T, i int, h http.Header) {
		t.Helper()
		if got := h.Get("Anthropic-Version"); got == "" {
			t.Errorf("request %d: no anthropic-version header", i)
		}
		if got := h.Get("Traceparent"); got != "" {
			t.Errorf("request %d: SDK telemetry should be off, got traceparent %q", i, got)
		}
	},
}

// newTestProvider returns a provider that talks to srv, with one retry.
func newTestProvider(t *testing.T, srv *replay.Server, opts ...Option) *Provider {
	t.Helper()
	base := []Option{WithAPIKey(endpoint.APIKey), WithBaseURL(srv.URL()), WithHTTPClient(srv.Client()), WithMaxRetries(1)}
	p, err := New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// serve is newTestProvider without options, for the shared drivers.
func serve(t *testing.T, srv *replay.Server) harness.Provider { return newTestProvider(t, srv) }

// dial returns a provider that sends to baseURL with hc and no retries.
func dial(baseURL string, hc *http.Client) (harness.Provider, error) {
	return New(WithAPIKey("k"), WithBaseURL(baseURL), WithHTTPClient(hc), WithMaxRetries(0))
}

// history is a conversation with a tool round trip, an error result and a
// new user question: the shape the engine sends on a second turn.
func history() []harness.Message {
	return []harness.Message{
		harness.UserMessage("What's the weather in Lisbon and the time in Tokyo?"),
		{Role: harness.RoleAssistant, Content: []harness.Part{
			{Type: harness.PartText, Text: "Let me check both."},
			{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "toolu_A", Name: "get_weather", Input: json.RawMessage(`{"city":"Lisbon"}`)}},
			{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "toolu_B", Name: "get_time", Input: json.RawMessage(`{"zone":"Asia/Tokyo"}`)}},
		}},
		{Role: harness.RoleTool, Content: []harness.Part{
			{Type: harness.PartToolResult, ToolResult: &harness.ToolResult{CallID: "toolu_A", Name: "get_weather", Content: "Lisbon: 18°C, light rain"}},
			{Type: harness.PartToolResult, ToolResult: &harness.ToolResult{CallID: "toolu_B", Name: "get_time", Content: "clock service unavailable", IsError: true, Status: harness.ToolError}},
		}},
		harness.AssistantMessage("Lisbon: 18°C and light rain. I could not get the time in Tokyo."),
		harness.UserMessage("And tomorrow?"),
	}
}

func TestGenerate(t *testing.T) {
	temp := 0.2
	tests := []provtest.GenerateCase[Option]{
		{
			Name:   "plain",
			Req:    harness.ModelRequest{Model: model, System: "You are terse.", Messages: []harness.Message{harness.UserMessage("Hi")}},
			Script: []replay.Response{provtest.Fixture("plain.json")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				if r.Message.Text() != "Hello! How can I help you today?" || r.StopReason != harness.StopEndTurn {
					t.Errorf("text %q stop %q", r.Message.Text(), r.StopReason)
				}
				if r.Usage != (harness.Usage{InputTokens: 21, OutputTokens: 12}) {
					t.Errorf("usage %+v", r.Usage)
				}
				if !r.FirstChunkAt.IsZero() {
					t.Error("FirstChunkAt set on a non-streamed reply")
				}
			},
		},
		{
			Name: "tool_use",
			Req: harness.ModelRequest{Model: model, System: "Use tools.", MaxTokens: 1024, Temperature: &temp,
				Tools: []harness.ToolDefinition{provtest.WeatherTool(), provtest.TimeTool()}, Messages: []harness.Message{harness.UserMessage("Weather in Lisbon?")}},
			Script: []replay.Response{provtest.Fixture("tool_use.json")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				calls := r.Message.ToolCalls()
				if len(calls) != 1 || calls[0].ID != "toolu_01Weather" || calls[0].Name != "get_weather" || string(calls[0].Input) != `{"city": "Lisbon"}` {
					t.Errorf("calls %+v", calls)
				}
				if r.StopReason != harness.StopToolUse || r.RawStopReason != "tool_use" {
					t.Errorf("stop %q raw %q", r.StopReason, r.RawStopReason)
				}
			},
		},
		{
			Name: "history_cached",
			Opts: []Option{WithPromptCaching()},
			Req: harness.ModelRequest{Model: model, System: "You are a weather assistant.",
				Tools: []harness.ToolDefinition{provtest.WeatherTool(), provtest.TimeTool()}, Messages: history()},
			Script: []replay.Response{provtest.Fixture("cached.json")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				want := harness.Usage{InputTokens: 9 + 2048 + 120, OutputTokens: 10, CacheReadInputTokens: 2048, CacheCreationInputTokens: 120}
				if r.Usage != want {
					t.Errorf("usage %+v, want %+v", r.Usage, want)
				}
			},
		},
		{
			Name:   "thinking",
			Opts:   []Option{WithThinking(2048), WithDefaultMaxTokens(8192)},
			Req:    harness.ModelRequest{Model: model, Tools: []harness.ToolDefinition{provtest.WeatherTool()}, Messages: []harness.Message{harness.UserMessage("Weather in Lisbon?")}},
			Script: []replay.Response{provtest.Fixture("thinking.json")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				c := r.Message.Content
				if len(c) != 3 || c[0].Type != harness.PartReasoning || c[1].Type != harness.PartReasoning || c[2].Type != harness.PartToolCall {
					t.Fatalf("content %+v", c)
				}
				if got := string(c[0].ProviderData); got != `{"provider":"anthropic","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}` {
					t.Errorf("thinking provider data %s", got)
				}
				if c[1].Text != redactedThinkingText {
					t.Errorf("redacted part text %q", c[1].Text)
				}
				if got := string(c[1].ProviderData); got != `{"provider":"anthropic","redacted_data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}` {
					t.Errorf("redacted provider data %s", got)
				}
				if c[2].ProviderData != nil {
					t.Errorf("tool call provider data %s", c[2].ProviderData)
				}
				if r.Usage.ReasoningTokens != 41 || r.Usage.OutputTokens != 96 {
					t.Errorf("usage %+v", r.Usage)
				}
			},
		},
		{
			Name:   "refusal",
			Req:    harness.ModelRequest{Model: model, Messages: []harness.Message{harness.UserMessage("Do something bad.")}},
			Script: []replay.Response{provtest.Fixture("refusal.json")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				if r.StopReason != harness.StopRefusal || len(r.Message.Content) != 0 {
					t.Errorf("stop %q content %+v", r.StopReason, r.Message.Content)
				}
			},
		},
		{
			Name:   "max_tokens",
			Req:    harness.ModelRequest{Model: model, MaxTokens: 8, Messages: []harness.Message{harness.UserMessage("Tell me a story.")}},
			Script: []replay.Response{provtest.Fixture("max_tokens.json")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				if r.StopReason != harness.StopMaxTokens {
					t.Errorf("stop %q", r.StopReason)
				}
			},
		},
		{
			Name:   "stream_text",
			Req:    harness.ModelRequest{Model: model, Stream: true, Messages: []harness.Message{harness.UserMessage("Say hello")}},
			Script: []replay.Response{provtest.Fixture("stream_text.sse")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				if r.Message.Text() != "Hello, world!" || r.StopReason != harness.StopEndTurn {
					t.Errorf("text %q stop %q", r.Message.Text(), r.StopReason)
				}
				want := harness.Usage{InputTokens: 25 + 1800, OutputTokens: 15, CacheReadInputTokens: 1800}
				if r.Usage != want {
					t.Errorf("usage %+v, want %+v", r.Usage, want)
				}
				if r.FirstChunkAt.IsZero() {
					t.Error("FirstChunkAt not set on a streamed reply")
				}
			},
		},
		{
			Name: "stream_tool",
			Opts: []Option{WithAdaptiveThinking(), WithPromptCaching()},
			Req: harness.ModelRequest{Model: model, Stream: true, System: "Use tools.", Tools: []harness.ToolDefinition{provtest.WeatherTool()},
				Messages: []harness.Message{harness.UserMessage("Weather in Lisbon?")}},
			Script: []replay.Response{provtest.Fixture("stream_tool.sse")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				c := r.Message.Content
				if len(c) != 3 || c[0].Text != "I need the weather for Lisbon." || c[1].Text != "Checking." {
					t.Fatalf("content %+v", c)
				}
				if got := string(c[0].ProviderData); got != `{"provider":"anthropic","signature":"EqQBCgIYAhIMStreamSig"}` {
					t.Errorf("streamed signature: provider data %s", got)
				}
				if c[1].ProviderData != nil {
					t.Errorf("text part provider data %s", c[1].ProviderData)
				}
				if tc := c[2].ToolCall; tc == nil || tc.ID != "toolu_01Stream" || string(tc.Input) != `{"city": "Lisbon"}` {
					t.Errorf("tool call %+v", tc)
				}
				want := harness.Usage{InputTokens: 472 + 400, OutputTokens: 89, CacheCreationInputTokens: 400, ReasoningTokens: 12}
				if r.Usage != want {
					t.Errorf("usage %+v, want %+v", r.Usage, want)
				}
				if r.FirstChunkAt.IsZero() {
					t.Error("FirstChunkAt not set")
				}
			},
		},
	}
	provtest.Generate(t, Name, endpoint, tests, newTestProvider, func(got, _ string) bool { return got == model })
}

// TestThinkingRoundTrip sends a thinking reply back, as the engine does
// with tool results: the signed thinking and the redacted block must return
// unchanged, which the golden request shows. The signature travels in the
// parts' ProviderData, so a second Provider value, which never saw the
// reply, sends the same body.
func TestThinkingRoundTrip(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			first := provtest.Fixture("thinking.json")
			if stream {
				first = provtest.Fixture("stream_tool.sse")
			}
			srv := replay.New(first, provtest.Fixture("final.json"))
			defer srv.Close()
			p := newTestProvider(t, srv, WithThinking(1024))
			req := &harness.ModelRequest{Model: model, Stream: stream, Tools: []harness.ToolDefinition{provtest.WeatherTool()},
				Messages: []harness.Message{harness.UserMessage("Weather in Lisbon?")}}
			resp, err := p.Generate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			call := resp.Message.ToolCalls()[0]
			req.Stream = false
			req.Messages = append(req.Messages, resp.Message, harness.Message{Role: harness.RoleTool, Content: []harness.Part{
				{Type: harness.PartToolResult, ToolResult: &harness.ToolResult{CallID: call.ID, Name: call.Name, Content: "18°C"}},
			}})
			if _, err := p.Generate(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			endpoint.CheckRequest(t, srv, 1, fmt.Sprintf("thinking_roundtrip_stream_%v.request.json", stream))

			srv2 := replay.New(provtest.Fixture("final.json"))
			defer srv2.Close()
			other := newTestProvider(t, srv2, WithThinking(1024))
			if _, err := other.Generate(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if got, want := srv2.Requests()[0].Body, srv.Requests()[1].Body; !bytes.Equal(got, want) {
				t.Errorf("a new provider sent a different body:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestReasoningLeftOut: a reasoning part that carries no usable
// ProviderData of this provider is left out of the request, since the API
// rejects unsigned thinking; the rest of the message goes as it is.
func TestReasoningLeftOut(t *testing.T) {
	p, err := New(WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data string
	}{
		{"none", ``},
		{"null", `null`},
		{"not an object", `"EqQBCgIYAh"`},
		{"another provider", `{"provider":"gemini","signature":"EqQBCgIYAh"}`},
		{"no provider", `{"signature":"EqQBCgIYAh"}`},
		{"empty", `{"provider":"anthropic"}`},
		{"wrong types", `{"provider":"anthropic","signature":7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := harness.Message{Role: harness.RoleAssistant, Content: []harness.Part{
				{Type: harness.PartReasoning, Text: "I should check.", ProviderData: json.RawMessage(tt.data)},
				{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "t", Name: "f", Input: json.RawMessage(`{}`)}},
			}}
			blocks, _ := p.blocks(model, 0, &m, nil)
			if len(blocks) != 1 || blocks[0].OfToolUse == nil {
				t.Errorf("blocks %+v, want only the tool_use", blocks)
			}
		})
	}

	// Reasoning in a user message is never sent, signed or not.
	m := harness.Message{Role: harness.RoleUser, Content: []harness.Part{
		{Type: harness.PartReasoning, Text: "x", ProviderData: signedThinking("sig")},
		{Type: harness.PartText, Text: "Hi"},
	}}
	if blocks, _ := p.blocks(model, 0, &m, nil); len(blocks) != 1 || blocks[0].OfText == nil {
		t.Errorf("user message blocks %+v", blocks)
	}
}

// TestThinkingData: the ProviderData the provider writes reads back the
// same.
func TestThinkingData(t *testing.T) {
	if signedThinking("") != nil || redactedThinking("") != nil {
		t.Error("provider data for an empty signature or redacted block")
	}
	for _, raw := range []json.RawMessage{signedThinking("Eq+/=\"\u2028<>&"), redactedThinking("Em+/==")} {
		if !json.Valid(raw) {
			t.Fatalf("invalid JSON %s", raw)
		}
		d, err := decodeThinking(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if d.Signature != "Eq+/=\"\u2028<>&" && d.RedactedData != "Em+/==" {
			t.Errorf("%s decoded to %+v", raw, d)
		}
	}
}

// TestProviderName: the provider names itself, and the engine passes the
// name on in ModelRequest.Provider.
func TestProviderName(t *testing.T) { provtest.ProviderName(t, Name, model, serve) }

func TestErrors(t *testing.T) {
	authBody := `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_011Auth"}`
	badBody := `{"type":"error","error":{"type":"invalid_request_error","message":"messages: at least one message is required"},"request_id":"req_011Bad"}`
	rateBody := `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`
	overBody := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	fast := map[string]string{"retry-after-ms": "1"}
	streamed := provtest.Fixture("stream_tool.sse").Body

	tests := []provtest.ErrorCase{
		{Name: "401", Script: []replay.Response{replay.Status(401, authBody, nil)}, Requests: 1,
			Sentinel: ErrAuthentication, Status: 401, ErrType: "authentication_error"},
		{Name: "403", Script: []replay.Response{replay.Status(403, `{"type":"error","error":{"type":"permission_error","message":"no access to model"}}`, nil)}, Requests: 1,
			Sentinel: ErrAuthentication, Status: 403, ErrType: "permission_error"},
		{Name: "400", Script: []replay.Response{replay.Status(400, badBody, nil)}, Requests: 1,
			Sentinel: ErrInvalidRequest, Status: 400, ErrType: "invalid_request_error"},
		{Name: "429 twice", Script: []replay.Response{replay.Status(429, rateBody, fast), replay.Status(429, rateBody, fast)}, Requests: 2,
			Sentinel: ErrRateLimited, Status: 429, ErrType: "rate_limit_error", Retryable: true},
		{Name: "529 twice", Script: []replay.Response{replay.Status(529, overBody, fast), replay.Status(529, overBody, fast)}, Requests: 2,
			Sentinel: ErrServer, Status: 529, ErrType: "overloaded_error", Retryable: true},
		{Name: "stream 401", Stream: true, Script: []replay.Response{replay.Status(401, authBody, nil)}, Requests: 1,
			Sentinel: ErrAuthentication, Status: 401, ErrType: "authentication_error"},
		{Name: "stream cut before message_delta", Stream: true,
			Script:   []replay.Response{{Body: replay.Truncate(streamed, "event: message_delta")}},
			Requests: 1, Sentinel: ErrStream, Retryable: true, Reason: "stream ended without message_stop"},
		{Name: "stream cut mid block", Stream: true,
			Script:   []replay.Response{{Body: replay.Truncate(streamed, `"partial_json":"bon`)}},
			Requests: 1, Sentinel: ErrStream, Retryable: true, Reason: "stream ended without message_stop"},
		{Name: "stream empty", Stream: true, Script: []replay.Response{{Body: []byte("event: ping\ndata: {\"type\": \"ping\"}\n\n"), ContentType: "text/event-stream"}},
			Requests: 1, Sentinel: ErrStream, Retryable: true, Reason: "stream ended without message_start"},
		{Name: "stream bad json", Stream: true, Script: []replay.Response{provtest.Fixture("stream_bad_json.sse")},
			Requests: 1, Sentinel: ErrStream, Retryable: true, Reason: "malformed event data"},
		{Name: "stream bad tool json", Stream: true,
			Script:   []replay.Response{{Body: bytes.Replace(streamed, []byte(`bon\"}`), []byte(`bon\"`), 1)}},
			Requests: 1, Sentinel: ErrStream, Retryable: true, Reason: "input JSON does not parse"},
		{Name: "stream error event", Stream: true, Script: []replay.Response{provtest.Fixture("stream_error_event.sse")},
			Requests: 1, Sentinel: ErrServer, ErrType: "overloaded_error", Retryable: true},
	}
	provtest.Errors(t, Name, model, tests, serve)
}

// TestRetryThenSuccess: a 429 is retried by the SDK, honouring
// retry-after-ms, and the second answer is returned.
func TestRetryThenSuccess(t *testing.T) {
	provtest.RetryThenSuccess(t, model, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, serve)
}

func TestConnectionRefused(t *testing.T) {
	provtest.ConnectionRefused(t, model, []bool{false}, dial)
}

// TestCancel cancels a request the server holds open, streamed or not.
func TestCancel(t *testing.T) {
	provtest.Cancel(t, model, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"x\",\"usage\":{\"input_tokens\":1}}}\n\n", dial)
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
	}{
		{"negative retries", []Option{WithMaxRetries(-1)}},
		{"zero max tokens", []Option{WithDefaultMaxTokens(0)}},
		{"zero thinking budget", []Option{WithThinking(0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.opts...); err == nil {
				t.Error("New accepted bad options")
			}
		})
	}
}

func TestInvalidRequests(t *testing.T) {
	p, err := New(WithAPIKey("k"), WithBaseURL("http://127.0.0.1:1/"))
	if err != nil {
		t.Fatal(err)
	}
	provtest.InvalidRequests(t, p, []provtest.RequestCase{
		{Name: "no model", Req: harness.ModelRequest{Messages: []harness.Message{harness.UserMessage("Hi")}}},
		{Name: "no messages", Req: harness.ModelRequest{Model: model}},
		{Name: "only empty text", Req: harness.ModelRequest{Model: model, Messages: []harness.Message{harness.UserMessage("")}}},
		{Name: "bad role", Req: harness.ModelRequest{Model: model, Messages: []harness.Message{{Role: "system", Content: []harness.Part{{Type: harness.PartText, Text: "x"}}}}}},
		{Name: "bad schema", Req: harness.ModelRequest{Model: model, Messages: []harness.Message{harness.UserMessage("Hi")},
			Tools: []harness.ToolDefinition{{Name: "t", InputSchema: json.RawMessage(`[1,2]`)}}}},
	})
}

// TestToolInputSentAsObject: the API takes only an object as tool_use
// input, so anything else (malformed arguments kept as a JSON string, or
// nothing) goes back as {}.
func TestToolInputSentAsObject(t *testing.T) {
	p, err := New(WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{`{"city":"Lisbon"}`, `{"city":"Lisbon"}`},
		{` {"a":1}`, ` {"a":1}`},
		{`"{\"city\":\"Lis"`, `{}`},
		{``, `{}`},
		{`[1]`, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			m := harness.Message{Role: harness.RoleAssistant, Content: []harness.Part{
				{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "t", Name: "f", Input: json.RawMessage(tt.in)}},
			}}
			blocks, _ := p.blocks(model, 0, &m, nil)
			if len(blocks) != 1 || blocks[0].OfToolUse == nil {
				t.Fatalf("blocks %+v", blocks)
			}
			if got := string(blocks[0].OfToolUse.Input.(json.RawMessage)); got != tt.want {
				t.Errorf("input %s, want %s", got, tt.want)
			}
		})
	}
}
