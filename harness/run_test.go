package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

func TestRunLoop(t *testing.T) {
	p := ht.NewScriptedProvider(
		ht.Response{Text: "checking", ToolCalls: []harness.ToolCall{ht.Call("c1", "echo", `{"text":"hi"}`)},
			Usage: harness.Usage{InputTokens: 100, OutputTokens: 10, CacheCreationInputTokens: 80}},
		ht.Response{Text: "done", Usage: harness.Usage{InputTokens: 130, OutputTokens: 5, CacheReadInputTokens: 80, ReasoningTokens: 2}},
	)
	a := newAgent(t, p, harness.WithTools(echoTool()), harness.WithSystemPrompt("be brief"), harness.WithMaxTokens(256))
	res, err := a.Run(context.Background(), "say hi")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != harness.StatusCompleted || res.Text != "done" || res.Steps != 2 || res.RunID == "" || res.Err != nil {
		t.Fatalf("result = %+v", res)
	}
	want := harness.Usage{InputTokens: 230, OutputTokens: 15, CacheReadInputTokens: 80, CacheCreationInputTokens: 80, ReasoningTokens: 2}
	if res.Usage != want {
		t.Errorf("usage = %+v, want %+v", res.Usage, want)
	}
	roles := []harness.Role{}
	for _, m := range res.Messages {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, []harness.Role{harness.RoleUser, harness.RoleAssistant, harness.RoleTool, harness.RoleAssistant}) {
		t.Fatalf("roles = %v", roles)
	}
	tr := res.Messages[2].Content[0].ToolResult
	if tr.Content != "echo: hi" || tr.CallID != "c1" || tr.IsError || tr.Status != harness.ToolOK {
		t.Errorf("tool result = %+v", tr)
	}
	reqs := p.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d", len(reqs))
	}
	r := reqs[1]
	if r.Provider != "scripted" {
		t.Errorf("request provider = %q, want the ProviderNamer's name", r.Provider)
	}
	if r.Model != "test-model" || r.System != "be brief" || r.MaxTokens != 256 || len(r.Tools) != 1 || r.Tools[0].Name != "echo" || len(r.Messages) != 3 || r.Step != 2 || r.Attempt != 1 {
		t.Errorf("second request = %+v", r)
	}
}

