package tracing_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

var weatherScript = []harnesstest.Response{
	harnesstest.CallTool("call_1", "weather", `{"city":"Paris"}`),
	{Text: "It is sunny in Paris.", Usage: harness.Usage{InputTokens: 10, OutputTokens: 5, CacheReadInputTokens: 4, ReasoningTokens: 2}},
}

func TestTreeShape(t *testing.T) {
	tp, sr := recorderTP(t)
	a, ext := newAgent(t, tp, weatherScript)
	if _, err := a.Run(context.Background(), "weather in Paris?"); err != nil {
		t.Fatal(err)
	}
	all := spans(sr)
	if got, want := names(all), []string{"invoke_agent weatherbot", "chat m", "execute_tool weather", "chat m"}; !slices.Equal(got, want) {
		t.Fatalf("spans = %q, want %q", got, want)
	}
	root := all[0]
	if root.Parent().IsValid() {
		t.Errorf("root has parent %v", root.Parent())
	}
	if got := names(childrenOf(all, root)); !slices.Equal(got, []string{"chat m", "execute_tool weather", "chat m"}) {
		t.Errorf("children of the agent span = %q", got)
	}
	checkNoOrphans(t, all)
	wantKind := map[string]struct {
		ls   string
		kind trace.SpanKind
		op   string
	}{
		"invoke_agent weatherbot": {"chain", trace.SpanKindInternal, "invoke_agent"},
		"chat m":                  {"llm", trace.SpanKindClient, "chat"},
		"execute_tool weather":    {"tool", trace.SpanKindInternal, "execute_tool"},
	}
	for _, s := range all {
		w := wantKind[s.Name()]
		t.Run(s.Name(), func(t *testing.T) {
			if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
				t.Error("span in another trace")
			}
			if s.SpanKind() != w.kind {
				t.Errorf("kind %v, want %v", s.SpanKind(), w.kind)
			}
			checks := map[attribute.Key]string{
				tracing.KeyLangSmithSpanKind:   w.ls,
				tracing.KeyLangSmithTraceName:  s.Name(),
				tracing.KeyLangSmithSessionID:  "sess-1",
				semconv.GenAIConversationIDKey: "sess-1",
				semconv.GenAIOperationNameKey:  w.op,
			}
			for k, want := range checks {
				if got := str(s, k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if s.Status().Code == codes.Error {
				t.Errorf("status %v", s.Status())
			}
		})
	}
	if st := ext.Stats(); st.Runs != 1 || st.ModelRequests != 2 || st.ToolCalls != 1 || st.Errors != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestModelSpanAttributes(t *testing.T) {
	tp, sr := recorderTP(t)
	a, _ := newAgent(t, tp, weatherScript,
		harness.WithSystemPrompt("Be brief."), harness.WithMaxTokens(256), harness.WithTemperature(0.5))
	if _, err := a.Run(context.Background(), "weather in Paris?"); err != nil {
		t.Fatal(err)
	}
	chats := byName(spans(sr), "chat m")
	if len(chats) != 2 {
		t.Fatalf("%d chat spans", len(chats))
	}
	first, second := attrs(chats[0]), attrs(chats[1])
	tests := []struct {
		name string
		m    map[attribute.Key]attribute.Value
		key  attribute.Key
		want string
	}{
		{"request model", first, semconv.GenAIRequestModelKey, "m"},
		{"max tokens", first, semconv.GenAIRequestMaxTokensKey, "256"},
		{"temperature", first, semconv.GenAIRequestTemperatureKey, "0.5"},
		{"stream", first, semconv.GenAIRequestStreamKey, "false"},
		{"provider", first, semconv.GenAIProviderNameKey, "scripted"},
		{"ls provider", first, tracing.KeyLangSmithProvider, "scripted"},
		{"ls model", first, tracing.KeyLangSmithModelName, "m"},
		{"system", first, semconv.GenAISystemInstructionsKey, `[{"type":"text","content":"Be brief."}]`},
		{"input", first, semconv.GenAIInputMessagesKey, `[{"role":"user","parts":[{"type":"text","content":"weather in Paris?"}]}]`},
		{"output", first, semconv.GenAIOutputMessagesKey, `[{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"weather","arguments":{"city":"Paris"}}],"finish_reason":"tool_call"}]`},
		{"finish", first, semconv.GenAIResponseFinishReasonsKey, `["tool_call"]`},
		{"response id", first, semconv.GenAIResponseIDKey, "resp_1"},
		{"attempt", first, tracing.KeyAttempt, "1"},
		{"step", second, tracing.KeyStep, "2"},
		{"input 2", second, semconv.GenAIInputMessagesKey, `[{"role":"user","parts":[{"type":"text","content":"weather in Paris?"}]},` +
			`{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"weather","arguments":{"city":"Paris"}}]},` +
			`{"role":"tool","parts":[{"type":"tool_call_response","id":"call_1","response":"sunny in Paris"}]}]`},
		{"usage in", second, semconv.GenAIUsageInputTokensKey, "10"},
		{"usage out", second, semconv.GenAIUsageOutputTokensKey, "5"},
		{"cache read", second, semconv.GenAIUsageCacheReadInputTokensKey, "4"},
		{"cache creation", second, semconv.GenAIUsageCacheCreationInputTokensKey, "0"},
		{"reasoning", second, semconv.GenAIUsageReasoningOutputTokensKey, "2"},
		{"ls usage", second, tracing.KeyLangSmithUsage, `{"input_tokens":10,"output_tokens":5,"total_tokens":15,"input_token_details":{"cache_read":4,"cache_creation":0},"output_token_details":{"reasoning":2}}`},
		{"finish 2", second, semconv.GenAIResponseFinishReasonsKey, `["stop"]`},
		{"model status", second, tracing.KeyModelStatus, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := tt.m[tt.key]
			if !ok {
				t.Fatalf("%s missing", tt.key)
			}
			if got := v.Emit(); got != tt.want {
				t.Errorf("%s = %s, want %s", tt.key, got, tt.want)
			}
		})
	}
	// Messages and definitions are valid JSON of the parts schema.
	for _, k := range []attribute.Key{semconv.GenAIInputMessagesKey, semconv.GenAIOutputMessagesKey, semconv.GenAIToolDefinitionsKey, semconv.GenAISystemInstructionsKey, tracing.KeyLangSmithUsage} {
		if !json.Valid([]byte(second[k].AsString())) {
			t.Errorf("%s is not valid JSON: %s", k, second[k].AsString())
		}
	}
	var defs []map[string]any
	if err := json.Unmarshal([]byte(first[semconv.GenAIToolDefinitionsKey].AsString()), &defs); err != nil {
		t.Fatal(err)
	}
	if len(defs) != 1 || defs[0]["type"] != "function" || defs[0]["name"] != "weather" || defs[0]["description"] != "Weather of a city." || defs[0]["parameters"] == nil {
		t.Errorf("tool definitions = %v", defs)
	}
	// The prefix key is hex SHA-256, and the LangSmith copy matches. The
	// parts' hashes come with the session's first request (and with a
	// cache break, which the second request is not).
	for i, m := range []map[attribute.Key]attribute.Value{first, second} {
		if v := m[tracing.KeyPrefixKey].AsString(); !isHash(v) {
			t.Errorf("%s = %q, want 64 hex digits", tracing.KeyPrefixKey, v)
		}
		for _, k := range []attribute.Key{tracing.KeyPrefixModel, tracing.KeyPrefixTools, tracing.KeyPrefixSystem, tracing.KeyPrefixMessages} {
			v, ok := m[k]
			if i == 0 && !isHash(v.AsString()) {
				t.Errorf("first request: %s = %q, want 64 hex digits", k, v.AsString())
			}
			if i == 1 && ok {
				t.Errorf("second request: %s = %q without a cache break", k, v.Emit())
			}
		}
	}
	if first[tracing.KeyPrefixKey] != first[tracing.KeyLangSmithPrefixKey] {
		t.Error("langsmith prefix key differs")
	}
	if _, ok := first[tracing.KeyPrefixChanged]; ok {
		t.Error("first request names changed parts")
	}
	if _, ok := second[tracing.KeyPrefixChanged]; ok {
		t.Error("growth of the conversation is reported as a cache break")
	}
}

func TestAgentAndToolSpanAttributes(t *testing.T) {
	tp, sr := recorderTP(t)
	a, _ := newAgent(t, tp, weatherScript)
	res, err := a.Run(context.Background(), "weather in Paris?")
	if err != nil {
		t.Fatal(err)
	}
	all := spans(sr)
	agent, tool := attrs(all[0]), attrs(byName(all, "execute_tool weather")[0])
	tests := []struct {
		name string
		m    map[attribute.Key]attribute.Value
		key  attribute.Key
		want string
	}{
		{"agent name", agent, semconv.GenAIAgentNameKey, "weatherbot"},
		{"run id", agent, tracing.KeyRunID, res.RunID},
		{"run status", agent, tracing.KeyRunStatus, "completed"},
		{"steps", agent, tracing.KeyRunSteps, "2"},
		{"usage in", agent, semconv.GenAIUsageInputTokensKey, "10"},
		{"usage out", agent, semconv.GenAIUsageOutputTokensKey, "5"},
		{"input", agent, semconv.GenAIInputMessagesKey, `[{"role":"user","parts":[{"type":"text","content":"weather in Paris?"}]}]`},
		{"output", agent, semconv.GenAIOutputMessagesKey, `[{"role":"assistant","parts":[{"type":"text","content":"It is sunny in Paris."}],"finish_reason":"stop"}]`},
		{"tool name", tool, semconv.GenAIToolNameKey, "weather"},
		{"call id", tool, semconv.GenAIToolCallIDKey, "call_1"},
		{"arguments", tool, semconv.GenAIToolCallArgumentsKey, `{"city":"Paris"}`},
		{"result", tool, semconv.GenAIToolCallResultKey, "sunny in Paris"},
		{"tool status", tool, tracing.KeyToolStatus, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m[tt.key].Emit(); got != tt.want {
				t.Errorf("%s = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}

func TestCallerSpanIsParent(t *testing.T) {
	tp, sr := recorderTP(t)
	a, _ := newAgent(t, tp, weatherScript)
	ctx, parent := tp.Tracer("caller").Start(context.Background(), "handler")
	if _, err := a.Run(ctx, "weather?"); err != nil {
		t.Fatal(err)
	}
	parent.End()
	all := spans(sr)
	root := byName(all, "invoke_agent weatherbot")[0]
	if root.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("agent span parent = %v, want the caller's span", root.Parent().SpanID())
	}
	checkNoOrphans(t, all)
}

func TestSubagentNestsUnderToolSpan(t *testing.T) {
	tp, sr := recorderTP(t)
	childExt := tracing.New(tracing.WithTracerProvider(tp))
	childP := harnesstest.NewScriptedProvider(
		harnesstest.CallTool("c1", "weather", `{"city":"Oslo"}`),
		harnesstest.Reply("Oslo: sunny"),
	)
	child, err := harness.New(harness.WithProvider(childP), harness.WithModel("small"), harness.WithName("researcher"),
		harness.WithTools(weatherTool()), harness.WithExtensions(childExt))
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close(context.Background())

	parentExt := tracing.New(tracing.WithTracerProvider(tp))
	parentP := harnesstest.NewScriptedProvider(
		harnesstest.CallTool("p1", "research", `{"task":"weather in Oslo"}`),
		harnesstest.Reply("done"),
	)
	parent, err := harness.New(harness.WithProvider(parentP), harness.WithModel("big"), harness.WithName("lead"),
		harness.WithTools(harness.AgentTool(child, "research", "Research a task.")), harness.WithExtensions(parentExt))
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close(context.Background())
	if _, err := parent.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	all := spans(sr)
	checkNoOrphans(t, all)
	toolSpan := byName(all, "execute_tool research")
	childRun := byName(all, "invoke_agent researcher")
	if len(toolSpan) != 1 || len(childRun) != 1 {
		t.Fatalf("spans: %q", names(all))
	}
	if childRun[0].Parent().SpanID() != toolSpan[0].SpanContext().SpanID() {
		t.Error("child agent span is not a child of the parent's execute_tool span")
	}
	if got := names(childrenOf(all, childRun[0])); !slices.Equal(got, []string{"chat small", "execute_tool weather", "chat small"}) {
		t.Errorf("children of the child agent span = %q", got)
	}
	for _, s := range all {
		if s.SpanContext().TraceID() != all[0].SpanContext().TraceID() {
			t.Errorf("%s in another trace", s.Name())
		}
	}
	if got := str(childRun[0], semconv.GenAIAgentNameKey); got != "researcher" {
		t.Errorf("child agent name %q", got)
	}
}

func TestParallelToolsNoOrphans(t *testing.T) {
	const n = 8
	tp, sr := recorderTP(t)
	var started sync.WaitGroup
	started.Add(n)
	slow := harness.MustTool(harness.NewTool("slow", "Waits for its siblings.",
		func(ctx context.Context, in struct {
			I int `json:"i"`
		}) (string, error) {
			started.Done()
			started.Wait() // all n calls run at once, or this deadlocks
			return fmt.Sprint(in.I), nil
		}))
	slow.Concurrent = true
	calls := make([]harness.ToolCall, n)
	for i := range calls {
		calls[i] = harnesstest.Call(fmt.Sprintf("call_%d", i), "slow", fmt.Sprintf(`{"i":%d}`, i))
	}
	a, _ := newAgent(t, tp, []harnesstest.Response{{ToolCalls: calls}, harnesstest.Reply("done")}, harness.WithTools(slow))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := a.Run(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	all := spans(sr)
	checkNoOrphans(t, all)
	root := byName(all, "invoke_agent weatherbot")[0]
	tools := byName(all, "execute_tool slow")
	if len(tools) != n {
		t.Fatalf("%d execute_tool spans, want %d", len(tools), n)
	}
	ids := map[string]bool{}
	for _, s := range tools {
		if s.Parent().SpanID() != root.SpanContext().SpanID() {
			t.Errorf("%s parent %v, want the agent span", str(s, semconv.GenAIToolCallIDKey), s.Parent().SpanID())
		}
		ids[str(s, semconv.GenAIToolCallIDKey)] = true
		if want := strings.TrimPrefix(str(s, semconv.GenAIToolCallIDKey), "call_"); str(s, semconv.GenAIToolCallResultKey) != want {
			t.Errorf("call %s recorded result %q", str(s, semconv.GenAIToolCallIDKey), str(s, semconv.GenAIToolCallResultKey))
		}
	}
	if len(ids) != n {
		t.Errorf("call IDs %v", ids)
	}
}

// TestConcurrentAgents runs several traced agents at once on one
// TracerProvider: each trace keeps its own spans.
func TestConcurrentAgents(t *testing.T) {
	const agents = 6
	tp, sr := recorderTP(t)
	var wg sync.WaitGroup
	runIDs := make([]string, agents)
	for i := range agents {
		a, _ := newAgent(t, tp, weatherScript)
		wg.Go(func() {
			res, err := a.Run(context.Background(), "weather?")
			if err != nil {
				t.Error(err)
				return
			}
			runIDs[i] = res.RunID
		})
	}
	wg.Wait()
	all := spans(sr)
	checkNoOrphans(t, all)
	if len(all) != agents*4 {
		t.Fatalf("%d spans, want %d", len(all), agents*4)
	}
	for _, root := range byName(all, "invoke_agent weatherbot") {
		kids := childrenOf(all, root)
		if got := names(kids); !slices.Equal(got, []string{"chat m", "execute_tool weather", "chat m"}) {
			t.Errorf("run %s children %q", str(root, tracing.KeyRunID), got)
		}
		for _, k := range kids {
			if k.SpanContext().TraceID() != root.SpanContext().TraceID() {
				t.Error("child in another trace")
			}
		}
	}
}

func TestStatuses(t *testing.T) {
	boom := harness.MustTool(harness.NewTool("boom", "Panics.", func(context.Context, struct{}) (string, error) { panic("kaboom") }))
	failing := harness.MustTool(harness.NewTool("fail", "Fails.", func(context.Context, struct{}) (string, error) {
		return "", errors.New("disk full")
	}))
	ask := harness.MustTool(harness.NewTool("deploy", "Deploys.", func(context.Context, struct{}) (string, error) { return "deployed", nil }))
	ask.Permission = harness.PermissionAsk

	type spanWant struct {
		name   string
		key    attribute.Key
		value  string
		status codes.Code
		errTyp string
	}
	tests := []struct {
		name   string
		script []harnesstest.Response
		opts   []harness.Option
		cancel time.Duration // cancel the run after this long
		status harness.Status
		want   []spanWant
	}{
		{
			name:   "provider error",
			script: []harnesstest.Response{harnesstest.Fail(errors.New("overloaded"))},
			status: harness.StatusFailed,
			want: []spanWant{
				{"chat m", tracing.KeyModelStatus, "error", codes.Error, "_OTHER"},
				{"invoke_agent weatherbot", tracing.KeyRunStatus, "failed", codes.Error, "_OTHER"},
			},
		},
		{
			name:   "typed provider error",
			script: []harnesstest.Response{harnesstest.Fail(&harnesstest.RetryableError{Msg: "rate limited"})},
			status: harness.StatusFailed,
			want: []spanWant{
				{"chat m", tracing.KeyModelStatus, "error", codes.Error, "*harnesstest.RetryableError"},
			},
		},
		{
			name:   "tool panic",
			script: []harnesstest.Response{harnesstest.CallTool("c1", "boom", `{}`), harnesstest.Reply("ok")},
			opts:   []harness.Option{harness.WithTools(boom)},
			status: harness.StatusCompleted,
			want: []spanWant{
				{"execute_tool boom", tracing.KeyToolStatus, "panic", codes.Error, "panic"},
				{"invoke_agent weatherbot", tracing.KeyRunStatus, "completed", codes.Unset, ""},
			},
		},
		{
			name:   "tool error",
			script: []harnesstest.Response{harnesstest.CallTool("c1", "fail", `{}`), harnesstest.Reply("ok")},
			opts:   []harness.Option{harness.WithTools(failing)},
			status: harness.StatusCompleted,
			want:   []spanWant{{"execute_tool fail", tracing.KeyToolStatus, "error", codes.Error, "error"}},
		},
		{
			name:   "unknown tool",
			script: []harnesstest.Response{harnesstest.CallTool("c1", "nope", `{}`), harnesstest.Reply("ok")},
			status: harness.StatusCompleted,
			want:   []spanWant{{"execute_tool nope", tracing.KeyToolStatus, "unknown_tool", codes.Error, "unknown_tool"}},
		},
		{
			name:   "cancelled during the model request",
			script: []harnesstest.Response{{Text: "late", Delay: 5 * time.Second}},
			cancel: 20 * time.Millisecond,
			status: harness.StatusCancelled,
			want: []spanWant{
				{"chat m", tracing.KeyModelStatus, "cancelled", codes.Unset, ""},
				{"invoke_agent weatherbot", tracing.KeyRunStatus, "cancelled", codes.Unset, ""},
			},
		},
		{
			name:   "approval pause",
			script: []harnesstest.Response{harnesstest.CallTool("c1", "deploy", `{}`), harnesstest.Reply("ok")},
			opts:   []harness.Option{harness.WithTools(ask)},
			status: harness.StatusPaused,
			want: []spanWant{
				{"execute_tool deploy", tracing.KeyToolStatus, "pending_approval", codes.Unset, ""},
				{"invoke_agent weatherbot", tracing.KeyRunStatus, "paused", codes.Unset, ""},
				{"invoke_agent weatherbot", tracing.KeyRunPending, "1", codes.Unset, ""},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, sr := recorderTP(t)
			a, _ := newAgent(t, tp, tt.script, tt.opts...)
			ctx := context.Background()
			if tt.cancel > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(tt.cancel, cancel)
				defer cancel()
			}
			res, _ := a.Run(ctx, "go")
			if res.Status != tt.status {
				t.Fatalf("run status %s, want %s (%v)", res.Status, tt.status, res.Err)
			}
			all := spans(sr)
			checkNoOrphans(t, all)
			for _, w := range tt.want {
				ss := byName(all, w.name)
				if len(ss) == 0 {
					t.Fatalf("no span %q in %q", w.name, names(all))
				}
				s := ss[len(ss)-1]
				if got := str(s, w.key); got != w.value {
					t.Errorf("%s: %s = %q, want %q", w.name, w.key, got, w.value)
				}
				if s.Status().Code != w.status {
					t.Errorf("%s: status %v, want %v", w.name, s.Status(), w.status)
				}
				if got := str(s, semconv.ErrorTypeKey); got != w.errTyp {
					t.Errorf("%s: error.type %q, want %q", w.name, got, w.errTyp)
				}
			}
		})
	}
}

func TestResumeAfterApproval(t *testing.T) {
	ask := harness.MustTool(harness.NewTool("deploy", "Deploys.", func(context.Context, struct{}) (string, error) { return "deployed", nil }))
	ask.Permission = harness.PermissionAsk
	tp, sr := recorderTP(t)
	a, _ := newAgent(t, tp, []harnesstest.Response{harnesstest.CallTool("c1", "deploy", `{}`), harnesstest.Reply("ok")}, harness.WithTools(ask))
	res, err := a.Run(context.Background(), "deploy")
	if err != nil || res.Status != harness.StatusPaused {
		t.Fatal(res.Status, err)
	}
	res2, err := a.Resume(context.Background(), harness.Approve("c1"))
	if err != nil {
		t.Fatal(err)
	}
	roots := byName(spans(sr), "invoke_agent weatherbot")
	if len(roots) != 2 {
		t.Fatalf("%d agent spans", len(roots))
	}
	if str(roots[1], tracing.KeyRunResumed) != "true" || str(roots[1], tracing.KeyRunID) != res2.RunID || str(roots[0], tracing.KeyRunID) != res.RunID {
		t.Errorf("resumed span: %v", attrs(roots[1]))
	}
	if str(roots[1], tracing.KeyRunStatus) != "completed" {
		t.Errorf("resumed status %q", str(roots[1], tracing.KeyRunStatus))
	}
	tools := byName(spans(sr), "execute_tool deploy")
	if len(tools) != 2 || str(tools[1], tracing.KeyToolStatus) != "ok" || tools[1].Parent().SpanID() != roots[1].SpanContext().SpanID() {
		t.Errorf("approved call span: %d spans", len(tools))
	}
}

func TestRetryAttemptsAreSpans(t *testing.T) {
	tp, sr := recorderTP(t)
	a, ext := newAgent(t, tp, []harnesstest.Response{
		harnesstest.Fail(&harnesstest.RetryableError{Msg: "overloaded"}),
		harnesstest.Fail(&harnesstest.RetryableError{Msg: "overloaded"}),
		harnesstest.Reply("fine"),
	}, harness.WithRetry(harness.RetryPolicy{MaxAttempts: 3}))
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	all := spans(sr)
	chats := byName(all, "chat m")
	if len(chats) != 3 {
		t.Fatalf("%d chat spans, want 3", len(chats))
	}
	root := byName(all, "invoke_agent weatherbot")[0]
	for i, s := range chats {
		if got := str(s, tracing.KeyAttempt); got != fmt.Sprint(i+1) {
			t.Errorf("span %d attempt %s", i, got)
		}
		if str(s, tracing.KeyStep) != "1" || s.Parent().SpanID() != root.SpanContext().SpanID() {
			t.Errorf("span %d: step %s, parent %v", i, str(s, tracing.KeyStep), s.Parent().SpanID())
		}
		wantCode := codes.Error
		if i == 2 {
			wantCode = codes.Unset
		}
		if s.Status().Code != wantCode {
			t.Errorf("attempt %d status %v", i+1, s.Status())
		}
	}
	if res.Status != harness.StatusCompleted || root.Status().Code != codes.Unset {
		t.Errorf("run %s, span status %v", res.Status, root.Status())
	}
	if st := ext.Stats(); st.ModelRequests != 3 || st.Errors != 2 {
		t.Errorf("stats %+v", st)
	}
}

// systemVersion changes the system prompt between runs.
type systemVersion struct{ v *int }

func (m systemVersion) BeforeModelRequest(_ context.Context, req *harness.ModelRequest) error {
	req.System = fmt.Sprintf("You are helper v%d.", *m.v)
	return nil
}

func TestPrefixKeyChangeNamesThePart(t *testing.T) {
	v := 1
	tp, sr := recorderTP(t)
	a, _ := newAgent(t, tp, []harnesstest.Response{harnesstest.Reply("one"), harnesstest.Reply("two"), harnesstest.Reply("three")},
		harness.WithMiddleware(systemVersion{&v}))
	for i, bump := range []bool{false, false, true} {
		if bump {
			v++
		}
		if _, err := a.Run(context.Background(), fmt.Sprint("turn ", i)); err != nil {
			t.Fatal(err)
		}
	}
	chats := byName(spans(sr), "chat m")
	if len(chats) != 3 {
		t.Fatalf("%d chat spans", len(chats))
	}
	tests := []struct {
		name    string
		span    sdktrace.ReadOnlySpan
		changed string
		events  []string
	}{
		{"first request", chats[0], "", nil},
		{"same prefix", chats[1], "", nil},
		{"system changed", chats[2], `["system"]`, []string{tracing.EventCacheBreak}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := str(tt.span, tracing.KeyPrefixChanged); got != tt.changed {
				t.Errorf("changed = %q, want %q", got, tt.changed)
			}
			if got := eventNames(tt.span); !slices.Equal(got, tt.events) {
				t.Errorf("events = %q, want %q", got, tt.events)
			}
		})
	}
	ev := chats[2].Events()[0]
	if len(ev.Attributes) != 1 || ev.Attributes[0].Key != tracing.KeyPrefixChanged || ev.Attributes[0].Value.Emit() != `["system"]` {
		t.Errorf("event attributes %v", ev.Attributes)
	}
	// The parts' hashes come with the session's first request and with
	// the break, and only with them.
	parts := []attribute.Key{tracing.KeyPrefixModel, tracing.KeyPrefixTools, tracing.KeyPrefixSystem, tracing.KeyPrefixMessages}
	for i, c := range chats {
		for _, k := range parts {
			v, ok := attr(c, k)
			if i == 1 && ok {
				t.Errorf("request %d: %s = %s without a cache break", i+1, k, v.Emit())
			}
			if i != 1 && !isHash(v.AsString()) {
				t.Errorf("request %d: %s = %q, want 64 hex digits", i+1, k, v.AsString())
			}
		}
	}
	if str(chats[2], tracing.KeyPrefixSystem) == str(chats[0], tracing.KeyPrefixSystem) {
		t.Error("system hash did not change")
	}
	for _, k := range []attribute.Key{tracing.KeyPrefixModel, tracing.KeyPrefixTools} {
		if str(chats[2], k) != str(chats[0], k) {
			t.Errorf("%s changed", k)
		}
	}
}

// isHash reports whether s is a SHA-256 in lower-case hex.
func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func TestStreamingFirstChunkEvent(t *testing.T) {
	tp, sr := recorderTP(t)
	a, _ := newAgent(t, tp, []harnesstest.Response{harnesstest.Reply("hi")}, harness.WithStreaming(true))
	if _, err := a.Run(context.Background(), "hello"); err != nil {
		t.Fatal(err)
	}
	chat := byName(spans(sr), "chat m")[0]
	if got := eventNames(chat); !slices.Equal(got, []string{tracing.EventNewToken}) {
		t.Fatalf("events %q", got)
	}
	ev := chat.Events()[0]
	if ev.Time.Before(chat.StartTime()) || ev.Time.After(chat.EndTime()) {
		t.Errorf("new_token at %v, outside the span %v..%v", ev.Time, chat.StartTime(), chat.EndTime())
	}
	if str(chat, semconv.GenAIRequestStreamKey) != "true" {
		t.Error("stream not recorded")
	}
	if v, ok := attr(chat, semconv.GenAIResponseTimeToFirstChunkKey); !ok || v.AsFloat64() < 0 {
		t.Errorf("time to first chunk %v", v.Emit())
	}
}

var contentKeys = []attribute.Key{
	semconv.GenAIInputMessagesKey, semconv.GenAIOutputMessagesKey, semconv.GenAISystemInstructionsKey,
	semconv.GenAIToolCallArgumentsKey, semconv.GenAIToolCallResultKey,
}

func TestCaptureSwitch(t *testing.T) {
	tests := []struct {
		name    string
		env     string // "" leaves the variable unset
		opts    []tracing.Option
		capture bool
	}{
		{"default", "", nil, true},
		{"option off", "", []tracing.Option{tracing.WithCaptureContent(false)}, false},
		{"env false", "false", nil, false},
		{"env 0", "0", nil, false},
		{"env no", "NO", nil, false},
		{"env true", "true", nil, true},
		{"option wins over env", "false", []tracing.Option{tracing.WithCaptureContent(true)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv(tracing.CaptureContentEnv, tt.env)
			} else {
				t.Setenv(tracing.CaptureContentEnv, "")
			}
			tp, sr := recorderTP(t)
			ext := tracing.New(append([]tracing.Option{tracing.WithTracerProvider(tp)}, tt.opts...)...)
			a := newAgentExt(t, ext, weatherScript, harness.WithSystemPrompt("secret system prompt"))
			if _, err := a.Run(context.Background(), "weather?"); err != nil {
				t.Fatal(err)
			}
			if ext.CaptureContent() != tt.capture {
				t.Errorf("CaptureContent() = %v", ext.CaptureContent())
			}
			found := 0
			for _, s := range spans(sr) {
				m := attrs(s)
				for _, k := range contentKeys {
					if _, ok := m[k]; ok {
						found++
						if !tt.capture {
							t.Errorf("%s: %s recorded with capture off", s.Name(), k)
						}
					}
				}
				if s.Name() == "chat m" {
					for _, k := range []attribute.Key{tracing.KeyPrefixKey, semconv.GenAIUsageInputTokensKey, semconv.GenAIToolDefinitionsKey, tracing.KeyLangSmithModelName} {
						if _, ok := m[k]; !ok {
							t.Errorf("%s missing with capture %v", k, tt.capture)
						}
					}
					defs := m[semconv.GenAIToolDefinitionsKey].AsString()
					if hasDesc := strings.Contains(defs, "Weather of a city."); hasDesc != tt.capture {
						t.Errorf("tool definitions %s with capture %v", defs, tt.capture)
					}
				}
			}
			if tt.capture && found == 0 {
				t.Error("no content recorded with capture on")
			}
		})
	}
}

func TestRedactor(t *testing.T) {
	tp, sr := recorderTP(t)
	var keysMu sync.Mutex
	keys := map[string]bool{}
	ext := tracing.New(tracing.WithTracerProvider(tp), tracing.WithRedactor(func(key, v string) string {
		keysMu.Lock()
		keys[key] = true
		keysMu.Unlock()
		return strings.ReplaceAll(v, "Paris", "[CITY]")
	}))
	a := newAgentExt(t, ext, weatherScript)
	if _, err := a.Run(context.Background(), "weather in Paris?"); err != nil {
		t.Fatal(err)
	}
	changed := 0
	for _, s := range spans(sr) {
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.Emit(), "Paris") {
				t.Errorf("%s: %s = %s not redacted", s.Name(), kv.Key, kv.Value.Emit())
			}
			if strings.Contains(kv.Value.Emit(), "[CITY]") {
				changed++
			}
		}
	}
	// agent input+output, chat1 input+output, tool args+result, chat2 input+output
	if want := 8; changed != want {
		t.Errorf("%d redacted values on spans, want %d", changed, want)
	}
	if st := ext.Stats(); st.Redacted != int64(changed) {
		t.Errorf("Stats.Redacted = %d, want %d", st.Redacted, changed)
	}
	for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.tool.definitions"} {
		if !keys[k] {
			t.Errorf("redactor never saw %s", k)
		}
	}
}

