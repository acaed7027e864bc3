package anthropic

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/provtest"
)

// BenchmarkRunWithImage is harness's BenchmarkRunWithImage through this
// provider: one agent.RunMessage of three model steps (two tool calls and
// the answer) whose user message carries an image of 50 KiB or 5 MiB, sent
// to a loopback server that reads and discards each body. It measures
// what a real provider adds to the engine's figures: the base64 encoding
// of the image once per request (3 × 4/3 of its size), and the SDK's JSON
// encoding of the request body, which holds that text again. bytes/image
// is the allocated bytes per run over the image size; sent/image the
// request bytes the server read.
func BenchmarkRunWithImage(b *testing.B) {
	script := [][]byte{provtest.Fixture("tool_use.json").Body, provtest.Fixture("tool_use.json").Body, provtest.Fixture("final.json").Body}
	for _, size := range []int{50 << 10, 5 << 20} {
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			var n, sent atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c, _ := io.Copy(io.Discard, r.Body)
				sent.Add(c)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(script[(n.Add(1)-1)%3])
			}))
			defer srv.Close()
			p, err := New(WithAPIKey("k"), WithBaseURL(srv.URL+"/"), WithHTTPClient(srv.Client()), WithMaxRetries(0))
			if err != nil {
				b.Fatal(err)
			}
			a, err := harness.New(harness.WithProvider(p), harness.WithModel(model), harness.WithTools(provtest.Weather()))
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close(context.Background())
			img := make([]byte, size)
			for i := range img {
				img[i] = byte(i * 31)
			}
			ctx := context.Background()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			before := m.TotalAlloc
			sent.Store(0)
			for b.Loop() {
				res, err := a.RunMessage(ctx, harness.UserParts(harness.Text("what is this?"), harness.ImagePart(img, "image/png")))
				if err != nil || res.Steps != 3 {
					b.Fatal(err, res)
				}
				a.Reset()
			}
			runtime.ReadMemStats(&m)
			b.ReportMetric(float64(m.TotalAlloc-before)/float64(b.N)/float64(size), "bytes/image")
			b.ReportMetric(float64(sent.Load())/float64(b.N)/float64(size), "sent/image")
		})
	}
}
