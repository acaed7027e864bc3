package anthropic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/apierr"
	"github.com/harnessx/harnessx/providers/internal/clientopt"
	"github.com/harnessx/harnessx/providers/internal/media"
)

// Name is the provider name reported in [harness.ModelResponse.Provider]
// (it becomes gen_ai.provider.name and ls_provider in traces).
const Name = "anthropic"

// DefaultMaxTokens is the max_tokens sent when neither the request nor
// [WithDefaultMaxTokens] sets one: the Messages API requires a bound.
const DefaultMaxTokens = 4096

// Option configures a [Provider].
type Option func(*config)

// config holds a provider's settings. Defaults:
//   - API key, base URL and other credentials: the SDK's defaults
//     (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL, profiles);
//   - max retries: the SDK's default (2), with its exponential backoff, for
//     429, 408, 409, 5xx and connection errors;
//   - HTTP client: the SDK's default;
//   - max_tokens: DefaultMaxTokens when the request has none;
//   - no prompt caching breakpoints, no extended thinking;
//   - the SDK's own OpenTelemetry spans off (the tracing extension makes
//     the model spans);
//   - logger: slog.Default() when New is called.
type config struct {
	clientopt.Common[option.RequestOption]
	caching      bool
	maxTokens    int64
	thinking     sdk.ThinkingConfigParamUnion
	sdkTelemetry bool
	logger       *slog.Logger
}

// WithAPIKey sets the API key, in place of ANTHROPIC_API_KEY.
func WithAPIKey(key string) Option { return func(c *config) { c.APIKey = &key } }

// WithBaseURL sets the API's base URL, in place of ANTHROPIC_BASE_URL and
// https://api.anthropic.com/.
func WithBaseURL(u string) Option { return func(c *config) { c.BaseURL = u } }

// WithMaxRetries sets how many times the SDK retries a request that failed
// with a rate limit, a server error or a connection error; 0 disables
// retries. It must not be negative.
func WithMaxRetries(n int) Option { return func(c *config) { c.MaxRetries = &n } }

// WithHTTPClient sets the HTTP client the SDK sends requests with.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.HTTPClient = hc } }

// WithRequestOptions passes raw SDK request options to the client, after
// the provider's own, so that they win: headers, middleware, timeouts,
// JSON overrides.
func WithRequestOptions(opts ...option.RequestOption) Option {
	return func(c *config) { c.ReqOpts = append(c.ReqOpts, opts...) }
}

// WithPromptCaching places cache_control {type: ephemeral} breakpoints on
// the cacheable prefix of every request: the last tool definition, the
// system prompt and the last stable message (the one before the final
// message, matching the prefix that harness.PrefixKey hashes). Later
// requests that share the prefix read it from the cache; the usage reports
// cache reads and writes.
func WithPromptCaching() Option { return func(c *config) { c.caching = true } }

// WithDefaultMaxTokens sets max_tokens for requests whose MaxTokens is 0.
func WithDefaultMaxTokens(n int) Option { return func(c *config) { c.maxTokens = int64(n) } }

// WithThinking turns on extended thinking with a budget of thinking tokens,
// which must be below max_tokens. Thinking comes back as reasoning parts.
func WithThinking(budgetTokens int) Option {
	return func(c *config) {
		c.thinking = sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{BudgetTokens: int64(budgetTokens)}}
	}
}

// WithAdaptiveThinking lets the model decide how much to think, on models
// that support adaptive thinking.
func WithAdaptiveThinking() Option {
	return func(c *config) {
		c.thinking = sdk.ThinkingConfigParamUnion{OfAdaptive: &sdk.ThinkingConfigAdaptiveParam{}}
	}
}

// WithSDKTelemetry turns the SDK's own OpenTelemetry spans and trace-context
// headers on. They are off by default because the harness tracing extension
// already records one span per model request, through its redactor; the
// SDK's spans would duplicate it.
func WithSDKTelemetry() Option { return func(c *config) { c.sdkTelemetry = true } }

// WithLogger sets the logger for the provider's debug notes (ignored
// request fields, skipped content).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.Logger = l } }

// sdkOptions maps the common client settings to the SDK's options.
var sdkOptions = clientopt.SDK[option.RequestOption]{
	WithAPIKey:     option.WithAPIKey,
	WithBaseURL:    option.WithBaseURL,
	WithHTTPClient: func(hc *http.Client) option.RequestOption { return option.WithHTTPClient(hc) },
	WithMaxRetries: option.WithMaxRetries,
}

// Provider is a [harness.Provider] for the Anthropic Messages API, built on
// github.com/anthropics/anthropic-sdk-go/v2. It is safe for concurrent use.
type Provider struct {
	client sdk.Client
	cfg    config
	log    *slog.Logger
}

