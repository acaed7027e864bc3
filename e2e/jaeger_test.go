package e2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/jaegertest"
	"github.com/harnessx/harnessx/internal/otlpjson"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type cityIn struct {
	City string `json:"city"`
}

// The scripted usage of the three model requests.
var (
	usagePlan   = harness.Usage{InputTokens: 1200, OutputTokens: 40, CacheCreationInputTokens: 1024}
	usageChild  = harness.Usage{InputTokens: 300, OutputTokens: 25, CacheReadInputTokens: 256, ReasoningTokens: 9}
	usageAnswer = harness.Usage{InputTokens: 1400, OutputTokens: 60, CacheReadInputTokens: 1024, ReasoningTokens: 17}
)

// runTraced runs one turn of a planner agent that calls a weather tool and
// a researcher subagent (with its own tracing extension), all traced
// through tp with the tracing options opts.
func runTraced(t *testing.T, tp trace.TracerProvider, opts ...tracing.Option) {
	t.Helper()
	ctx := context.Background()
	child, err := harness.New(
		harness.WithName("researcher"),
		harness.WithModel("child-model"),
		harness.WithSystemPrompt("You research."),
		harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Response{
			Reasoning: "Check the climate tables.", Text: "Mild, rain likely.", Usage: usageChild,
		})),
		harness.WithExtensions(tracing.New(append([]tracing.Option{tracing.WithTracerProvider(tp)}, opts...)...)),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close(ctx)
	weather := harness.MustTool(harness.NewTool("get_weather", "Weather of a city.",
		func(_ context.Context, in cityIn) (string, error) { return in.City + ": 18°C", nil }))
	parent, err := harness.New(
		harness.WithName("planner"),
		harness.WithModel("parent-model"),
		harness.WithSystemPrompt("You plan trips."),
		harness.WithMaxTokens(512),
		harness.WithProvider(harnesstest.NewScriptedProvider(
			harnesstest.Response{
				ToolCalls: []harness.ToolCall{
					harnesstest.Call("call_w", "get_weather", map[string]string{"city": "Lisbon"}),
					harnesstest.Call("call_r", "research", map[string]string{"task": "Lisbon weather this week"}),
				},
				Usage: usagePlan,
			},
			harnesstest.Response{Reasoning: "Both agree.", Text: "Pack an umbrella.", Usage: usageAnswer},
		)),
		harness.WithTools(weather, harness.AgentTool(child, "research", "Ask the researcher.")),
		harness.WithExtensions(tracing.New(append([]tracing.Option{tracing.WithTracerProvider(tp)}, opts...)...)),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close(ctx)
	res, err := parent.Run(ctx, "Weather in Lisbon?")
	if err != nil || res.Status != harness.StatusCompleted {
		t.Fatalf("run: %v %v", res.Status, err)
	}
}

func uniqueService(t *testing.T) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "harnessx-e2e-" + strings.ToLower(t.Name()) + "-" + hex.EncodeToString(b[:])
}

const wantSpans = 7

// TestJaegerSpanTree exports a traced run to a real Jaeger over OTLP/HTTP
// and checks what Jaeger's query API returns: once as the extension
// traces by default through a provider without a LangSmith backend (no
// langsmith.* mirrors), once with the mirrors asked for, as when a
// collector forwards the spans to LangSmith.
func TestJaegerSpanTree(t *testing.T) {
	j := jaegertest.Start(t)
	for _, mirrors := range []bool{false, true} {
		t.Run(fmt.Sprintf("mirrors=%v", mirrors), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			service := uniqueService(t)
			begin := time.Now()
			tp, err := exporters.NewOTLP(ctx, exporters.WithEndpointURL(j.TracesURL()), exporters.WithServiceName(service))
			if err != nil {
				t.Fatal(err)
			}
			if tp.SendsToLangSmith() {
				t.Fatal("an OTLP provider says it sends to LangSmith")
			}
			var opts []tracing.Option
			if mirrors {
				opts = append(opts, tracing.WithLangSmithMirror(true))
			}
			runTraced(t, tp, opts...)
			if err := tp.ForceFlush(ctx); err != nil {
				t.Fatalf("flush to Jaeger: %v", err)
			}
			if err := tp.Shutdown(ctx); err != nil {
				t.Fatalf("shutdown: %v", err)
			}
			if st := tp.Stats(); st.Exported != wantSpans || st.Lost() != 0 {
				t.Fatalf("exporter stats %+v, want %d exported", st, wantSpans)
			}

			spans, err := j.WaitForSpans(ctx, jaegertest.Query{
				Service: service, StartMin: begin.Add(-time.Minute), StartMax: time.Now().Add(time.Minute), NumTraces: 10,
			}, wantSpans)
			if err != nil {
				t.Fatal(err)
			}
			checkTree(t, spans, mirrors)
		})
	}
}

