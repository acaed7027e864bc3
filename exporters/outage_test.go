package exporters_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessx/harnessx/exporters"
)

// recordHandler is a slog.Handler that keeps the records it handles.
type recordHandler struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

// warnings returns the messages of the records at level Warn or above.
func (h *recordHandler) warnings() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.recs {
		if r.Level >= slog.LevelWarn {
			out = append(out, r.Message)
		}
	}
	return out
}

// closedPort returns a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// maxRun is the generous bound on a traced run while the backend is
// down; the run itself takes well under a millisecond of tracing work. The
// closed-port test holds the median of its runs to it, so that one
// scheduling hiccup on a loaded machine does not fail it; the stalled
// backend test holds every run to a bound far below its export timeout,
// which a run that waited on the export would exceed.
const maxRun = 200 * time.Millisecond

// medianOf returns the median of ds.
func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func TestBackendDown(t *testing.T) {
	tests := []struct {
		name  string
		build func(ctx context.Context, url string, opts ...exporters.Option) (*exporters.Provider, error)
	}{
		{"otlp", func(ctx context.Context, url string, opts ...exporters.Option) (*exporters.Provider, error) {
			return exporters.NewOTLP(ctx, append(opts, exporters.WithEndpointURL(url+"/v1/traces"))...)
		}},
		{"langsmith", func(ctx context.Context, url string, opts ...exporters.Option) (*exporters.Provider, error) {
			return exporters.NewLangSmith(ctx, append(opts, exporters.WithLangSmithEndpoint(url), exporters.WithAPIKey("k"))...)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			ctx := context.Background()
			logs := &recordHandler{}
			// A small batch size makes the runs trigger exports while
			// they go on, not only at shutdown.
			tp, err := tt.build(ctx, "http://"+closedPort(t), exporters.WithLogger(slog.New(logs)), exporters.WithBatchSize(4))
			if err != nil {
				t.Fatal(err)
			}
			agent := newTracedAgent(t, tp)
			const runs = 5
			took := make([]time.Duration, runs)
			for i := range runs {
				start := time.Now()
				run(t, agent)
				took[i] = time.Since(start)
			}
			if m := medianOf(took); m > maxRun {
				t.Errorf("runs took %v (median %v) with the backend down, want a median < %v", took, m, maxRun)
			}
			err = tp.Shutdown(ctx)
			var loss *exporters.LossError
			if !errors.Is(err, exporters.ErrSpansLost) || !errors.As(err, &loss) {
				t.Fatalf("Shutdown: %v, want a LossError", err)
			}
			st := tp.Stats()
			if st.Exported != 0 || st.Lost() != runs*spansPerRun {
				t.Errorf("stats %+v, want all %d spans lost", st, runs*spansPerRun)
			}
			if st.Failed == 0 || st.Backends[0].LastError == nil {
				t.Errorf("stats %+v: no failed export counted", st)
			}
			if loss.Failed+loss.Dropped != runs*spansPerRun {
				t.Errorf("LossError %+v, want %d spans", loss, runs*spansPerRun)
			}
			w := logs.warnings()
			if len(w) != 1 || !strings.Contains(w[0], "spans lost") {
				t.Errorf("warnings %q, want exactly one about lost spans", w)
			}
			if err2 := tp.Shutdown(ctx); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("second Shutdown: %v, want the first result %v", err2, err)
			}
		})
	}
}

// TestStalledBackendDrops points the exporter at a backend that accepts
// connections and never answers: the queue fills and spans are dropped,
// counted, and reported once, while runs stay fast.
func TestStalledBackendDrops(t *testing.T) {
	clearEnv(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)

	ctx := context.Background()
	logs := &recordHandler{}
	const queue = 4
	const exportTimeout = 1500 * time.Millisecond
	tp, err := exporters.NewOTLP(ctx,
		exporters.WithEndpointURL(srv.URL+"/v1/traces"),
		exporters.WithLogger(slog.New(logs)),
		exporters.WithQueueSize(queue),
		exporters.WithBatchSize(queue),
		exporters.WithExportTimeout(exportTimeout), // longer than the runs take, even under load
	)
	if err != nil {
		t.Fatal(err)
	}
	agent := newTracedAgent(t, tp)
	const runs = 4
	for i := range runs {
		start := time.Now()
		run(t, agent)
		// A run that waited for the stalled export would take the whole
		// export timeout.
		if d := time.Since(start); d > exportTimeout/2 {
			t.Errorf("run %d took %v with the backend stalled, want < %v", i, d, exportTimeout/2)
		}
	}
	st := tp.Stats()
	// At most `queue` spans can be waiting or in the stalled export; the
	// rest of the runs' spans must have been dropped at once.
	if st.Dropped < runs*spansPerRun-queue {
		t.Errorf("dropped %d spans while stalled, want at least %d", st.Dropped, runs*spansPerRun-queue)
	}
	if st.Shed != 0 {
		t.Errorf("shed %d spans without tail sampling: every span is of one class", st.Shed)
	}
	if q := st.Backends[0].Queued; q > queue {
		t.Errorf("%d spans queued, bound is %d", q, queue)
	}
	err = tp.Shutdown(ctx)
	if !errors.Is(err, exporters.ErrSpansLost) {
		t.Fatalf("Shutdown: %v, want ErrSpansLost", err)
	}
	st = tp.Stats()
	if st.Exported != 0 || st.Lost() != runs*spansPerRun {
		t.Errorf("after shutdown %+v, want all %d spans lost", st, runs*spansPerRun)
	}
	if w := logs.warnings(); len(w) != 1 {
		t.Errorf("warnings %q, want exactly one", w)
	}
}
