package tracing_test

// handOTel is what a Go developer would write by hand, with raw
// OpenTelemetry calls, to trace a harnessx agent with the spans the
// tracing extension makes without LangSmith's mirror attributes
// (tracing.WithLangSmithMirror(false)): an invoke_agent span per run, a
// chat span per model request attempt and an execute_tool span per tool
// call, with the OpenTelemetry GenAI semantic-convention attributes and
// the extension's harnessx.* ones. It is the floor the tracing ratio
// compares the extension with: (TracedRunNoMirror − UntracedRun) /
// (HandOTelRun − UntracedRun), what the extension costs against writing
// the same spans by hand.
//
// The rules it keeps, so that it is neither slower nor cleverer than
// plain instrumentation code:
//   - it uses only the OTel API (trace, attribute, codes), the standard
//     library (encoding/json over plain structs in the GenAI message
//     shapes, strconv) and values the engine exposes: the RunInfo, the
//     ModelRequest with the prefix key the engine computed
//     (harness.PrefixKey, its hex by harness.Hash.String), the
//     ModelResponse, the ToolCall and ToolResult, and the public price
//     table (pricing.FromEnv, the extension's default) for the run's count
//     of unpriced requests. Nothing of the tracing extension: none of its
//     encoders, caches or pools;
//   - each value is computed on each call, one json.Marshal per JSON
//     attribute, strconv where a number becomes text; nothing is cached
//     between calls (not the encodings of the tool definitions nor of the
//     conversation so far, not the span names) and nothing pooled;
//   - the attributes known when a span starts are given to tracer.Start,
//     the others in one SetAttributes before End (a chat span's request
//     content among them: the engine runs the before-request middleware
//     and computes the prefix key inside the model interceptor's next, so
//     the request is final only when next returns); the slices of
//     attributes are made with room for the usual count.
//
// It does less than the extension does beside making the spans: no
// secret redaction, no cap on attribute sizes (the benchmark's values
// are neither redacted nor cut by the extension), no metrics, no media
// parts by reference, no tool result parts, no link to a recovered run's
// previous attempt, a simpler error.type; TestHandOTelMakesTheSameSpans
// checks the spans of the benchmark's workload, attribute by attribute.

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/pricing"
)

// Attribute keys: the OpenTelemetry GenAI conventions' and harnessx's.
const (
	hkOperation        = attribute.Key("gen_ai.operation.name")
	hkAgentName        = attribute.Key("gen_ai.agent.name")
	hkConversation     = attribute.Key("gen_ai.conversation.id")
	hkProvider         = attribute.Key("gen_ai.provider.name")
	hkRequestModel     = attribute.Key("gen_ai.request.model")
	hkRequestStream    = attribute.Key("gen_ai.request.stream")
	hkRequestMaxTokens = attribute.Key("gen_ai.request.max_tokens")
	hkRequestTemp      = attribute.Key("gen_ai.request.temperature")
	hkResponseModel    = attribute.Key("gen_ai.response.model")
	hkResponseID       = attribute.Key("gen_ai.response.id")
	hkFinishReasons    = attribute.Key("gen_ai.response.finish_reasons")
	hkTimeToFirstChunk = attribute.Key("gen_ai.response.time_to_first_chunk")
	hkInputTokens      = attribute.Key("gen_ai.usage.input_tokens")
	hkOutputTokens     = attribute.Key("gen_ai.usage.output_tokens")
	hkCacheReadTokens  = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	hkCacheWriteTokens = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	hkReasoningTokens  = attribute.Key("gen_ai.usage.reasoning.output_tokens")
	hkSystem           = attribute.Key("gen_ai.system_instructions")
	hkToolDefinitions  = attribute.Key("gen_ai.tool.definitions")
	hkInputMessages    = attribute.Key("gen_ai.input.messages")
	hkOutputMessages   = attribute.Key("gen_ai.output.messages")
	hkToolName         = attribute.Key("gen_ai.tool.name")
	hkToolCallID       = attribute.Key("gen_ai.tool.call.id")
	hkToolArguments    = attribute.Key("gen_ai.tool.call.arguments")
	hkToolResult       = attribute.Key("gen_ai.tool.call.result")
	hkErrorType        = attribute.Key("error.type")

	hkRunID          = attribute.Key("harnessx.run.id")
	hkRunStatus      = attribute.Key("harnessx.run.status")
	hkRunSteps       = attribute.Key("harnessx.run.steps")
	hkRunPending     = attribute.Key("harnessx.run.pending_approvals")
	hkRunResumed     = attribute.Key("harnessx.run.resumed")
	hkRunRecovered   = attribute.Key("harnessx.recovered")
	hkRunAttempt     = attribute.Key("harnessx.run.attempt")
	hkStep           = attribute.Key("harnessx.step")
	hkAttempt        = attribute.Key("harnessx.attempt")
	hkModelStatus    = attribute.Key("harnessx.model.status")
	hkToolStatus     = attribute.Key("harnessx.tool.status")
	hkPrefixKey      = attribute.Key("harnessx.prefix_key")
	hkPrefixModel    = attribute.Key("harnessx.prefix_key.model")
	hkPrefixTools    = attribute.Key("harnessx.prefix_key.tools")
	hkPrefixSystem   = attribute.Key("harnessx.prefix_key.system")
	hkPrefixMessages = attribute.Key("harnessx.prefix_key.messages")
	hkPrefixChanged  = attribute.Key("harnessx.prefix_key.changed")
	hkImageTokens    = attribute.Key("harnessx.usage.image.input_tokens")
	hkAudioTokens    = attribute.Key("harnessx.usage.audio.input_tokens")
	hkCostUSD        = attribute.Key("harnessx.cost.usd")
	hkCostInput      = attribute.Key("harnessx.cost.input_usd")
	hkCostOutput     = attribute.Key("harnessx.cost.output_usd")
	hkCostCacheRead  = attribute.Key("harnessx.cost.cache_read_usd")
	hkCostCacheWrite = attribute.Key("harnessx.cost.cache_write_usd")
	hkCostReasoning  = attribute.Key("harnessx.cost.reasoning_usd")
	hkCostAsOf       = attribute.Key("harnessx.cost.prices_as_of")
	hkCostUnpriced   = attribute.Key("harnessx.cost.unpriced_requests")
)

