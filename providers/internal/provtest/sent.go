package provtest

import (
	"encoding/json"
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/replay"
)

// SentCase is one request whose reported parameters
// ([harness.ModelResponse.Sent]) must be what the server received, and
// Want.
type SentCase[O any] struct {
	Name   string
	Opts   []O
	Req    harness.ModelRequest
	Script replay.Response
	Want   harness.RequestParams
}

// Sent runs each case against a replay server with a provider from
// newProvider. The response's Sent must equal the case's Want and must
// match the body the server received: "model", the max-tokens field named
// maxTokensKey (absent when Sent.MaxTokens is 0), "temperature" (absent
// unless Sent.HasTemperature) and "stream" (absent or false unless
// Sent.Stream).
func Sent[O any, P harness.Provider](t *testing.T, maxTokensKey string, cases []SentCase[O],
	newProvider func(t *testing.T, srv *replay.Server, opts ...O) P) {
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			srv := replay.New(tt.Script)
			defer srv.Close()
			p := newProvider(t, srv, tt.Opts...)
			resp, err := p.Generate(t.Context(), &tt.Req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Sent != tt.Want {
				t.Errorf("Sent %+v, want %+v", resp.Sent, tt.Want)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			CheckSentBody(t, reqs[0].Body, maxTokensKey, resp.Sent)
		})
	}
}

// CheckSentBody checks that the JSON request body carries the parameters
// sent reports, and no temperature or max tokens that it does not.
func CheckSentBody(t *testing.T, body []byte, maxTokensKey string, sent harness.RequestParams) {
	t.Helper()
	var b struct {
		Model       *string  `json:"model"`
		Temperature *float64 `json:"temperature"`
		Stream      *bool    `json:"stream"`
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("body: %v\n%s", err, body)
	}
	if err := json.Unmarshal(body, &all); err != nil {
		t.Fatalf("body: %v\n%s", err, body)
	}
	if b.Model == nil || *b.Model != sent.Model {
		t.Errorf("body model %s, reported %q", all["model"], sent.Model)
	}
	switch raw, ok := all[maxTokensKey]; {
	case sent.MaxTokens == 0 && ok:
		t.Errorf("body %s %s, reported none", maxTokensKey, raw)
	case sent.MaxTokens != 0:
		var n int
		if err := json.Unmarshal(raw, &n); !ok || err != nil || n != sent.MaxTokens {
			t.Errorf("body %s %s, reported %d", maxTokensKey, raw, sent.MaxTokens)
		}
	}
	switch {
	case !sent.HasTemperature && b.Temperature != nil:
		t.Errorf("body temperature %v, reported none", *b.Temperature)
	case sent.HasTemperature && (b.Temperature == nil || *b.Temperature != sent.Temperature):
		t.Errorf("body temperature %s, reported %v", all["temperature"], sent.Temperature)
	case !sent.HasTemperature && sent.Temperature != 0:
		t.Errorf("reported temperature %v without HasTemperature", sent.Temperature)
	}
	if streamed := b.Stream != nil && *b.Stream; streamed != sent.Stream {
		t.Errorf("body stream %s, reported %v", all["stream"], sent.Stream)
	}
}
