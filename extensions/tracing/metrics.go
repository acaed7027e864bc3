package tracing

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"

	"github.com/harnessx/harnessx/harness"
)

// Metric names the extension records beyond the GenAI conventions of
// semconv v1.41.0, which define gen_ai.client.token.usage (token types
// input and output only), gen_ai.client.operation.duration and
// gen_ai.client.operation.time_to_first_chunk for model requests, and no
// metric for tool calls or agent runs.
const (
	// MetricTokenDetail is a histogram of the tokens of one model request
	// that the conventions have no gen_ai.token.type for, by
	// [KeyTokenType]: cache_read, cache_creation, image and audio (parts
	// of the input tokens; image and audio when the provider reports
	// them) and reasoning (a part of the output tokens). They are a
	// separate metric so that summing gen_ai.client.token.usage over its
	// token types still counts each token once. Unit {token}.
	MetricTokenDetail = "harnessx.client.token.usage.detail"
	// MetricToolDuration is a histogram of tool call durations, with
	// gen_ai.tool.name (_OTHER for a tool outside the agent's catalog)
	// and harnessx.tool.status. Unit s.
	MetricToolDuration = "harnessx.tool.duration"
	// MetricRunDuration is a histogram of run durations (Run, or Resume
	// after approvals), with gen_ai.agent.name, harnessx.run.status and,
	// for failed runs, error.type. Unit s.
	MetricRunDuration = "harnessx.run.duration"
	// MetricCost is a counter of the cost of model requests in US
	// dollars, with the attributes of gen_ai.client.operation.duration;
	// only requests the price table prices add to it (see [WithPricing]).
	// Unit {USD}.
	MetricCost = "harnessx.client.cost"
)

// KeyTokenType is the token type of [MetricTokenDetail]: "cache_read",
// "cache_creation", "image", "audio" or "reasoning".
const KeyTokenType = attribute.Key("harnessx.token.type")

// Bucket boundaries: the GenAI conventions' advice for token counts and
// durations; runs and tool calls go on to ten minutes.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	longBuckets     = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92, 163.84, 327.68, 655.36}
)

// meters holds the extension's instruments; nil when no MeterProvider was
// given, so that a run without metrics pays one nil check per span.
type meters struct {
	tokens   genaiconv.ClientTokenUsage
	detail   metric.Int64Histogram
	duration genaiconv.ClientOperationDuration
	ttfc     genaiconv.ClientOperationTimeToFirstChunk
	tool     metric.Float64Histogram
	run      metric.Float64Histogram
	cost     metric.Float64Counter

	// models holds the response models, other than the request's and
	// the priced ones, that metrics record by name: the first
	// maxOtherModels seen.
	models boundedNames

	// The attribute sets of the recordings, built once per combination
	// of names: recording with a ready set costs no allocation.
	chat  boundedCache[chatKey, *chatSets]
	tools boundedCache[[2]string, []metric.RecordOption]
	runs  boundedCache[[3]string, []metric.RecordOption]
}

func newMeters(mp metric.MeterProvider) (*meters, error) {
	m := mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	var ms meters
	var err error
	if ms.tokens, err = genaiconv.NewClientTokenUsage(m, metric.WithExplicitBucketBoundaries(tokenBuckets...)); err != nil {
		return nil, err
	}
	if ms.duration, err = genaiconv.NewClientOperationDuration(m, metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	if ms.ttfc, err = genaiconv.NewClientOperationTimeToFirstChunk(m, metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	if ms.detail, err = m.Int64Histogram(MetricTokenDetail, metric.WithUnit("{token}"),
		metric.WithDescription("Tokens of a model request by a type the GenAI conventions lack: cache_read, cache_creation, image and audio (parts of the input tokens), reasoning (a part of the output tokens)."),
		metric.WithExplicitBucketBoundaries(tokenBuckets...)); err != nil {
		return nil, err
	}
	if ms.tool, err = m.Float64Histogram(MetricToolDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of a tool call."),
		metric.WithExplicitBucketBoundaries(longBuckets...)); err != nil {
		return nil, err
	}
	if ms.run, err = m.Float64Histogram(MetricRunDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of an agent run (Run, or Resume after approvals)."),
		metric.WithExplicitBucketBoundaries(longBuckets...)); err != nil {
		return nil, err
	}
	if ms.cost, err = m.Float64Counter(MetricCost, metric.WithUnit("{USD}"),
		metric.WithDescription("Cost of model requests in US dollars, from the price table.")); err != nil {
		return nil, err
	}
	return &ms, nil
}

type chatKey struct{ provider, reqModel, respModel string }

// chatSets are the record options of one (provider, request model,
// response model) combination of a successful request.
type chatSets struct {
	base                                []metric.AddOption
	duration, input, output             []metric.RecordOption
	cacheRead, cacheCreation, reasoning []metric.RecordOption
	image, audio                        []metric.RecordOption
}

func chatAttrs(k chatKey) []attribute.KeyValue {
	kv := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(k.provider),
		semconv.GenAIRequestModel(k.reqModel),
	}
	if k.respModel != "" {
		kv = append(kv, semconv.GenAIResponseModel(k.respModel))
	}
	return kv
}

func recordOpts(kv []attribute.KeyValue, extra ...attribute.KeyValue) []metric.RecordOption {
	all := append(kv[:len(kv):len(kv)], extra...)
	return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(all...))}
}

