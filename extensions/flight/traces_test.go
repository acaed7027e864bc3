package flight_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/otlpjson"
	"github.com/harnessx/harnessx/internal/recording"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

func traceIDsOf(req *coltracepb.ExportTraceServiceRequest) map[string]bool {
	ids := map[string]bool{}
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				ids[fmt.Sprintf("%x", s.TraceId)] = true
			}
		}
	}
	return ids
}

// TestSpanSnapshotFollowsNewRuns: past the number of traces the recorder
// remembers, the span snapshot keeps following the latest runs and
// forgets the oldest.
func TestSpanSnapshotFollowsNewRuns(t *testing.T) {
	const maxTraces, runs = 8, 20
	var script []harnesstest.Response
	for i := 0; i < runs; i++ {
		script = append(script, harnesstest.CallTool(fmt.Sprintf("c%d", i), "echo", map[string]string{"text": "x"}), harnesstest.Reply("ok"))
	}
	s := newAgent(t, script, []*harness.Tool{echoTool()})
	flight.SetMaxTraces(s.rec, maxTraces)
	var runTraces []string // trace of each run, in order
	for i := 0; i < runs; i++ {
		res, err := s.agent.Run(context.Background(), "go")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range s.rec.Events() {
			if e.RunID == res.RunID && e.Kind == flight.KindRunEnd {
				runTraces = append(runTraces, e.TraceID)
			}
		}
	}
	s.close(t) // writes the final span snapshot
	if len(runTraces) != runs {
		t.Fatalf("%d run traces", len(runTraces))
	}
	data, err := os.ReadFile(filepath.Join(s.dir, "sess-1", recording.SpansSnapshot))
	if err != nil {
		t.Fatal(err)
	}
	req, err := otlpjson.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	got := traceIDsOf(req)
	for i, id := range runTraces {
		recent := i >= runs-maxTraces
		if got[id] != recent {
			t.Errorf("run %d (trace %s): in the snapshot %v, want %v", i, id, got[id], recent)
		}
	}
	if len(got) != maxTraces {
		t.Errorf("snapshot has %d traces, want %d", len(got), maxTraces)
	}
}
