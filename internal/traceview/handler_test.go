package traceview

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, h http.Handler, host, path string) *http.Response {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	req.Host = host
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func TestHandlerAPI(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "traces.jsonl")
	big := strings.Repeat("é", 40<<10) // 80 KiB of two-byte characters
	recordRun(t, file, "weather", big)
	h := Handler(HandlerOptions{Sources: Sources{TraceFiles: []string{file}}, MaxAttrBytes: 1001})

	tests := []struct {
		host, path string
		code       int
		ctype      string
	}{
		{"127.0.0.1:8080", "/", 200, "text/html; charset=utf-8"},
		{"localhost:8080", "/app.js", 200, "text/javascript; charset=utf-8"},
		{"[::1]:8080", "/style.css", 200, "text/css; charset=utf-8"},
		{"127.0.0.1", "/api/runs", 200, "application/json; charset=utf-8"},
		{"127.0.0.1", "/api/runs/nope", 404, "text/plain; charset=utf-8"},
		{"127.0.0.1", "/api/incidents/a/b", 404, "text/plain; charset=utf-8"},
		{"evil.example:8080", "/api/runs", 403, "text/plain; charset=utf-8"},
		{"127.0.0.1", "/nothing", 404, "text/plain; charset=utf-8"},
	}
	for _, tt := range tests {
		res := get(t, h, tt.host, tt.path)
		if res.StatusCode != tt.code || res.Header.Get("Content-Type") != tt.ctype {
			t.Errorf("%s %s: %d %s", tt.host, tt.path, res.StatusCode, res.Header.Get("Content-Type"))
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q", tt.path, csp)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", tt.path)
		}
	}

	var list struct {
		Runs []struct {
			Key, ID, Agent, Status string
			Spans                  int
			Usage                  Usage
		}
	}
	decode(t, get(t, h, "127.0.0.1", "/api/runs"), &list)
	if len(list.Runs) != 1 || list.Runs[0].Agent != "weather" || list.Runs[0].Spans != 4 || list.Runs[0].Usage.Input != 880 {
		t.Fatalf("runs %+v", list.Runs)
	}
	var run struct {
		Spans []struct {
			Name  string
			Depth int
			Attrs []valueJSON
		}
	}
	decode(t, get(t, h, "127.0.0.1", "/api/runs/"+list.Runs[0].Key), &run)
	found := false
	for _, s := range run.Spans {
		for _, a := range s.Attrs {
			if a.Key == "gen_ai.tool.call.result" {
				found = true
				if !a.Truncated || a.Size != len(big) || len(a.Value) > 1001 || len(a.Value) < 999 || !strings.HasPrefix(big, a.Value) {
					t.Errorf("cut value: truncated %v size %d len %d", a.Truncated, a.Size, len(a.Value))
				}
			}
		}
	}
	if !found {
		t.Error("no tool result attribute")
	}
	// By run ID and by trace ID too.
	if res := get(t, h, "127.0.0.1", "/api/runs/"+list.Runs[0].ID); res.StatusCode != 200 {
		t.Errorf("by run ID: %d", res.StatusCode)
	}

	// A new run appears without restarting.
	recordRun(t, file, "second", "ok")
	decode(t, get(t, h, "127.0.0.1", "/api/runs"), &list)
	if len(list.Runs) != 2 || list.Runs[0].Agent != "second" {
		t.Errorf("after a new run: %+v", list.Runs)
	}
	if res := get(t, Handler(HandlerOptions{AnyHost: true}), "evil.example", "/api/runs"); res.StatusCode != 200 {
		t.Errorf("AnyHost: %d", res.StatusCode)
	}
}

func decode(t *testing.T, res *http.Response, v any) {
	t.Helper()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatal(err)
	}
}

func TestFollow(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "traces.jsonl")
	recordRun(t, file, "before", "x") // already there: not reported
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan *Run, 10)
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, file, FollowOptions{Interval: 5 * time.Millisecond}, func(r *Run) error {
			got <- r
			return nil
		})
	}()
	time.Sleep(30 * time.Millisecond)
	recordRun(t, file, "first", "x")
	recordRun(t, file, "second", "x")
	for _, want := range []string{"first", "second"} {
		select {
		case r := <-got:
			if r.Summary.Agent != want || r.Summary.Spans != 4 {
				t.Errorf("got run of %s with %d spans, want %s", r.Summary.Agent, r.Summary.Spans, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no run of %s", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		t.Errorf("extra run %s", r.Summary.Agent)
	default:
	}

	// FromStart reports what is there; a missing file is waited for.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	var n int
	err := Follow(ctx, file, FollowOptions{Interval: time.Millisecond, FromStart: true}, func(r *Run) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Errorf("FromStart: %v, %d runs", err, n)
	}
	missing := filepath.Join(dir, "later.jsonl")
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := Follow(ctx, missing, FollowOptions{Interval: time.Millisecond}, func(*Run) error { return nil }); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("Follow created the file")
	}
}

// TestHandlerPages: the run list comes in pages, newest first.
func TestHandlerPages(t *testing.T) {
	file := filepath.Join(t.TempDir(), "traces.jsonl")
	for n := range 7 {
		appendFile(t, file, otlpLine(t, synthRun(t, 2*n, int64(n)*1000)...))
	}
	h := Handler(HandlerOptions{Sources: Sources{TraceFiles: []string{file}}})
	type page struct {
		Runs []struct {
			ID   string `json:"id"`
			Cost string `json:"cost"`
		} `json:"runs"`
		Total, Offset, Limit int
	}
	ids := func(p page) string {
		var out []string
		for _, r := range p.Runs {
			out = append(out, r.ID)
		}
		return strings.Join(out, " ")
	}
	for _, tt := range []struct {
		query, ids    string
		offset, limit int
	}{
		{"", "run-12 run-10 run-8 run-6 run-4 run-2 run-0", 0, DefaultPageSize},
		{"?limit=3", "run-12 run-10 run-8", 0, 3},
		{"?offset=3&limit=3", "run-6 run-4 run-2", 3, 3},
		{"?offset=6&limit=3", "run-0", 6, 3},
		{"?offset=100", "", 7, DefaultPageSize},
		{"?limit=0", "run-12", 0, 1},
		{"?limit=100000&offset=-4", "run-12 run-10 run-8 run-6 run-4 run-2 run-0", 0, MaxPageSize},
	} {
		var p page
		decode(t, get(t, h, "127.0.0.1", "/api/runs"+tt.query), &p)
		if ids(p) != tt.ids || p.Total != 7 || p.Offset != tt.offset || p.Limit != tt.limit {
			t.Errorf("%s: %q total %d offset %d limit %d", tt.query, ids(p), p.Total, p.Offset, p.Limit)
		}
		for _, r := range p.Runs {
			if r.Cost != "$0.000898" {
				t.Errorf("%s: cost %q", r.ID, r.Cost)
			}
		}
	}
}
