package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/redact"
	"github.com/harnessx/harnessx/internal/runtrace"
)

// interceptors is the middleware the extension registers: it opens the
// agent, model and tool spans around the engine's calls.
type interceptors struct{ e *Extension }

var (
	_ harness.RunInterceptor   = interceptors{}
	_ harness.ModelInterceptor = interceptors{}
	_ harness.ToolInterceptor  = interceptors{}
)

// sessionAttrs returns the thread-grouping attributes every span carries:
// the conversation ID and LangSmith's session metadata, both the agent's
// session ID.
func (e *Extension) sessionAttrs() (attribute.KeyValue, attribute.KeyValue) {
	id := e.ec.SessionID()
	return semconv.GenAIConversationID(id), KeyLangSmithSessionID.String(id)
}

// ---- runs ----

// InterceptRun opens the invoke_agent span of a run.
func (ic interceptors) InterceptRun(ctx context.Context, info *harness.RunInfo, next harness.RunFunc) *harness.RunResult {
	e := ic.e
	conv, sess := semconv.GenAIConversationID(info.SessionID), KeyLangSmithSessionID.String(info.SessionID)
	name := e.names.name("invoke_agent", info.Agent)
	// The attributes a sampler or an OnStart processor may use go at the
	// start; the others with the result, in one call, which spares the SDK
	// a second copy of a long attribute list. The SDK copies the start's
	// into an array that it allocates again when the others come, so
	// each one moved to the start costs that copy: the LangSmith mirrors
	// (which repeat the span's name and kind) and the step and attempt
	// stay with the others; moving them cost 2.6 KB a run
	// (BenchmarkTracedRun) for the same instructions. The start's go in
	// the recorder's slice, which then collects the others.
	r := e.newRecorder()
	defer e.release(&r)
	kp := &r.kvs
	*kp = append(*kp, semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(info.Agent), KeyRunID.String(info.RunID), conv)
	if info.Recovered {
		*kp = append(*kp, KeyRunRecovered.Bool(true), KeyRunAttempt.Int(info.Attempt))
	}
	if info.Resumed {
		*kp = append(*kp, KeyRunResumed.Bool(true))
	}
	ctx, span := e.tracer.Start(ctx, name, e.kindInternal, trace.WithAttributes(*kp...))
	r.kvs = r.kvs[:0]
	if e.cfg.mirror {
		r.kvs = append(r.kvs, KeyLangSmithSpanKind.String(spanKindChain), KeyLangSmithTraceName.String(name), sess)
	}
	if info.Recovered {
		linkPreviousAttempt(span, info)
	}
	e.stats.runs.Add(1)
	ended := false
	defer func() {
		if !ended { // next panicked: end the span on the way out
			e.stats.errors.Add(1)
			r.kvs = append(r.kvs, semconv.ErrorTypeKey.String("panic"))
			span.SetAttributes(r.kvs...)
			span.SetStatus(codes.Error, "panic")
			span.End()
		}
	}()
	var start time.Time
	if e.m != nil {
		start = time.Now()
	}
	ctx, acc := e.withRunCost(ctx)
	res := next(ctx)
	ended = true
	if e.m != nil {
		e.m.recordRun(ctx, start, info, res)
	}
	if span.IsRecording() {
		if acc != nil {
			r.kvs = e.runCostAttrs(r.kvs, acc)
		}
		e.endRun(ctx, span, &r, info, res)
	}
	span.End()
	return res
}

// linkPreviousAttempt links the invoke_agent span of a recovered run to
// the root span of the same part (Run, or the Resume after as many steps)
// of the previous attempt, when the span's trace is the run's derived
// trace: then the previous attempt's root span had the derived span ID
// (see exporters.RunTraceIDs). With another ID generator the previous
// attempt's IDs are unknown, and there is no link.
func linkPreviousAttempt(span trace.Span, info *harness.RunInfo) {
	sc := span.SpanContext()
	if !sc.IsValid() || [16]byte(sc.TraceID()) != runtrace.TraceID(info.RunID) {
		return
	}
	prev := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    sc.TraceID(),
		SpanID:     runtrace.RootSpanID(info.RunID, info.Attempt-1, info.Steps),
		TraceFlags: sc.TraceFlags(),
	})
	span.AddLink(trace.Link{SpanContext: prev, Attributes: []attribute.KeyValue{
		KeyLink.String(LinkPreviousAttempt), KeyRunAttempt.Int(info.Attempt - 1),
	}})
}

