package s3store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/extensions/spill/s3store"
	"github.com/harnessx/harnessx/extensions/spill/s3store/s3test"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// TestSliceTransfersBounded spills 40 MiB and checks that byte and line
// slices transfer a bounded number of bytes (counted at the client's
// transport), that a search streams the whole object and finds every
// match, and that after a session load only the first read downloads
// the object (to verify its SHA-256).
func TestSliceTransfersBounded(t *testing.T) {
	g := s3test.Start(t)
	c := newCounter()
	s := newStore(t, g, g.Bucket(t), func(cfg *s3store.Config) { cfg.Transport = c })
	ext := spill.New(spill.WithStore(s))
	defer ext.Teardown(context.Background())
	data, rare := logText(40 << 20)
	r, err := ext.Spill(context.Background(), "logs", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	const bound = 256 << 10 // the first window (64 KiB) and the small requests around it, with room
	slice := func(e *spill.Extension, off int) {
		t.Helper()
		c.reset()
		out, err := readResult(e, map[string]any{"id": r.ID, "op": "slice", "unit": "bytes", "offset": off, "limit": 3000})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, string(data[off:off+3000])) {
			t.Fatalf("slice at %d does not hold the stored bytes:\n%.300s", off, out)
		}
		if n := c.bytes.Load(); n > bound {
			t.Fatalf("a 3000-byte slice of a %d-byte object transferred %d bytes (bound %d); requests:\n%s", len(data), n, bound, strings.Join(c.requests(), "\n"))
		}
	}
	slice(ext, 30_000_000)
	slice(ext, 123)

	c.reset()
	out, err := readResult(ext, map[string]any{"id": r.ID, "op": "slice", "unit": "lines", "offset": 1000, "limit": 3})
	if err != nil || !strings.Contains(out, "1001: 00001000 INFO") {
		t.Fatalf("line slice: %v\n%.300s", err, out)
	}
	if n := c.bytes.Load(); n > 1<<20 {
		t.Fatalf("a line slice near the start transferred %d bytes", n)
	}

	c.reset()
	last := fmt.Sprintf("%08d WARN shipment", (rare-1)*1000+500) // the last rare line
	out, err = readResult(ext, map[string]any{"id": r.ID, "op": "search", "pattern": last})
	if err != nil || !strings.Contains(out, ": 1 matching lines") || !strings.Contains(out, last+" "+strconv.Itoa((rare-1)*1000+500)+" rerouted") {
		t.Fatalf("search: %v\n%.300s", err, out)
	}
	if n := c.bytes.Load(); n < int64(len(data)) || n > int64(len(data))+1<<20 {
		t.Fatalf("search transferred %d bytes of %d", n, len(data))
	}
	gets := 0
	for _, r := range c.requests() {
		if strings.HasPrefix(r, "GET ") {
			gets++
		}
	}
	if gets != 1 {
		t.Errorf("search made %d GETs, want one of the whole object:\n%s", gets, strings.Join(c.requests(), "\n"))
	}

	// A second agent loads the session: its first read verifies the
	// whole object once, later slices are bounded again.
	saved, err := ext.OnSaveSession(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ext2 := spill.New(spill.WithStore(s))
	defer ext2.Teardown(context.Background())
	raw := mustJSON(t, saved)
	if err := ext2.OnLoadSession(context.Background(), nil, raw); err != nil {
		t.Fatal(err)
	}
	c.reset()
	if _, err := readResult(ext2, map[string]any{"id": r.ID, "op": "slice", "unit": "bytes", "offset": 5, "limit": 10}); err != nil {
		t.Fatal(err)
	}
	if n := c.bytes.Load(); n < int64(len(data)) {
		t.Fatalf("the first read after a load transferred %d bytes: it did not verify the SHA-256", n)
	}
	slice(ext2, 20_000_000)
}

// agentRun runs an agent whose model calls tool and then read_result with
// each of reads (JSON objects), and returns the tool results.
func agentRun(t *testing.T, ext *spill.Extension, tools []*harness.Tool, calls ...harnesstest.Response) []*harness.ToolResult {
	t.Helper()
	script := append(calls, harnesstest.Reply("done"))
	a, err := harness.New(harness.WithProvider(harnesstest.NewScriptedProvider(script...)), harness.WithTools(tools...), harness.WithExtensions(ext))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != harness.StatusCompleted || res.Text != "done" {
		t.Fatalf("run did not go on to the end: %v %q %v", res.Status, res.Text, res.Err)
	}
	return toolResults(res.Messages)
}

func readCall(id string, args map[string]any) harnesstest.Response {
	m := map[string]any{"id": args["id"]}
	for k, v := range args {
		m[k] = v
	}
	return harnesstest.CallTool(id, spill.ToolName, m)
}

// TestTamperedAndDeleted: an object changed on the server is caught by
// the SHA-256 check, an object deleted under a live session reads as gone;
// both are error results and the run goes on.
func TestTamperedAndDeleted(t *testing.T) {
	g := s3test.Start(t)
	bucket := g.Bucket(t)
	s := newStore(t, g, bucket)
	ext := spill.New(spill.WithStore(s))
	defer ext.Teardown(context.Background())
	a, _ := logText(200 << 10)
	b, _ := logText(300 << 10)
	ra, err := ext.Spill(context.Background(), "a", bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := ext.Spill(context.Background(), "b", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	blob := func(sum string) string {
		return filepath.Join(g.Root, bucket, "agents", "test", "blobs", "sha256", sum)
	}
	// Same length, one byte changed, as a disk or an operator might.
	tampered := bytes.Clone(a)
	tampered[1000] ^= 1
	time.Sleep(1100 * time.Millisecond) // a new modification time
	if err := os.WriteFile(blob(ra.SHA256), tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(blob(rb.SHA256)); err != nil {
		t.Fatal(err)
	}
	if _, err := readResult(ext, map[string]any{"id": ra.ID, "op": "count"}); !errors.Is(err, spill.ErrCorrupt) {
		t.Errorf("tampered object: %v, want ErrCorrupt", err)
	}
	results := agentRun(t, ext, nil,
		readCall("r1", map[string]any{"id": ra.ID, "op": "slice", "unit": "bytes", "offset": 0, "limit": 100}),
		readCall("r2", map[string]any{"id": rb.ID, "op": "search", "pattern": "INFO"}))
	if len(results) != 2 || !results[0].IsError || !results[1].IsError {
		t.Fatalf("want two error results, got %+v", results)
	}
	if !strings.Contains(results[0].Content, ra.ID) || !strings.Contains(results[0].Content, "SHA-256") {
		t.Errorf("tampered object: %q", results[0].Content)
	}
	if !strings.Contains(results[1].Content, rb.ID) || !strings.Contains(results[1].Content, "gone") {
		t.Errorf("deleted object: %q", results[1].Content)
	}
}

// TestStoreFaults: a wrong bucket, wrong credentials and an unreachable
// endpoint each make the spill fail; the tool result is cut to the
// threshold with a note and a warning that say why, the loss is counted in
// Stats, a read_result of a result of that store is an error result, and
// the run goes on. Neither the logs nor the spans hold the secret.
func TestStoreFaults(t *testing.T) {
	g := s3test.Start(t)
	bucket := g.Bucket(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := closed.Addr().String()
	closed.Close()
	content, _ := logText(100 << 10)
	for _, tc := range []struct {
		name string
		mod  func(*s3store.Config)
		want string
		is   error
	}{
		{"wrong bucket", func(c *s3store.Config) { c.Bucket = "no-such-bucket-" + bucket }, "does not exist", s3store.ErrNoBucket},
		{"wrong secret", func(c *s3store.Config) { c.SecretAccessKey = "wrong-" + g.SecretKey }, "access denied", s3store.ErrAccessDenied},
		{"wrong access key", func(c *s3store.Config) { c.AccessKeyID = "AKIANOSUCHKEY0000000" }, "access denied", s3store.ErrAccessDenied},
		{"unreachable", func(c *s3store.Config) { c.Endpoint = "http://" + deadAddr }, "unreachable", s3store.ErrUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			var spans bytes.Buffer
			tp, err := exporters.NewFile(context.Background(), exporters.WithFileWriter(&spans))
			if err != nil {
				t.Fatal(err)
			}
			s := newStore(t, g, bucket, tc.mod)
			if err := s.Check(context.Background()); !errors.Is(err, tc.is) {
				t.Errorf("Check: %v, want %v", err, tc.is)
			}
			ext := spill.New(spill.WithStore(s), spill.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			start := time.Now()
			a, err := harness.New(
				harness.WithProvider(harnesstest.NewScriptedProvider(
					harnesstest.CallTool("c1", "export", map[string]any{}),
					readCall("r1", map[string]any{"id": "res_0123456789abcdef01234567", "op": "slice"}),
					harnesstest.Reply("done"))),
				harness.WithTools(bigTool("export", string(content))),
				harness.WithExtensions(ext, tracing.New(tracing.WithTracerProvider(tp))))
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Run(context.Background(), "go")
			if err != nil || res.Text != "done" {
				t.Fatalf("run: %v %q", err, res.Text)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("the failing store held the run for %v", d)
			}
			a.Close(context.Background())
			tp.Shutdown(context.Background())
			results := toolResults(res.Messages)
			if len(results) != 2 || results[0].IsError {
				t.Fatalf("tool results %+v", results)
			}
			if got := results[0].Content; len(got) > spill.DefaultThreshold || !strings.HasPrefix(got, string(content[:1000])) ||
				!strings.Contains(got, fmt.Sprintf(" of %d bytes: the store failed: ", len(content))) || !strings.Contains(got, tc.want) {
				t.Fatalf("the tool result was not cut with a note naming the cause: %d bytes, ending %q", len(got), got[max(0, len(got)-300):])
			}
			if !results[1].IsError {
				t.Errorf("read_result of an unknown result: %q", results[1].Content)
			}
			if st := ext.Stats(); st.StoreFailures != 1 || st.StoreFailedBytes != int64(len(content)) || st.Spilled != 0 {
				t.Errorf("Stats = %+v", st)
			}
			if !strings.Contains(logs.String(), "the model gets its head only") || !strings.Contains(logs.String(), tc.want) {
				t.Errorf("warning lacks %q:\n%s", tc.want, logs.String())
			}
			if spans.Len() == 0 {
				t.Fatal("no spans recorded")
			}
			for name, out := range map[string]string{"logs": logs.String(), "spans": spans.String()} {
				if strings.Contains(out, g.SecretKey) {
					t.Errorf("the secret key is in the %s", name)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
