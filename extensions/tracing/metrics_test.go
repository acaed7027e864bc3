package tracing_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// otlpMetricsReceiver is a loopback OTLP/HTTP receiver that decodes the
// protobuf metrics it is sent.
type otlpMetricsReceiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []*colmetricpb.ExportMetricsServiceRequest
}

func newOTLPMetricsReceiver(t *testing.T) *otlpMetricsReceiver {
	t.Helper()
	r := &otlpMetricsReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/metrics" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want protobuf on /v1/metrics", http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var m colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.reqs = append(r.reqs, &m)
		r.mu.Unlock()
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// metrics returns the received metrics by name (the last export of each,
// as the exporter sends cumulative data).
func (r *otlpMetricsReceiver) metrics() map[string]*metricpb.Metric {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]*metricpb.Metric{}
	for _, req := range r.reqs {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				if sm.Scope.GetName() != tracing.ScopeName {
					continue
				}
				for _, m := range sm.Metrics {
					out[m.Name] = m
				}
			}
		}
	}
	return out
}

// otlpMeterProvider returns an SDK MeterProvider that exports to r when
// it is shut down (or flushed).
func otlpMeterProvider(t *testing.T, r *otlpMetricsReceiver) *sdkmetric.MeterProvider {
	t.Helper()
	exp, err := otlpmetrichttp.New(context.Background(),
		otlpmetrichttp.WithEndpointURL(r.srv.URL+"/v1/metrics"), otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp
}

func pbAttrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.Value
		switch {
		case v.GetStringValue() != "":
			m[kv.Key] = v.GetStringValue()
		default:
			m[kv.Key] = v.String()
		}
	}
	return m
}

// point finds the one histogram point of m whose attributes include want.
func histPoint(t *testing.T, m *metricpb.Metric, want map[string]string) *metricpb.HistogramDataPoint {
	t.Helper()
	if m == nil {
		t.Fatal("metric missing")
	}
	h := m.GetHistogram()
	if h == nil {
		t.Fatalf("%s is not a histogram", m.Name)
	}
	var found []*metricpb.HistogramDataPoint
	for _, dp := range h.DataPoints {
		got := pbAttrs(dp.Attributes)
		ok := true
		for k, v := range want {
			if got[k] != v {
				ok = false
			}
		}
		if ok {
			found = append(found, dp)
		}
	}
	if len(found) != 1 {
		var all []string
		for _, dp := range h.DataPoints {
			all = append(all, strings.TrimSpace(strings.ReplaceAll(pbAttrsString(dp.Attributes), "\n", " ")))
		}
		t.Fatalf("%s: %d points match %v; points: %v", m.Name, len(found), want, all)
	}
	return found[0]
}

func pbAttrsString(kvs []*commonpb.KeyValue) string {
	m := pbAttrs(kvs)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + m[k] + " ")
	}
	return b.String()
}

// streamingProvider marks every response of a scripted provider as
// streamed, its first chunk arriving after firstChunk.
type streamingProvider struct {
	*harnesstest.ScriptedProvider
	firstChunk time.Duration
}

func (p streamingProvider) Generate(ctx context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
	start := time.Now()
	time.Sleep(p.firstChunk)
	resp, err := p.ScriptedProvider.Generate(ctx, req)
	if resp != nil {
		resp.FirstChunkAt = start.Add(p.firstChunk)
	}
	return resp, err
}