func (e *Extension) endRun(ctx context.Context, span trace.Span, r *recorder, info *harness.RunInfo, res *harness.RunResult) {
	if res == nil {
		e.stats.errors.Add(1)
		r.kvs = append(r.kvs, semconv.ErrorTypeOther)
		span.SetAttributes(r.kvs...)
		span.SetStatus(codes.Error, "run interceptor returned no result")
		return
	}
	if m := info.Message; e.cfg.capture && m != nil {
		// RunMessage: the user message with its parts.
		b := e.getBuf()
		me := e.newMediaEnc(ctx)
		*b = appendOutput(*b, m, "", &me)
		r.encodedParts(semconv.GenAIInputMessagesKey, string(*b), me.summary(), me.holes,
			e.red != nil && !me.suspect && !mayContainSecret(m, ""), func() string {
				return e.encodeNoBytes(ctx, func(b []byte, me *mediaEnc) []byte { return appendOutput(b, m, "", me) })
			})
		e.putBuf(b)
	} else if e.cfg.capture && info.Input != "" {
		b := e.getBuf()
		*b = appendTextMessage(*b, harness.RoleUser, info.Input, "")
		r.contentScanned(semconv.GenAIInputMessagesKey, string(*b), e.red != nil && e.textClean(info.Input))
		e.putBuf(b)
	}
	u := &res.Usage
	r.kvs = append(r.kvs,
		KeyRunStatus.String(string(res.Status)),
		KeyRunSteps.Int(res.Steps),
		semconv.GenAIUsageInputTokens(int(u.InputTokens)),
		semconv.GenAIUsageOutputTokens(int(u.OutputTokens)),
		semconv.GenAIUsageCacheReadInputTokens(int(u.CacheReadInputTokens)),
		semconv.GenAIUsageCacheCreationInputTokens(int(u.CacheCreationInputTokens)),
		semconv.GenAIUsageReasoningOutputTokens(int(u.ReasoningTokens)),
	)
	r.kvs = appendMediaUsage(r.kvs, u)
	switch res.Status {
	case harness.StatusCompleted:
		if e.cfg.capture {
			b := e.getBuf()
			*b = appendTextMessage(*b, harness.RoleAssistant, res.Text, "stop")
			r.contentScanned(semconv.GenAIOutputMessagesKey, string(*b), e.red != nil && e.textClean(res.Text))
			e.putBuf(b)
		}
	case harness.StatusPaused:
		r.kvs = append(r.kvs, KeyRunPending.Int(len(res.Pending)))
	case harness.StatusFailed:
		typ := errorType(res.Err)
		r.kvs = append(r.kvs, semconv.ErrorTypeKey.String(typ))
		e.setError(span, r, typ, res.Err)
	}
	span.SetAttributes(r.finish()...)
}

// setError sets status Error with the error's message (captured content:
// redacted and capped), or only its type when content capture is off.
func (e *Extension) setError(span trace.Span, r *recorder, typ string, err error) {
	e.stats.errors.Add(1)
	desc := typ
	if e.cfg.capture && err != nil {
		var cut bool
		desc, cut = e.process("otel.status_description", err.Error())
		if cut {
			r.truncated = append(r.truncated, "otel.status_description")
		}
	}
	span.SetStatus(codes.Error, desc)
}

// ---- model requests ----