func TestRepeatedRunsContinueConversation(t *testing.T) {
	p := ht.NewScriptedProvider(ht.Reply("one"), ht.Reply("two"))
	a := newAgent(t, p)
	for _, q := range []string{"first", "second"} {
		if _, err := a.Run(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	reqs := p.Requests()
	if got := len(reqs[1].Messages); got != 3 {
		t.Fatalf("second run sent %d messages, want 3 (user, assistant, user)", got)
	}
	if reqs[1].Messages[0].Text() != "first" || reqs[1].Messages[1].Text() != "one" || reqs[1].Messages[2].Text() != "second" {
		t.Errorf("history = %+v", reqs[1].Messages)
	}
	if n := len(a.Messages()); n != 4 {
		t.Errorf("Messages() = %d, want 4", n)
	}
	a.Reset()
	if n := len(a.Messages()); n != 0 {
		t.Errorf("after Reset: %d messages", n)
	}
}

func TestMaxSteps(t *testing.T) {
	loop := ht.CallTool("c", "echo", `{"text":"again"}`)
	p := ht.NewScriptedProvider(loop, loop, loop, loop)
	a := newAgent(t, p, harness.WithTools(echoTool()), harness.WithMaxSteps(3))
	res, err := a.Run(context.Background(), "go")
	if !errors.Is(err, harness.ErrMaxSteps) {
		t.Fatalf("err = %v, want ErrMaxSteps", err)
	}
	var mse *harness.MaxStepsError
	if !errors.As(err, &mse) || mse.Steps != 3 {
		t.Errorf("MaxStepsError = %+v", mse)
	}
	if res.Status != harness.StatusFailed || res.Steps != 3 || !strings.Contains(err.Error(), "3 times") {
		t.Errorf("result = %+v, err = %v", res, err)
	}
}

func TestProviderFailure(t *testing.T) {
	boom := errors.New("upstream exploded")
	p := ht.NewScriptedProvider(ht.Fail(boom))
	rec := &ht.HookRecorder{}
	a := newAgent(t, p, rec.Option())
	res, err := a.Run(context.Background(), "hi")
	if !errors.Is(err, boom) || res.Status != harness.StatusFailed || res.Err != err {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
	var pe *harness.ProviderError
	if !errors.As(err, &pe) || pe.Step != 1 {
		t.Errorf("ProviderError = %+v", pe)
	}
	if n := len(rec.Of(harness.EventError)); n != 1 {
		t.Errorf("error events = %d, want 1", n)
	}
	if ends := rec.Of(harness.EventRunEnd); len(ends) != 1 || ends[0].Result.Status != harness.StatusFailed {
		t.Errorf("run end events = %+v", ends)
	}
}

func TestRetry(t *testing.T) {
	p := ht.NewScriptedProvider(ht.Fail(&ht.RetryableError{Msg: "overloaded"}), ht.Fail(&ht.RetryableError{Msg: "overloaded"}), ht.Reply("ok"))
	log, buf := logBuffer()
	a := newAgent(t, p, harness.WithRetry(harness.RetryPolicy{MaxAttempts: 3, Backoff: time.Millisecond}), harness.WithLogger(log))
	res, err := a.Run(context.Background(), "hi")
	if err != nil || res.Text != "ok" {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
	var attempts []int
	for _, r := range p.Requests() {
		attempts = append(attempts, r.Attempt)
	}
	if !slices.Equal(attempts, []int{1, 2, 3}) {
		t.Errorf("attempts = %v", attempts)
	}
	if strings.Count(buf.String(), "retrying model request") != 2 {
		t.Errorf("retries not logged: %s", buf.String())
	}

	// Not retryable, or attempts exhausted: the run fails.
	p2 := ht.NewScriptedProvider(ht.Fail(errors.New("bad request")), ht.Reply("never"))
	a2 := newAgent(t, p2, harness.WithRetry(harness.RetryPolicy{MaxAttempts: 3}))
	if _, err := a2.Run(context.Background(), "hi"); err == nil || len(p2.Requests()) != 1 {
		t.Errorf("non-retryable: err = %v, requests = %d", err, len(p2.Requests()))
	}
}

func TestCancelDuringModelCall(t *testing.T) {
	p := ht.NewScriptedProvider(ht.Response{Text: "slow", Delay: time.Minute})
	a := newAgent(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	res, err := a.Run(ctx, "hi")
	if time.Since(start) > 5*time.Second {
		t.Fatalf("cancellation took %v", time.Since(start))
	}
	if !errors.Is(err, context.Canceled) || res.Status != harness.StatusCancelled {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
}

func TestCancelDuringTool(t *testing.T) {
	started := make(chan struct{})
	block := &harness.Tool{
		Name: "block", InputSchema: []byte(`{"type":"object"}`),
		Handler: func(ctx context.Context, _ json.RawMessage) (string, error) {
			close(started)
			<-ctx.Done()
			return "", ctx.Err()
		},
	}
	p := ht.NewScriptedProvider(ht.CallTool("c1", "block", `{}`), ht.Reply("after"), ht.Reply("next turn"))
	a := newAgent(t, p, harness.WithTools(block))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	res, err := a.Run(ctx, "hi")
	if !errors.Is(err, context.Canceled) || res.Status != harness.StatusCancelled {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
	// The interrupted call got an error result, so the conversation stays
	// valid and the next run continues it.
	last := res.Messages[len(res.Messages)-1]
	if last.Role != harness.RoleTool || last.Content[0].ToolResult.Status != harness.ToolCancelled {
		t.Fatalf("last message = %+v", last)
	}
	if res, err := a.Run(context.Background(), "again"); err != nil || res.Text != "after" {
		t.Fatalf("next run: %+v, %v", res, err)
	}
}

func TestRunAfterClose(t *testing.T) {
	a := newAgent(t, ht.NewScriptedProvider(ht.Reply("x")))
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), "hi"); !errors.Is(err, harness.ErrClosed) {
		t.Fatalf("err = %v", err)
	}
	if _, err := a.SaveSession(context.Background()); !errors.Is(err, harness.ErrClosed) {
		t.Fatalf("SaveSession err = %v", err)
	}
}

func TestNewNeedsProvider(t *testing.T) {
	if _, err := harness.New(); !errors.Is(err, harness.ErrNoProvider) {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamingFlag(t *testing.T) {
	p := ht.NewScriptedProvider(ht.Reply("x"))
	rec := &ht.HookRecorder{}
	a := newAgent(t, p, harness.WithStreaming(true), harness.WithTemperature(0.2), rec.Option())
	if _, err := a.Run(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	r := p.Requests()[0]
	if !r.Stream || r.Temperature == nil || *r.Temperature != 0.2 {
		t.Errorf("request = %+v", r)
	}
	end := rec.Of(harness.EventModelRequestEnd)
	if len(end) != 1 || end[0].Response.FirstChunkAt.IsZero() {
		t.Errorf("streamed response should carry FirstChunkAt: %+v", end)
	}
}
