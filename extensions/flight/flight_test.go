package flight_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	if os.Getenv(fsizeChildEnv) != "" {
		os.Exit(runFsizeChild())
	}
	if os.Getenv(artifactChildEnv) != "" {
		os.Exit(runArtifactChild())
	}
	if os.Getenv(windowChildEnv) != "" {
		os.Exit(runWindowChild())
	}
	if os.Getenv(partsChildEnv) != "" {
		os.Exit(runPartsChild())
	}
	goleak.VerifyTestMain(m)
}

// fakeSecret is the credential that must never reach a file.
const fakeSecret = "sk-ant-api03-EXAMPLE0000SECRET"

type echoIn struct {
	Text string `json:"text"`
}

func echoTool() *harness.Tool {
	return harness.MustTool(harness.NewTool("echo", "Echo the text.", func(_ context.Context, in echoIn) (string, error) {
		return "echo: " + in.Text, nil
	}))
}

func leakTool() *harness.Tool {
	return harness.MustTool(harness.NewTool("leak", "Return credentials.", func(_ context.Context, in echoIn) (string, error) {
		return "config: ANTHROPIC_API_KEY=" + fakeSecret + "\nAuthorization: Bearer abcdef0123456789token\n" +
			`{"password": "hunter2", "aws_access_key_id": "AKIAABCDEFGHIJKLMNOP"}`, nil
	}))
}

func panicTool() *harness.Tool {
	return harness.MustTool(harness.NewTool("boom", "Panic.", func(_ context.Context, in echoIn) (string, error) {
		panic("boom")
	}))
}

// tracer is a middleware that opens spans around runs and tool calls with
// a real SDK tracer, so that hooks see span contexts.
type tracer struct{ tr trace.Tracer }

func (t tracer) InterceptRun(ctx context.Context, info *harness.RunInfo, next harness.RunFunc) *harness.RunResult {
	ctx, span := t.tr.Start(ctx, "invoke_agent "+info.Agent)
	defer span.End()
	return next(ctx)
}

func (t tracer) InterceptTool(ctx context.Context, call *harness.ToolCall, next harness.ToolFunc) *harness.ToolResult {
	ctx, span := t.tr.Start(ctx, "execute_tool "+call.Name)
	defer span.End()
	return next(ctx, call)
}

// tracingExt installs the tracer as an extension of default priority,
// like the tracing extension.
type tracingExt struct{ tracer }

func (tracingExt) Name() string { return "test-tracing" }
func (t tracingExt) Install(ec *harness.ExtensionContext) error {
	_, err := ec.AddMiddleware(t.tracer)
	return err
}

type agentSetup struct {
	rec    *flight.Extension
	agent  *harness.Agent
	tp     *sdktrace.TracerProvider
	prov   *harnesstest.ScriptedProvider
	dir    string
	closed bool
}

func newAgent(t *testing.T, script []harnesstest.Response, tools []*harness.Tool, opts ...flight.Option) *agentSetup {
	t.Helper()
	dir := t.TempDir()
	rec := flight.New(append([]flight.Option{flight.WithDir(dir), flight.WithSnapshotInterval(time.Millisecond)}, opts...)...)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec.SpanProcessor()))
	prov := harnesstest.NewScriptedProvider(script...)
	a, err := harness.New(
		harness.WithName("tester"),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithSessionID("sess-1"),
		harness.WithProvider(prov),
		harness.WithModel("scripted-model"),
		harness.WithTools(tools...),
		harness.WithExtensions(tracingExt{tracer{tp.Tracer("test")}}, rec),
	)
	if err != nil {
		t.Fatal(err)
	}
	s := &agentSetup{rec: rec, agent: a, tp: tp, prov: prov, dir: dir}
	t.Cleanup(func() { s.close(t) })
	return s
}