// InterceptModel opens the chat span of one model request attempt.
func (ic interceptors) InterceptModel(ctx context.Context, req *harness.ModelRequest, next harness.ModelFunc) (*harness.ModelResponse, error) {
	e := ic.e
	conv, sess := e.sessionAttrs()
	model := req.Model
	name := e.names.name("chat", model)
	r := e.newRecorder()
	defer e.release(&r)
	kp := &r.kvs
	*kp = append(*kp, semconv.GenAIOperationNameChat, semconv.GenAIRequestModel(model), conv)
	if req.Provider != "" {
		*kp = append(*kp, semconv.GenAIProviderNameKey.String(req.Provider))
	}
	ctx, span := e.tracer.Start(ctx, name, e.kindClient, trace.WithAttributes(*kp...))
	r.kvs = append(r.kvs[:0], KeyStep.Int(req.Step), KeyAttempt.Int(req.Attempt))
	if e.cfg.mirror {
		r.kvs = append(r.kvs, KeyLangSmithSpanKind.String(spanKindLLM), KeyLangSmithTraceName.String(name), sess)
	}
	e.stats.model.Add(1)
	ended := false
	defer func() {
		if !ended {
			e.stats.errors.Add(1)
			r.kvs = append(r.kvs, semconv.ErrorTypeKey.String("panic"))
			span.SetAttributes(r.kvs...)
			span.SetStatus(codes.Error, "panic")
			span.End()
		}
	}()
	start := time.Now()
	resp, err := next(ctx, req)
	ended = true
	usd := -1.0 // not priced
	if e.prices != nil && err == nil && resp != nil {
		if c, ok := e.modelCost(ctx, req, resp); ok {
			usd = c.Total
			if span.IsRecording() {
				r.kvs = e.costAttrs(r.kvs, &c)
			}
		}
	}
	if e.m != nil {
		e.m.recordModel(ctx, e, start, req, resp, err, usd)
	}
	if span.IsRecording() {
		e.endModel(ctx, span, &r, name, start, req, resp, err)
	}
	span.End()
	return resp, err
}

