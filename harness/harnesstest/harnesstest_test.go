package harnesstest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

func TestScriptedProvider(t *testing.T) {
	boom := errors.New("boom")
	p := ht.NewScriptedProvider(
		ht.Response{Text: "a", Reasoning: "think", Usage: harness.Usage{InputTokens: 3}, Model: "m-1"},
		ht.CallTool("c1", "t", map[string]int{"n": 1}),
		ht.Fail(boom),
	)
	ctx := context.Background()
	req := &harness.ModelRequest{Model: "m", Messages: []harness.Message{harness.UserMessage("q")}}
	r1, err := p.Generate(ctx, req)
	if err != nil || r1.Message.Text() != "a" || r1.Message.Content[0].Type != harness.PartReasoning || r1.StopReason != harness.StopEndTurn || r1.Model != "m-1" || r1.Usage.InputTokens != 3 || r1.ID == "" {
		t.Fatalf("r1 = %+v, %v", r1, err)
	}
	r2, _ := p.Generate(ctx, req)
	if r2.StopReason != harness.StopToolUse || string(r2.Message.ToolCalls()[0].Input) != `{"n":1}` || r2.Model != "m" {
		t.Fatalf("r2 = %+v", r2)
	}
	if _, err := p.Generate(ctx, req); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, err := p.Generate(ctx, req); !errors.Is(err, ht.ErrScriptExhausted) {
		t.Fatalf("exhausted: %v", err)
	}
	if n := len(p.Requests()); n != 4 || p.Remaining() != 0 {
		t.Errorf("requests %d remaining %d", n, p.Remaining())
	}
	// Recorded requests are copies: changing the caller's slice later does not change them.
	req.Messages[0] = harness.UserMessage("changed")
	if p.Requests()[0].Messages[0].Text() != "q" {
		t.Error("recorded request aliases the caller's messages")
	}
}

func TestScriptedProviderDelayHonoursContext(t *testing.T) {
	p := ht.NewScriptedProvider(ht.Response{Text: "late", Delay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := p.Generate(ctx, &harness.ModelRequest{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestScriptedProviderLoop(t *testing.T) {
	p := ht.NewScriptedProvider(ht.Reply("1"), ht.Reply("2"))
	p.Loop, p.DiscardRequests = true, true
	var got string
	for range 5 {
		r, err := p.Generate(context.Background(), &harness.ModelRequest{})
		if err != nil {
			t.Fatal(err)
		}
		got += r.Message.Text()
	}
	if got != "12121" || len(p.Requests()) != 0 {
		t.Errorf("got %q, %d recorded", got, len(p.Requests()))
	}
}

func TestHookRecorder(t *testing.T) {
	rec := &ht.HookRecorder{}
	a, err := harness.New(harness.WithProvider(ht.NewScriptedProvider(ht.Reply("x"))), rec.Option())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	a.Run(context.Background(), "hi")
	// session start, run start, user message, model request start and
	// end, assistant message, run end.
	if len(rec.Events()) != 7 || len(rec.Of(harness.EventRunEnd)) != 1 || len(rec.Of(harness.EventMessage)) != 2 {
		t.Fatalf("events = %v", rec.Types())
	}
	rec.Reset()
	if len(rec.Events()) != 0 {
		t.Error("Reset")
	}
}
