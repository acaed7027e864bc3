package openai

import "github.com/harnessx/harnessx/providers/internal/apierr"

// Sentinel errors of the provider; match them with errors.Is. They are the
// same values as the providers/anthropic ones, so code that handles both
// providers can test either.
var (
	// ErrAuthentication: the API refused the credentials (401) or their
	// permissions (403).
	ErrAuthentication = apierr.ErrAuthentication
	// ErrInvalidRequest: the API rejected the request (400, 404, 413, 422).
	ErrInvalidRequest = apierr.ErrInvalidRequest
	// ErrRateLimited: the API kept answering 429 after the SDK's retries.
	ErrRateLimited = apierr.ErrRateLimited
	// ErrServer: the API failed (5xx) after the SDK's retries, or sent a
	// server error event in a stream.
	ErrServer = apierr.ErrServer
	// ErrConnection: no HTTP response arrived after the SDK's retries.
	ErrConnection = apierr.ErrConnection
	// ErrStream: a streamed reply ended before its finish_reason and the
	// data: [DONE] line, or held data that does not decode. No partial
	// answer is returned.
	ErrStream = apierr.ErrStream
	// ErrResponse: the reply could not be turned into a harness response.
	ErrResponse = apierr.ErrResponse
)

// APIError is an error response of the API: status, error type, message
// and request ID. It unwraps to the sentinel of its class and to the SDK's
// *openai.Error, and implements harness.RetryableError (429, 408, 409
// and 5xx are retryable).
type APIError = apierr.APIError

// ConnectionError reports a request that got no HTTP response; it is
// retryable.
type ConnectionError = apierr.ConnectionError

// StreamError reports a streamed reply that cannot be trusted; it is
// retryable.
type StreamError = apierr.StreamError
