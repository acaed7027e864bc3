package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/replay"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const model = "claude-sonnet-5-5"

// newTestProvider returns a provider that talks to srv, with one retry.
func newTestProvider(t *testing.T, srv *replay.Server, opts ...Option) *Provider {
	t.Helper()
	base := []Option{WithAPIKey("sk-ant-test"), WithBaseURL(srv.URL()), WithHTTPClient(srv.Client()), WithMaxRetries(1)}
	p, err := New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func fixture(name string) replay.Response {
	return replay.File(filepath.Join("testdata", "replay", name))
}

func weatherTool() harness.ToolDefinition {
	return harness.ToolDefinition{
		Name:        "get_weather",
		Description: "Report the current weather of a city.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"the city to report on"}},"required":["city"],"additionalProperties":false}`),
	}
}

func timeTool() harness.ToolDefinition {
	return harness.ToolDefinition{
		Name:        "get_time",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"zone":{"type":"string"}}}`),
	}
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

// checkGolden compares got with testdata/name, or rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// checkRequest compares the body of request i with a golden file and checks
// the headers every request carries.
func checkRequest(t *testing.T, srv *replay.Server, i int, golden string) {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) <= i {
		t.Fatalf("server got %d requests, want at least %d", len(reqs), i+1)
	}
	r := reqs[i]
	if r.Method != http.MethodPost || r.Path != "/v1/messages" {
		t.Errorf("request %d: %s %s, want POST /v1/messages", i, r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-ant-test" {
		t.Errorf("request %d: Authorization %q", i, got)
	}
	if got := r.Header.Get("Anthropic-Version"); got == "" {
		t.Errorf("request %d: no anthropic-version header", i)
	}
	if got := r.Header.Get("Traceparent"); got != "" {
		t.Errorf("request %d: SDK telemetry should be off, got traceparent %q", i, got)
	}
	body, err := replay.Indent(r.Body)
	if err != nil {
		t.Fatalf("request %d body is not JSON: %v\n%s", i, err, r.Body)
	}
	checkGolden(t, golden, body)
}

// responseJSON encodes a response for a golden file; FirstChunkAt is
// checked by the caller and left out.
func responseJSON(t *testing.T, r *harness.ModelResponse) []byte {
	t.Helper()
	c := *r
	c.FirstChunkAt = time.Time{}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func TestGenerate(t *testing.T) {
	temp := 0.2
	tests := []struct {
		name   string
		opts   []Option
		req    harness.ModelRequest
		script []replay.Response
		check  func(t *testing.T, r *harness.ModelResponse)
	}{
		{
			name:   "plain",
			req:    harness.ModelRequest{Model: model, System: "You are terse.", Messages: []harness.Message{harness.UserMessage("Hi")}},
			script: []replay.Response{fixture("plain.json")},
			check: func(t *testing.T, r *harness.ModelResponse) {
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
			name: "tool_use",
			req: harness.ModelRequest{Model: model, System: "Use tools.", MaxTokens: 1024, Temperature: &temp,
				Tools: []harness.ToolDefinition{weatherTool(), timeTool()}, Messages: []harness.Message{harness.UserMessage("Weather in Lisbon?")}},
			script: []replay.Response{fixture("tool_use.json")},
			check: func(t *testing.T, r *harness.ModelResponse) {
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
			name: "history_cached",
			opts: []Option{WithPromptCaching()},
			req: harness.ModelRequest{Model: model, System: "You are a weather assistant.",
				Tools: []harness.ToolDefinition{weatherTool(), timeTool()}, Messages: history()},
			script: []replay.Response{fixture("cached.json")},
			check: func(t *testing.T, r *harness.ModelResponse) {
				want := harness.Usage{InputTokens: 9 + 2048 + 120, OutputTokens: 10, CacheReadInputTokens: 2048, CacheCreationInputTokens: 120}
				if r.Usage != want {
					t.Errorf("usage %+v, want %+v", r.Usage, want)
				}
			},
		},
		{
			name:   "thinking",
			opts:   []Option{WithThinking(2048), WithDefaultMaxTokens(8192)},
			req:    harness.ModelRequest{Model: model, Tools: []harness.ToolDefinition{weatherTool()}, Messages: []harness.Message{harness.UserMessage("Weather in Lisbon?")}},
			script: []replay.Response{fixture("thinking.json")},
			check: func(t *testing.T, r *harness.ModelResponse) {
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
			name:   "refusal",
			req:    harness.ModelRequest{Model: model, Messages: []harness.Message{harness.UserMessage("Do something bad.")}},
			script: []replay.Response{fixture("refusal.json")},
			check: func(t *testing.T, r *harness.ModelResponse) {
				if r.StopReason != harness.StopRefusal || len(r.Message.Content) != 0 {
					t.Errorf("stop %q content %+v", r.StopReason, r.Message.Content)
				}
			},
		},
		{
			name:   "max_tokens",
			req:    harness.ModelRequest{Model: model, MaxTokens: 8, Messages: []harness.Message{harness.UserMessage("Tell me a story.")}},
			script: []replay.Response{fixture("max_tokens.json")},
			check: func(t *testing.T, r *harness.ModelResponse) {
				if r.StopReason != harness.StopMaxTokens {
					t.Errorf("stop %q", r.StopReason)
				}
			},
		},
		{
			name:   "stream_text",
			req:    harness.ModelRequest{Model: model, Stream: true, Messages: []harness.Message{harness.UserMessage("Say hello")}},
			script: []replay.Response{fixture("stream_text.sse")},
			check: func(t *testing.T, r *harness.ModelResponse) {
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
			name: "stream_tool",
			opts: []Option{WithAdaptiveThinking(), WithPromptCaching()},
			req: harness.ModelRequest{Model: model, Stream: true, System: "Use tools.", Tools: []harness.ToolDefinition{weatherTool()},
				Messages: []harness.Message{harness.UserMessage("Weather in Lisbon?")}},
			script: []replay.Response{fixture("stream_tool.sse")},
			check: func(t *testing.T, r *harness.ModelResponse) {
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
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := replay.New(tt.script...)
			defer srv.Close()
			p := newTestProvider(t, srv, tt.opts...)
			resp, err := p.Generate(context.Background(), &tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Provider != Name || resp.Model != model || resp.ID == "" {
				t.Errorf("provider %q model %q id %q", resp.Provider, resp.Model, resp.ID)
			}
			if resp.Message.Role != harness.RoleAssistant {
				t.Errorf("role %q", resp.Message.Role)
			}
			tt.check(t, resp)
			checkRequest(t, srv, 0, tt.name+".request.json")
			checkGolden(t, tt.name+".response.json", responseJSON(t, resp))
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

// TestThinkingRoundTrip sends a thinking reply back, as the engine does
// with tool results: the signed thinking and the redacted block must return
// unchanged, which the golden request shows. The signature travels in the
// parts' ProviderData, so a second Provider value, which never saw the
// reply, sends the same body.
func TestThinkingRoundTrip(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			first := fixture("thinking.json")
			if stream {
				first = fixture("stream_tool.sse")
			}
			srv := replay.New(first, fixture("final.json"))
			defer srv.Close()
			p := newTestProvider(t, srv, WithThinking(1024))
			req := &harness.ModelRequest{Model: model, Stream: stream, Tools: []harness.ToolDefinition{weatherTool()},
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
			checkRequest(t, srv, 1, fmt.Sprintf("thinking_roundtrip_stream_%v.request.json", stream))

			srv2 := replay.New(fixture("final.json"))
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
			blocks := p.blocks(&m)
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
	if blocks := p.blocks(&m); len(blocks) != 1 || blocks[0].OfText == nil {
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
func TestProviderName(t *testing.T) {
	srv := replay.New(fixture("plain.json"))
	defer srv.Close()
	p := newTestProvider(t, srv)
	var n harness.ProviderNamer = p
	if got := n.ProviderName(); got != "anthropic" {
		t.Errorf("ProviderName() = %q", got)
	}
	rec := &requestRecorder{}
	agent, err := harness.New(harness.WithProvider(p), harness.WithModel(model), harness.WithMiddleware(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close(context.Background())
	if _, err := agent.Run(context.Background(), "Hi"); err != nil {
		t.Fatal(err)
	}
	if len(rec.providers) != 1 || rec.providers[0] != Name {
		t.Errorf("ModelRequest.Provider %q, want [%q]", rec.providers, Name)
	}
}

// requestRecorder is a middleware that notes ModelRequest.Provider.
type requestRecorder struct{ providers []string }

func (r *requestRecorder) BeforeModelRequest(_ context.Context, req *harness.ModelRequest) error {
	r.providers = append(r.providers, req.Provider)
	return nil
}

func TestErrors(t *testing.T) {
	authBody := `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_011Auth"}`
	badBody := `{"type":"error","error":{"type":"invalid_request_error","message":"messages: at least one message is required"},"request_id":"req_011Bad"}`
	rateBody := `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`
	overBody := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	fast := map[string]string{"retry-after-ms": "1"}
	streamed := fixture("stream_tool.sse").Body

	tests := []struct {
		name      string
		stream    bool
		script    []replay.Response
		requests  int
		sentinel  error
		status    int
		errType   string
		retryable bool
		reason    string // StreamError reason
	}{
		{name: "401", script: []replay.Response{replay.Status(401, authBody, nil)}, requests: 1,
			sentinel: ErrAuthentication, status: 401, errType: "authentication_error"},
		{name: "403", script: []replay.Response{replay.Status(403, `{"type":"error","error":{"type":"permission_error","message":"no access to model"}}`, nil)}, requests: 1,
			sentinel: ErrAuthentication, status: 403, errType: "permission_error"},
		{name: "400", script: []replay.Response{replay.Status(400, badBody, nil)}, requests: 1,
			sentinel: ErrInvalidRequest, status: 400, errType: "invalid_request_error"},
		{name: "429 twice", script: []replay.Response{replay.Status(429, rateBody, fast), replay.Status(429, rateBody, fast)}, requests: 2,
			sentinel: ErrRateLimited, status: 429, errType: "rate_limit_error", retryable: true},
		{name: "529 twice", script: []replay.Response{replay.Status(529, overBody, fast), replay.Status(529, overBody, fast)}, requests: 2,
			sentinel: ErrServer, status: 529, errType: "overloaded_error", retryable: true},
		{name: "stream 401", stream: true, script: []replay.Response{replay.Status(401, authBody, nil)}, requests: 1,
			sentinel: ErrAuthentication, status: 401, errType: "authentication_error"},
		{name: "stream cut before message_delta", stream: true,
			script:   []replay.Response{{Body: replay.Truncate(streamed, "event: message_delta")}},
			requests: 1, sentinel: ErrStream, retryable: true, reason: "stream ended without message_stop"},
		{name: "stream cut mid block", stream: true,
			script:   []replay.Response{{Body: replay.Truncate(streamed, `"partial_json":"bon`)}},
			requests: 1, sentinel: ErrStream, retryable: true, reason: "stream ended without message_stop"},
		{name: "stream empty", stream: true, script: []replay.Response{{Body: []byte("event: ping\ndata: {\"type\": \"ping\"}\n\n"), ContentType: "text/event-stream"}},
			requests: 1, sentinel: ErrStream, retryable: true, reason: "stream ended without message_start"},
		{name: "stream bad json", stream: true, script: []replay.Response{fixture("stream_bad_json.sse")},
			requests: 1, sentinel: ErrStream, retryable: true, reason: "malformed event data"},
		{name: "stream bad tool json", stream: true,
			script:   []replay.Response{{Body: bytes.Replace(streamed, []byte(`bon\"}`), []byte(`bon\"`), 1)}},
			requests: 1, sentinel: ErrStream, retryable: true, reason: "input JSON does not parse"},
		{name: "stream error event", stream: true, script: []replay.Response{fixture("stream_error_event.sse")},
			requests: 1, sentinel: ErrServer, errType: "overloaded_error", retryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := replay.New(tt.script...)
			defer srv.Close()
			p := newTestProvider(t, srv)
			_, err := p.Generate(context.Background(), &harness.ModelRequest{Model: model, Stream: tt.stream,
				Messages: []harness.Message{harness.UserMessage("Hi")}})
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("error %v does not match %v", err, tt.sentinel)
			}
			var re harness.RetryableError
			if !errors.As(err, &re) || re.Retryable() != tt.retryable {
				t.Errorf("retryable: %v, want %v (%T)", re != nil && re.Retryable(), tt.retryable, err)
			}
			if tt.sentinel == ErrStream {
				var se *StreamError
				if !errors.As(err, &se) || !strings.Contains(se.Reason, tt.reason) {
					t.Errorf("error %v, want a StreamError with reason %q", err, tt.reason)
				}
			} else {
				var ae *APIError
				if !errors.As(err, &ae) {
					t.Fatalf("error %T %v is not an *APIError", err, err)
				}
				if ae.StatusCode != tt.status || ae.Type != tt.errType || ae.Message == "" || ae.Provider != Name {
					t.Errorf("APIError %+v", ae)
				}
			}
			if n := len(srv.Requests()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
		})
	}
}