func newChatSets(k chatKey) *chatSets {
	kv := chatAttrs(k)
	return &chatSets{
		base:          []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kv...))},
		duration:      recordOpts(kv),
		input:         recordOpts(kv, semconv.GenAITokenTypeInput),
		output:        recordOpts(kv, semconv.GenAITokenTypeOutput),
		cacheRead:     recordOpts(kv, KeyTokenType.String("cache_read")),
		cacheCreation: recordOpts(kv, KeyTokenType.String("cache_creation")),
		reasoning:     recordOpts(kv, KeyTokenType.String("reasoning")),
		image:         recordOpts(kv, KeyTokenType.String("image")),
		audio:         recordOpts(kv, KeyTokenType.String("audio")),
	}
}

// metricProvider returns the gen_ai.provider.name of a request in the
// order the chat span uses: the response's name, the provider's own, the
// option, the name learnt from earlier responses, "unknown".
func (e *Extension) metricProvider(req *harness.ModelRequest, resp *harness.ModelResponse) string {
	switch {
	case resp != nil && resp.Provider != "":
		return resp.Provider
	case req.Provider != "":
		return req.Provider
	case e.cfg.providerName != "":
		return e.cfg.providerName
	}
	if p := e.provider.Load(); p != nil {
		return *p
	}
	return "unknown"
}

// otherName is the value of gen_ai.tool.name and gen_ai.response.model on
// metrics for a name outside the bounded set that metrics record by name
// (see the package doc): a model can emit any tool name and a provider
// report any model, and each name would be a series of its own.
const otherName = "_OTHER"

// maxOtherModels bounds the response models that are neither the
// request's nor in the price table and that metrics still record by name.
const maxOtherModels = 16

// boundedNames is a set of at most maxOtherModels names, the first ones
// admitted.
type boundedNames struct {
	mu sync.RWMutex
	m  map[string]struct{}
}