// TestMetricsOverOTLP runs a scripted, streamed run with cache-heavy usage
// and a tool call, exports the metrics over real OTLP/HTTP to a loopback
// receiver, and checks names, units, attributes and values.
func TestMetricsOverOTLP(t *testing.T) {
	recv := newOTLPMetricsReceiver(t)
	mp := otlpMeterProvider(t, recv)
	tp, _ := recorderTP(t)
	script := []harnesstest.Response{
		{ToolCalls: []harness.ToolCall{{ID: "call_1", Name: "weather", Input: []byte(`{"city":"Paris"}`)}},
			Usage: harness.Usage{InputTokens: 1200, OutputTokens: 40, CacheReadInputTokens: 1000, CacheCreationInputTokens: 150}, Model: "m-2026"},
		{Text: "Sunny.", Usage: harness.Usage{InputTokens: 1300, OutputTokens: 60, CacheReadInputTokens: 1150, ReasoningTokens: 25}, Model: "m-2026"},
	}
	p := streamingProvider{harnesstest.NewScriptedProvider(script...), 20 * time.Millisecond}
	ext := tracing.New(tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp))
	a, err := harness.New(harness.WithProvider(p), harness.WithModel("m"), harness.WithName("weatherbot"),
		harness.WithTools(weatherTool()), harness.WithExtensions(ext))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if res, err := a.Run(context.Background(), "weather?"); err != nil || res.Status != harness.StatusCompleted {
		t.Fatal(err, res)
	}
	if err := mp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := recv.metrics()

	chat := map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "scripted",
		"gen_ai.request.model": "m", "gen_ai.response.model": "m-2026"}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for a, b := range chat {
			m[a] = b
		}
		return m
	}
	units := map[string]string{
		"gen_ai.client.token.usage":                   "{token}",
		tracing.MetricTokenDetail:                     "{token}",
		"gen_ai.client.operation.duration":            "s",
		"gen_ai.client.operation.time_to_first_chunk": "s",
		tracing.MetricToolDuration:                    "s",
		tracing.MetricRunDuration:                     "s",
	}
	for name, unit := range units {
		m := got[name]
		if m == nil {
			t.Fatalf("metric %s not received; got %v", name, keys(got))
		}
		if m.Unit != unit {
			t.Errorf("%s: unit %q, want %q", name, m.Unit, unit)
		}
	}

	tokens := got["gen_ai.client.token.usage"]
	for _, c := range []struct {
		typ   string
		count uint64
		sum   float64
	}{{"input", 2, 2500}, {"output", 2, 100}} {
		dp := histPoint(t, tokens, with("gen_ai.token.type", c.typ))
		if dp.Count != c.count || dp.GetSum() != c.sum {
			t.Errorf("token.usage %s: count %d sum %v, want %d and %v", c.typ, dp.Count, dp.GetSum(), c.count, c.sum)
		}
	}
	detail := got[tracing.MetricTokenDetail]
	for _, c := range []struct {
		typ   string
		count uint64
		sum   float64
	}{{"cache_read", 2, 2150}, {"cache_creation", 1, 150}, {"reasoning", 1, 25}} {
		dp := histPoint(t, detail, with("harnessx.token.type", c.typ))
		if dp.Count != c.count || dp.GetSum() != c.sum {
			t.Errorf("%s %s: count %d sum %v, want %d and %v", tracing.MetricTokenDetail, c.typ, dp.Count, dp.GetSum(), c.count, c.sum)
		}
		if _, bad := pbAttrs(dp.Attributes)["gen_ai.token.type"]; bad {
			t.Errorf("%s %s carries gen_ai.token.type: summing token.usage would count it twice", tracing.MetricTokenDetail, c.typ)
		}
	}

	dur := histPoint(t, got["gen_ai.client.operation.duration"], chat)
	if dur.Count != 2 || dur.GetSum() < 0.04 {
		t.Errorf("operation.duration: count %d sum %v, want 2 requests of at least 20ms", dur.Count, dur.GetSum())
	}
	ttfc := histPoint(t, got["gen_ai.client.operation.time_to_first_chunk"], chat)
	if ttfc.Count != 2 || ttfc.GetSum() < 0.04 || ttfc.GetSum() > dur.GetSum() {
		t.Errorf("time_to_first_chunk: count %d sum %v, want 2 of about 20ms, at most the durations (%v)", ttfc.Count, ttfc.GetSum(), dur.GetSum())
	}
	tool := histPoint(t, got[tracing.MetricToolDuration], map[string]string{"gen_ai.tool.name": "weather", "harnessx.tool.status": "ok"})
	if tool.Count != 1 {
		t.Errorf("tool.duration count %d, want 1", tool.Count)
	}
	run := histPoint(t, got[tracing.MetricRunDuration], map[string]string{"gen_ai.agent.name": "weatherbot", "harnessx.run.status": "completed"})
	if run.Count != 1 || run.GetSum() < dur.GetSum() {
		t.Errorf("run.duration: count %d sum %v, want 1 run at least as long as its requests (%v)", run.Count, run.GetSum(), dur.GetSum())
	}
	if _, ok := got[tracing.MetricCost]; ok {
		t.Errorf("%s recorded for a model without a price", tracing.MetricCost)
	}
}