// The GenAI message shapes (gen_ai.input.messages and
// gen_ai.output.messages), as plain structs for encoding/json.
type (
	otelMessage struct {
		Role         string `json:"role"`
		Parts        []any  `json:"parts"`
		FinishReason string `json:"finish_reason,omitempty"`
	}
	otelTextPart struct {
		Type    string `json:"type"` // "text" or "reasoning"
		Content string `json:"content"`
	}
	otelToolCallPart struct {
		Type      string `json:"type"` // "tool_call"
		ID        string `json:"id"`
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
	}
	otelToolResponsePart struct {
		Type     string `json:"type"` // "tool_call_response"
		ID       string `json:"id"`
		Response string `json:"response"`
	}
	otelGenericPart struct {
		Type string `json:"type"`
	}
	otelToolDef struct {
		Type        string          `json:"type"` // "function"
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
)

// handOTel traces an agent's runs, model requests and tool calls with raw
// OpenTelemetry calls. Install it with harness.WithMiddleware.
type handOTel struct {
	tracer trace.Tracer
	prices *pricing.Table // nil: no costs
}

var (
	_ harness.RunInterceptor   = (*handOTel)(nil)
	_ harness.ModelInterceptor = (*handOTel)(nil)
	_ harness.ToolInterceptor  = (*handOTel)(nil)
)

func newHandOTel(tp trace.TracerProvider) (*handOTel, error) {
	prices, err := pricing.FromEnv()
	if err != nil {
		return nil, err
	}
	return &handOTel{tracer: tp.Tracer("handotel"), prices: prices}, nil
}

// runCost is a run's total cost, which its model requests add to.
type handRunCost struct {
	mu       sync.Mutex
	cost     pricing.Cost
	priced   int
	unpriced int
}

type handRunCostKey struct{}

func spanName(op, what string) string {
	if what == "" {
		return op
	}
	return op + " " + what
}

// jsonString returns v as JSON; v is one of the plain structs above.
func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return `"<unencodable: ` + err.Error() + `>"`
	}
	return string(b)
}

// rawOrString returns raw as JSON when it is valid JSON, else as a JSON
// string; empty raw is the empty object.
func rawOrString(raw json.RawMessage) any {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(raw) {
		return raw
	}
	return string(raw)
}

