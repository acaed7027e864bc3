package timeline

import (
	"fmt"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/pricing"
)

// TestRunCosts prices a run's model responses as flightrec show does:
// by model, per run, with the models that have no price named.
func TestRunCosts(t *testing.T) {
	prices := pricing.Default()
	tl := &Timeline{PricesAsOf: prices.AsOf(), Totals: Totals{ModelRequests: 3}}
	// The pricing package's Anthropic golden case, twice: 2 x 0.0351 USD.
	heavy := flight.Event{Kind: flight.KindModelResponse, RunID: "r1", Model: "claude-sonnet-4-5-20250929",
		InputTokens: 52_200, OutputTokens: 800, CacheReadTokens: 50_000, CacheCreationTokens: 2_000, ReasoningTokens: 300}
	tl.addCost(prices, &heavy)
	tl.addCost(prices, &heavy)
	tl.addCost(prices, &flight.Event{Kind: flight.KindModelResponse, RunID: "r1", Model: "mystery", InputTokens: 10})
	tl.addCost(prices, &flight.Event{Kind: flight.KindModelResponse, RunID: "r2", Model: "mystery", InputTokens: 10})
	if len(tl.Costs) != 2 || tl.Costs[0].Priced != 2 || tl.Costs[0].Unpriced != 1 || tl.Costs[1].Priced != 0 {
		t.Fatalf("costs %+v", tl.Costs)
	}
	if d := tl.Costs[0].USD - 0.0702; d > 1e-12 || d < -1e-12 {
		t.Errorf("run r1: %v USD, want 0.0702", tl.Costs[0].USD)
	}
	var b strings.Builder
	tl.writeCosts(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) })
	want := "cost:      run r1: $0.070200 (2 responses priced, prices as of " + prices.AsOf() + "); 1 without a price (mystery)\n" +
		"cost:      run r2: unknown; 1 without a price (mystery)\n"
	if b.String() != want {
		t.Errorf("text\n%s\nwant\n%s", b.String(), want)
	}
}

func TestCostNote(t *testing.T) {
	tl := &Timeline{CostNote: "pricing is off (HARNESSX_PRICES)", Totals: Totals{ModelRequests: 1}}
	var b strings.Builder
	tl.writeCosts(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) })
	if b.String() != "cost:      unknown: pricing is off (HARNESSX_PRICES)\n" {
		t.Errorf("got %q", b.String())
	}
}
