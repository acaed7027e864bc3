package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/jaegertest"
)

// Tail-sampling scenario: 40 runs, 4 of which fail, through Jaeger
// configured by deploy/jaeger-tailsampling.yaml with a 50% share.
const (
	tsRuns        = 40
	tsFailing     = 4
	tsPercent     = 50
	tsSpansPerRun = 4 // invoke_agent, chat, execute_tool, chat
)

// tailRun runs one agent turn traced through tp: the model calls a tool,
// then answers, or — when fail is set — its second call fails, so the run
// fails and its invoke_agent span has status Error. It returns the run ID.
func tailRun(t *testing.T, tp trace.TracerProvider, i int, fail bool) string {
	t.Helper()
	ctx := context.Background()
	second := harnesstest.Response{Text: "18°C in Lisbon."}
	if fail {
		second = harnesstest.Response{Err: errors.New("model overloaded")}
	}
	weather := harness.MustTool(harness.NewTool("get_weather", "Weather of a city.",
		func(_ context.Context, in cityIn) (string, error) { return in.City + ": 18°C", nil }))
	agent, err := harness.New(
		harness.WithName("sampled"),
		harness.WithModel("m"),
		harness.WithProvider(harnesstest.NewScriptedProvider(
			harnesstest.CallTool("call_"+strconv.Itoa(i), "get_weather", map[string]string{"city": "Lisbon"}),
			second,
		)),
		harness.WithTools(weather),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close(ctx)
	res, err := agent.Run(ctx, "Weather in Lisbon?")
	want := harness.StatusCompleted
	if fail {
		want = harness.StatusFailed
	}
	if res == nil || res.Status != want {
		t.Fatalf("run %d: %+v, %v; want status %s", i, res, err, want)
	}
	return res.RunID
}

// TestTailSamplingJaeger sends 40 runs, 4 failing, through a real
// collector pipeline with the tail_sampling processor (the pinned Jaeger
// binary, run with deploy/jaeger-tailsampling.yaml) and reads back from
// Jaeger's query API what was kept: every failed trace, whole, and a
// share of the others within bounds of the configured 50%.
func TestTailSamplingJaeger(t *testing.T) {
	j := jaegertest.Start(t,
		jaegertest.WithConfigFile("deploy/jaeger-tailsampling.yaml"),
		jaegertest.WithEnv("HARNESSX_TAIL_PERCENT="+strconv.Itoa(tsPercent)),
		jaegertest.WithSet("processors.tail_sampling.decision_wait=1s"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	service := uniqueService(t)
	begin := time.Now()
	// One batch at ForceFlush: a trace's spans reach the collector
	// together, well inside the decision wait.
	tp, err := exporters.NewOTLP(ctx, exporters.WithEndpointURL(j.TracesURL()),
		exporters.WithServiceName(service), exporters.WithBatchTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]bool{} // run ID -> failed
	for i := range tsRuns {
		fail := i%(tsRuns/tsFailing) == 3
		failed[tailRun(t, tp, i, fail)] = fail
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if st := tp.Stats(); st.Exported != tsRuns*tsSpansPerRun || st.Lost() != 0 {
		t.Fatalf("exporter stats %+v, want %d exported", st, tsRuns*tsSpansPerRun)
	}

	q := jaegertest.Query{Service: service, StartMin: begin.Add(-time.Minute), StartMax: time.Now().Add(time.Minute), NumTraces: 2 * tsRuns}
	if _, err := j.WaitForSpans(ctx, q, tsFailing*tsSpansPerRun); err != nil {
		t.Fatal(err)
	}
	// The processor decides once a second; wait for a later tick so that
	// every trace has been decided, then read the final set.
	time.Sleep(3 * time.Second)
	spans, err := j.FindTraces(ctx, q)
	if err != nil {
		t.Fatal(err)
	}

	type keptTrace struct {
		runID  string
		spans  int
		status int // the invoke_agent span's
	}
	traces := map[string]*keptTrace{}
	for _, s := range spans {
		kt := traces[s.TraceID]
		if kt == nil {
			kt = &keptTrace{}
			traces[s.TraceID] = kt
		}
		kt.spans++
		if s.ParentSpanID == "" {
			kt.runID, _ = s.Attributes["harnessx.run.id"].(string)
			kt.status = s.StatusCode
		}
	}
	var keptFailed, keptOK int
	for id, kt := range traces {
		fail, known := failed[kt.runID]
		switch {
		case !known:
			t.Errorf("trace %s: root run ID %q is none of this test's runs", id, kt.runID)
			continue
		case kt.spans != tsSpansPerRun:
			t.Errorf("trace %s (run %s): %d spans kept, want the whole trace (%d)", id, kt.runID, kt.spans, tsSpansPerRun)
		}
		if fail {
			keptFailed++
			if kt.status != 2 {
				t.Errorf("failed run %s: invoke_agent status %d, want 2 (error)", kt.runID, kt.status)
			}
		} else {
			keptOK++
		}
	}
	if keptFailed != tsFailing {
		t.Errorf("kept %d of the %d failed traces, want all", keptFailed, tsFailing)
	}
	// Binomial(36, 0.5): mean 18, sd 3; 4 sd either side.
	n, p := float64(tsRuns-tsFailing), float64(tsPercent)/100
	mean, sd := n*p, math.Sqrt(n*p*(1-p))
	lo, hi := int(math.Ceil(mean-4*sd)), int(math.Floor(mean+4*sd))
	if keptOK < lo || keptOK > hi {
		t.Errorf("kept %d of the %d ordinary traces, want %d..%d for a %d%% share", keptOK, tsRuns-tsFailing, lo, hi, tsPercent)
	}
	t.Log(fmt.Sprintf("kept %d/%d failed and %d/%d ordinary traces", keptFailed, tsFailing, keptOK, tsRuns-tsFailing))
}

// inProcessRun runs one agent turn traced through tp, shaped as tailRun's
// (invoke_agent, chat, execute_tool, chat): the tool returns an error when
// toolFails (its execute_tool span has status Error, the run completes),
// the second model call fails when runFails (the chat and invoke_agent
// spans have status Error). It returns the run ID.
func inProcessRun(t *testing.T, tp trace.TracerProvider, i int, toolFails, runFails bool) string {
	t.Helper()
	ctx := context.Background()
	second := harnesstest.Response{Text: "18°C in Lisbon."}
	if runFails {
		second = harnesstest.Response{Err: errors.New("model overloaded")}
	}
	weather := harness.MustTool(harness.NewTool("get_weather", "Weather of a city.",
		func(_ context.Context, in cityIn) (string, error) {
			if toolFails {
				return "", errors.New("weather service down")
			}
			return in.City + ": 18°C", nil
		}))
	agent, err := harness.New(
		harness.WithName("sampled"),
		harness.WithModel("m"),
		harness.WithProvider(harnesstest.NewScriptedProvider(
			harnesstest.CallTool("call_"+strconv.Itoa(i), "get_weather", map[string]string{"city": "Lisbon"}),
			second,
		)),
		harness.WithTools(weather),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close(ctx)
	res, _ := agent.Run(ctx, "Weather in Lisbon?")
	want := harness.StatusCompleted
	if runFails {
		want = harness.StatusFailed
	}
	if res == nil || res.Status != want {
		t.Fatalf("run %d: %+v; want status %s", i, res, want)
	}
	return res.RunID
}

// TestInProcessTailSamplingJaeger sends 30 runs through the in-process
// tail sampler (exporters.WithTailSampling, keeping no ordinary trace)
// over OTLP/HTTP to a plain Jaeger: 6 whose tool span errs while the run
// completes, 6 whose run fails, 18 ordinary. Jaeger must hold exactly
// the 12 errored traces, each whole, whichever span carried the error.
func TestInProcessTailSamplingJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	service := uniqueService(t)
	begin := time.Now()
	tp, err := exporters.NewOTLP(ctx, exporters.WithEndpointURL(j.TracesURL()), exporters.WithServiceName(service),
		exporters.WithTailSampling(exporters.WithKeepProbability(0), exporters.WithLatencyThreshold(0)))
	if err != nil {
		t.Fatal(err)
	}
	const runs = 30
	kind := map[string]string{} // run ID -> "tool", "run" or "ok"
	for i := range runs {
		toolFails, runFails := i%5 == 1, i%5 == 3
		k := "ok"
		switch {
		case toolFails:
			k = "tool"
		case runFails:
			k = "run"
		}
		kind[inProcessRun(t, tp, i, toolFails, runFails)] = k
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	const errored = 12
	st := tp.Stats()
	if st.Exported != errored*tsSpansPerRun || st.Lost() != 0 || st.TailSampling.KeptError != errored ||
		st.TailSampling.PartialTraces != 0 || st.TailSampling.DroppedTraces != runs-errored {
		t.Fatalf("stats %+v, want the %d errored traces exported whole", st, errored)
	}

	q := jaegertest.Query{Service: service, StartMin: begin.Add(-time.Minute), StartMax: time.Now().Add(time.Minute), NumTraces: 2 * runs}
	spans, err := j.WaitForSpans(ctx, q, errored*tsSpansPerRun)
	if err != nil {
		t.Fatal(err)
	}
	type keptTrace struct {
		runID string
		spans int
		errs  []string // names of the spans with status Error
	}
	traces := map[string]*keptTrace{}
	for _, s := range spans {
		kt := traces[s.TraceID]
		if kt == nil {
			kt = &keptTrace{}
			traces[s.TraceID] = kt
		}
		kt.spans++
		if s.ParentSpanID == "" {
			kt.runID, _ = s.Attributes["harnessx.run.id"].(string)
		}
		if s.StatusCode == 2 {
			kt.errs = append(kt.errs, s.Name)
		}
	}
	seen := map[string]int{}
	for id, kt := range traces {
		k := kind[kt.runID]
		seen[k]++
		switch {
		case k == "" || k == "ok":
			t.Errorf("trace %s (run %q): not an errored run's, yet in Jaeger", id, kt.runID)
		case kt.spans != tsSpansPerRun:
			t.Errorf("trace %s (%s error): %d spans in Jaeger, want the whole trace (%d)", id, k, kt.spans, tsSpansPerRun)
		case k == "tool" && (len(kt.errs) != 1 || kt.errs[0] != "execute_tool get_weather"):
			t.Errorf("trace %s: error spans %q, want the tool's alone", id, kt.errs)
		}
	}
	if seen["tool"] != 6 || seen["run"] != 6 {
		t.Errorf("Jaeger holds %d traces with a tool error and %d failed runs, want 6 and 6", seen["tool"], seen["run"])
	}
}