// admit reports whether name is in the set, adding it while there is room.
func (b *boundedNames) admit(name string) bool {
	b.mu.RLock()
	_, ok := b.m[name]
	b.mu.RUnlock()
	if ok {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.m[name]; ok {
		return true
	}
	if len(b.m) >= maxOtherModels {
		return false
	}
	if b.m == nil {
		b.m = make(map[string]struct{})
	}
	b.m[name] = struct{}{}
	return true
}

// metricResponseModel returns the gen_ai.response.model of a request's
// metrics: the response's model when it is the request's, when the price
// table has it, or when it is one of the first maxOtherModels others;
// else otherName.
func (m *meters) metricResponseModel(e *Extension, req *harness.ModelRequest, model string) string {
	if model == "" || model == req.Model {
		return model
	}
	if e.prices != nil {
		if _, ok := e.prices.Lookup(model); ok {
			return model
		}
	}
	if m.models.admit(model) {
		return model
	}
	return otherName
}

// metricToolName returns the gen_ai.tool.name of a tool call's metrics:
// the call's name when the agent's catalog has that tool (offered to the
// model or deferred), else otherName.
func (e *Extension) metricToolName(name string) string {
	if e.ec != nil {
		if _, ok := e.ec.Agent().Tool(name); ok {
			return name
		}
	}
	return otherName
}

// recordModel records the metrics of one model request attempt: its
// duration, its tokens, its time to first chunk when it was streamed and
// its cost when it was priced (usd >= 0).
func (m *meters) recordModel(ctx context.Context, e *Extension, start time.Time, req *harness.ModelRequest, resp *harness.ModelResponse, err error, usd float64) {
	elapsed := time.Since(start).Seconds()
	k := chatKey{provider: e.metricProvider(req, resp), reqModel: req.Model}
	if resp != nil {
		k.respModel = m.metricResponseModel(e, req, resp.Model)
	}
	if err != nil {
		kv := append(chatAttrs(k), semconv.ErrorTypeKey.String(errorType(err)))
		m.duration.Float64Histogram.Record(ctx, elapsed, metric.WithAttributeSet(attribute.NewSet(kv...)))
		return
	}
	s := m.chat.get(k, func() *chatSets { return newChatSets(k) })
	m.duration.Float64Histogram.Record(ctx, elapsed, s.duration...)
	if resp == nil {
		return
	}
	u := &resp.Usage
	m.tokens.Int64Histogram.Record(ctx, u.InputTokens, s.input...)
	m.tokens.Int64Histogram.Record(ctx, u.OutputTokens, s.output...)
	if u.CacheReadInputTokens > 0 {
		m.detail.Record(ctx, u.CacheReadInputTokens, s.cacheRead...)
	}
	if u.CacheCreationInputTokens > 0 {
		m.detail.Record(ctx, u.CacheCreationInputTokens, s.cacheCreation...)
	}
	if u.ReasoningTokens > 0 {
		m.detail.Record(ctx, u.ReasoningTokens, s.reasoning...)
	}
	if u.ImageInputTokens > 0 {
		m.detail.Record(ctx, u.ImageInputTokens, s.image...)
	}
	if u.AudioInputTokens > 0 {
		m.detail.Record(ctx, u.AudioInputTokens, s.audio...)
	}
	if !resp.FirstChunkAt.IsZero() {
		m.ttfc.Float64Histogram.Record(ctx, resp.FirstChunkAt.Sub(start).Seconds(), s.duration...)
	}
	if usd >= 0 {
		m.cost.Add(ctx, usd, s.base...)
	}
}

// recordTool records the duration of one tool call; name is its
// gen_ai.tool.name (see metricToolName).
func (m *meters) recordTool(ctx context.Context, start time.Time, name string, res *harness.ToolResult) {
	elapsed := time.Since(start).Seconds()
	status := string(harness.ToolMiddlewareErr)
	if res != nil {
		status = string(res.Status)
		if status == "" {
			status = string(harness.ToolOK)
			if res.IsError {
				status = string(harness.ToolError)
			}
		}
	}
	k := [2]string{name, status}
	opts := m.tools.get(k, func() []metric.RecordOption {
		return recordOpts([]attribute.KeyValue{semconv.GenAIToolName(k[0]), KeyToolStatus.String(k[1])})
	})
	m.tool.Record(ctx, elapsed, opts...)
}

// recordRun records the duration of one run.
func (m *meters) recordRun(ctx context.Context, start time.Time, info *harness.RunInfo, res *harness.RunResult) {
	elapsed := time.Since(start).Seconds()
	k := [3]string{info.Agent, "failed", "_OTHER"}
	if res != nil {
		k[1], k[2] = string(res.Status), ""
		if res.Status == harness.StatusFailed {
			k[2] = errorType(res.Err)
		}
	}
	opts := m.runs.get(k, func() []metric.RecordOption {
		kv := []attribute.KeyValue{semconv.GenAIAgentName(k[0]), KeyRunStatus.String(k[1])}
		if k[2] != "" {
			kv = append(kv, semconv.ErrorTypeKey.String(k[2]))
		}
		return recordOpts(kv)
	})
	m.run.Record(ctx, elapsed, opts...)
}

// boundedCache maps keys to values built once; past maxCachedSets entries
// it builds values without keeping them, so that a stream of distinct
// names (models, tools) cannot grow it without bound.
type boundedCache[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

const maxCachedSets = 256

func (c *boundedCache[K, V]) get(k K, build func() V) V {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return v
	}
	v = build()
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[k]; ok {
		return old
	}
	if c.m == nil {
		c.m = make(map[K]V)
	}
	if len(c.m) < maxCachedSets {
		c.m[k] = v
	}
	return v
}