func (e *Extension) endModel(ctx context.Context, span trace.Span, r *recorder, name string, start time.Time, req *harness.ModelRequest, resp *harness.ModelResponse, err error) {
	c := &e.cache

	// The invocation parameters: those the provider reports it sent (a
	// default it filled in, without one it left out), else the request's,
	// as the middleware left it.
	reqModel := req.Model
	if resp != nil && !resp.Sent.IsZero() {
		sent := &resp.Sent
		if sent.Model != "" {
			reqModel = sent.Model
		}
		r.kvs = append(r.kvs, semconv.GenAIRequestStream(sent.Stream))
		if sent.MaxTokens > 0 {
			r.kvs = append(r.kvs, semconv.GenAIRequestMaxTokens(sent.MaxTokens))
		}
		if sent.HasTemperature {
			r.kvs = append(r.kvs, semconv.GenAIRequestTemperature(sent.Temperature))
		}
	} else {
		r.kvs = append(r.kvs, semconv.GenAIRequestStream(req.Stream))
		if req.MaxTokens > 0 {
			r.kvs = append(r.kvs, semconv.GenAIRequestMaxTokens(req.MaxTokens))
		}
		if req.Temperature != nil {
			r.kvs = append(r.kvs, semconv.GenAIRequestTemperature(*req.Temperature))
		}
	}
	if pk := &req.PrefixKey; !pk.Key.IsZero() {
		key := hexString(pk.Key)
		r.kvs = append(r.kvs, KeyPrefixKey.String(key))
		if e.cfg.mirror {
			r.kvs = append(r.kvs, KeyLangSmithPrefixKey.String(key))
		}
		if pk.First || len(pk.Changed) > 0 {
			// The session's first request, or a cache break: the parts'
			// hashes say what each part is now (on a break the changed
			// list says which of them differ from the previous
			// request's). A request that kept or grew the prefix carries
			// the key alone: its parts are those of the nearest earlier
			// span of the session that records them.
			r.kvs = append(r.kvs,
				KeyPrefixModel.String(hexOf(&c.hexModel, pk.Model)),
				KeyPrefixTools.String(hexOf(&c.hexTools, pk.Tools)),
				KeyPrefixSystem.String(hexOf(&c.hexSystem, pk.System)),
				KeyPrefixMessages.String(hexString(pk.Messages)))
		}
		if len(pk.Changed) > 0 {
			changed := KeyPrefixChanged.StringSlice(pk.Changed)
			r.kvs = append(r.kvs, changed)
			span.AddEvent(EventCacheBreak, trace.WithTimestamp(start), trace.WithAttributes(changed))
		}
	}
	if e.cfg.capture && req.System != "" {
		r.cached(e.cachedValue(&c.system, req.PrefixKey.System, semconv.GenAISystemInstructionsKey, func(b []byte) []byte {
			b = append(b, '[')
			b = appendTextPart(b, "text", req.System)
			return append(b, ']')
		}))
	}
	if len(req.Tools) > 0 {
		r.cached(e.cachedValue(&c.tools, req.PrefixKey.Tools, semconv.GenAIToolDefinitionsKey, func(b []byte) []byte {
			return appendToolDefs(b, req.Tools, e.cfg.capture)
		}))
	}
	if e.cfg.capture {
		if req.Step == 0 {
			// A request outside the run's steps (harness.Agent.Generate,
			// an MCP server's sampling): not the conversation, so it
			// stays out of the history cache, which keeps the
			// conversation's encoding for the run's next request.
			b := e.getBuf()
			me := e.newMediaEnc(ctx)
			*b = appendMessages(*b, req.Messages, &me)
			r.encodedParts(semconv.GenAIInputMessagesKey, string(*b), me.summary(), me.holes, false, func() string {
				return e.encodeNoBytes(ctx, func(b []byte, me *mediaEnc) []byte { return appendMessages(b, req.Messages, me) })
			})
			e.putBuf(b)
		} else {
			v, sum := e.history.encode(ctx, e, req.Messages)
			r.encodedParts(semconv.GenAIInputMessagesKey, v, sum, nil, false, func() string {
				return e.encodeNoBytes(ctx, func(b []byte, me *mediaEnc) []byte { return appendMessages(b, req.Messages, me) })
			})
		}
	}

	// The response. The provider's own name (harness.ProviderNamer) comes
	// first, then the option, then what earlier responses said.
	provider := req.Provider
	if provider == "" {
		provider = e.cfg.providerName
	}
	model := req.Model
	if resp != nil {
		if resp.Provider != "" {
			provider = resp.Provider
			if p := e.provider.Load(); p == nil || *p != provider {
				learnt := strings.Clone(provider)
				e.provider.Store(&learnt)
			}
		}
		if resp.Model != "" {
			model = resp.Model
		}
		finish := finishReason(resp.StopReason)
		u := &resp.Usage
		r.kvs = append(r.kvs,
			semconv.GenAIResponseModel(model),
			semconv.GenAIResponseID(resp.ID),
			e.finishReasons(finish),
			semconv.GenAIUsageInputTokens(int(u.InputTokens)),
			semconv.GenAIUsageOutputTokens(int(u.OutputTokens)),
			semconv.GenAIUsageCacheReadInputTokens(int(u.CacheReadInputTokens)),
			semconv.GenAIUsageCacheCreationInputTokens(int(u.CacheCreationInputTokens)),
			semconv.GenAIUsageReasoningOutputTokens(int(u.ReasoningTokens)),
		)
		r.kvs = appendMediaUsage(r.kvs, u)
		b := e.getBuf()
		if e.cfg.mirror {
			*b = appendUsage(*b, u)
			r.kvs = append(r.kvs, KeyLangSmithUsage.String(string(*b)))
		}
		if e.cfg.capture {
			*b = (*b)[:0]
			me := e.newMediaEnc(ctx)
			*b = appendOutput(*b, &resp.Message, finish, &me)
			clean := e.red != nil && !me.suspect && !mayContainSecret(&resp.Message, finish)
			if clean && req.Step > 0 {
				// The reply joins the conversation, which the next
				// request encodes: it need not be scanned again.
				e.history.noteCleanMessage(&resp.Message)
			}
			r.encodedParts(semconv.GenAIOutputMessagesKey, string(*b), me.summary(), me.holes, clean, func() string {
				return e.encodeNoBytes(ctx, func(b []byte, me *mediaEnc) []byte { return appendOutput(b, &resp.Message, finish, me) })
			})
		}
		e.putBuf(b)
		if !resp.FirstChunkAt.IsZero() {
			r.kvs = append(r.kvs, semconv.GenAIResponseTimeToFirstChunk(resp.FirstChunkAt.Sub(start).Seconds()))
			span.AddEvent(EventNewToken, trace.WithTimestamp(resp.FirstChunkAt))
		}
	}
	if provider == "" {
		if p := e.provider.Load(); p != nil {
			provider = *p
		} else {
			provider = "unknown"
		}
	}
	r.kvs = append(r.kvs, semconv.GenAIProviderNameKey.String(provider))
	if e.cfg.mirror {
		r.kvs = append(r.kvs, KeyLangSmithProvider.String(provider), KeyLangSmithModelName.String(model))
	}
	switch {
	case err == nil:
		r.kvs = append(r.kvs, KeyModelStatus.String("ok"))
	case ctx.Err() != nil:
		r.kvs = append(r.kvs, KeyModelStatus.String("cancelled"))
	default:
		typ := errorType(err)
		r.kvs = append(r.kvs, KeyModelStatus.String("error"), semconv.ErrorTypeKey.String(typ))
		e.setError(span, r, typ, err)
	}
	if n := e.names.name("chat", reqModel); n != name {
		span.SetName(n) // a middleware (or the provider) changed the model
		r.kvs = append(r.kvs, semconv.GenAIRequestModel(reqModel))
		if e.cfg.mirror {
			r.kvs = append(r.kvs, KeyLangSmithTraceName.String(n))
		}
	}
	span.SetAttributes(r.finish()...)
}

