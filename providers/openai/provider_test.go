package openai

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/provtest"
	"github.com/harnessx/harnessx/providers/internal/replay"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const model = "gpt-5.4-mini"

// endpoint is what every request of the test provider must look like.
var endpoint = provtest.Endpoint{Path: "/chat/completions", APIKey: "sk-test"}

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

// history is a conversation with a tool round trip, an error result, a
// reasoning part and a new user question.
func history() []harness.Message {
	return []harness.Message{
		{Role: harness.RoleUser, Content: []harness.Part{
			{Type: harness.PartText, Text: "What's the weather in Lisbon"},
			{Type: harness.PartText, Text: "and the time in Tokyo?"},
		}},
		{Role: harness.RoleAssistant, Content: []harness.Part{
			{Type: harness.PartReasoning, Text: "Two tools are needed."},
			{Type: harness.PartText, Text: "Let me check both."},
			{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "call_A", Name: "get_weather", Input: json.RawMessage(`{"city":"Lisbon"}`)}},
			{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "call_B", Name: "get_time", Input: json.RawMessage(`{"zone":"Asia/Tokyo"}`)}},
		}},
		{Role: harness.RoleTool, Content: []harness.Part{
			{Type: harness.PartToolResult, ToolResult: &harness.ToolResult{CallID: "call_A", Name: "get_weather", Content: "Lisbon: 18°C, light rain"}},
			{Type: harness.PartToolResult, ToolResult: &harness.ToolResult{CallID: "call_B", Name: "get_time", Content: "clock service unavailable", IsError: true, Status: harness.ToolError}},
		}},
		harness.AssistantMessage("Lisbon: 18°C and light rain. I could not get the time in Tokyo."),
		harness.UserMessage("And tomorrow?"),
	}
}

