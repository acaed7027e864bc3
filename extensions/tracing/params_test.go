package tracing_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
)

// TestChatSpanSentParams checks that a chat span carries the invocation
// parameters the provider reports it sent (harness.ModelResponse.Sent),
// not the request's: a default max_tokens the provider filled in, no
// temperature when the provider left the request's out. Without a report
// the span carries the request's parameters.
func TestChatSpanSentParams(t *testing.T) {
	tests := []struct {
		name     string
		opts     []harness.Option
		sent     harness.RequestParams
		wantName string
		want     map[attribute.Key]string // "" means absent
	}{
		{
			name: "default filled in, temperature left out",
			opts: []harness.Option{harness.WithTemperature(0.5)},
			sent: harness.RequestParams{Model: "m", MaxTokens: 4096},
			want: map[attribute.Key]string{
				semconv.GenAIRequestModelKey:       "m",
				semconv.GenAIRequestMaxTokensKey:   "4096",
				semconv.GenAIRequestTemperatureKey: "",
				semconv.GenAIRequestStreamKey:      "false",
			},
		},
		{
			name: "all sent",
			opts: []harness.Option{harness.WithMaxTokens(256), harness.WithTemperature(0.5), harness.WithStreaming(true)},
			sent: harness.RequestParams{Model: "m", MaxTokens: 256, Temperature: 0.5, HasTemperature: true, Stream: true},
			want: map[attribute.Key]string{
				semconv.GenAIRequestModelKey:       "m",
				semconv.GenAIRequestMaxTokensKey:   "256",
				semconv.GenAIRequestTemperatureKey: "0.5",
				semconv.GenAIRequestStreamKey:      "true",
			},
		},
		{
			name: "temperature zero sent",
			sent: harness.RequestParams{Model: "m", HasTemperature: true},
			want: map[attribute.Key]string{
				semconv.GenAIRequestMaxTokensKey:   "",
				semconv.GenAIRequestTemperatureKey: "0",
			},
		},
		{
			name:     "provider sent another model",
			sent:     harness.RequestParams{Model: "m-2026", MaxTokens: 100},
			wantName: "chat m-2026",
			want: map[attribute.Key]string{
				semconv.GenAIRequestModelKey:     "m-2026",
				tracing.KeyLangSmithTraceName:    "chat m-2026",
				semconv.GenAIRequestMaxTokensKey: "100",
			},
		},
		{
			name: "not reported: the request's",
			opts: []harness.Option{harness.WithMaxTokens(256), harness.WithTemperature(0.5)},
			want: map[attribute.Key]string{
				semconv.GenAIRequestModelKey:       "m",
				semconv.GenAIRequestMaxTokensKey:   "256",
				semconv.GenAIRequestTemperatureKey: "0.5",
				semconv.GenAIRequestStreamKey:      "false",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, sr := recorderTP(t)
			provider := harness.ProviderFunc(func(context.Context, *harness.ModelRequest) (*harness.ModelResponse, error) {
				return &harness.ModelResponse{
					Message:    harness.AssistantMessage("ok"),
					StopReason: harness.StopEndTurn,
					Model:      "m",
					ID:         "resp_1",
					Provider:   "fake",
					Sent:       tt.sent,
				}, nil
			})
			opts := append([]harness.Option{
				harness.WithProvider(provider), harness.WithModel("m"),
				harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))),
			}, tt.opts...)
			a, err := harness.New(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close(context.Background())
			if res, err := a.Run(context.Background(), "hi"); err != nil || res.Status != harness.StatusCompleted {
				t.Fatalf("run: %v %+v", err, res)
			}
			wantName := tt.wantName
			if wantName == "" {
				wantName = "chat m"
			}
			chats := byName(spans(sr), wantName)
			if len(chats) != 1 {
				t.Fatalf("spans %v, want one %q", names(spans(sr)), wantName)
			}
			for k, want := range tt.want {
				v, ok := attr(chats[0], k)
				switch {
				case want == "" && ok:
					t.Errorf("%s = %s, want it absent", k, v.Emit())
				case want != "" && (!ok || v.Emit() != want):
					t.Errorf("%s = %q (set %v), want %q", k, v.Emit(), ok, want)
				}
			}
		})
	}
}