// appendMediaUsage appends the image and audio input tokens of u, when
// the provider reported them.
func appendMediaUsage(kvs []attribute.KeyValue, u *harness.Usage) []attribute.KeyValue {
	if u.ImageInputTokens != 0 {
		kvs = append(kvs, KeyUsageImageInputTokens.Int64(u.ImageInputTokens))
	}
	if u.AudioInputTokens != 0 {
		kvs = append(kvs, KeyUsageAudioInputTokens.Int64(u.AudioInputTokens))
	}
	return kvs
}

// finishReasons returns gen_ai.response.finish_reasons for one reason,
// without allocating for the common reasons.
func (e *Extension) finishReasons(reason string) attribute.KeyValue {
	if kv, ok := e.finishKVs[reason]; ok {
		return kv
	}
	return semconv.GenAIResponseFinishReasons(reason)
}

// cachedValue returns the processed value of key, encoding it with enc
// unless slot holds the value for the same part hash and capture mode.
// A zero hash (no prefix key) is never cached.
func (e *Extension) cachedValue(slot *atomic.Pointer[cachedValue], h harness.Hash, key attribute.Key, enc func([]byte) []byte) *cachedValue {
	if c := slot.Load(); c != nil && !h.IsZero() && c.hash == h && c.capture == e.cfg.capture {
		return c
	}
	b := e.getBuf()
	*b = enc(*b)
	// process counts the redaction and the cut; cached() counts them again
	// for every use, so undo the first count here.
	v, redacted, cut := e.processCounted(string(key), string(*b), false)
	e.putBuf(b)
	if redacted {
		e.stats.redacted.Add(-1)
	}
	if cut > 0 {
		e.stats.truncated.Add(-1)
		e.stats.truncatedBytes.Add(-int64(cut))
	}
	c := &cachedValue{hash: h, capture: e.cfg.capture, kv: key.String(v), redacted: redacted, cut: cut}
	if !h.IsZero() {
		slot.Store(c)
	}
	return c
}

// ---- tool calls ----

// InterceptTool opens the execute_tool span of one tool call.
func (ic interceptors) InterceptTool(ctx context.Context, call *harness.ToolCall, next harness.ToolFunc) *harness.ToolResult {
	e := ic.e
	conv, sess := e.sessionAttrs()
	name := e.names.name("execute_tool", call.Name)
	r := e.newRecorder()
	defer e.release(&r)
	kp := &r.kvs
	*kp = append(*kp, semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(call.Name), semconv.GenAIToolCallID(call.ID), conv)
	ctx, span := e.tracer.Start(ctx, name, e.kindInternal, trace.WithAttributes(*kp...))
	r.kvs = r.kvs[:0]
	if e.cfg.mirror {
		r.kvs = append(r.kvs, KeyLangSmithSpanKind.String(spanKindTool), KeyLangSmithTraceName.String(name), sess)
	}
	e.stats.tools.Add(1)
	ended := false
	defer func() {
		if !ended {
			e.stats.errors.Add(1)
			r.kvs = append(r.kvs, KeyToolStatus.String(string(harness.ToolPanicked)), semconv.ErrorTypeKey.String(string(harness.ToolPanicked)))
			span.SetAttributes(r.kvs...)
			span.SetStatus(codes.Error, "panic")
			span.End()
		}
	}()
	var start time.Time
	var metricName string
	if e.m != nil {
		metricName = e.metricToolName(call.Name)
		start = time.Now()
	}
	res := next(ctx, call)
	ended = true
	if e.m != nil {
		e.m.recordTool(ctx, start, metricName, res)
	}
	if span.IsRecording() {
		e.endTool(ctx, span, &r, call, res)
	}
	span.End()
	return res
}