func otelParts(parts []harness.Part) []any {
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case harness.PartText:
			out = append(out, otelTextPart{Type: "text", Content: p.Text})
		case harness.PartReasoning:
			out = append(out, otelTextPart{Type: "reasoning", Content: p.Text})
		case harness.PartToolCall:
			if p.ToolCall != nil {
				out = append(out, otelToolCallPart{Type: "tool_call", ID: p.ToolCall.ID, Name: p.ToolCall.Name, Arguments: rawOrString(p.ToolCall.Input)})
			}
		case harness.PartToolResult:
			if p.ToolResult != nil {
				out = append(out, otelToolResponsePart{Type: "tool_call_response", ID: p.ToolResult.CallID, Response: p.ToolResult.Content})
			}
		default:
			out = append(out, otelGenericPart{Type: string(p.Type)})
		}
	}
	return out
}

func otelMessages(msgs []harness.Message) []otelMessage {
	out := make([]otelMessage, len(msgs))
	for i, m := range msgs {
		out[i] = otelMessage{Role: string(m.Role), Parts: otelParts(m.Content)}
	}
	return out
}

func textMessages(role harness.Role, text, finish string) string {
	return jsonString([]otelMessage{{Role: string(role), Parts: []any{otelTextPart{Type: "text", Content: text}}, FinishReason: finish}})
}

// handFinishReason maps the harness's stop reasons onto the GenAI finish
// reasons.
func handFinishReason(s harness.StopReason) string {
	switch s {
	case harness.StopEndTurn, harness.StopSequence, "":
		return "stop"
	case harness.StopMaxTokens:
		return "length"
	case harness.StopToolUse:
		return "tool_call"
	case harness.StopContentFilter, harness.StopRefusal:
		return "content_filter"
	}
	return string(s)
}

func handErrorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, harness.ErrMaxSteps):
		return "max_steps"
	}
	return "_OTHER"
}

func usageAttrs(kvs []attribute.KeyValue, u harness.Usage) []attribute.KeyValue {
	kvs = append(kvs,
		hkInputTokens.Int64(u.InputTokens),
		hkOutputTokens.Int64(u.OutputTokens),
		hkCacheReadTokens.Int64(u.CacheReadInputTokens),
		hkCacheWriteTokens.Int64(u.CacheCreationInputTokens),
		hkReasoningTokens.Int64(u.ReasoningTokens),
	)
	if u.ImageInputTokens != 0 {
		kvs = append(kvs, hkImageTokens.Int64(u.ImageInputTokens))
	}
	if u.AudioInputTokens != 0 {
		kvs = append(kvs, hkAudioTokens.Int64(u.AudioInputTokens))
	}
	return kvs
}

func (h *handOTel) costAttrs(kvs []attribute.KeyValue, c pricing.Cost) []attribute.KeyValue {
	return append(kvs,
		hkCostUSD.Float64(c.Total),
		hkCostInput.Float64(c.Input),
		hkCostOutput.Float64(c.Output),
		hkCostCacheRead.Float64(c.CacheRead),
		hkCostCacheWrite.Float64(c.CacheWrite),
		hkCostReasoning.Float64(c.Reasoning),
		hkCostAsOf.String(h.prices.AsOf()),
	)
}

