package openai

import (
	"bytes"
	"context"
	"crypto/sha256"
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

const model = "gpt-5.4-mini"

// newTestProvider returns a provider that talks to srv, with one retry.
func newTestProvider(t *testing.T, srv *replay.Server, opts ...Option) *Provider {
	t.Helper()
	base := []Option{WithAPIKey("sk-test"), WithBaseURL(srv.URL()), WithHTTPClient(srv.Client()), WithMaxRetries(1)}
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

func checkRequest(t *testing.T, srv *replay.Server, i int, golden string) {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) <= i {
		t.Fatalf("server got %d requests, want at least %d", len(reqs), i+1)
	}
	r := reqs[i]
	if r.Method != http.MethodPost || r.Path != "/chat/completions" {
		t.Errorf("request %d: %s %s, want POST /chat/completions", i, r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("request %d: Authorization %q", i, got)
	}
	body, err := replay.Indent(r.Body)
	if err != nil {
		t.Fatalf("request %d body is not JSON: %v\n%s", i, err, r.Body)
	}
	checkGolden(t, golden, body)
}

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
	key := harness.PrefixKey{Key: sha256.Sum256([]byte("prefix"))}
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
			name: "tool_use",
			req: harness.ModelRequest{Model: model, System: "Use tools.", MaxTokens: 1024, Temperature: &temp,
				Tools: []harness.ToolDefinition{weatherTool(), timeTool()}, Messages: []harness.Message{harness.UserMessage("Weather in Lisbon?")}},
			script: []replay.Response{fixture("tool_use.json")},
			check: func(t *testing.T, r *harness.ModelResponse) {
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
			name: "history_cached",
			opts: []Option{WithPromptCacheKey()},
			req: harness.ModelRequest{Model: model, System: "You are a weather assistant.", PrefixKey: key,
				Tools: []harness.ToolDefinition{weatherTool(), timeTool()}, Messages: history()},
			script: []replay.Response{fixture("cached.json")},
			check: func(t *testing.T, r *harness.ModelResponse) {
				want := harness.Usage{InputTokens: 2300, OutputTokens: 8, CacheReadInputTokens: 2048, CacheCreationInputTokens: 128}
				if r.Usage != want {
					t.Errorf("usage %+v, want %+v", r.Usage, want)
				}
			},
		},
		{
			name:   "reasoning",
			opts:   []Option{WithReasoningEffort("high")},
			req:    harness.ModelRequest{Model: "gpt-5.4", Messages: []harness.Message{harness.UserMessage("Is 17 prime?")}},
			script: []replay.Response{fixture("reasoning.json")},
			check: func(t *testing.T, r *harness.ModelResponse) {
				if r.Usage != (harness.Usage{InputTokens: 30, OutputTokens: 240, ReasoningTokens: 192}) {
					t.Errorf("usage %+v", r.Usage)
				}
			},
		},
		{
			name:   "reasoning_content",
			req:    harness.ModelRequest{Model: "deepseek-reasoner", Messages: []harness.Message{harness.UserMessage("Is 17 prime?")}},
			script: []replay.Response{fixture("reasoning_content.json")},
			check: func(t *testing.T, r *harness.ModelResponse) {
				c := r.Message.Content
				if len(c) != 2 || c[0].Type != harness.PartReasoning || c[0].Text != "Check divisors up to 4: 2, 3 do not divide 17." || c[1].Text != "17 is prime." {
					t.Errorf("content %+v", c)
				}
			},
		},
		{
			name:   "refusal",
			req:    harness.ModelRequest{Model: model, Messages: []harness.Message{harness.UserMessage("Do something bad.")}},
			script: []replay.Response{fixture("refusal.json")},
			check: func(t *testing.T, r *harness.ModelResponse) {
				if r.StopReason != harness.StopRefusal || r.Message.Text() != "I'm sorry, I can't help with that." {
					t.Errorf("stop %q text %q", r.StopReason, r.Message.Text())
				}
			},
		},
		{
			name:   "length",
			req:    harness.ModelRequest{Model: model, MaxTokens: 8, Messages: []harness.Message{harness.UserMessage("Tell me a story.")}},
			script: []replay.Response{fixture("length.json")},
			check: func(t *testing.T, r *harness.ModelResponse) {
				if r.StopReason != harness.StopMaxTokens {
					t.Errorf("stop %q", r.StopReason)
				}
			},
		},
		{
			name:   "content_filter",
			req:    harness.ModelRequest{Model: model, Messages: []harness.Message{harness.UserMessage("Something filtered.")}},
			script: []replay.Response{fixture("content_filter.json")},
			check: func(t *testing.T, r *harness.ModelResponse) {
				if r.StopReason != harness.StopContentFilter || len(r.Message.Content) != 0 {
					t.Errorf("stop %q content %+v", r.StopReason, r.Message.Content)
				}
			},
		},
		{
			name:   "stream_text",
			opts:   []Option{WithPromptCacheKey()},
			req:    harness.ModelRequest{Model: model, Stream: true, PrefixKey: key, Messages: []harness.Message{harness.UserMessage("Say hello")}},
			script: []replay.Response{fixture("stream_text.sse")},
			check: func(t *testing.T, r *harness.ModelResponse) {
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
			name: "stream_tool",
			req: harness.ModelRequest{Model: model, Stream: true, System: "Use tools.", Tools: []harness.ToolDefinition{weatherTool()},
				Messages: []harness.Message{harness.UserMessage("Weather in Lisbon and Porto?")}},
			script: []replay.Response{fixture("stream_tool.sse")},
			check: func(t *testing.T, r *harness.ModelResponse) {
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
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := replay.New(tt.script...)
			defer srv.Close()
			p := newTestProvider(t, srv, tt.opts...)
			resp, err := p.Generate(context.Background(), &tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Provider != Name || !strings.HasPrefix(resp.Model, tt.req.Model) || resp.ID == "" {
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

func TestErrors(t *testing.T) {
	authBody := `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	badBody := `{"error":{"message":"Invalid type for 'messages[0].content'.","type":"invalid_request_error","param":"messages[0].content","code":"invalid_type"}}`
	rateBody := `{"error":{"message":"Rate limit reached for gpt-5.4-mini.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	srvBody := `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`
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
		reason    string
	}{
		{name: "401", script: []replay.Response{replay.Status(401, authBody, nil)}, requests: 1,
			sentinel: ErrAuthentication, status: 401, errType: "invalid_request_error"},
		{name: "400", script: []replay.Response{replay.Status(400, badBody, nil)}, requests: 1,
			sentinel: ErrInvalidRequest, status: 400, errType: "invalid_request_error"},
		{name: "429 twice", script: []replay.Response{replay.Status(429, rateBody, fast), replay.Status(429, rateBody, fast)}, requests: 2,
			sentinel: ErrRateLimited, status: 429, errType: "requests", retryable: true},
		{name: "500 twice", script: []replay.Response{replay.Status(500, srvBody, fast), replay.Status(500, srvBody, fast)}, requests: 2,
			sentinel: ErrServer, status: 500, errType: "server_error", retryable: true},
		{name: "stream 401", stream: true, script: []replay.Response{replay.Status(401, authBody, nil)}, requests: 1,
			sentinel: ErrAuthentication, status: 401, errType: "invalid_request_error"},
		{name: "stream cut before [DONE]", stream: true,
			script:   []replay.Response{{Body: replay.Truncate(streamed, "data: [DONE]")}},
			requests: 1, sentinel: ErrStream, retryable: true, reason: "stream ended without data: [DONE]"},
		{name: "stream cut mid message", stream: true,
			script:   []replay.Response{{Body: replay.Truncate(streamed, `"index":1,"id":"call_Porto"`)}},
			requests: 1, sentinel: ErrStream, retryable: true, reason: "stream ended without data: [DONE]"},
		{name: "stream done without finish", stream: true,
			script:   []replay.Response{{Body: append(replay.Truncate(streamed, `"finish_reason":"tool_calls"`), "data: [DONE]\n\n"...)}},
			requests: 1, sentinel: ErrStream, retryable: true, reason: "without a finish_reason"},
		{name: "stream empty", stream: true, script: []replay.Response{{Body: []byte(": keep-alive\n\n"), ContentType: "text/event-stream"}},
			requests: 1, sentinel: ErrStream, retryable: true, reason: "stream ended without data: [DONE]"},
		{name: "stream bad json", stream: true, script: []replay.Response{fixture("stream_bad_json.sse")},
			requests: 1, sentinel: ErrStream, retryable: true, reason: "malformed chunk data"},
		{name: "stream error event", stream: true, script: []replay.Response{fixture("stream_error_event.sse")},
			requests: 1, sentinel: ErrServer, errType: "server_error", retryable: true},
		{name: "no choices", script: []replay.Response{fixture("no_choices.json")}, requests: 1, sentinel: ErrResponse},
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
			if n := len(srv.Requests()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
			if tt.sentinel == ErrResponse {
				return
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
				return
			}
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("error %T %v is not an *APIError", err, err)
			}
			if ae.StatusCode != tt.status || ae.Type != tt.errType || ae.Message == "" || ae.Provider != Name {
				t.Errorf("APIError %+v", ae)
			}
		})
	}
}

func TestRetryThenSuccess(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			ok := fixture("plain.json")
			if stream {
				ok = fixture("stream_text.sse")
			}
			srv := replay.New(replay.Status(429, `{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
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
	for _, stream := range []bool{false, true} {
		_, err = p.Generate(context.Background(), &harness.ModelRequest{Model: model, Stream: stream, Messages: []harness.Message{harness.UserMessage("Hi")}})
		var ce *ConnectionError
		if !errors.As(err, &ce) || !errors.Is(err, ErrConnection) || !ce.Retryable() {
			t.Errorf("stream=%v: error %T %v, want a retryable *ConnectionError", stream, err, err)
		}
	}
}

func TestCancel(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			arrived := make(chan struct{}, 1)
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(200)
				fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`+"\n\n")
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
		{"no messages", harness.ModelRequest{Model: model, System: "s"}},
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
func TestProviderName(t *testing.T) {
	srv := replay.New(fixture("plain.json"))
	defer srv.Close()
	p := newTestProvider(t, srv)
	var n harness.ProviderNamer = p
	if got := n.ProviderName(); got != "openai" {
		t.Errorf("ProviderName() = %q", got)
	}
	rec := &requestRecorder{}
	agent, err := harness.New(harness.WithProvider(p), harness.WithModel(model), harness.WithMiddleware(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close(context.Background())
	res, err := agent.Run(context.Background(), "Hi")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.providers) != 1 || rec.providers[0] != Name {
		t.Errorf("ModelRequest.Provider %q, want [%q]", rec.providers, Name)
	}
	if res.Text == "" {
		t.Error("empty reply")
	}
}

// requestRecorder is a middleware that notes ModelRequest.Provider.
type requestRecorder struct{ providers []string }

func (r *requestRecorder) BeforeModelRequest(_ context.Context, req *harness.ModelRequest) error {
	r.providers = append(r.providers, req.Provider)
	return nil
}
