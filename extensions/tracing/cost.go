package tracing

import (
	"context"
	"log/slog"
	"sync"

	"go.opentelemetry.io/otel/attribute"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/pricing"
)

// Cost attribute keys, in US dollars (see the package documentation, Cost).
const (
	// KeyCostUSD is the cost of a model request (chat span) or of a run's
	// model requests (invoke_agent span): the sum of the parts below.
	KeyCostUSD = attribute.Key("harnessx.cost.usd")
	// KeyCostInputUSD is the cost of the input tokens that were neither
	// read from nor written to the prompt cache.
	KeyCostInputUSD = attribute.Key("harnessx.cost.input_usd")
	// KeyCostOutputUSD is the cost of the output tokens that are not
	// reasoning tokens.
	KeyCostOutputUSD = attribute.Key("harnessx.cost.output_usd")
	// KeyCostCacheReadUSD is the cost of the input tokens read from the
	// prompt cache.
	KeyCostCacheReadUSD = attribute.Key("harnessx.cost.cache_read_usd")
	// KeyCostCacheWriteUSD is the cost of the input tokens written to the
	// prompt cache.
	KeyCostCacheWriteUSD = attribute.Key("harnessx.cost.cache_write_usd")
	// KeyCostReasoningUSD is the cost of the reasoning tokens.
	KeyCostReasoningUSD = attribute.Key("harnessx.cost.reasoning_usd")
	// KeyCostPricesAsOf is the date of the price table used.
	KeyCostPricesAsOf = attribute.Key("harnessx.cost.prices_as_of")
	// KeyCostUnpriced counts, on an invoke_agent span, the run's model
	// responses whose model the table has no price for: the run's cost
	// leaves them out.
	KeyCostUnpriced = attribute.Key("harnessx.cost.unpriced_requests")
)

// WithPricing sets the price table the extension prices model requests
// with (see the package documentation, Cost); nil turns costs off.
// Default: pricing.FromEnv() at Install: the built-in table, extended by
// the file HARNESSX_PRICES names, or no costs when it is "off".
func WithPricing(t *pricing.Table) Option {
	return func(c *config) { c.prices, c.pricesSet = t, true }
}

// runCostKey is the context key of a run's cost accumulator.
type runCostKey struct{}

// runCost sums the cost of one run's model requests.
type runCost struct {
	mu       sync.Mutex
	cost     pricing.Cost
	priced   int
	unpriced int
}

// withRunCost returns ctx with a new accumulator for a run's cost, when
// pricing is on. A subagent's run gets its own, so a run's cost is that of
// its own model requests.
func (e *Extension) withRunCost(ctx context.Context) (context.Context, *runCost) {
	if e.prices == nil {
		return ctx, nil
	}
	acc := &runCost{}
	return context.WithValue(ctx, runCostKey{}, acc), acc
}

// modelCost prices one model response by its model, else the request's,
// adds it to the run's total and returns it. A model without a price is
// logged once, at Debug level.
func (e *Extension) modelCost(ctx context.Context, req *harness.ModelRequest, resp *harness.ModelResponse) (pricing.Cost, bool) {
	model := resp.Model
	c, ok := e.prices.Cost(model, resp.Usage)
	if !ok && req.Model != "" && req.Model != model {
		model = req.Model
		c, ok = e.prices.Cost(model, resp.Usage)
	}
	acc, _ := ctx.Value(runCostKey{}).(*runCost)
	if acc != nil {
		acc.mu.Lock()
		if ok {
			acc.cost.Add(c)
			acc.priced++
		} else {
			acc.unpriced++
		}
		acc.mu.Unlock()
	}
	if !ok {
		e.logUnpriced(ctx, resp.Model, req.Model)
	}
	return c, ok
}

// logUnpriced logs, once per pair of model names, that a model has no
// price.
func (e *Extension) logUnpriced(ctx context.Context, respModel, reqModel string) {
	if !e.unpriced.add([2]string{respModel, reqModel}) || e.logger == nil {
		return
	}
	e.logger.DebugContext(ctx, "tracing: no price for the model; its requests get no cost",
		slog.String("response_model", respModel), slog.String("request_model", reqModel),
		slog.String("prices_as_of", e.prices.AsOf()), slog.String("override", pricing.EnvPrices+" or tracing.WithPricing"))
}

// nameSet is a bounded set of name pairs; past maxCachedSets pairs, add
// reports false, so that a stream of distinct names logs no more.
type nameSet struct {
	mu sync.RWMutex
	m  map[[2]string]struct{}
}

// add adds k and reports whether it was new.
func (s *nameSet) add(k [2]string) bool {
	s.mu.RLock()
	_, seen := s.m[k]
	s.mu.RUnlock()
	if seen {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, seen := s.m[k]; seen || len(s.m) >= maxCachedSets {
		return false
	}
	if s.m == nil {
		s.m = make(map[[2]string]struct{})
	}
	s.m[k] = struct{}{}
	return true
}

func (e *Extension) costAttrs(kvs []attribute.KeyValue, c *pricing.Cost) []attribute.KeyValue {
	return append(kvs,
		KeyCostUSD.Float64(c.Total),
		KeyCostInputUSD.Float64(c.Input),
		KeyCostOutputUSD.Float64(c.Output),
		KeyCostCacheReadUSD.Float64(c.CacheRead),
		KeyCostCacheWriteUSD.Float64(c.CacheWrite),
		KeyCostReasoningUSD.Float64(c.Reasoning),
		e.pricesAsOf,
	)
}

// runCostAttrs appends the run's total, when any request was priced, and
// the count of requests without a price.
func (e *Extension) runCostAttrs(kvs []attribute.KeyValue, acc *runCost) []attribute.KeyValue {
	acc.mu.Lock()
	defer acc.mu.Unlock()
	if acc.priced > 0 {
		kvs = e.costAttrs(kvs, &acc.cost)
	}
	if acc.unpriced > 0 {
		kvs = append(kvs, KeyCostUnpriced.Int(acc.unpriced))
	}
	return kvs
}