// InterceptRun makes the invoke_agent span of a run.
func (h *handOTel) InterceptRun(ctx context.Context, info *harness.RunInfo, next harness.RunFunc) *harness.RunResult {
	start := []attribute.KeyValue{
		hkOperation.String("invoke_agent"),
		hkAgentName.String(info.Agent),
		hkRunID.String(info.RunID),
		hkConversation.String(info.SessionID),
	}
	if info.Recovered {
		start = append(start, hkRunRecovered.Bool(true), hkRunAttempt.Int(info.Attempt))
	}
	if info.Resumed {
		start = append(start, hkRunResumed.Bool(true))
	}
	if info.Message != nil {
		start = append(start, hkInputMessages.String(jsonString([]otelMessage{{Role: string(info.Message.Role), Parts: otelParts(info.Message.Content)}})))
	} else if info.Input != "" {
		start = append(start, hkInputMessages.String(textMessages(harness.RoleUser, info.Input, "")))
	}
	ctx, span := h.tracer.Start(ctx, spanName("invoke_agent", info.Agent), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(start...))
	defer span.End()
	var acc *handRunCost
	if h.prices != nil {
		acc = &handRunCost{}
		ctx = context.WithValue(ctx, handRunCostKey{}, acc)
	}

	res := next(ctx)

	if res == nil {
		span.SetAttributes(hkErrorType.String("_OTHER"))
		span.SetStatus(codes.Error, "run interceptor returned no result")
		return res
	}
	end := make([]attribute.KeyValue, 0, 16)
	if acc != nil {
		acc.mu.Lock()
		if acc.priced > 0 {
			end = h.costAttrs(end, acc.cost)
		}
		if acc.unpriced > 0 {
			end = append(end, hkCostUnpriced.Int(acc.unpriced))
		}
		acc.mu.Unlock()
	}
	end = append(end, hkRunStatus.String(string(res.Status)), hkRunSteps.Int(res.Steps))
	end = usageAttrs(end, res.Usage)
	switch res.Status {
	case harness.StatusCompleted:
		end = append(end, hkOutputMessages.String(textMessages(harness.RoleAssistant, res.Text, "stop")))
	case harness.StatusPaused:
		end = append(end, hkRunPending.Int(len(res.Pending)))
	case harness.StatusFailed:
		end = append(end, hkErrorType.String(handErrorType(res.Err)))
		if res.Err != nil {
			span.SetStatus(codes.Error, res.Err.Error())
		} else {
			span.SetStatus(codes.Error, "failed")
		}
	}
	span.SetAttributes(end...)
	return res
}

// InterceptModel makes the chat span of one model request attempt.
func (h *handOTel) InterceptModel(ctx context.Context, req *harness.ModelRequest, next harness.ModelFunc) (*harness.ModelResponse, error) {
	info, _ := harness.RunInfoFromContext(ctx)
	start := []attribute.KeyValue{
		hkOperation.String("chat"),
		hkRequestModel.String(req.Model),
		hkConversation.String(info.SessionID),
		hkStep.Int(req.Step),
		hkAttempt.Int(req.Attempt),
	}
	if req.Provider != "" {
		start = append(start, hkProvider.String(req.Provider))
	}
	name := spanName("chat", req.Model)
	ctx, span := h.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(start...))
	defer span.End()
	began := time.Now()

	resp, err := next(ctx, req)

	// The request as sent: the engine runs the before-request middleware
	// and computes the prefix key inside next.
	end := make([]attribute.KeyValue, 0, 32)
	if pk := req.PrefixKey; !pk.Key.IsZero() {
		end = append(end, hkPrefixKey.String(pk.Key.String()))
		if pk.First || len(pk.Changed) > 0 {
			end = append(end,
				hkPrefixModel.String(pk.Model.String()),
				hkPrefixTools.String(pk.Tools.String()),
				hkPrefixSystem.String(pk.System.String()),
				hkPrefixMessages.String(pk.Messages.String()))
		}
		if len(pk.Changed) > 0 {
			changed := hkPrefixChanged.StringSlice(pk.Changed)
			end = append(end, changed)
			span.AddEvent("prompt_cache_break", trace.WithTimestamp(began), trace.WithAttributes(changed))
		}
	}
	if req.System != "" {
		end = append(end, hkSystem.String(jsonString([]otelTextPart{{Type: "text", Content: req.System}})))
	}
	if len(req.Tools) > 0 {
		defs := make([]otelToolDef, len(req.Tools))
		for i, d := range req.Tools {
			defs[i] = otelToolDef{Type: "function", Name: d.Name, Description: d.Description, Parameters: d.InputSchema}
			if len(d.InputSchema) == 0 {
				defs[i].Parameters = json.RawMessage("{}")
			}
		}
		end = append(end, hkToolDefinitions.String(jsonString(defs)))
	}
	end = append(end, hkInputMessages.String(jsonString(otelMessages(req.Messages))))
	reqModel := req.Model
	if resp != nil && !resp.Sent.IsZero() {
		if resp.Sent.Model != "" {
			reqModel = resp.Sent.Model
		}
		end = append(end, hkRequestStream.Bool(resp.Sent.Stream))
		if resp.Sent.MaxTokens > 0 {
			end = append(end, hkRequestMaxTokens.Int(resp.Sent.MaxTokens))
		}
		if resp.Sent.HasTemperature {
			end = append(end, hkRequestTemp.Float64(resp.Sent.Temperature))
		}
	} else {
		end = append(end, hkRequestStream.Bool(req.Stream))
		if req.MaxTokens > 0 {
			end = append(end, hkRequestMaxTokens.Int(req.MaxTokens))
		}
		if req.Temperature != nil {
			end = append(end, hkRequestTemp.Float64(*req.Temperature))
		}
	}
	provider := req.Provider
	if resp != nil {
		if resp.Provider != "" {
			provider = resp.Provider
		}
		model := resp.Model
		if model == "" {
			model = req.Model
		}
		finish := handFinishReason(resp.StopReason)
		end = append(end,
			hkResponseModel.String(model),
			hkResponseID.String(resp.ID),
			hkFinishReasons.StringSlice([]string{finish}),
		)
		end = usageAttrs(end, resp.Usage)
		end = append(end, hkOutputMessages.String(jsonString([]otelMessage{{
			Role: string(resp.Message.Role), Parts: otelParts(resp.Message.Content), FinishReason: finish,
		}})))
		if !resp.FirstChunkAt.IsZero() {
			end = append(end, hkTimeToFirstChunk.Float64(resp.FirstChunkAt.Sub(began).Seconds()))
			span.AddEvent("new_token", trace.WithTimestamp(resp.FirstChunkAt))
		}
		if h.prices != nil && err == nil {
			c, ok := h.prices.Cost(model, resp.Usage)
			if !ok && req.Model != model {
				c, ok = h.prices.Cost(req.Model, resp.Usage)
			}
			if ok {
				end = h.costAttrs(end, c)
			}
			if acc, _ := ctx.Value(handRunCostKey{}).(*handRunCost); acc != nil {
				acc.mu.Lock()
				if ok {
					acc.cost.Add(c)
					acc.priced++
				} else {
					acc.unpriced++
				}
				acc.mu.Unlock()
			}
		}
	}
	if provider == "" {
		provider = "unknown"
	}
	if provider != req.Provider {
		end = append(end, hkProvider.String(provider))
	}
	switch {
	case err == nil:
		end = append(end, hkModelStatus.String("ok"))
	case ctx.Err() != nil:
		end = append(end, hkModelStatus.String("cancelled"))
	default:
		end = append(end, hkModelStatus.String("error"), hkErrorType.String(handErrorType(err)))
		span.SetStatus(codes.Error, err.Error())
	}
	if reqModel != req.Model {
		span.SetName(spanName("chat", reqModel))
		end = append(end, hkRequestModel.String(reqModel))
	}
	span.SetAttributes(end...)
	return resp, err
}