func (e *Extension) endTool(ctx context.Context, span trace.Span, r *recorder, call *harness.ToolCall, res *harness.ToolResult) {
	if e.cfg.capture {
		r.content(semconv.GenAIToolCallArgumentsKey, string(call.Input))
	}
	if res == nil {
		typ := string(harness.ToolMiddlewareErr)
		r.kvs = append(r.kvs, KeyToolStatus.String(typ), semconv.ErrorTypeKey.String(typ))
		e.setError(span, r, typ, errors.New("a tool interceptor returned no result"))
		span.SetAttributes(r.finish()...)
		return
	}
	status := res.Status
	if status == "" {
		status = harness.ToolOK
		if res.IsError {
			status = harness.ToolError
		}
	}
	r.kvs = append(r.kvs, KeyToolStatus.String(string(status)))
	if e.cfg.capture {
		// The scan's verdict on the result goes with it into the
		// conversation, which the next model request encodes.
		clean := e.red != nil && !redact.MayContainSecretInJSON(res.Content)
		r.contentScanned(semconv.GenAIToolCallResultKey, res.Content, clean)
		if len(res.Parts) > 0 {
			b := e.getBuf()
			me := e.newMediaEnc(ctx)
			*b = appendParts(*b, res.Parts, &me)
			r.encodedParts(KeyToolCallResultParts, string(*b), me.summary(), me.holes,
				e.red != nil && !me.suspect && !partsMayContainSecret(res.Parts), nil)
			e.putBuf(b)
		}
		// Only a result without parts: its verdict is by its strings' identity.
		if clean && len(res.Parts) == 0 && !redact.MayContainSecretInJSON(res.CallID) {
			e.history.noteCleanResult(res)
		}
	}
	switch status {
	case harness.ToolOK, harness.ToolPending, harness.ToolCancelled, harness.ToolInterrupted, harness.ToolSuspended:
		// Not errors: a pause, a cancellation, a call a crash
		// interrupted (its outcome is unknown) and a question that
		// suspended the run have their own status.
	default:
		if res.IsError || status != harness.ToolOK {
			typ := string(status)
			if res.ErrorType != "" { // the tool's own class (harness.ErrorTyper)
				typ = res.ErrorType
			}
			r.kvs = append(r.kvs, semconv.ErrorTypeKey.String(typ))
			e.setError(span, r, typ, errors.New(res.Content))
		}
	}
	span.SetAttributes(r.finish()...)
}

// ---- errors ----

// errorType returns a short, low-cardinality type for err: "cancelled",
// "timeout", "max_steps", "panic", "extension_error", or the Go type of
// the first error in its chain that is not a plain message or wrapper, or
// "_OTHER".
func errorType(err error) string {
	if err == nil {
		return ""
	}
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, harness.ErrMaxSteps):
		return "max_steps"
	}
	var pe *harness.PanicError
	if errors.As(err, &pe) {
		return "panic"
	}
	var ee *harness.ExtensionError
	if errors.As(err, &ee) {
		return "extension_error"
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch t := fmt.Sprintf("%T", e); t {
		case "*errors.errorString", "*fmt.wrapError", "*fmt.wrapErrors", "*errors.joinError", "*harness.ProviderError":
			continue
		default:
			return t
		}
	}
	return semconv.ErrorTypeOther.Value.AsString()
}
