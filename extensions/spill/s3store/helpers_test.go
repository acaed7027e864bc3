package s3store_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/extensions/spill/s3store"
	"github.com/harnessx/harnessx/extensions/spill/s3store/s3test"
	"github.com/harnessx/harnessx/harness"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		os.Exit(runWorker())
	}
	os.Exit(m.Run())
}

// newStore returns a store over bucket of g, with cfg's fields applied
// on top of the gateway's endpoint and credentials.
func newStore(t testing.TB, g *s3test.Gateway, bucket string, mod ...func(*s3store.Config)) *s3store.Store {
	t.Helper()
	cfg := s3store.Config{Endpoint: g.Endpoint, Bucket: bucket, Prefix: "agents/test",
		AccessKeyID: g.AccessKey, SecretAccessKey: g.SecretKey}
	for _, f := range mod {
		f(&cfg)
	}
	s, err := s3store.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// counter is an http.RoundTripper that counts the response body bytes
// read, the requests by method, and the statuses.
type counter struct {
	base  http.RoundTripper
	bytes atomic.Int64
	mu    sync.Mutex
	reqs  []string // "METHOD key-suffix status"
	// hideBlobs answers HEAD requests for content objects with 404,
	// without asking the server.
	hideBlobs atomic.Bool
}

func newCounter() *counter {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableCompression = true // as the store's own transport
	return &counter{base: tr}
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.hideBlobs.Load() && r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/blobs/") {
		c.log(r, http.StatusNotFound)
		return &http.Response{StatusCode: http.StatusNotFound, Status: "404 Not Found", Header: http.Header{},
			Body: io.NopCloser(strings.NewReader("")), Request: r, ProtoMajor: 1, ProtoMinor: 1}, nil
	}
	resp, err := c.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	c.log(r, resp.StatusCode)
	resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.bytes}
	return resp, nil
}

func (c *counter) log(r *http.Request, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, fmt.Sprintf("%s %s %d", r.Method, r.URL.Path, status))
}

func (c *counter) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.reqs...)
}

func (c *counter) reset() {
	c.mu.Lock()
	c.reqs = nil
	c.mu.Unlock()
	c.bytes.Store(0)
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// logText writes about size bytes of numbered log lines; one line in
// 1,000 holds "zanzibar". It returns the data and the number of those
// lines.
func logText(size int) ([]byte, int) { return logTextEvery(size, 1000) }

// logTextEvery is logText with one "zanzibar" line in every.
func logTextEvery(size, every int) ([]byte, int) {
	var buf bytes.Buffer
	buf.Grow(size + 100)
	w := bufio.NewWriter(&buf)
	rare := 0
	for i := 0; buf.Len()+w.Buffered() < size; i++ {
		if i%every == every/2 {
			fmt.Fprintf(w, "%08d WARN shipment %d rerouted through the zanzibar hub\n", i, i)
			rare++
		} else {
			fmt.Fprintf(w, "%08d INFO GET /api/v1/items/%d status=200 latency=%dms\n", i, i, i%1000)
		}
	}
	w.Flush()
	return buf.Bytes(), rare
}

// readResult runs one read_result request.
func readResult(e *spill.Extension, req map[string]any) (string, error) {
	raw, _ := json.Marshal(req)
	return e.Read(context.Background(), raw)
}

// bigTool returns content as its result.
func bigTool(name, content string) *harness.Tool {
	return &harness.Tool{
		Name: name, Description: "returns a large result",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler:     func(context.Context, json.RawMessage) (string, error) { return content, nil },
	}
}

// toolResults returns the tool results of a run's messages, in order.
func toolResults(msgs []harness.Message) []*harness.ToolResult {
	var out []*harness.ToolResult
	for _, m := range msgs {
		for _, p := range m.Content {
			if p.ToolResult != nil {
				out = append(out, p.ToolResult)
			}
		}
	}
	return out
}