// InterceptTool makes the execute_tool span of one tool call.
func (h *handOTel) InterceptTool(ctx context.Context, call *harness.ToolCall, next harness.ToolFunc) *harness.ToolResult {
	info, _ := harness.RunInfoFromContext(ctx)
	ctx, span := h.tracer.Start(ctx, spanName("execute_tool", call.Name), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		hkOperation.String("execute_tool"),
		hkToolName.String(call.Name),
		hkToolCallID.String(call.ID),
		hkConversation.String(info.SessionID),
		hkToolArguments.String(string(call.Input)),
	))
	defer span.End()

	res := next(ctx, call)

	if res == nil {
		span.SetAttributes(hkToolStatus.String(string(harness.ToolMiddlewareErr)), hkErrorType.String(string(harness.ToolMiddlewareErr)))
		span.SetStatus(codes.Error, "a tool interceptor returned no result")
		return res
	}
	status := res.Status
	if status == "" {
		status = harness.ToolOK
		if res.IsError {
			status = harness.ToolError
		}
	}
	end := []attribute.KeyValue{hkToolStatus.String(string(status)), hkToolResult.String(res.Content)}
	switch status {
	case harness.ToolOK, harness.ToolPending, harness.ToolCancelled, harness.ToolInterrupted, harness.ToolSuspended:
	default:
		typ := string(status)
		if res.ErrorType != "" {
			typ = res.ErrorType
		}
		end = append(end, hkErrorType.String(typ))
		span.SetStatus(codes.Error, res.Content)
	}
	span.SetAttributes(end...)
	return res
}

// ---- the proof: the same spans as the extension's ----

