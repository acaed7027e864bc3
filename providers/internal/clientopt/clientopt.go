package clientopt

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
)

// Common holds the settings every provider has. The zero value means "the
// SDK's defaults" for everything.
type Common[RO any] struct {
	// APIKey, when set, replaces the SDK's key from the environment.
	APIKey *string
	// BaseURL, when not empty, replaces the SDK's base URL.
	BaseURL string
	// MaxRetries, when set, replaces the SDK's retry count; it must not be
	// negative.
	MaxRetries *int
	// HTTPClient, when set, is the client the SDK sends requests with.
	HTTPClient *http.Client
	// ReqOpts are raw SDK request options, applied after the provider's
	// own so that they win.
	ReqOpts []RO
	// Logger is the provider's logger; ClientOptions sets it to
	// slog.Default() when nil.
	Logger *slog.Logger
}

// SDK holds an SDK's constructors for the request options that Common
// maps to.
type SDK[RO any] struct {
	WithAPIKey     func(key string) RO
	WithBaseURL    func(u string) RO
	WithHTTPClient func(hc *http.Client) RO
	WithMaxRetries func(n int) RO
}

// CheckRetries reports a negative MaxRetries as an error naming the
// provider.
func (c *Common[RO]) CheckRetries(provider string) error {
	if c.MaxRetries != nil && *c.MaxRetries < 0 {
		return fmt.Errorf("%s: max retries must not be negative, got %d", provider, *c.MaxRetries)
	}
	return nil
}

// ClientOptions defaults Logger to slog.Default() and returns the SDK
// request options for the settings: first, then the API key, base URL, HTTP
// client and retries that are set, then ReqOpts. A base URL that does not
// parse is an error naming the provider.
func (c *Common[RO]) ClientOptions(provider string, sdk SDK[RO], first ...RO) ([]RO, error) {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	ro := append([]RO(nil), first...)
	if c.APIKey != nil {
		ro = append(ro, sdk.WithAPIKey(*c.APIKey))
	}
	if c.BaseURL != "" {
		if _, err := url.Parse(c.BaseURL); err != nil {
			return nil, fmt.Errorf("%s: base URL: %w", provider, err)
		}
		ro = append(ro, sdk.WithBaseURL(c.BaseURL))
	}
	if c.HTTPClient != nil {
		ro = append(ro, sdk.WithHTTPClient(c.HTTPClient))
	}
	if c.MaxRetries != nil {
		ro = append(ro, sdk.WithMaxRetries(*c.MaxRetries))
	}
	return append(ro, c.ReqOpts...), nil
}
