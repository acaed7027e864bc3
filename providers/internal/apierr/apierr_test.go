package apierr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"testing"
)

func TestAPIErrorClass(t *testing.T) {
	sdkErr := errors.New("sdk error")
	tests := []struct {
		status    int
		typ       string
		sentinel  error
		retryable bool
	}{
		{400, "invalid_request_error", ErrInvalidRequest, false},
		{401, "authentication_error", ErrAuthentication, false},
		{403, "permission_error", ErrAuthentication, false},
		{404, "not_found_error", ErrInvalidRequest, false},
		{408, "", nil, true},
		{409, "", nil, true},
		{413, "request_too_large", ErrInvalidRequest, false},
		{422, "", ErrInvalidRequest, false},
		{429, "rate_limit_error", ErrRateLimited, true},
		{500, "api_error", ErrServer, true},
		{529, "overloaded_error", ErrServer, true},
		{0, "overloaded_error", ErrServer, true},
		{0, "server_error", ErrServer, true},
		{0, "rate_limit_exceeded", ErrRateLimited, true},
		{0, "invalid_request_error", ErrInvalidRequest, false},
		{0, "authentication_error", ErrAuthentication, false},
		{0, "mystery", nil, false},
	}
	all := []error{ErrAuthentication, ErrInvalidRequest, ErrRateLimited, ErrServer}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d_%s", tt.status, tt.typ), func(t *testing.T) {
			e := &APIError{Provider: "p", StatusCode: tt.status, Type: tt.typ, Message: "m", Err: sdkErr}
			for _, s := range all {
				if got, want := errors.Is(e, s), s == tt.sentinel; got != want {
					t.Errorf("errors.Is(%v) = %v, want %v", s, got, want)
				}
			}
			if !errors.Is(e, sdkErr) {
				t.Error("does not unwrap to the SDK error")
			}
			if e.Retryable() != tt.retryable {
				t.Errorf("Retryable() = %v", e.Retryable())
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&APIError{Provider: "anthropic", StatusCode: 401, Type: "authentication_error", Message: "invalid x-api-key", RequestID: "req_1"},
			"anthropic: 401 Unauthorized (authentication_error): invalid x-api-key [request req_1]"},
		{&APIError{Provider: "openai", Type: "server_error", Message: "boom"}, "openai: error event (server_error): boom"},
		{&StreamError{Provider: "openai", Reason: "stream ended without data: [DONE]"},
			"openai: incomplete or malformed stream: stream ended without data: [DONE]"},
		{&ConnectionError{Provider: "anthropic", Err: errors.New("refused")}, "anthropic: connection failed: refused"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Canceled("p", ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("%v does not match context.Canceled", err)
	}
	cause := errors.New("user hit stop")
	ctx, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(cause)
	err := Canceled("p", ctx)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
		t.Errorf("%v must match context.Canceled and the cause", err)
	}
}

func TestToolInput(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "{}"},
		{`{"a":1}`, `{"a":1}`},
		{`{"a":`, `"{\"a\":"`},
		{`not json`, `"not json"`},
	}
	for _, tt := range tests {
		got := ToolInput(tt.in)
		if string(got) != tt.want || !json.Valid(got) {
			t.Errorf("ToolInput(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestTransport(t *testing.T) {
	refused := &url.Error{Op: "Post", URL: "http://x", Err: errors.New("connection refused")}
	cancelled := &url.Error{Op: "Post", URL: "http://x", Err: context.Canceled}
	other := errors.New("odd")
	var ce *ConnectionError
	if err := Transport("p", refused); !errors.As(err, &ce) || ce.Provider != "p" || !errors.Is(err, refused) {
		t.Errorf("refused: %T %v", err, err)
	}
	if err := Transport("p", cancelled); errors.As(err, &ce) || !errors.Is(err, context.Canceled) || err.Error() != "p: "+cancelled.Error() {
		t.Errorf("cancelled: %T %v", err, err)
	}
	if err := Transport("p", other); errors.As(err, &ce) || !errors.Is(err, other) || err.Error() != "p: odd" {
		t.Errorf("other: %T %v", err, err)
	}
}