// ownSpans wraps an instrumentation installed as middleware on an agent
// that another instrumentation traces too, so that each one sees only its
// own spans as the current span: inner sees its own span of the enclosing
// call (or none), and the calls inside it see again the other's. Without
// it the two would parent their spans on each other's. Test plumbing
// only: the benchmark installs handOTel as it is.
type ownSpans struct {
	inner interface {
		harness.RunInterceptor
		harness.ModelInterceptor
		harness.ToolInterceptor
	}
}

type ownSpanKey struct{}

// enter returns ctx with the inner instrumentation's span as the current
// one, and the other's span, to restore.
func (ownSpans) enter(ctx context.Context) (context.Context, trace.Span) {
	other := trace.SpanFromContext(ctx)
	own, _ := ctx.Value(ownSpanKey{}).(trace.Span)
	if own == nil {
		return trace.ContextWithSpanContext(ctx, trace.SpanContext{}), other
	}
	return trace.ContextWithSpan(ctx, own), other
}

// leave returns the context for the calls inside: the inner
// instrumentation's span kept aside, the other's current again.
func (ownSpans) leave(ctx context.Context, other trace.Span) context.Context {
	ctx = context.WithValue(ctx, ownSpanKey{}, trace.SpanFromContext(ctx))
	return trace.ContextWithSpan(ctx, other)
}

func (o ownSpans) InterceptRun(ctx context.Context, info *harness.RunInfo, next harness.RunFunc) *harness.RunResult {
	ctx, other := o.enter(ctx)
	return o.inner.InterceptRun(ctx, info, func(ctx context.Context) *harness.RunResult { return next(o.leave(ctx, other)) })
}

func (o ownSpans) InterceptModel(ctx context.Context, req *harness.ModelRequest, next harness.ModelFunc) (*harness.ModelResponse, error) {
	ctx, other := o.enter(ctx)
	return o.inner.InterceptModel(ctx, req, func(ctx context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
		return next(o.leave(ctx, other), req)
	})
}

func (o ownSpans) InterceptTool(ctx context.Context, call *harness.ToolCall, next harness.ToolFunc) *harness.ToolResult {
	ctx, other := o.enter(ctx)
	return o.inner.InterceptTool(ctx, call, func(ctx context.Context, call *harness.ToolCall) *harness.ToolResult {
		return next(o.leave(ctx, other), call)
	})
}

// TestHandOTelMakesTheSameSpans runs one agent traced both by the
// extension (without mirrors) and by handOTel, each into its own provider,
// twice with a Reset between (the first chat span of a session carries
// the prefix key's part hashes, the later ones not), and compares the two
// recordings span by span.
func TestHandOTelMakesTheSameSpans(t *testing.T) {
	extTP, extSR := recorderTP(t)
	handTP, handSR := recorderTP(t)
	hand, err := newHandOTel(handTP)
	if err != nil {
		t.Fatal(err)
	}
	a := benchAgent(t, harness.WithExtensions(tracing.New(tracing.WithTracerProvider(extTP), tracing.WithLangSmithMirror(false))),
		harness.WithMiddleware(ownSpans{hand}))
	ctx := context.Background()
	for range 2 {
		res, err := a.Run(ctx, "weather?")
		if err != nil || res.Text == "" {
			t.Fatal(err, res)
		}
		a.Reset()
	}
	ext, hnd := spans(extSR), spans(handSR)
	if len(ext) != 8 || len(hnd) != len(ext) {
		t.Fatalf("%d spans from the extension, %d by hand; want 8 each", len(ext), len(hnd))
	}
	// The workload covers both kinds of chat span: the first of a
	// session, with the prefix key's parts, and a later one, without.
	for i, want := range map[int]bool{1: true, 3: false, 5: true, 7: false} {
		if _, ok := attrs(ext[i])["harnessx.prefix_key.model"]; ok != want {
			t.Errorf("span %d (%s): prefix key parts %v, want %v", i, ext[i].Name(), ok, want)
		}
	}
	compareSpans(t, ext, hnd)
}

