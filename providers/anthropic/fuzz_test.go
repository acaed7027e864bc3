package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/harnessx/harnessx/harness"
)

// FuzzStream feeds arbitrary server-sent event bodies to a streaming
// request. Whatever the bytes, Generate must not panic, must fail with one
// of the package's error types or return a response that encodes as JSON
// (a session can store it) with valid tool inputs.
func FuzzStream(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "replay", "*.sse"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	var body atomic.Pointer[[]byte]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(*body.Load())
	}))
	f.Cleanup(srv.Close)
	p, err := New(WithAPIKey("k"), WithBaseURL(srv.URL), WithHTTPClient(srv.Client()), WithMaxRetries(0))
	if err != nil {
		f.Fatal(err)
	}
	req := &harness.ModelRequest{Model: model, Stream: true, Messages: []harness.Message{harness.UserMessage("Hi")}}
	f.Fuzz(func(t *testing.T, b []byte) {
		body.Store(&b)
		resp, err := p.Generate(context.Background(), req)
		if err != nil {
			var ae *APIError
			if !errors.Is(err, ErrStream) && !errors.As(err, &ae) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		if _, err := json.Marshal(resp.Message); err != nil {
			t.Fatalf("response does not encode: %v", err)
		}
		for _, c := range resp.Message.ToolCalls() {
			if !json.Valid(c.Input) {
				t.Fatalf("tool input %q is not JSON", c.Input)
			}
		}
		if resp.Provider != Name || resp.Message.Role != harness.RoleAssistant {
			t.Fatalf("provider %q role %q", resp.Provider, resp.Message.Role)
		}
	})
}