// TestMetricsFailedRequest checks error.type on the duration of a failed
// request and on the failed run, and that a failed request records no
// tokens.
func TestMetricsFailedRequest(t *testing.T) {
	rd := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	defer mp.Shutdown(context.Background())
	tp, _ := recorderTP(t)
	ext := tracing.New(tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp))
	a := newAgentExt(t, ext, []harnesstest.Response{{Err: errors.New("overloaded")}})
	if res, _ := a.Run(context.Background(), "hi"); res.Status != harness.StatusFailed {
		t.Fatalf("status %s, want failed", res.Status)
	}
	var rm metricdata.ResourceMetrics
	if err := rd.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			seen[m.Name] = true
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok {
				continue
			}
			switch m.Name {
			case "gen_ai.client.operation.duration", tracing.MetricRunDuration:
				if len(h.DataPoints) != 1 {
					t.Fatalf("%s: %d points", m.Name, len(h.DataPoints))
				}
				v, ok := h.DataPoints[0].Attributes.Value("error.type")
				if !ok || v.AsString() != "*errors.errorString" && v.AsString() != "_OTHER" {
					t.Errorf("%s: error.type %q (%v), want the error's type", m.Name, v.AsString(), ok)
				}
			}
		}
	}
	if !seen["gen_ai.client.operation.duration"] || !seen[tracing.MetricRunDuration] {
		t.Errorf("metrics %v, want the request and run durations", seen)
	}
	if seen["gen_ai.client.token.usage"] {
		t.Error("a failed request recorded token usage")
	}
}

