package exporters_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessx/harnessx/exporters"
)

// arrivals records when requests (or connections) reach a test backend
// and when the client closes them.
type arrivals struct {
	mu     sync.Mutex
	at     []time.Time
	open   int
	closed []time.Time
}

func (a *arrivals) arrive() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.at = append(a.at, time.Now())
	a.open++
}

func (a *arrivals) leave() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.open--
	a.closed = append(a.closed, time.Now())
}

// after counts the arrivals later than t.
func (a *arrivals) after(t time.Time) (n, total int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, at := range a.at {
		if at.After(t) {
			n++
		}
	}
	return n, len(a.at)
}

// stillOpen counts the connections the client has not closed.
func (a *arrivals) stillOpen() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.open
}

// stalledBackend listens on loopback, accepts connections, reads what the
// client sends and never answers. It records each connection, and when the
// client closes it. stop closes everything and waits for its goroutines.
func stalledBackend(t *testing.T) (url string, a *arrivals, stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a = &arrivals{}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			a.arrive()
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				_, _ = io.Copy(io.Discard, c) // until the client (or stop) closes it
				a.leave()
			})
		}
	})
	stop = func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
	return "http://" + l.Addr().String(), a, stop
}

// busyBackend answers every request 503 Service Unavailable, which the
// OTLP client retries.
func busyBackend(t *testing.T) (url string, a *arrivals, stop func()) {
	t.Helper()
	a = &arrivals{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.arrive()
		defer a.leave()
		_, _ = io.Copy(io.Discard, r.Body)
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	return srv.URL, a, srv.Close
}

// TestShutdownStopsExports shuts a provider down with a short deadline
// while its backend stalls or keeps answering 503, with spans still queued:
// Shutdown returns by the deadline, and after it nothing reaches the
// backend any more, the upload in flight is cancelled, and the exporter's
// goroutines are gone.
func TestShutdownStopsExports(t *testing.T) {
	type build func(ctx context.Context, url string, opts ...exporters.Option) (*exporters.Provider, error)
	otlp := func(ctx context.Context, url string, opts ...exporters.Option) (*exporters.Provider, error) {
		return exporters.NewOTLP(ctx, append(opts, exporters.WithEndpointURL(url+"/v1/traces"))...)
	}
	both := func(ctx context.Context, url string, opts ...exporters.Option) (*exporters.Provider, error) {
		return exporters.FromEnv(ctx, append(opts,
			exporters.WithEndpointURL(url+"/v1/traces"),
			exporters.WithLangSmithEndpoint(url), exporters.WithAPIKey("k"))...)
	}
	tests := []struct {
		name     string
		backend  func(*testing.T) (string, *arrivals, func())
		build    build
		backends int
		stalls   bool // an upload is in flight when Shutdown's deadline passes
	}{
		{"stalled", stalledBackend, otlp, 1, true},
		{"503", busyBackend, otlp, 1, false},
		// The SDK does not shut the second backend down once the first
		// has used the deadline up; it must stop all the same.
		{"stalled/two backends", stalledBackend, both, 2, true},
		{"503/two backends", busyBackend, both, 2, false},
	}
	const (
		// exportTimeout bounds one export, retries included. Without the
		// fix, the uploads in flight and the batches still queued went on
		// for this long each after Shutdown returned.
		exportTimeout = 1500 * time.Millisecond
		deadline      = 200 * time.Millisecond
		// slack is what a loaded machine may add to a deadline.
		slack = 300 * time.Millisecond
		// watch is how long the backend is watched after Shutdown.
		watch = 1500 * time.Millisecond
		spans = 6
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			before := goleak.IgnoreCurrent()
			url, got, stop := tt.backend(t)
			stopped := false
			defer func() {
				if !stopped {
					stop()
				}
			}()

			ctx := context.Background()
			tp, err := tt.build(ctx, url,
				exporters.WithLogger(slog.New(&recordHandler{})),
				exporters.WithBatchSize(1), // one export per span: batches stay queued behind the first
				exporters.WithBatchTimeout(10*time.Millisecond),
				exporters.WithExportTimeout(exportTimeout),
			)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(tp.Backends()); n != tt.backends {
				t.Fatalf("%d backends, want %d", n, tt.backends)
			}
			tr := tp.Tracer("shutdown-test")
			for range spans {
				_, s := tr.Start(ctx, "work")
				s.End()
			}
			// Let the first upload of every backend reach the server, so
			// that Shutdown finds it in flight.
			if !waitFor(5*time.Second, func() bool { _, total := got.after(time.Time{}); return total >= tt.backends }) {
				t.Fatal("no upload reached the backend")
			}

			sctx, cancel := context.WithTimeout(ctx, deadline)
			start := time.Now()
			err = tp.Shutdown(sctx)
			returned := time.Now()
			cancel()
			if took := returned.Sub(start); took > deadline+slack {
				t.Errorf("Shutdown took %v, want about %v", took, deadline)
			}
			if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, exporters.ErrSpansLost) {
				t.Errorf("Shutdown: %v, want the deadline and lost spans", err)
			}

			// The upload in flight is cancelled: its connection closes.
			const closeWithin = 500 * time.Millisecond
			if tt.stalls && !waitFor(closeWithin, func() bool { return got.stillOpen() == 0 }) {
				t.Errorf("%d uploads still open %v after Shutdown returned", got.stillOpen(), closeWithin)
			}
			// Nothing reaches the backend any more. A request written just
			// before Shutdown cancelled it may be read by the server a
			// moment later; the grace allows for that.
			const grace = 250 * time.Millisecond
			time.Sleep(watch)
			if n, total := got.after(returned.Add(grace)); n > 0 {
				t.Errorf("%d of %d requests reached the backend in the %v after Shutdown returned, want none", n, total, watch)
			}
			if st := tp.Stats(); st.Exported != 0 || st.Lost() != int64(spans*tt.backends) {
				t.Errorf("stats %+v, want all %d spans lost", st, spans*tt.backends)
			}

			stop()
			stopped = true
			if err := goleak.Find(before); err != nil {
				t.Errorf("goroutines left after Shutdown: %v", err)
			}
		})
	}
}

// waitFor polls cond until it holds or d passes, and says whether it held.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