// compareSpans fails t unless ext and hand (each ordered by start time)
// are the same spans: names, kinds, parents (a root, or a child of the
// run's root), statuses, attributes and events.
func compareSpans(t *testing.T, ext, hand []sdktrace.ReadOnlySpan) {
	t.Helper()
	// role of each span in its own recording: -1 for a root, else the
	// index of its parent among the spans recorded.
	parents := func(ss []sdktrace.ReadOnlySpan) []int {
		idx := map[trace.SpanID]int{}
		for i, s := range ss {
			idx[s.SpanContext().SpanID()] = i
		}
		out := make([]int, len(ss))
		for i, s := range ss {
			out[i] = -1
			if s.Parent().IsValid() {
				p, ok := idx[s.Parent().SpanID()]
				if !ok {
					t.Errorf("span %d (%s): parent %s not recorded", i, s.Name(), s.Parent().SpanID())
				}
				out[i] = p
			}
		}
		return out
	}
	ep, hp := parents(ext), parents(hand)
	var runIDs, convIDs int
	for i := range ext {
		e, h := ext[i], hand[i]
		if e.Name() != h.Name() {
			t.Errorf("span %d: name %q, by hand %q", i, e.Name(), h.Name())
		}
		if e.SpanKind() != h.SpanKind() {
			t.Errorf("span %d (%s): kind %v, by hand %v", i, e.Name(), e.SpanKind(), h.SpanKind())
		}
		if ep[i] != hp[i] {
			t.Errorf("span %d (%s): parent index %d, by hand %d", i, e.Name(), ep[i], hp[i])
		}
		if ep[i] >= 0 && ext[ep[i]].Parent().IsValid() {
			t.Errorf("span %d (%s): parent is not a root", i, e.Name())
		}
		if e.Status() != h.Status() {
			t.Errorf("span %d (%s): status %v, by hand %v", i, e.Name(), e.Status(), h.Status())
		}
		ea, ha := attrs(e), attrs(h)
		if len(e.Attributes()) != len(ea) || len(h.Attributes()) != len(ha) {
			t.Errorf("span %d (%s): a key repeated", i, e.Name())
		}
		for k, v := range ea {
			hv, ok := ha[k]
			switch {
			case !ok:
				t.Errorf("span %d (%s): %s = %s missing by hand", i, e.Name(), k, v.Emit())
			case hv != v:
				t.Errorf("span %d (%s): %s = %s (%s), by hand %s (%s)", i, e.Name(), k, v.Emit(), v.Type(), hv.Emit(), hv.Type())
			}
		}
		for k, v := range ha {
			if _, ok := ea[k]; !ok {
				t.Errorf("span %d (%s): %s = %s by hand only", i, e.Name(), k, v.Emit())
			}
		}
		if id := ea["harnessx.run.id"]; id.AsString() != "" {
			runIDs++
		}
		if id := ea["gen_ai.conversation.id"]; id.AsString() != "" {
			convIDs++
		}
		ee, he := e.Events(), h.Events()
		if len(ee) != len(he) {
			t.Errorf("span %d (%s): %d events, by hand %d", i, e.Name(), len(ee), len(he))
			continue
		}
		for j := range ee {
			es, hs := attribute.NewSet(ee[j].Attributes...), attribute.NewSet(he[j].Attributes...)
			if ee[j].Name != he[j].Name || !es.Equals(&hs) {
				t.Errorf("span %d (%s): event %d %s %v, by hand %s %v", i, e.Name(), j, ee[j].Name, ee[j].Attributes, he[j].Name, he[j].Attributes)
			}
		}
	}
	// The values from the engine: both watched the same runs.
	if runIDs != 2 || convIDs != len(ext) {
		t.Errorf("%d spans with a run ID (want 2), %d with a conversation ID (want %d)", runIDs, convIDs, len(ext))
	}
	if r0, r1 := attrs(ext[0])["harnessx.run.id"], attrs(ext[4])["harnessx.run.id"]; r0 == r1 {
		t.Errorf("both runs have the run ID %s", r0.Emit())
	}
}

// BenchmarkHandOTelRun is the BenchmarkUntracedRun workload traced by
// handOTel, the spans of BenchmarkTracedRunNoMirror written by hand with
// raw OpenTelemetry calls, into a provider set up as BenchmarkTracedRun's
// (an in-memory exporter through a synchronous processor, reset after
// each run). The ratio tracked is (TracedRunNoMirror − UntracedRun) /
// (HandOTelRun − UntracedRun): what the extension costs against writing
// the same spans by hand.
func BenchmarkHandOTelRun(b *testing.B) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	hand, err := newHandOTel(tp)
	if err != nil {
		b.Fatal(err)
	}
	runLoop(b, benchAgent(b, harness.WithMiddleware(hand)), exp.Reset)
}