// TestRetryThenSuccess: a 429 is retried by the SDK, honouring
// retry-after-ms, and the second answer is returned.
func TestRetryThenSuccess(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			ok := fixture("plain.json")
			if stream {
				ok = fixture("stream_text.sse")
			}
			srv := replay.New(replay.Status(429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
				map[string]string{"retry-after-ms": "1"}), ok)
			defer srv.Close()
			p := newTestProvider(t, srv)
			resp, err := p.Generate(context.Background(), &harness.ModelRequest{Model: model, Stream: stream, Messages: []harness.Message{harness.UserMessage("Hi")}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Text() == "" {
				t.Error("empty reply")
			}
			reqs := srv.Requests()
			if len(reqs) != 2 || !bytes.Equal(reqs[0].Body, reqs[1].Body) {
				t.Errorf("%d requests; the retry must resend the same body", len(reqs))
			}
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := replay.New()
	url := srv.URL()
	srv.Close()
	p, err := New(WithAPIKey("k"), WithBaseURL(url), WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Generate(context.Background(), &harness.ModelRequest{Model: model, Messages: []harness.Message{harness.UserMessage("Hi")}})
	var ce *ConnectionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrConnection) || !ce.Retryable() {
		t.Errorf("error %T %v, want a retryable *ConnectionError", err, err)
	}
}

// TestCancel cancels a request the server holds open, streamed or not.
func TestCancel(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			arrived := make(chan struct{}, 1)
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(200)
				// A stream that has started: the cancel must cut it.
				fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"x\",\"usage\":{\"input_tokens\":1}}}\n\n")
				w.(http.Flusher).Flush()
				arrived <- struct{}{}
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}))
			defer srv.Close()
			defer close(release)
			p, err := New(WithAPIKey("k"), WithBaseURL(srv.URL), WithHTTPClient(srv.Client()), WithMaxRetries(0))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-arrived
				cancel()
			}()
			done := make(chan error, 1)
			go func() {
				_, err := p.Generate(ctx, &harness.ModelRequest{Model: model, Stream: stream, Messages: []harness.Message{harness.UserMessage("Hi")}})
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("error %v, want context.Canceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Generate did not return after cancel")
			}
		})
	}
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
	tests := []struct {
		name string
		req  harness.ModelRequest
	}{
		{"no model", harness.ModelRequest{Messages: []harness.Message{harness.UserMessage("Hi")}}},
		{"no messages", harness.ModelRequest{Model: model}},
		{"only empty text", harness.ModelRequest{Model: model, Messages: []harness.Message{harness.UserMessage("")}}},
		{"bad role", harness.ModelRequest{Model: model, Messages: []harness.Message{{Role: "system", Content: []harness.Part{{Type: harness.PartText, Text: "x"}}}}}},
		{"bad schema", harness.ModelRequest{Model: model, Messages: []harness.Message{harness.UserMessage("Hi")},
			Tools: []harness.ToolDefinition{{Name: "t", InputSchema: json.RawMessage(`[1,2]`)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.Generate(context.Background(), &tt.req)
			if !errors.Is(err, ErrInvalidRequest) {
				t.Errorf("error %v, want ErrInvalidRequest", err)
			}
		})
	}
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
			blocks := p.blocks(&m)
			if len(blocks) != 1 || blocks[0].OfToolUse == nil {
				t.Fatalf("blocks %+v", blocks)
			}
			if got := string(blocks[0].OfToolUse.Input.(json.RawMessage)); got != tt.want {
				t.Errorf("input %s, want %s", got, tt.want)
			}
		})
	}
}