// node is a span with its children, for printing and checking the tree.
type node struct {
	jaegertest.Span
	children []*node
}

// buildTree returns the roots of spans.
func buildTree(spans []jaegertest.Span) []*node {
	byID := map[string]*node{}
	for _, s := range spans {
		byID[s.SpanID] = &node{Span: s}
	}
	var roots []*node
	for _, s := range spans {
		n := byID[s.SpanID]
		if p, ok := byID[s.ParentSpanID]; ok && s.ParentSpanID != "" {
			p.children = append(p.children, n)
		} else {
			roots = append(roots, n)
		}
	}
	var sortRec func([]*node)
	sortRec = func(ns []*node) {
		sort.Slice(ns, func(i, k int) bool { return ns[i].Start.Before(ns[k].Start) })
		for _, n := range ns {
			sortRec(n.children)
		}
	}
	sortRec(roots)
	return roots
}

func render(ns []*node, depth int, b *strings.Builder) {
	for _, n := range ns {
		fmt.Fprintf(b, "%s%s\n", strings.Repeat("  ", depth), n.Name)
		render(n.children, depth+1, b)
	}
}

// checkTree checks the span tree of runTraced and its attributes; with
// mirrors, LangSmith's mirror attributes too, else that no span has one.
func checkTree(t *testing.T, spans []jaegertest.Span, mirrors bool) {
	t.Helper()
	if len(spans) != wantSpans {
		t.Fatalf("Jaeger has %d spans, want %d", len(spans), wantSpans)
	}
	traceID := spans[0].TraceID
	for _, s := range spans {
		if s.TraceID != traceID {
			t.Errorf("span %q is in trace %s, not %s", s.Name, s.TraceID, traceID)
		}
	}
	roots := buildTree(spans)
	var b strings.Builder
	render(roots, 0, &b)
	// The two tool calls run one after the other (neither is Concurrent),
	// so start times order the siblings.
	const want = `invoke_agent planner
  chat parent-model
  execute_tool get_weather
  execute_tool research
    invoke_agent researcher
      chat child-model
  chat parent-model
`
	if got := b.String(); got != want {
		t.Fatalf("span tree in Jaeger:\n%s\nwant:\n%s", got, want)
	}

	root := roots[0]
	plan, toolW, toolR, answer := root.children[0], root.children[1], root.children[2], root.children[3]
	childAgent := toolR.children[0]
	childChat := childAgent.children[0]

	kinds := []struct {
		n        *node
		kind     int
		lsKind   string
		opName   string
		provider bool
	}{
		{root, jaegertest.KindInternal, "chain", "invoke_agent", false},
		{plan, jaegertest.KindClient, "llm", "chat", true},
		{toolW, jaegertest.KindInternal, "tool", "execute_tool", false},
		{toolR, jaegertest.KindInternal, "tool", "execute_tool", false},
		{childAgent, jaegertest.KindInternal, "chain", "invoke_agent", false},
		{childChat, jaegertest.KindClient, "llm", "chat", true},
		{answer, jaegertest.KindClient, "llm", "chat", true},
	}
	for _, k := range kinds {
		if k.n.Kind != k.kind {
			t.Errorf("%s: span kind %d, want %d", k.n.Name, k.n.Kind, k.kind)
		}
		if mirrors {
			checkAttr(t, k.n, "langsmith.span.kind", k.lsKind)
		} else {
			for key := range k.n.Attributes {
				if strings.HasPrefix(key, "langsmith.") {
					t.Errorf("%s: %s set without LangSmith", k.n.Name, key)
				}
			}
		}
		checkAttr(t, k.n, "gen_ai.operation.name", k.opName)
		if k.n.Resource["service.name"] == nil {
			t.Errorf("%s: no service.name on the resource", k.n.Name)
		}
	}
	checkAttr(t, toolW, "gen_ai.tool.name", "get_weather")
	checkAttr(t, toolR, "gen_ai.tool.name", "research")
	checkAttr(t, root, "gen_ai.agent.name", "planner")
	checkAttr(t, childAgent, "gen_ai.agent.name", "researcher")

	chats := []struct {
		n     *node
		model string
		u     harness.Usage
	}{{plan, "parent-model", usagePlan}, {childChat, "child-model", usageChild}, {answer, "parent-model", usageAnswer}}
	hexKey := regexp.MustCompile(`^[0-9a-f]{64}$`)
	for _, c := range chats {
		checkAttr(t, c.n, "gen_ai.request.model", c.model)
		checkAttr(t, c.n, "gen_ai.usage.input_tokens", c.u.InputTokens)
		checkAttr(t, c.n, "gen_ai.usage.output_tokens", c.u.OutputTokens)
		checkAttr(t, c.n, "gen_ai.usage.cache_creation.input_tokens", c.u.CacheCreationInputTokens)
		checkAttr(t, c.n, "gen_ai.usage.cache_read.input_tokens", c.u.CacheReadInputTokens)
		checkAttr(t, c.n, "gen_ai.usage.reasoning.output_tokens", c.u.ReasoningTokens)
		key, _ := c.n.Attributes["harnessx.prefix_key"].(string)
		if !hexKey.MatchString(key) {
			t.Errorf("%s: harnessx.prefix_key %q is not a SHA-256", c.n.Name, key)
		}
		if mirrors {
			checkAttr(t, c.n, "langsmith.metadata.ls_model_name", c.model)
			checkAttr(t, c.n, "langsmith.metadata.ls_provider", "scripted")
			checkAttr(t, c.n, "langsmith.metadata.prefix_key", key)
			if u, _ := c.n.Attributes["langsmith.usage_metadata"].(string); !strings.Contains(u, `"total_tokens"`) {
				t.Errorf("%s: langsmith.usage_metadata %q", c.n.Name, u)
			}
		}
	}
	checkAttr(t, plan, "gen_ai.request.max_tokens", int64(512))
}