func (s *agentSetup) close(t *testing.T) {
	t.Helper()
	if s.closed {
		return
	}
	s.closed = true
	if err := s.agent.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := s.tp.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

func journalEvents(t *testing.T, dir string) ([]flight.Event, flight.ReadStats) {
	t.Helper()
	var evs []flight.Event
	st, err := flight.ReadJournal(dir, func(e *flight.Event) error {
		evs = append(evs, *e)
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return evs, st
}

func kinds(evs []flight.Event) []flight.Kind {
	out := make([]flight.Kind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

func TestRecordRun(t *testing.T) {
	usage := harness.Usage{InputTokens: 100, OutputTokens: 10, CacheReadInputTokens: 40}
	tests := []struct {
		name      string
		script    []harnesstest.Response
		cancel    bool
		status    harness.Status
		want      []flight.Kind
		incidents []string // reasons of the bundles written
		triggers  []flight.Trigger
	}{
		{
			name: "completed",
			script: []harnesstest.Response{
				{ToolCalls: []harness.ToolCall{harnesstest.Call("c1", "echo", map[string]string{"text": "hi"})}, Usage: usage},
				{Text: "done", Usage: usage},
			},
			status: harness.StatusCompleted,
			want: []flight.Kind{flight.KindRunStart, flight.KindModelRequest, flight.KindModelResponse, flight.KindToolCall,
				flight.KindToolResult, flight.KindModelRequest, flight.KindModelResponse, flight.KindRunEnd},
		},
		{
			name: "provider failure",
			script: []harnesstest.Response{
				harnesstest.CallTool("c1", "echo", map[string]string{"text": "hi"}),
				harnesstest.Fail(errors.New("upstream overloaded")),
			},
			status: harness.StatusFailed,
			want: []flight.Kind{flight.KindRunStart, flight.KindModelRequest, flight.KindModelResponse, flight.KindToolCall,
				flight.KindToolResult, flight.KindModelRequest, flight.KindModelResponse, flight.KindError, flight.KindRunEnd,
				flight.KindIncident},
			incidents: []string{"run_failure"},
		},
		{
			name: "failure with triggers off",
			script: []harnesstest.Response{
				harnesstest.Fail(errors.New("upstream overloaded")),
			},
			status:   harness.StatusFailed,
			triggers: []flight.Trigger{},
			want: []flight.Kind{flight.KindRunStart, flight.KindModelRequest, flight.KindModelResponse, flight.KindError,
				flight.KindRunEnd},
		},
		{
			name: "tool panic",
			script: []harnesstest.Response{
				harnesstest.CallTool("c1", "boom", map[string]string{"text": "x"}),
				harnesstest.Reply("recovered"),
			},
			status: harness.StatusCompleted,
			want: []flight.Kind{flight.KindRunStart, flight.KindModelRequest, flight.KindModelResponse, flight.KindToolCall,
				flight.KindToolResult, flight.KindModelRequest, flight.KindModelResponse, flight.KindRunEnd, flight.KindIncident},
			incidents: []string{"tool_panic"},
		},
		{
			name:   "cancelled",
			script: []harnesstest.Response{{Text: "slow", Delay: time.Minute}},
			cancel: true,
			status: harness.StatusCancelled,
			want: []flight.Kind{flight.KindRunStart, flight.KindModelRequest, flight.KindModelResponse, flight.KindError,
				flight.KindRunEnd, flight.KindIncident},
			incidents: []string{"cancellation"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []flight.Option
			if tt.triggers != nil {
				opts = append(opts, flight.WithTriggers(tt.triggers...))
			}
			s := newAgent(t, tt.script, []*harness.Tool{echoTool(), panicTool()}, opts...)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				time.AfterFunc(20*time.Millisecond, cancel)
			}
			res, _ := s.agent.Run(ctx, "hello")
			if res.Status != tt.status {
				t.Fatalf("status %s, want %s (err %v)", res.Status, tt.status, res.Err)
			}
			s.close(t) // waits for the bundles, written in the background
			incidents := s.rec.Incidents()
			evs, st := journalEvents(t, filepath.Join(s.dir, "sess-1"))
			// The incident event comes when its bundle is written in the
			// background: compare the order of the others, and the count.
			noInc := func(k flight.Kind) bool { return k == flight.KindIncident }
			if got := kinds(evs); !slices.Equal(slices.DeleteFunc(got, noInc), slices.DeleteFunc(slices.Clone(tt.want), noInc)) ||
				count(evs, flight.KindIncident) != len(tt.incidents) {
				t.Fatalf("kinds\n got %v\nwant %v", got, tt.want)
			}
			if st.Torn != 0 || st.Corrupt != 0 {
				t.Errorf("journal stats %+v", st)
			}
			for i, e := range evs {
				if e.Seq != uint64(i+1) || e.SessionID != "sess-1" || e.Agent != "tester" || e.Time.IsZero() {
					t.Errorf("event %d: seq %d session %q agent %q time %v", i, e.Seq, e.SessionID, e.Agent, e.Time)
				}
				if e.Kind != flight.KindIncident && (e.RunID != res.RunID || len(e.TraceID) != 32 || len(e.SpanID) != 16) {
					t.Errorf("event %d (%s): run %q trace %q span %q", i, e.Kind, e.RunID, e.TraceID, e.SpanID)
				}
			}
			if len(incidents) != len(tt.incidents) {
				t.Fatalf("incidents %v, want reasons %v", incidents, tt.incidents)
			}
			for i, p := range incidents {
				b, err := flight.ReadBundleFile(p, flight.ReadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if err := b.Verify(); err != nil {
					t.Error(err)
				}
				m := b.Manifest
				if m.Reason != tt.incidents[i] || m.Agent != "tester" || m.SessionID != "sess-1" ||
					!slices.Equal(m.RunIDs, []string{res.RunID}) || m.Events == 0 || m.Counts["run_start"] != 1 {
					t.Errorf("manifest %+v", m)
				}
				if m.Spans == 0 {
					t.Errorf("bundle has no spans")
				}
				if _, ok := b.Member(flight.SessionName); !ok {
					t.Errorf("bundle has no session")
				}
			}
		})
	}
}

// failingStart is an extension whose turn start fails.
type failingStart struct{}

func (failingStart) Name() string                            { return "broken" }
func (failingStart) Install(*harness.ExtensionContext) error { return nil }
func (failingStart) OnTurnStart(context.Context, *harness.ExtensionContext, string) error {
	return errors.New("database unreachable")
}

func TestRecordFailuresAndApprovals(t *testing.T) {
	askTool := harness.MustTool(harness.NewTool("deploy", "Deploy.", func(_ context.Context, in echoIn) (string, error) { return "deployed", nil }))
	askTool.Permission = harness.PermissionAsk
	tests := []struct {
		name   string
		opts   []harness.Option
		script []harnesstest.Response
		tools  []*harness.Tool
		check  func(t *testing.T, evs []flight.Event)
	}{
		{
			name:   "hook failure",
			opts:   []harness.Option{harness.WithHook(harness.EventRunStart, func(context.Context, *harness.Event) error { return errors.New("metrics down") })},
			script: []harnesstest.Response{harnesstest.Reply("ok")},
			check: func(t *testing.T, evs []flight.Event) {
				e := find(evs, flight.KindHookFailed)
				if e == nil || e.FailedEvent != "run_start" || !strings.Contains(e.Error, "metrics down") {
					t.Errorf("hook_failed event %+v", e)
				}
			},
		},
		{
			name:   "extension failure",
			opts:   []harness.Option{harness.WithExtensions(failingStart{})},
			script: []harnesstest.Response{harnesstest.Reply("ok")},
			check: func(t *testing.T, evs []flight.Event) {
				e := find(evs, flight.KindExtensionError)
				if e == nil || e.Extension != "broken" || e.Op != "turn_start" || !strings.Contains(e.Error, "database unreachable") {
					t.Errorf("extension_error event %+v", e)
				}
				if n := count(evs, flight.KindExtensionError); n != 1 {
					t.Errorf("%d extension_error events, want 1", n)
				}
			},
		},
		{
			name:   "approval",
			script: []harnesstest.Response{harnesstest.CallTool("c1", "deploy", map[string]string{"text": "prod"})},
			tools:  []*harness.Tool{askTool},
			check: func(t *testing.T, evs []flight.Event) {
				e := find(evs, flight.KindApproval)
				if e == nil || e.Tool != "deploy" || e.CallID != "c1" {
					t.Errorf("approval event %+v", e)
				}
				end := find(evs, flight.KindRunEnd)
				if end == nil || end.Status != "paused" {
					t.Errorf("run_end %+v", end)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			rec := flight.New(flight.WithDir(dir))
			a, err := harness.New(append([]harness.Option{
				harness.WithSessionID("s"),
				harness.WithLogger(slog.New(slog.DiscardHandler)),
				harness.WithProvider(harnesstest.NewScriptedProvider(tt.script...)),
				harness.WithTools(tt.tools...),
				harness.WithExtensions(rec),
			}, tt.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			a.Run(context.Background(), "go")
			if err := a.Close(context.Background()); err != nil && !errors.Is(err, harness.ErrExtension) {
				t.Fatal(err)
			}
			evs, _ := journalEvents(t, filepath.Join(dir, "s"))
			if got := rec.Events(); len(got) != len(evs) {
				t.Errorf("ring has %d events, journal %d", len(got), len(evs))
			}
			tt.check(t, evs)
		})
	}
}

func find(evs []flight.Event, k flight.Kind) *flight.Event {
	for i := range evs {
		if evs[i].Kind == k {
			return &evs[i]
		}
	}
	return nil
}

func count(evs []flight.Event, k flight.Kind) int {
	n := 0
	for _, e := range evs {
		if e.Kind == k {
			n++
		}
	}
	return n
}

func TestRingBounded(t *testing.T) {
	dir := t.TempDir()
	rec := flight.New(flight.WithDir(dir), flight.WithRingSize(16))
	script := []harnesstest.Response{}
	for i := 0; i < 10; i++ {
		script = append(script, harnesstest.CallTool(fmt.Sprintf("c%d", i), "echo", map[string]string{"text": "x"}))
	}
	script = append(script, harnesstest.Reply("done"))
	a, err := harness.New(harness.WithSessionID("s"), harness.WithProvider(harnesstest.NewScriptedProvider(script...)),
		harness.WithTools(echoTool()), harness.WithExtensions(rec))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	a.Close(context.Background())
	ring := rec.Events()
	journal, _ := journalEvents(t, filepath.Join(dir, "s"))
	st := rec.Stats()
	if len(ring) != 16 || len(journal) != 44 || st.Events != 44 || st.Evicted != 28 {
		t.Fatalf("ring %d, journal %d, stats %+v", len(ring), len(journal), st)
	}
	if ring[15].Kind != flight.KindRunEnd || ring[0].Seq != 29 {
		t.Errorf("ring holds seq %d..%d", ring[0].Seq, ring[15].Seq)
	}
}

func TestInstallTwice(t *testing.T) {
	rec := flight.New(flight.WithDir(t.TempDir()))
	a, err := harness.New(harness.WithProvider(harnesstest.NewScriptedProvider()), harness.WithExtensions(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if _, err := harness.New(harness.WithProvider(harnesstest.NewScriptedProvider()), harness.WithExtensions(rec)); err == nil {
		t.Fatal("a second install of the same recorder succeeded")
	}
}

// TestRingNamesEvictedLines fills a ring of 16 with one long run, so that
// the line that carries the run's IDs (its run_start; the later lines
// name it) is evicted: the ring's events, the run's incident bundles
// (a tool panic's, found through the panicking call's run, and the failed
// run's) still have the run's IDs, and the ring's events are the
// journal's last ones.
func TestRingNamesEvictedLines(t *testing.T) {
	script := []harnesstest.Response{harnesstest.Reply("warm")}
	for i := 0; i < 8; i++ {
		script = append(script, harnesstest.CallTool(fmt.Sprintf("c%d", i), "echo", map[string]string{"text": "x"}))
	}
	script = append(script, harnesstest.CallTool("p", "boom", map[string]string{"text": "x"}),
		harnesstest.Fail(errors.New("upstream overloaded")))
	s := newAgent(t, script, []*harness.Tool{echoTool(), panicTool()}, flight.WithRingSize(16))
	ctx := context.Background()
	if _, err := s.agent.Run(ctx, "warm"); err != nil {
		t.Fatal(err)
	}
	res, _ := s.agent.Run(ctx, "long")
	if res.Status != harness.StatusFailed {
		t.Fatalf("status %s (err %v)", res.Status, res.Err)
	}
	s.close(t)

	ring := s.rec.Events()
	journal, _ := journalEvents(t, filepath.Join(s.dir, "sess-1"))
	if len(ring) != 16 || len(journal) < 40 || !reflect.DeepEqual(ring, journal[len(journal)-16:]) {
		t.Fatalf("ring (%d events) is not the journal's last 16 (of %d):\nring    %+v\njournal %+v", len(ring), len(journal), ring, journal[len(journal)-16:])
	}
	var start flight.Event
	for _, e := range journal {
		if e.Kind == flight.KindRunStart && e.RunID == res.RunID {
			start = e
		}
	}
	if start.Seq == 0 || start.Seq >= ring[0].Seq || start.TraceID == "" {
		t.Fatalf("run_start %+v, ring from seq %d: want it evicted", start, ring[0].Seq)
	}
	for _, e := range ring {
		if e.Kind == flight.KindIncident {
			continue
		}
		if e.RunID != res.RunID || e.TraceID != start.TraceID || e.Agent != "tester" || e.SessionID != "sess-1" || e.Ref != 0 {
			t.Errorf("ring %s %d: run %q trace %q agent %q session %q ref %d, want run %q trace %q", e.Kind, e.Seq,
				e.RunID, e.TraceID, e.Agent, e.SessionID, e.Ref, res.RunID, start.TraceID)
		}
	}

	var reasons []string
	for _, p := range s.rec.Incidents() {
		b, err := flight.ReadBundleFile(p, flight.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := b.Manifest
		reasons = append(reasons, m.Reason)
		evs, err := b.Events()
		// A bundle of one run has the run ID in its name (its first 12
		// characters); one of all runs has not.
		if err != nil || len(evs) == 0 || !slices.Equal(m.RunIDs, []string{res.RunID}) || !strings.Contains(filepath.Base(p), res.RunID[:12]) {
			t.Errorf("%s bundle %s: runs %v, %d events (%v), want the run %q's", m.Reason, filepath.Base(p), m.RunIDs, len(evs), err, res.RunID)
		}
		for _, e := range evs {
			// The tool_panic bundle's incident event, which the
			// run_failure bundle holds when the first bundle was written
			// before the run ended, is the run's but in no trace: the
			// bundler records it, outside the run's spans.
			trace := start.TraceID
			if e.Kind == flight.KindIncident {
				trace = ""
			}
			if e.RunID != res.RunID || e.TraceID != trace {
				t.Errorf("%s bundle: %s %d: run %q trace %q", m.Reason, e.Kind, e.Seq, e.RunID, e.TraceID)
			}
		}
	}
	slices.Sort(reasons)
	if !slices.Equal(reasons, []string{"run_failure", "tool_panic"}) {
		t.Errorf("bundles %v, want run_failure and tool_panic", reasons)
	}
}