// TestMetricsNeverGlobal: without WithMeterProvider nothing is recorded,
// not even on the global MeterProvider.
func TestMetricsNeverGlobal(t *testing.T) {
	rd := sdkmetric.NewManualReader()
	global := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	defer global.Shutdown(context.Background())
	prev := otel.GetMeterProvider()
	otel.SetMeterProvider(global)
	defer otel.SetMeterProvider(prev)

	tp, _ := recorderTP(t)
	a, _ := newAgent(t, tp, []harnesstest.Response{harnesstest.Reply("hi")})
	if _, err := a.Run(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := rd.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if len(rm.ScopeMetrics) != 0 {
		t.Errorf("the global MeterProvider got %d scopes of metrics", len(rm.ScopeMetrics))
	}
}

func TestWithMeterProviderNil(t *testing.T) {
	p := harnesstest.NewScriptedProvider(harnesstest.Reply("hi"))
	_, err := harness.New(harness.WithProvider(p), harness.WithExtensions(tracing.New(tracing.WithMeterProvider(nil))))
	if !errors.Is(err, tracing.ErrInvalidConfig) || !strings.Contains(err.Error(), "WithMeterProvider") {
		t.Errorf("err %v, want a ConfigError naming WithMeterProvider", err)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestMetricsCardinality: 3,000 tool names that a model invents and 3,000
// response models that a provider reports give metrics at most catalog +
// 1 names each: gen_ai.tool.name is the agent's tool or _OTHER, and
// gen_ai.response.model the request's model, a priced model, one of the
// first 16 others, or _OTHER. The spans keep the real names.
func TestMetricsCardinality(t *testing.T) {
	const n = 3000
	rd := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	defer mp.Shutdown(context.Background())
	tp, sr := recorderTP(t)
	ext := tracing.New(tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp), tracing.WithPricing(testPrices(t)))
	var script []harnesstest.Response
	for i := range n {
		call := harnesstest.CallTool(fmt.Sprintf("c%d", i), fmt.Sprintf("invented_%d", i), map[string]any{})
		call.Model = fmt.Sprintf("model-%d", i)
		script = append(script, call, harnesstest.Response{Text: "ok", Model: fmt.Sprintf("other-%d", i)})
	}
	// After the bound is full: the catalog's tool, a priced model, the
	// request's model ("m").
	weather := harnesstest.CallTool("w", "weather", map[string]any{"city": "Paris"})
	weather.Model = "m-2026"
	script = append(script, weather, harnesstest.Reply("sunny"))
	a := newAgentExt(t, ext, script)
	for range n + 1 {
		if res, err := a.Run(context.Background(), "go"); err != nil || res.Status != harness.StatusCompleted {
			t.Fatalf("run: %v %v", err, res.Status)
		}
		a.Reset()
	}
	var rm metricdata.ResourceMetrics
	if err := rd.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	catalog := a.Inventory().Tools
	wantTools := map[string]bool{"_OTHER": true}
	for _, name := range catalog {
		wantTools[name] = true
	}
	// The request's model, the priced one, the first 16 others, _OTHER.
	const modelBound = 1 + 1 + 16 + 1
	checked := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var attrs []attribute.Set
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					attrs = append(attrs, p.Attributes)
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					attrs = append(attrs, p.Attributes)
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					attrs = append(attrs, p.Attributes)
				}
			}
			tools, models, kinds := map[string]bool{}, map[string]bool{}, map[string]bool{}
			for _, set := range attrs {
				if v, ok := set.Value("gen_ai.tool.name"); ok {
					tools[v.AsString()] = true
				}
				if v, ok := set.Value("gen_ai.response.model"); ok {
					models[v.AsString()] = true
				}
				// The series a name may have: by token type and status.
				tt, _ := set.Value("gen_ai.token.type")
				ht, _ := set.Value(tracing.KeyTokenType)
				st, _ := set.Value(tracing.KeyToolStatus)
				kinds[tt.Emit()+"/"+ht.Emit()+"/"+st.Emit()] = true
			}
			if len(tools) > 0 {
				checked[m.Name] = true
				for name := range tools {
					if !wantTools[name] {
						t.Errorf("%s: gen_ai.tool.name %q is not in the catalog %v", m.Name, name, catalog)
					}
				}
				if len(attrs) > (len(catalog)+1)*len(kinds) {
					t.Errorf("%s: %d series for a catalog of %d tools", m.Name, len(attrs), len(catalog))
				}
			}
			if len(models) > 0 {
				checked[m.Name] = true
				// Only the priced model adds to the cost.
				if len(models) > modelBound || !models["m-2026"] || m.Name != tracing.MetricCost && (!models["_OTHER"] || !models["m"]) {
					t.Errorf("%s: %d response models, want at most %d with _OTHER, m and the priced m-2026: %v", m.Name, len(models), modelBound, keys(models))
				}
				if len(attrs) > modelBound*len(kinds) {
					t.Errorf("%s: %d series", m.Name, len(attrs))
				}
			}
		}
	}
	for _, name := range []string{tracing.MetricToolDuration, "gen_ai.client.operation.duration", "gen_ai.client.token.usage", tracing.MetricCost} {
		if !checked[name] {
			t.Errorf("%s: not recorded, or without its name attribute", name)
		}
	}
	var tool, model bool
	for _, s := range sr.Ended() {
		for _, kv := range s.Attributes() {
			tool = tool || kv.Key == "gen_ai.tool.name" && kv.Value.AsString() == "invented_2999"
			model = model || kv.Key == "gen_ai.response.model" && kv.Value.AsString() == "model-2999"
		}
	}
	if !tool || !model {
		t.Errorf("spans lost the real names: tool %v, model %v", tool, model)
	}
}
