package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

type searchIn struct {
	Query string   `json:"query" jsonschema:"what to look for"`
	Limit int      `json:"limit,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

func TestNewToolInfersSchema(t *testing.T) {
	tool, err := harness.NewTool("search", "Search.", func(_ context.Context, in searchIn) ([]string, error) {
		return []string{in.Query}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Type       string                     `json:"type"`
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
		Additional *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(tool.InputSchema, &s); err != nil {
		t.Fatal(err)
	}
	if s.Type != "object" || len(s.Required) != 1 || s.Required[0] != "query" || len(s.Properties) != 3 || s.Additional == nil || *s.Additional {
		t.Fatalf("schema = %s", tool.InputSchema)
	}
	if !strings.Contains(string(s.Properties["query"]), "what to look for") {
		t.Errorf("description missing: %s", s.Properties["query"])
	}
	// Non-string results are JSON-encoded.
	out, err := tool.Handler(context.Background(), json.RawMessage(`{"query":"go"}`))
	if err != nil || out != `["go"]` {
		t.Errorf("handler = %q, %v", out, err)
	}
}

func TestToolDefinitionValidation(t *testing.T) {
	h := func(context.Context, json.RawMessage) (string, error) { return "", nil }
	cases := []struct {
		name string
		tool *harness.Tool
	}{
		{"no name", &harness.Tool{InputSchema: []byte(`{"type":"object"}`), Handler: h}},
		{"no handler", &harness.Tool{Name: "x", InputSchema: []byte(`{"type":"object"}`)}},
		{"no schema", &harness.Tool{Name: "x", Handler: h}},
		{"bad schema json", &harness.Tool{Name: "x", InputSchema: []byte(`{`), Handler: h}},
		{"not an object schema", &harness.Tool{Name: "x", InputSchema: []byte(`{"type":"string"}`), Handler: h}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := harness.New(harness.WithProvider(ht.NewScriptedProvider()), harness.WithTools(c.tool))
			if !errors.Is(err, harness.ErrInvalidTool) {
				t.Fatalf("err = %v, want ErrInvalidTool", err)
			}
		})
	}
	_, err := harness.New(harness.WithProvider(ht.NewScriptedProvider()), harness.WithTools(echoTool(), echoTool()))
	if !errors.Is(err, harness.ErrDuplicateTool) {
		t.Fatalf("duplicate: err = %v", err)
	}
}

// TestBadToolCallsBecomeErrorResults checks that every kind of bad call
// comes back to the model as an error result naming the problem, and the
// run goes on.
func TestBadToolCallsBecomeErrorResults(t *testing.T) {
	panicky := harness.MustTool(harness.NewTool("panicky", "", func(context.Context, struct{}) (string, error) {
		panic("kaboom")
	}))
	slow := harness.MustTool(harness.NewTool("slow", "", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}))
	slow.Timeout = 20 * time.Millisecond
	stubborn := harness.MustTool(harness.NewTool("stubborn", "", func(context.Context, struct{}) (string, error) {
		time.Sleep(200 * time.Millisecond) // ignores its context
		return "late", nil
	}))
	stubborn.Timeout = 20 * time.Millisecond
	failing := harness.MustTool(harness.NewTool("failing", "", func(context.Context, struct{}) (string, error) {
		return "", errors.New("disk full")
	}))
	cases := []struct {
		name, tool, input string
		status            harness.ToolStatus
		contains          string
	}{
		{"unknown tool", "nope", `{}`, harness.ToolUnknown, `unknown tool "nope"`},
		{"schema: wrong type", "echo", `{"text":5}`, harness.ToolInvalid, "invalid arguments"},
		{"schema: missing required", "echo", `{}`, harness.ToolInvalid, "text"},
		{"schema: unknown property", "echo", `{"text":"a","extra":1}`, harness.ToolInvalid, "extra"},
		{"not json", "echo", `{"text":`, harness.ToolInvalid, "not valid JSON"},
		{"not an object", "echo", `[1,2]`, harness.ToolInvalid, "invalid arguments"},
		{"panic", "panicky", `{}`, harness.ToolPanicked, "kaboom"},
		{"timeout", "slow", `{}`, harness.ToolTimedOut, "timed out"},
		{"timeout of a tool ignoring ctx", "stubborn", `{}`, harness.ToolTimedOut, "timed out"},
		{"tool error", "failing", `{}`, harness.ToolError, "disk full"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ht.NewScriptedProvider(ht.CallTool("c1", c.tool, c.input), ht.Reply("recovered"))
			log, _ := logBuffer()
			a := newAgent(t, p, harness.WithTools(echoTool(), panicky, slow, stubborn, failing), harness.WithLogger(log))
			res, err := a.Run(context.Background(), "go")
			if err != nil || res.Text != "recovered" {
				t.Fatalf("run: %+v, %v", res, err)
			}
			tr := res.Messages[2].Content[0].ToolResult
			if !tr.IsError || tr.Status != c.status || !strings.Contains(tr.Content, c.contains) {
				t.Errorf("result = %+v, want status %s containing %q", tr, c.status, c.contains)
			}
		})
	}
	// Let the abandoned stubborn handler finish before goleak looks.
	time.Sleep(250 * time.Millisecond)
}

func TestConcurrentToolsRunInParallelAndKeepOrder(t *testing.T) {
	const n = 6
	var running, peak atomic.Int32
	gate := make(chan struct{})
	par := harness.MustTool(harness.NewTool("par", "", func(_ context.Context, in echoIn) (string, error) {
		c := running.Add(1)
		for p := peak.Load(); c > p && !peak.CompareAndSwap(p, c); p = peak.Load() {
		}
		if running.Load() == n {
			close(gate)
		}
		select {
		case <-gate:
		case <-time.After(2 * time.Second):
		}
		running.Add(-1)
		return "r" + in.Text, nil
	}))
	par.Concurrent = true
	calls := make([]harness.ToolCall, n)
	for i := range calls {
		calls[i] = ht.Call("c"+string(rune('0'+i)), "par", map[string]string{"text": string(rune('0' + i))})
	}
	p := ht.NewScriptedProvider(ht.Response{ToolCalls: calls}, ht.Reply("ok"))
	a := newAgent(t, p, harness.WithTools(par))
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if peak.Load() != n {
		t.Errorf("peak concurrency = %d, want %d", peak.Load(), n)
	}
	for i, part := range res.Messages[2].Content {
		want := "r" + string(rune('0'+i))
		if part.ToolResult.Content != want || part.ToolResult.CallID != calls[i].ID {
			t.Errorf("result %d = %+v, want %s", i, part.ToolResult, want)
		}
	}
}

func TestNonConcurrentToolsRunOneAtATime(t *testing.T) {
	var running, peak atomic.Int32
	seq := harness.MustTool(harness.NewTool("seq", "", func(context.Context, struct{}) (string, error) {
		c := running.Add(1)
		for p := peak.Load(); c > p && !peak.CompareAndSwap(p, c); p = peak.Load() {
		}
		time.Sleep(5 * time.Millisecond)
		running.Add(-1)
		return "ok", nil
	}))
	p := ht.NewScriptedProvider(ht.Response{ToolCalls: []harness.ToolCall{ht.Call("a", "seq", `{}`), ht.Call("b", "seq", `{}`), ht.Call("c", "seq", `{}`)}}, ht.Reply("ok"))
	a := newAgent(t, p, harness.WithTools(seq))
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if peak.Load() != 1 {
		t.Errorf("peak = %d, want 1", peak.Load())
	}
}

// TestHugeInvalidArgumentsGiveBoundedErrors checks that a call whose
// argument is an invalid value of 10 MB comes back to the model as an
// error result of bounded size: rejected by the schema (a schema of the
// fast path, and one only the validator judges), or accepted by it but
// not decodable into the tool's input type.
func TestHugeInvalidArgumentsGiveBoundedErrors(t *testing.T) {
	type countIn struct {
		N int `json:"n"`
	}
	count := harness.MustTool(harness.NewTool("count", "", func(_ context.Context, in countIn) (string, error) {
		return "counted", nil
	}))
	pick := &harness.Tool{
		Name: "pick", InputSchema: json.RawMessage(`{"type":"object","properties":{"op":{"type":"string","enum":["a","b"]}},"required":["op"]}`),
		Handler: func(context.Context, json.RawMessage) (string, error) { return "picked", nil },
	}
	huge := strings.Repeat("a", 10<<20)
	cases := []struct {
		name, tool, input, says string
	}{
		{"fast-path schema", "count", `{"n":"` + huge + `"}`, `want "integer"`},
		{"validator-only schema", "pick", `{"op":"` + huge + `"}`, "does not equal any of"},
		// 1e300 with a fraction of 10 MB zeros is an integer to the schema
		// but not an int to encoding/json.
		{"decode after the schema", "count", `{"n":1` + strings.Repeat("0", 300) + "." + strings.Repeat("0", 10<<20) + `}`, "cannot unmarshal number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ht.NewScriptedProvider(ht.CallTool("c1", c.tool, json.RawMessage(c.input)), ht.Reply("recovered"))
			a := newAgent(t, p, harness.WithTools(count, pick))
			res, err := a.Run(context.Background(), "go")
			if err != nil || res.Text != "recovered" {
				t.Fatalf("run: %v", err)
			}
			tr := res.Messages[2].Content[0].ToolResult
			if !tr.IsError || tr.Status != harness.ToolInvalid {
				t.Fatalf("result status %s, error %v; want an invalid-arguments error", tr.Status, tr.IsError)
			}
			if len(tr.Content) > 2048 {
				t.Errorf("error result is %d bytes; it starts %.200q", len(tr.Content), tr.Content)
			}
			if !strings.Contains(tr.Content, c.says) {
				t.Errorf("error result %.300q lacks %q", tr.Content, c.says)
			}
		})
	}
}
