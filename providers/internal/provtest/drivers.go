package provtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/apierr"
	"github.com/harnessx/harnessx/providers/internal/replay"
)

// Dial builds a provider of the package under test that sends to baseURL
// with the HTTP client hc (nil for the SDK's default) and no retries.
type Dial func(baseURL string, hc *http.Client) (harness.Provider, error)

// FuzzStream feeds arbitrary server-sent event bodies, seeded with
// testdata/replay/*.sse, to a streaming request for model. Whatever the
// bytes, Generate must not panic, must fail with a stream error or an
// *apierr.APIError, or return a response from provider that encodes as
// JSON (a session can store it) with valid tool inputs.
func FuzzStream(f *testing.F, provider, model string, dial Dial) {
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
	p, err := dial(srv.URL, srv.Client())
	if err != nil {
		f.Fatal(err)
	}
	req := &harness.ModelRequest{Model: model, Stream: true, Messages: []harness.Message{harness.UserMessage("Hi")}}
	f.Fuzz(func(t *testing.T, b []byte) {
		body.Store(&b)
		resp, err := p.Generate(context.Background(), req)
		if err != nil {
			var ae *apierr.APIError
			if !errors.Is(err, apierr.ErrStream) && !errors.As(err, &ae) {
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
		if resp.Provider != provider || resp.Message.Role != harness.RoleAssistant {
			t.Fatalf("provider %q role %q", resp.Provider, resp.Message.Role)
		}
	})
}

// Cancel cancels a request, streamed or not, that the server holds open
// after writing firstEvent (a stream that has started: the cancel must cut
// it). Generate must return promptly with an error matching
// context.Canceled.
func Cancel(t *testing.T, model, firstEvent string, dial Dial) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			arrived := make(chan struct{}, 1)
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(200)
				fmt.Fprint(w, firstEvent)
				w.(http.Flusher).Flush()
				arrived <- struct{}{}
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}))
			defer srv.Close()
			defer close(release)
			p, err := dial(srv.URL, srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-arrived
				cancel()
			}()
			done := make(chan error, 1)
			go func() {
				_, err := p.Generate(ctx, &harness.ModelRequest{Model: model, Stream: stream, Messages: []harness.Message{harness.UserMessage("Hi")}})
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("error %v, want context.Canceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Generate did not return after cancel")
			}
		})
	}
}

// ConnectionRefused sends requests (streamed as listed) to a closed server:
// each must fail with a retryable *apierr.ConnectionError.
func ConnectionRefused(t *testing.T, model string, streams []bool, dial Dial) {
	srv := replay.New()
	url := srv.URL()
	srv.Close()
	p, err := dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range streams {
		_, err = p.Generate(context.Background(), &harness.ModelRequest{Model: model, Stream: stream, Messages: []harness.Message{harness.UserMessage("Hi")}})
		var ce *apierr.ConnectionError
		if !errors.As(err, &ce) || !errors.Is(err, apierr.ErrConnection) || !ce.Retryable() {
			t.Errorf("stream=%v: error %T %v, want a retryable *ConnectionError", stream, err, err)
		}
	}
}

// Serve builds a provider of the package under test that talks to srv.
type Serve func(t *testing.T, srv *replay.Server) harness.Provider

// RetryThenSuccess: a 429 with body rateLimited and retry-after-ms 1 is
// retried by the SDK, and the second answer (plain.json, or
// stream_text.sse when streamed) is returned; the retry resends the same
// body.
func RetryThenSuccess(t *testing.T, model, rateLimited string, serve Serve) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			ok := Fixture("plain.json")
			if stream {
				ok = Fixture("stream_text.sse")
			}
			srv := replay.New(replay.Status(429, rateLimited, map[string]string{"retry-after-ms": "1"}), ok)
			defer srv.Close()
			p := serve(t, srv)
			resp, err := p.Generate(context.Background(), &harness.ModelRequest{Model: model, Stream: stream, Messages: []harness.Message{harness.UserMessage("Hi")}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Text() == "" {
				t.Error("empty reply")
			}
			reqs := srv.Requests()
			if len(reqs) != 2 || !bytes.Equal(reqs[0].Body, reqs[1].Body) {
				t.Errorf("%d requests; the retry must resend the same body", len(reqs))
			}
		})
	}
}