// checkAttr checks one attribute. A zero int64 want also accepts an absent
// attribute, since a tracer may leave zero counts out.
func checkAttr(t *testing.T, n *node, key string, want any) {
	t.Helper()
	got, ok := n.Attributes[key]
	if w, isInt := want.(int64); isInt && w == 0 && !ok {
		return
	}
	if !ok {
		t.Errorf("%s: attribute %s missing", n.Name, key)
		return
	}
	if got != want {
		t.Errorf("%s: %s = %v (%T), want %v (%T)", n.Name, key, got, got, want, want)
	}
}

// TestFileReplayIntoJaeger checks that the file exporter's lines are OTLP
// JSON a collector understands: each line, posted as is to Jaeger's
// OTLP/HTTP receiver, comes back with the same span IDs and tree.
func TestFileReplayIntoJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	service := uniqueService(t)
	begin := time.Now()
	var lines bytes.Buffer
	tp, err := exporters.NewFile(ctx, exporters.WithFileWriter(&lines), exporters.WithServiceName(service))
	if err != nil {
		t.Fatal(err)
	}
	runTraced(t, tp)
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	reqs, err := otlpjson.ReadLines(bytes.NewReader(lines.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := map[string]bool{}
	for _, r := range reqs {
		for _, rs := range r.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					wantIDs[hex.EncodeToString(s.GetSpanId())] = true
				}
			}
		}
	}
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	for _, line := range bytes.Split(bytes.TrimSpace(lines.Bytes()), []byte("\n")) {
		resp, err := client.Post(j.TracesURL(), "application/json", bytes.NewReader(line))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("Jaeger refused a file line: %s", resp.Status)
		}
	}
	spans, err := j.WaitForSpans(ctx, jaegertest.Query{
		Service: service, StartMin: begin.Add(-time.Minute), StartMax: time.Now().Add(time.Minute),
	}, wantSpans)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range spans {
		if !wantIDs[s.SpanID] {
			t.Errorf("Jaeger has span %s %q, not in the file", s.SpanID, s.Name)
		}
	}
	checkTree(t, spans, false)
}