func TestGenerate(t *testing.T) {
	temp := 0.2
	key := harness.PrefixKey{Key: sha256.Sum256([]byte("prefix"))}
	tests := []provtest.GenerateCase[Option]{
		{
			Name:   "plain",
			Req:    harness.ModelRequest{Model: model, System: "You are terse.", Messages: []harness.Message{harness.UserMessage("Hi")}},
			Script: []replay.Response{provtest.Fixture("plain.json")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				if r.Message.Text() != "Hello! How can I help you today?" || r.StopReason != harness.StopEndTurn || r.RawStopReason != "stop" {
					t.Errorf("text %q stop %q raw %q", r.Message.Text(), r.StopReason, r.RawStopReason)
				}
				if r.Usage != (harness.Usage{InputTokens: 19, OutputTokens: 10}) {
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
				if len(calls) != 1 || calls[0].ID != "call_Weather01" || calls[0].Name != "get_weather" || string(calls[0].Input) != `{"city":"Lisbon"}` {
					t.Errorf("calls %+v", calls)
				}
				if r.Message.Text() != "Let me check the weather." || r.StopReason != harness.StopToolUse {
					t.Errorf("text %q stop %q", r.Message.Text(), r.StopReason)
				}
			},
		},
		{
			Name: "history_cached",
			Opts: []Option{WithPromptCacheKey()},
			Req: harness.ModelRequest{Model: model, System: "You are a weather assistant.", PrefixKey: key,
				Tools: []harness.ToolDefinition{provtest.WeatherTool(), provtest.TimeTool()}, Messages: history()},
			Script: []replay.Response{provtest.Fixture("cached.json")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				want := harness.Usage{InputTokens: 2300, OutputTokens: 8, CacheReadInputTokens: 2048, CacheCreationInputTokens: 128}
				if r.Usage != want {
					t.Errorf("usage %+v, want %+v", r.Usage, want)
				}
			},
		},
		{
			Name:   "reasoning",
			Opts:   []Option{WithReasoningEffort("high")},
			Req:    harness.ModelRequest{Model: "gpt-5.4", Messages: []harness.Message{harness.UserMessage("Is 17 prime?")}},
			Script: []replay.Response{provtest.Fixture("reasoning.json")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				if r.Usage != (harness.Usage{InputTokens: 30, OutputTokens: 240, ReasoningTokens: 192}) {
					t.Errorf("usage %+v", r.Usage)
				}
			},
		},
		{
			Name:   "reasoning_content",
			Req:    harness.ModelRequest{Model: "deepseek-reasoner", Messages: []harness.Message{harness.UserMessage("Is 17 prime?")}},
			Script: []replay.Response{provtest.Fixture("reasoning_content.json")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				c := r.Message.Content
				if len(c) != 2 || c[0].Type != harness.PartReasoning || c[0].Text != "Check divisors up to 4: 2, 3 do not divide 17." || c[1].Text != "17 is prime." {
					t.Errorf("content %+v", c)
				}
			},
		},
		{
			Name:   "refusal",
			Req:    harness.ModelRequest{Model: model, Messages: []harness.Message{harness.UserMessage("Do something bad.")}},
			Script: []replay.Response{provtest.Fixture("refusal.json")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				if r.StopReason != harness.StopRefusal || r.Message.Text() != "I'm sorry, I can't help with that." {
					t.Errorf("stop %q text %q", r.StopReason, r.Message.Text())
				}
			},
		},
		{
			Name:   "length",
			Req:    harness.ModelRequest{Model: model, MaxTokens: 8, Messages: []harness.Message{harness.UserMessage("Tell me a story.")}},
			Script: []replay.Response{provtest.Fixture("length.json")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				if r.StopReason != harness.StopMaxTokens {
					t.Errorf("stop %q", r.StopReason)
				}
			},
		},
		{
			Name:   "content_filter",
			Req:    harness.ModelRequest{Model: model, Messages: []harness.Message{harness.UserMessage("Something filtered.")}},
			Script: []replay.Response{provtest.Fixture("content_filter.json")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				if r.StopReason != harness.StopContentFilter || len(r.Message.Content) != 0 {
					t.Errorf("stop %q content %+v", r.StopReason, r.Message.Content)
				}
			},
		},
		{
			Name:   "stream_text",
			Opts:   []Option{WithPromptCacheKey()},
			Req:    harness.ModelRequest{Model: model, Stream: true, PrefixKey: key, Messages: []harness.Message{harness.UserMessage("Say hello")}},
			Script: []replay.Response{provtest.Fixture("stream_text.sse")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				if r.Message.Text() != "Hello, world!" || r.StopReason != harness.StopEndTurn {
					t.Errorf("text %q stop %q", r.Message.Text(), r.StopReason)
				}
				want := harness.Usage{InputTokens: 1100, OutputTokens: 80, CacheReadInputTokens: 1024, ReasoningTokens: 64}
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
			Req: harness.ModelRequest{Model: model, Stream: true, System: "Use tools.", Tools: []harness.ToolDefinition{provtest.WeatherTool()},
				Messages: []harness.Message{harness.UserMessage("Weather in Lisbon and Porto?")}},
			Script: []replay.Response{provtest.Fixture("stream_tool.sse")},
			Check: func(t *testing.T, r *harness.ModelResponse) {
				calls := r.Message.ToolCalls()
				if len(calls) != 2 || calls[0].ID != "call_Lisbon" || string(calls[0].Input) != `{"city": "Lisbon"}` ||
					calls[1].ID != "call_Porto" || calls[1].Name != "get_weather" || string(calls[1].Input) != `{"city": "Porto"}` {
					t.Errorf("calls %+v", calls)
				}
				if r.StopReason != harness.StopToolUse || r.Usage.InputTokens != 412 || r.Usage.OutputTokens != 58 {
					t.Errorf("stop %q usage %+v", r.StopReason, r.Usage)
				}
			},
		},
	}
	provtest.Generate(t, Name, endpoint, tests, newTestProvider, strings.HasPrefix)
}

func TestErrors(t *testing.T) {
	authBody := `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	badBody := `{"error":{"message":"Invalid type for 'messages[0].content'.","type":"invalid_request_error","param":"messages[0].content","code":"invalid_type"}}`
	rateBody := `{"error":{"message":"Rate limit reached for gpt-5.4-mini.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	srvBody := `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`
	fast := map[string]string{"retry-after-ms": "1"}
	streamed := provtest.Fixture("stream_tool.sse").Body

	tests := []provtest.ErrorCase{
		{Name: "401", Script: []replay.Response{replay.Status(401, authBody, nil)}, Requests: 1,
			Sentinel: ErrAuthentication, Status: 401, ErrType: "invalid_request_error"},
		{Name: "400", Script: []replay.Response{replay.Status(400, badBody, nil)}, Requests: 1,
			Sentinel: ErrInvalidRequest, Status: 400, ErrType: "invalid_request_error"},
		{Name: "429 twice", Script: []replay.Response{replay.Status(429, rateBody, fast), replay.Status(429, rateBody, fast)}, Requests: 2,
			Sentinel: ErrRateLimited, Status: 429, ErrType: "requests", Retryable: true},
		{Name: "500 twice", Script: []replay.Response{replay.Status(500, srvBody, fast), replay.Status(500, srvBody, fast)}, Requests: 2,
			Sentinel: ErrServer, Status: 500, ErrType: "server_error", Retryable: true},
		{Name: "stream 401", Stream: true, Script: []replay.Response{replay.Status(401, authBody, nil)}, Requests: 1,
			Sentinel: ErrAuthentication, Status: 401, ErrType: "invalid_request_error"},
		{Name: "stream cut before [DONE]", Stream: true,
			Script:   []replay.Response{{Body: replay.Truncate(streamed, "data: [DONE]")}},
			Requests: 1, Sentinel: ErrStream, Retryable: true, Reason: "stream ended without data: [DONE]"},
		{Name: "stream cut mid message", Stream: true,
			Script:   []replay.Response{{Body: replay.Truncate(streamed, `"index":1,"id":"call_Porto"`)}},
			Requests: 1, Sentinel: ErrStream, Retryable: true, Reason: "stream ended without data: [DONE]"},
		{Name: "stream done without finish", Stream: true,
			Script:   []replay.Response{{Body: append(replay.Truncate(streamed, `"finish_reason":"tool_calls"`), "data: [DONE]\n\n"...)}},
			Requests: 1, Sentinel: ErrStream, Retryable: true, Reason: "without a finish_reason"},
		{Name: "stream empty", Stream: true, Script: []replay.Response{{Body: []byte(": keep-alive\n\n"), ContentType: "text/event-stream"}},
			Requests: 1, Sentinel: ErrStream, Retryable: true, Reason: "stream ended without data: [DONE]"},
		{Name: "stream bad json", Stream: true, Script: []replay.Response{provtest.Fixture("stream_bad_json.sse")},
			Requests: 1, Sentinel: ErrStream, Retryable: true, Reason: "malformed chunk data"},
		{Name: "stream error event", Stream: true, Script: []replay.Response{provtest.Fixture("stream_error_event.sse")},
			Requests: 1, Sentinel: ErrServer, ErrType: "server_error", Retryable: true},
		{Name: "no choices", Script: []replay.Response{provtest.Fixture("no_choices.json")}, Requests: 1, Sentinel: ErrResponse},
	}
	provtest.Errors(t, Name, model, tests, serve)
}

func TestRetryThenSuccess(t *testing.T) {
	provtest.RetryThenSuccess(t, model, `{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, serve)
}

func TestConnectionRefused(t *testing.T) {
	provtest.ConnectionRefused(t, model, []bool{false, true}, dial)
}

func TestCancel(t *testing.T) {
	provtest.Cancel(t, model, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`+"\n\n", dial)
}

func TestInvalidRequests(t *testing.T) {
	p, err := New(WithAPIKey("k"), WithBaseURL("http://127.0.0.1:1/"))
	if err != nil {
		t.Fatal(err)
	}
	provtest.InvalidRequests(t, p, []provtest.RequestCase{
		{Name: "no model", Req: harness.ModelRequest{Messages: []harness.Message{harness.UserMessage("Hi")}}},
		{Name: "no messages", Req: harness.ModelRequest{Model: model, System: "s"}},
		{Name: "only empty text", Req: harness.ModelRequest{Model: model, Messages: []harness.Message{harness.UserMessage("")}}},
		{Name: "bad role", Req: harness.ModelRequest{Model: model, Messages: []harness.Message{{Role: "system", Content: []harness.Part{{Type: harness.PartText, Text: "x"}}}}}},
		{Name: "bad schema", Req: harness.ModelRequest{Model: model, Messages: []harness.Message{harness.UserMessage("Hi")},
			Tools: []harness.ToolDefinition{{Name: "t", InputSchema: json.RawMessage(`[1,2]`)}}}},
	})
	if _, err := New(WithMaxRetries(-1)); err == nil {
		t.Error("New accepted negative retries")
	}
}

// TestDoneWatcher checks the [DONE] detection across read boundaries and
// that a [DONE] inside event data does not count.
func TestDoneWatcher(t *testing.T) {
	tests := []struct {
		name string
		body string
		want bool
	}{
		{"done", "data: {}\n\ndata: [DONE]\n\n", true},
		{"done without space", "data: {}\n\ndata:[DONE]\n\n", true},
		{"done first line", "data: [DONE]\n\n", true},
		{"crlf", "data: {}\r\n\r\ndata: [DONE]\r\n\r\n", true},
		{"missing", "data: {}\n\n", false},
		{"inside data", `data: {"content":"data: [DONE]"}` + "\n\n", false},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 3, 7, 4096} {
			t.Run(fmt.Sprintf("%s/read%d", tt.name, size), func(t *testing.T) {
				w := newDoneWatcher(nopCloser{strings.NewReader(tt.body)})
				buf := make([]byte, size)
				for {
					if _, err := w.Read(buf); err != nil {
						break
					}
				}
				if w.done != tt.want {
					t.Errorf("done = %v, want %v", w.done, tt.want)
				}
			})
		}
	}
}

type nopCloser struct{ *strings.Reader }

func (nopCloser) Close() error { return nil }

// TestMalformedArguments: arguments that are not JSON stay encodable in the
// response and go back to the API as the model wrote them.
func TestMalformedArguments(t *testing.T) {
	tests := []struct{ args, input, sent string }{
		{`{"city":"Lisbon"}`, `{"city":"Lisbon"}`, `{"city":"Lisbon"}`},
		{`{"city":"Lis`, `"{\"city\":\"Lis"`, `{"city":"Lis`},
		{``, `{}`, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			r := &reply{finish: "tool_calls"}
			tc := &toolCall{id: "call_1", name: "f"}
			tc.args.WriteString(tt.args)
			r.calls = append(r.calls, tc)
			resp := r.response()
			in := resp.Message.ToolCalls()[0].Input
			if string(in) != tt.input {
				t.Errorf("input %s, want %s", in, tt.input)
			}
			if got := toolArguments(in); got != tt.sent {
				t.Errorf("sent %q, want %q", got, tt.sent)
			}
		})
	}
}

// TestProviderName: the provider names itself, and the engine passes the
// name on in ModelRequest.Provider.
func TestProviderName(t *testing.T) { provtest.ProviderName(t, Name, model, serve) }