func TestTruncation(t *testing.T) {
	big := strings.Repeat("é", 5000) // 10000 bytes of two-byte runes
	tool := harness.MustTool(harness.NewTool("big", "Big result.", func(context.Context, struct{}) (string, error) { return big, nil }))
	tests := []struct {
		name string
		max  int
		cut  bool
	}{
		{"under the cap", 64 << 10, false},
		{"over the cap", 300, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, sr := recorderTP(t)
			ext := tracing.New(tracing.WithTracerProvider(tp), tracing.WithMaxAttributeBytes(tt.max))
			a := newAgentExt(t, ext, []harnesstest.Response{harnesstest.CallTool("c1", "big", `{}`), harnesstest.Reply("ok")}, harness.WithTools(tool))
			if _, err := a.Run(context.Background(), "go"); err != nil {
				t.Fatal(err)
			}
			s := byName(spans(sr), "execute_tool big")[0]
			got := str(s, semconv.GenAIToolCallResultKey)
			st := ext.Stats()
			if !tt.cut {
				if got != big || st.Truncated != 0 {
					t.Errorf("value changed (%d bytes) or counted %d", len(got), st.Truncated)
				}
				return
			}
			if len(got) > tt.max {
				t.Errorf("%d bytes, over the cap %d", len(got), tt.max)
			}
			if !utf8Valid(got) {
				t.Error("cut inside a rune")
			}
			sum := sha256Hex(big)
			if !strings.Contains(got, "sha256="+sum) || !strings.Contains(got, "10000 bytes") {
				t.Errorf("marker missing: %q", got)
			}
			if !strings.HasPrefix(big, got[:strings.Index(got, "…[truncated")]) {
				t.Error("kept part is not a prefix of the value")
			}
			if list := str(s, tracing.KeyTruncated); !strings.Contains(list, "gen_ai.tool.call.result") {
				t.Errorf("harnessx.truncated = %q", list)
			}
			// The second chat span's input holds the big result too.
			if st.Truncated < 2 || st.TruncatedBytes < int64(len(big)-tt.max) {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		opts []tracing.Option
		want error
	}{
		{"nil provider", []tracing.Option{tracing.WithTracerProvider(nil)}, tracing.ErrInvalidConfig},
		{"zero cap", []tracing.Option{tracing.WithMaxAttributeBytes(0)}, tracing.ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := harness.New(harness.WithProvider(harnesstest.NewScriptedProvider()), harness.WithExtensions(tracing.New(tt.opts...)))
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			var ce *tracing.ConfigError
			if !errors.As(err, &ce) || ce.Option == "" {
				t.Errorf("no ConfigError in %v", err)
			}
		})
	}
	t.Run("installed twice", func(t *testing.T) {
		tp, _ := recorderTP(t)
		ext := tracing.New(tracing.WithTracerProvider(tp))
		newAgentExt(t, ext, nil)
		_, err := harness.New(harness.WithProvider(harnesstest.NewScriptedProvider()), harness.WithExtensions(ext))
		if !errors.Is(err, tracing.ErrAlreadyInstalled) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestGlobalProviderDefault(t *testing.T) {
	// No provider given and no global SDK set: the no-op global is used;
	// runs work and are counted, nothing is recorded.
	ext := tracing.New()
	a := newAgentExt(t, ext, weatherScript)
	if _, err := a.Run(context.Background(), "weather?"); err != nil {
		t.Fatal(err)
	}
	if st := ext.Stats(); st.Runs != 1 || st.ToolCalls != 1 || st.ModelRequests != 2 {
		t.Errorf("stats %+v", st)
	}
	if ext.Name() != "tracing" || ext.Priority() != tracing.Priority {
		t.Error("name or priority")
	}
}

// langSmithTP is a TracerProvider that says whether its spans go to
// LangSmith (tracing.LangSmithReporter).
type langSmithTP struct {
	*sdktrace.TracerProvider
	sends bool
}

func (p langSmithTP) SendsToLangSmith() bool { return p.sends }

// TestLangSmithMirrorOff checks that WithLangSmithMirror(false) leaves out
// every langsmith.* key and keeps the GenAI keys they mirror, and that
// without the option a provider that says where its spans go decides (a
// plain provider gets the mirrors), while the option wins over it.
func TestLangSmithMirrorOff(t *testing.T) {
	cases := []struct {
		name     string
		reporter bool // the provider is a LangSmithReporter
		sends    bool // what it reports
		opt      *bool
		want     bool
	}{
		{name: "option on", opt: ptr(true), want: true},
		{name: "option off", opt: ptr(false), want: false},
		{name: "plain provider", want: true},
		{name: "provider sends to LangSmith", reporter: true, sends: true, want: true},
		{name: "provider sends elsewhere", reporter: true, sends: false, want: false},
		{name: "option on over provider", reporter: true, sends: false, opt: ptr(true), want: true},
		{name: "option off over provider", reporter: true, sends: true, opt: ptr(false), want: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sdk, sr := recorderTP(t)
			var tp trace.TracerProvider = sdk
			if c.reporter {
				tp = langSmithTP{sdk, c.sends}
			}
			opts := []tracing.Option{tracing.WithTracerProvider(tp)}
			if c.opt != nil {
				opts = append(opts, tracing.WithLangSmithMirror(*c.opt))
			}
			ext := tracing.New(opts...)
			a := newAgentExt(t, ext, weatherScript)
			if ext.Mirrors() != c.want {
				t.Errorf("Mirrors() = %v, want %v", ext.Mirrors(), c.want)
			}
			if _, err := a.Run(context.Background(), "weather in Paris?"); err != nil {
				t.Fatal(err)
			}
			all := spans(sr)
			if len(all) != 4 {
				t.Fatalf("%d spans", len(all))
			}
			for _, s := range all {
				n := 0
				for k := range attrs(s) {
					if strings.HasPrefix(string(k), "langsmith.") {
						n++
					}
				}
				if c.want && n == 0 || !c.want && n > 0 {
					t.Errorf("%s has %d langsmith.* attributes", s.Name(), n)
				}
				for _, k := range []attribute.Key{semconv.GenAIOperationNameKey, semconv.GenAIConversationIDKey} {
					if _, ok := attr(s, k); !ok {
						t.Errorf("%s has no %s", s.Name(), k)
					}
				}
			}
			for _, ch := range byName(all, "chat m") {
				for _, k := range []attribute.Key{semconv.GenAIProviderNameKey, semconv.GenAIUsageInputTokensKey, tracing.KeyPrefixKey} {
					if _, ok := attr(ch, k); !ok {
						t.Errorf("chat span has no %s", k)
					}
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestStartAttributes checks that the attributes a sampler or an OnStart
// span processor may use are set at the span's start.
func TestStartAttributes(t *testing.T) {
	seen := map[string]map[attribute.Key]bool{}
	var mu sync.Mutex
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(onStart(func(s sdktrace.ReadWriteSpan) {
		m := map[attribute.Key]bool{}
		for _, kv := range s.Attributes() {
			m[kv.Key] = true
		}
		mu.Lock()
		seen[s.Name()] = m
		mu.Unlock()
	})))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	a, _ := newAgent(t, tp, weatherScript)
	if _, err := a.Run(context.Background(), "weather in Paris?"); err != nil {
		t.Fatal(err)
	}
	want := map[string][]attribute.Key{
		"invoke_agent " + a.Name(): {semconv.GenAIOperationNameKey, semconv.GenAIAgentNameKey, tracing.KeyRunID, semconv.GenAIConversationIDKey},
		"chat m":                   {semconv.GenAIOperationNameKey, semconv.GenAIRequestModelKey, semconv.GenAIConversationIDKey},
		"execute_tool weather":     {semconv.GenAIOperationNameKey, semconv.GenAIToolNameKey, semconv.GenAIToolCallIDKey, semconv.GenAIConversationIDKey},
	}
	for name, keys := range want {
		for _, k := range keys {
			if !seen[name][k] {
				t.Errorf("%s: %s not set at start", name, k)
			}
		}
	}
}

// onStart is a span processor that calls f on each span start.
type onStart func(sdktrace.ReadWriteSpan)

func (f onStart) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) { f(s) }
func (onStart) OnEnd(sdktrace.ReadOnlySpan)                           {}
func (onStart) Shutdown(context.Context) error                        { return nil }
func (onStart) ForceFlush(context.Context) error                      { return nil }