// ErrorCase is a request that must fail in a given way.
type ErrorCase struct {
	Name   string
	Stream bool
	Script []replay.Response
	// Requests is how many requests the server must get (retries included).
	Requests int
	// Sentinel is the error class the error must match.
	Sentinel error
	// Status and ErrType are the *APIError's StatusCode and Type, when
	// Sentinel is neither ErrStream nor ErrResponse.
	Status  int
	ErrType string
	// Retryable is what the error's Retryable method must report (not
	// checked for ErrResponse).
	Retryable bool
	// Reason is a part of the *StreamError's Reason, for ErrStream.
	Reason string
}

// Errors runs the cases against a replay server, each with a one-message
// request for model, and checks the error: its class, retryability and
// type (*StreamError with its reason, or *APIError with status, type,
// message and provider), and the number of requests sent.
func Errors(t *testing.T, provider, model string, cases []ErrorCase, serve Serve) {
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			srv := replay.New(tt.Script...)
			defer srv.Close()
			p := serve(t, srv)
			_, err := p.Generate(context.Background(), &harness.ModelRequest{Model: model, Stream: tt.Stream,
				Messages: []harness.Message{harness.UserMessage("Hi")}})
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tt.Sentinel) {
				t.Errorf("error %v does not match %v", err, tt.Sentinel)
			}
			if n := len(srv.Requests()); n != tt.Requests {
				t.Errorf("%d requests, want %d", n, tt.Requests)
			}
			if tt.Sentinel == apierr.ErrResponse {
				return
			}
			var re harness.RetryableError
			if !errors.As(err, &re) || re.Retryable() != tt.Retryable {
				t.Errorf("retryable: %v, want %v (%T)", re != nil && re.Retryable(), tt.Retryable, err)
			}
			if tt.Sentinel == apierr.ErrStream {
				var se *apierr.StreamError
				if !errors.As(err, &se) || !strings.Contains(se.Reason, tt.Reason) {
					t.Errorf("error %v, want a StreamError with reason %q", err, tt.Reason)
				}
				return
			}
			var ae *apierr.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("error %T %v is not an *APIError", err, err)
			}
			if ae.StatusCode != tt.Status || ae.Type != tt.ErrType || ae.Message == "" || ae.Provider != provider {
				t.Errorf("APIError %+v", ae)
			}
		})
	}
}

// RequestCase is a named model request.
type RequestCase struct {
	Name string
	Req  harness.ModelRequest
}

// InvalidRequests sends each request to p (which must not reach a server)
// and expects an error matching ErrInvalidRequest.
func InvalidRequests(t *testing.T, p harness.Provider, cases []RequestCase) {
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			_, err := p.Generate(context.Background(), &tt.Req)
			if !errors.Is(err, apierr.ErrInvalidRequest) {
				t.Errorf("error %v, want ErrInvalidRequest", err)
			}
		})
	}
}

// ProviderName checks that p names itself provider (harness.ProviderNamer)
// and that an agent running model on it, answered with plain.json, passes
// the name on in ModelRequest.Provider.
func ProviderName(t *testing.T, provider, model string, serve Serve) {
	srv := replay.New(Fixture("plain.json"))
	defer srv.Close()
	p := serve(t, srv)
	n, ok := p.(harness.ProviderNamer)
	if !ok {
		t.Fatalf("%T is not a harness.ProviderNamer", p)
	}
	if got := n.ProviderName(); got != provider {
		t.Errorf("ProviderName() = %q", got)
	}
	rec := &requestRecorder{}
	agent, err := harness.New(harness.WithProvider(p), harness.WithModel(model), harness.WithMiddleware(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close(context.Background())
	res, err := agent.Run(context.Background(), "Hi")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.providers) != 1 || rec.providers[0] != provider {
		t.Errorf("ModelRequest.Provider %q, want [%q]", rec.providers, provider)
	}
	if res.Text == "" {
		t.Error("empty reply")
	}
}

// requestRecorder is a middleware that notes ModelRequest.Provider.
type requestRecorder struct{ providers []string }

func (r *requestRecorder) BeforeModelRequest(_ context.Context, req *harness.ModelRequest) error {
	r.providers = append(r.providers, req.Provider)
	return nil
}
