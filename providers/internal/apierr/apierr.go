package apierr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrAuthentication: the API refused the credentials (401) or their
	// permissions (403).
	ErrAuthentication = errors.New("authentication failed")
	// ErrInvalidRequest: the API rejected the request as malformed or
	// unsupported (400, 404, 413, 422).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrRateLimited: the API is rate limiting the caller (429), after the
	// SDK's own retries.
	ErrRateLimited = errors.New("rate limited")
	// ErrServer: the API failed or is overloaded (5xx, 529), after the SDK's
	// own retries.
	ErrServer = errors.New("server error")
	// ErrConnection: no HTTP response arrived (connection refused, reset,
	// timeout), after the SDK's own retries.
	ErrConnection = errors.New("connection failed")
	// ErrStream: a streamed reply ended early, carried malformed data or was
	// otherwise incomplete. A partial answer is never returned.
	ErrStream = errors.New("incomplete or malformed stream")
	// ErrResponse: a reply could not be turned into a harness response (no
	// choices, unknown shape).
	ErrResponse = errors.New("unusable response")
)

// APIError is an error response of a vendor API, after the SDK's retries.
// It unwraps to the sentinel of its class (ErrAuthentication,
// ErrInvalidRequest, ErrRateLimited, ErrServer) and to the SDK's own error.
type APIError struct {
	// Provider names the provider: "anthropic" or "openai".
	Provider string
	// StatusCode is the HTTP status; 0 for an error event inside a stream.
	StatusCode int
	// Type is the vendor's error type, such as "authentication_error",
	// "invalid_request_error" or "rate_limit_error"; empty when not given.
	Type string
	// Code is the vendor's machine-readable error code, when given.
	Code string
	// Message is the vendor's human-readable explanation.
	Message string
	// RequestID is the vendor's request ID, when given.
	RequestID string
	// Err is the SDK's error value.
	Err error
}

// Error describes the failure: provider, status, type, message, request ID.
func (e *APIError) Error() string {
	s := e.Provider + ": "
	if e.StatusCode != 0 {
		s += fmt.Sprintf("%d %s", e.StatusCode, http.StatusText(e.StatusCode))
	} else {
		s += "error event"
	}
	if e.Type != "" {
		s += " (" + e.Type + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	return s
}

// Unwrap returns the class sentinel and the SDK error.
func (e *APIError) Unwrap() []error {
	errs := make([]error, 0, 2)
	if s := e.sentinel(); s != nil {
		errs = append(errs, s)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

func (e *APIError) sentinel() error {
	switch c := e.StatusCode; {
	case c == http.StatusUnauthorized || c == http.StatusForbidden:
		return ErrAuthentication
	case c == http.StatusTooManyRequests:
		return ErrRateLimited
	case c >= 500:
		return ErrServer
	case c == http.StatusBadRequest || c == http.StatusNotFound ||
		c == http.StatusRequestEntityTooLarge || c == http.StatusUnprocessableEntity:
		return ErrInvalidRequest
	case c == 0:
		switch e.Type {
		case "overloaded_error", "api_error", "server_error":
			return ErrServer
		case "rate_limit_error", "rate_limit_exceeded":
			return ErrRateLimited
		case "authentication_error", "permission_error":
			return ErrAuthentication
		case "invalid_request_error":
			return ErrInvalidRequest
		}
	}
	return nil
}

// Retryable reports whether sending the request again may succeed: rate
// limits, timeouts, conflicts, server errors and overload. It makes
// APIError a harness.RetryableError.
func (e *APIError) Retryable() bool {
	switch c := e.StatusCode; {
	case c == http.StatusRequestTimeout, c == http.StatusConflict, c == http.StatusTooManyRequests, c >= 500:
		return true
	case c == 0:
		s := e.sentinel()
		return s == ErrServer || s == ErrRateLimited
	}
	return false
}

// ConnectionError reports a request that got no HTTP response.
type ConnectionError struct {
	Provider string
	Err      error
}

// Error names the provider and the transport failure.
func (e *ConnectionError) Error() string {
	return fmt.Sprintf("%s: %v: %v", e.Provider, ErrConnection, e.Err)
}

// Unwrap returns ErrConnection and the cause.
func (e *ConnectionError) Unwrap() []error { return []error{ErrConnection, e.Err} }

// Retryable reports true: a connection failure may be transient.
func (e *ConnectionError) Retryable() bool { return true }

// StreamError reports a streamed reply that cannot be trusted: it ended
// before its final event, or held data that does not decode.
type StreamError struct {
	Provider string
	// Reason says what was wrong, e.g. "stream ended without message_stop".
	Reason string
	// Err is the underlying decoding or transport error, if any.
	Err error
}

// Error names the provider and what was wrong with the stream.
func (e *StreamError) Error() string {
	s := fmt.Sprintf("%s: %v: %s", e.Provider, ErrStream, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrStream and the cause.
func (e *StreamError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrStream}
	}
	return []error{ErrStream, e.Err}
}

// Retryable reports true: a cut stream may succeed when sent again.
func (e *StreamError) Retryable() bool { return true }

// Canceled wraps the context's error so that errors.Is(err,
// context.Canceled) (or DeadlineExceeded) holds, naming the provider and
// keeping a distinct cancellation cause.
func Canceled(provider string, ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("%s: request cancelled: %w (cause: %w)", provider, err, cause)
	}
	return fmt.Errorf("%s: request cancelled: %w", provider, err)
}

// ToolInput returns raw when it is valid JSON and otherwise the raw text as
// a JSON string, so that a model's malformed arguments stay encodable (a
// json.RawMessage must hold valid JSON) and fail the tool's schema check
// with a clear message instead of breaking the session.
func ToolInput(raw string) json.RawMessage {
	if raw == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(raw)) {
		return json.RawMessage(raw)
	}
	b, _ := json.Marshal(raw)
	return b
}

// Transport turns an error that is not an API error response into the
// providers' error types: a context error (the request's own deadline or
// cancellation inside the SDK) is wrapped with the provider name, a
// *url.Error or net.Error becomes a *ConnectionError, and anything else is
// wrapped with the provider name.
func Transport(provider string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", provider, err)
	}
	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ue) || errors.As(err, &ne) {
		return &ConnectionError{Provider: provider, Err: err}
	}
	return fmt.Errorf("%s: %w", provider, err)
}
