package harness_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

// A tool of the running turn calls Agent.Generate: the request goes through
// the model interceptors (which see the tool call's context) and
// middleware, and the hooks fire with step 0; the defaults are filled; the
// conversation, the run's steps and usage do not change.
func TestGenerateFromATool(t *testing.T) {
	log := &orderLog{}
	var a *harness.Agent
	var sampled *harness.ModelResponse
	var interceptorSaw []string
	sampler := harness.MustTool(harness.NewTool("sample", "", func(ctx context.Context, _ struct{}) (string, error) {
		log.add("tool")
		req := &harness.ModelRequest{System: "summarize", Messages: []harness.Message{harness.UserMessage("a long text")}}
		resp, err := a.Generate(ctx, req)
		if err != nil {
			return "", err
		}
		if req.System != "summarize" || req.Model != "" || req.Step != 0 {
			t.Errorf("Generate changed the caller's request: %+v", req)
		}
		sampled = resp
		return "sampled: " + resp.Message.Text(), nil
	}))
	p := ht.NewScriptedProvider(
		ht.CallTool("c1", "sample", `{}`),
		ht.Response{Text: "short", Usage: harness.Usage{InputTokens: 1000, OutputTokens: 1000}},
		ht.Reply("done"),
	)
	var steps []int
	hook := func(ctx context.Context, ev *harness.Event) error {
		steps = append(steps, ev.Step)
		if ev.Step == 0 {
			id, _ := ctx.Value(ctxKey("A.tool")).(string)
			interceptorSaw = append(interceptorSaw, "hook:"+id)
		}
		return nil
	}
	probe := &ctxProbe{saw: &interceptorSaw}
	a = newAgent(t, p, harness.WithTools(sampler), harness.WithMaxTokens(321),
		harness.WithMiddleware(&tracer{"A", log}, probe), harness.WithHooks(hook, harness.EventModelRequestStart))
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if sampled == nil || sampled.Message.Text() != "short" {
		t.Fatalf("sampled %+v", sampled)
	}
	if got := res.Messages[2].Content[0].ToolResult.Content; got != "sampled: short+A" {
		t.Errorf("tool result %q", got)
	}
	if res.Steps != 2 || res.Usage.InputTokens != 0 || len(res.Messages) != 4 {
		t.Errorf("the run counts the sampling: steps %d, usage %+v, %d messages", res.Steps, res.Usage, len(res.Messages))
	}
	for _, m := range a.Messages() {
		if m.Text() == "short" || m.Text() == "a long text" {
			t.Errorf("the conversation has the sampling's message %+v", m)
		}
	}
	reqs := p.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	g := reqs[1]
	if g.Model != "test-model" || g.MaxTokens != 321 || g.System != "summarize[A]" || g.Step != 0 || g.Attempt != 1 ||
		g.Provider != "scripted" || g.RunID != res.RunID || len(g.Tools) != 0 || !g.PrefixKey.Key.IsZero() ||
		len(g.Messages) != 1 || g.Messages[0].Text() != "a long text" {
		t.Errorf("the sampling request %+v", g)
	}
	// The run's next request continues the conversation without it.
	if n := len(reqs[2].Messages); n != 3 {
		t.Errorf("the run's second request has %d messages, want 3", n)
	}
	if !slices.Equal(steps, []int{1, 0, 2}) {
		t.Errorf("model request hooks at steps %v, want [1 0 2]", steps)
	}
	if !slices.Equal(interceptorSaw, []string{"interceptor:c1", "hook:c1"}) {
		t.Errorf("the sampling's interceptor and hook saw %v, want the tool call's context", interceptorSaw)
	}
	want := []string{"A.tool{", "A.before_tool", "tool", "A.model{", "A.before_model", "A.after_model", "A.model}", "A.after_tool", "A.tool}"}
	got := log.list()
	if i := slices.Index(got, "A.tool{"); i < 0 || !slices.Equal(got[i:i+len(want)], want) {
		t.Errorf("order %v, want within it %v", got, want)
	}
}

// ctxProbe is a model interceptor that records the tool call ID a request's
// context carries, for requests outside the run's steps.
type ctxProbe struct{ saw *[]string }

func (c *ctxProbe) InterceptModel(ctx context.Context, req *harness.ModelRequest, next harness.ModelFunc) (*harness.ModelResponse, error) {
	if req.Step == 0 {
		id, _ := ctx.Value(ctxKey("A.tool")).(string)
		*c.saw = append(*c.saw, "interceptor:"+id)
	}
	return next(ctx, req)
}

// Generate refuses a request it cannot send, and an agent that is closed;
// the request's own settings win over the agent's.
func TestGenerateErrorsAndSettings(t *testing.T) {
	p := ht.NewScriptedProvider(ht.Reply("ok"))
	a, err := harness.New(harness.WithProvider(p), harness.WithModel("m"), harness.WithTemperature(0.3))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, req := range []*harness.ModelRequest{nil, {}} {
		if _, err := a.Generate(ctx, req); !errors.Is(err, harness.ErrInvalidRequest) {
			t.Errorf("Generate(%v): %v, want ErrInvalidRequest", req, err)
		}
	}
	bad := harness.Message{Role: harness.RoleUser, Content: []harness.Part{{Type: harness.PartImage}}}
	if _, err := a.Generate(ctx, &harness.ModelRequest{Messages: []harness.Message{bad}}); !errors.Is(err, harness.ErrInvalidPart) {
		t.Errorf("an image without media: %v", err)
	}
	temp := 0.9
	resp, err := a.Generate(ctx, &harness.ModelRequest{Model: "other", MaxTokens: 7, Temperature: &temp,
		Messages: []harness.Message{harness.UserParts(harness.Text("look"), harness.ImagePart([]byte("png"), "image/png"))}})
	if err != nil || resp.Message.Text() != "ok" {
		t.Fatalf("Generate: %v, %+v", err, resp)
	}
	g := p.Requests()[0]
	if g.Model != "other" || g.MaxTokens != 7 || g.Temperature == nil || *g.Temperature != 0.9 || g.RunID != "" {
		t.Errorf("request %+v", g)
	}
	if len(a.Messages()) != 0 {
		t.Errorf("conversation %v", a.Messages())
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Generate(ctx, &harness.ModelRequest{Messages: []harness.Message{harness.UserMessage("x")}}); !errors.Is(err, harness.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// Generate is safe for concurrent use, with itself and with a run (run
// with -race).
func TestGenerateConcurrent(t *testing.T) {
	p := ht.NewScriptedProvider(ht.Reply("ok"))
	p.Loop = true
	a := newAgent(t, p, harness.WithMiddleware(&tracer{"A", &orderLog{}}))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			resp, err := a.Generate(context.Background(), &harness.ModelRequest{Messages: []harness.Message{harness.UserMessage("x")}})
			if err != nil || resp.Message.Text() != "ok" {
				t.Errorf("Generate: %v %+v", err, resp)
			}
		})
	}
	wg.Go(func() {
		if _, err := a.Run(context.Background(), "go"); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	wg.Wait()
	if n := len(a.Messages()); n != 2 {
		t.Errorf("%d messages after one run", n)
	}
}