var (
	_ harness.Provider      = (*Provider)(nil)
	_ harness.ProviderNamer = (*Provider)(nil)
	_ harness.URLAccepter   = (*Provider)(nil)
)

// New builds a provider. It does not contact the API; missing credentials
// surface on the first request.
func New(opts ...Option) (*Provider, error) {
	cfg := config{maxTokens: DefaultMaxTokens}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.maxTokens <= 0 {
		return nil, fmt.Errorf("anthropic: default max tokens must be positive, got %d", cfg.maxTokens)
	}
	if err := cfg.CheckRetries(Name); err != nil {
		return nil, err
	}
	if t := cfg.thinking.OfEnabled; t != nil && t.BudgetTokens <= 0 {
		return nil, fmt.Errorf("anthropic: thinking budget must be positive, got %d", t.BudgetTokens)
	}
	var first []option.RequestOption
	if !cfg.sdkTelemetry {
		first = append(first, option.WithoutOpenTelemetry())
	}
	ro, err := cfg.ClientOptions(Name, sdkOptions, first...)
	if err != nil {
		return nil, err
	}
	return &Provider{
		client: sdk.NewClient(ro...),
		cfg:    cfg,
		log:    cfg.Logger.With("provider", Name),
	}, nil
}

// ProviderName returns [Name], "anthropic". It implements
// harness.ProviderNamer, so the engine fills ModelRequest.Provider before
// the request is sent and observers can name the provider of a request
// that fails.
func (p *Provider) ProviderName() string { return Name }

// UsesPrefixKey implements [harness.PrefixKeyUser]: the provider marks
// its cache breakpoints itself and does not read the request's prefix key.
func (p *Provider) UsesPrefixKey() bool { return false }

// AcceptsURL reports whether the Messages API takes a part of type t and
// MIME type mime by URL: images of type image/jpeg, image/png, image/gif
// and image/webp (a url image source) and PDF documents (a url document
// source); no audio. An unknown type ("") is accepted for images and
// documents, which the provider sends by URL as it sends harness.ImageURL
// and DocumentURL parts. It implements harness.URLAccepter, for every
// model.
func (p *Provider) AcceptsURL(_ string, t harness.PartType, mime string) bool {
	switch t {
	case harness.PartImage:
		_, ok := imageTypes[mime]
		return ok || mime == ""
	case harness.PartDocument:
		return mime == "application/pdf" || mime == ""
	}
	return false
}

// Generate sends req to the Messages API and returns the reply; with
// req.Stream it streams and assembles the events. It blocks until the reply
// is complete and returns promptly when ctx is cancelled, with an error for
// which errors.Is(err, context.Canceled) holds. Errors are [*APIError],
// [*ConnectionError], [*StreamError] or wrap ErrInvalidRequest for a
// request that cannot be mapped.
//
// The response's Sent reports the parameters sent: the model, max_tokens
// (the request's, else the default), whether it streamed, and never a
// temperature, which this API version does not take.
func (p *Provider) Generate(ctx context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
	var in media.Inliner
	params, err := p.params(req, &in)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, apierr.Canceled(Name, ctx)
	}
	var opts []option.RequestOption
	if in.Streams() {
		opts = append(opts, option.WithMiddleware(in.Middleware))
	}
	var resp *harness.ModelResponse
	if req.Stream {
		resp, err = p.stream(ctx, params, opts...)
	} else {
		resp, err = p.generate(ctx, params, opts...)
	}
	if err != nil {
		return nil, err
	}
	resp.Sent = sentParams(&params, req.Stream)
	return resp, nil
}

// generate sends params without streaming.
func (p *Provider) generate(ctx context.Context, params sdk.MessageNewParams, opts ...option.RequestOption) (*harness.ModelResponse, error) {
	msg, err := p.client.Messages.New(ctx, params, opts...)
	if err != nil {
		return nil, p.wrapErr(ctx, err)
	}
	r := newReply()
	if err := r.fromMessage(msg); err != nil {
		return nil, err
	}
	return p.response(r), nil
}

// wrapErr turns an SDK error into the package's error types.
func (p *Provider) wrapErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return apierr.Canceled(Name, ctx)
	}
	var ae *sdk.Error
	if errors.As(err, &ae) {
		e := &APIError{
			Provider:   Name,
			StatusCode: ae.StatusCode,
			Type:       string(ae.Type()),
			Code:       string(ae.ErrorCode()),
			Message:    ae.Message,
			RequestID:  ae.RequestID,
			Err:        ae,
		}
		if e.StatusCode < 400 {
			// An error event inside a 200 stream: classify by its type.
			e.StatusCode = 0
		}
		return e
	}
	return apierr.Transport(Name, err)
}
