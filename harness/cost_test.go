package harness_test

import (
	"context"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

// priceFn prices "priced-*" models at 1 USD per input token and 10 per
// output token, and knows no other model; it records the models it saw.
type priceFn struct{ seen []string }

func (p *priceFn) price(model string, u harness.Usage) (float64, bool) {
	p.seen = append(p.seen, model)
	if model != "priced-a" && model != "priced-b" {
		return 0, false
	}
	return float64(u.InputTokens) + 10*float64(u.OutputTokens), true
}

func TestWithPricingSumsRunCost(t *testing.T) {
	pf := &priceFn{}
	p := ht.NewScriptedProvider(
		ht.Response{ToolCalls: []harness.ToolCall{ht.Call("e1", "echo", `{"text":"x"}`)}, Model: "priced-a",
			Usage: harness.Usage{InputTokens: 3, OutputTokens: 1}},
		ht.Response{ToolCalls: []harness.ToolCall{ht.Call("e2", "echo", `{"text":"y"}`)}, Model: "unknown-model",
			Usage: harness.Usage{InputTokens: 100, OutputTokens: 100}},
		ht.Response{Text: "done", Model: "priced-b", Usage: harness.Usage{InputTokens: 5, OutputTokens: 2}},
	)
	a := newAgent(t, p, harness.WithTools(echoTool()), harness.WithPricing(pf.price))
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if want := 3.0 + 10 + 5 + 20; res.Cost != want {
		t.Errorf("Cost = %v, want %v (the unpriced request adds nothing)", res.Cost, want)
	}
	if len(pf.seen) != 3 || pf.seen[0] != "priced-a" || pf.seen[1] != "unknown-model" || pf.seen[2] != "priced-b" {
		t.Errorf("priced models %v, want each response's model once", pf.seen)
	}
}

func TestWithPricingAcrossResume(t *testing.T) {
	pf := &priceFn{}
	deploy := echoTool()
	deploy.Name = "deploy"
	deploy.Permission = harness.PermissionAsk
	p := ht.NewScriptedProvider(
		ht.Response{ToolCalls: []harness.ToolCall{ht.Call("d1", "deploy", `{"text":"prod"}`)}, Model: "priced-a",
			Usage: harness.Usage{InputTokens: 2}},
		ht.Response{Text: "deployed", Model: "priced-a", Usage: harness.Usage{InputTokens: 4, OutputTokens: 1}},
	)
	a := newAgent(t, p, harness.WithTools(deploy), harness.WithPricing(pf.price))
	res, err := a.Run(context.Background(), "ship")
	if err != nil || res.Status != harness.StatusPaused || res.Cost != 2 {
		t.Fatalf("paused run: cost %v, %+v, %v", res.Cost, res.Status, err)
	}
	res, err = a.Resume(context.Background(), harness.Approve("d1"))
	if err != nil || res.Status != harness.StatusCompleted {
		t.Fatal(res, err)
	}
	if res.Cost != 2+4+10 {
		t.Errorf("resumed Cost = %v, want the whole turn's 16, as Usage sums the whole turn", res.Cost)
	}
}

func TestWithoutPricingCostIsZero(t *testing.T) {
	p := ht.NewScriptedProvider(ht.Response{Text: "hi", Model: "priced-a", Usage: harness.Usage{InputTokens: 10}})
	res, err := newAgent(t, p).Run(context.Background(), "hi")
	if err != nil || res.Cost != 0 {
		t.Errorf("Cost = %v, %v", res.Cost, err)
	}
}

// TestUsageAddSumsEveryCount: Add sums every count, the image and audio
// input tokens too, and a run's Usage is the sum of its requests'.
func TestUsageAddSumsEveryCount(t *testing.T) {
	one := harness.Usage{InputTokens: 100, OutputTokens: 10, CacheReadInputTokens: 20, CacheCreationInputTokens: 30,
		ReasoningTokens: 4, ImageInputTokens: 60, AudioInputTokens: 5}
	var u harness.Usage
	u.Add(one)
	u.Add(one)
	want := harness.Usage{InputTokens: 200, OutputTokens: 20, CacheReadInputTokens: 40, CacheCreationInputTokens: 60,
		ReasoningTokens: 8, ImageInputTokens: 120, AudioInputTokens: 10}
	if u != want {
		t.Fatalf("Add: %+v, want %+v", u, want)
	}
	p := ht.NewScriptedProvider(
		ht.Response{ToolCalls: []harness.ToolCall{ht.Call("e1", "echo", `{"text":"x"}`)}, Usage: one},
		ht.Response{Text: "done", Usage: one},
	)
	a := newAgent(t, p, harness.WithTools(echoTool()))
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage != want {
		t.Fatalf("run usage %+v, want %+v", res.Usage, want)
	}
}
