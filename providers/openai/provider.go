package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/apierr"
	"github.com/harnessx/harnessx/providers/internal/clientopt"
	"github.com/harnessx/harnessx/providers/internal/media"
)

// Name is the provider name reported in [harness.ModelResponse.Provider]
// (it becomes gen_ai.provider.name and ls_provider in traces).
const Name = "openai"

// Option configures a [Provider].
type Option func(*config)

// config holds a provider's settings. Defaults:
//   - API key, base URL, organization and project: the SDK's defaults
//     (OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_PROJECT_ID);
//   - max retries: the SDK's default (2), with its exponential backoff, for
//     429, 408, 409, 5xx and connection errors;
//   - HTTP client: the SDK's default;
//   - no prompt_cache_key, no reasoning_effort;
//   - logger: slog.Default() when New is called.
type config struct {
	clientopt.Common[option.RequestOption]
	cacheKey bool
	effort   shared.ReasoningEffort
	logger   *slog.Logger
	parts    func(model string, t harness.PartType) bool
}

// supports reports whether model takes parts of type t.
func (c *config) supports(model string, t harness.PartType) bool {
	if c.parts != nil {
		return c.parts(model, t)
	}
	return DefaultPartSupport(model, t)
}

// DefaultPartSupport is the provider's guess, from the model's name, of the
// media a Chat Completions model takes: audio only the audio models
// (names containing "audio"); images and PDF files every other model but
// the text-only families gpt-3.5, o1-mini and o3-mini. It is a guess: a
// server that speaks the API with other models, or a new model, needs
// [WithPartSupport].
func DefaultPartSupport(model string, t harness.PartType) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:] // "openai/gpt-4o" on routers
	}
	audio := strings.Contains(m, "audio")
	switch t {
	case harness.PartAudio:
		return audio
	case harness.PartImage, harness.PartDocument:
		for _, p := range []string{"gpt-3.5", "o1-mini", "o3-mini"} {
			if strings.HasPrefix(m, p) {
				return false
			}
		}
		return !audio
	}
	return false
}

// WithAPIKey sets the API key, in place of OPENAI_API_KEY.
func WithAPIKey(key string) Option { return func(c *config) { c.APIKey = &key } }

// WithBaseURL sets the API's base URL, in place of OPENAI_BASE_URL and
// https://api.openai.com/v1/. Any server that speaks the Chat Completions
// API works.
func WithBaseURL(u string) Option { return func(c *config) { c.BaseURL = u } }

// WithMaxRetries sets how many times the SDK retries a request that failed
// with a rate limit, a server error or a connection error; 0 disables
// retries. It must not be negative.
func WithMaxRetries(n int) Option { return func(c *config) { c.MaxRetries = &n } }

// WithHTTPClient sets the HTTP client the SDK sends requests with.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.HTTPClient = hc } }

// WithRequestOptions passes raw SDK request options to the client, after
// the provider's own, so that they win: headers, organization, project,
// middleware, timeouts, JSON overrides.
func WithRequestOptions(opts ...option.RequestOption) Option {
	return func(c *config) { c.ReqOpts = append(c.ReqOpts, opts...) }
}

// WithPromptCacheKey sends the harness's prefix key
// (ModelRequest.PrefixKey.Key, hex) as prompt_cache_key, so that requests
// sharing a cacheable prefix are routed to the same prompt cache.
func WithPromptCacheKey() Option { return func(c *config) { c.cacheKey = true } }

// WithReasoningEffort sets reasoning_effort for reasoning models: "none",
// "minimal", "low", "medium", "high", "xhigh" or "max", as the model
// supports.
func WithReasoningEffort(effort string) Option {
	return func(c *config) { c.effort = shared.ReasoningEffort(effort) }
}

// WithPartSupport sets the function that says whether a model takes media
// parts of a type (harness.PartImage, PartDocument, PartAudio), in place
// of [DefaultPartSupport]. A part the model does not take fails the
// request before anything is sent, with a *harness.UnsupportedPartError.
func WithPartSupport(fn func(model string, t harness.PartType) bool) Option {
	return func(c *config) { c.parts = fn }
}

// WithLogger sets the logger for the provider's debug notes.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.Logger = l } }

// sdkOptions maps the common client settings to the SDK's options.
var sdkOptions = clientopt.SDK[option.RequestOption]{
	WithAPIKey:     option.WithAPIKey,
	WithBaseURL:    option.WithBaseURL,
	WithHTTPClient: func(hc *http.Client) option.RequestOption { return option.WithHTTPClient(hc) },
	WithMaxRetries: option.WithMaxRetries,
}

// Provider is a [harness.Provider] for the OpenAI Chat Completions API,
// built on github.com/openai/openai-go/v3. It is safe for concurrent use.
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
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.CheckRetries(Name); err != nil {
		return nil, err
	}
	ro, err := cfg.ClientOptions(Name, sdkOptions)
	if err != nil {
		return nil, err
	}
	return &Provider{client: sdk.NewClient(ro...), cfg: cfg, log: cfg.Logger.With("provider", Name)}, nil
}

// ProviderName returns [Name], "openai". It implements
// harness.ProviderNamer, so the engine fills ModelRequest.Provider before
// the request is sent and observers can name the provider of a request
// that fails.
func (p *Provider) ProviderName() string { return Name }

// UsesPrefixKey implements [harness.PrefixKeyUser]: the provider reads the
// request's prefix key only with [WithPromptCacheKey].
func (p *Provider) UsesPrefixKey() bool { return p.cfg.cacheKey }

// AcceptsURL reports whether Chat Completions takes a part of type t and
// MIME type mime by URL for model: images (image/*, or of unknown type
// "") as an image_url, when the model takes images (see
// [WithPartSupport]); not documents, which it takes inline or by file ID,
// nor audio, which it takes inline only. It implements
// harness.URLAccepter.
func (p *Provider) AcceptsURL(model string, t harness.PartType, mime string) bool {
	return t == harness.PartImage && (mime == "" || strings.HasPrefix(mime, "image/")) && p.cfg.supports(model, t)
}

// Generate sends req to the Chat Completions API and returns the reply;
// with req.Stream it streams (with stream_options.include_usage) and
// assembles the chunks. It blocks until the reply is complete and returns
// promptly when ctx is cancelled, with an error for which errors.Is(err,
// context.Canceled) holds. Errors are [*APIError], [*ConnectionError],
// [*StreamError] or wrap ErrInvalidRequest for a request that cannot be
// mapped.
//
// The response's Sent reports the parameters sent: the model,
// max_completion_tokens and temperature when the request set them, and
// whether it streamed.
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
func (p *Provider) generate(ctx context.Context, params sdk.ChatCompletionNewParams, opts ...option.RequestOption) (*harness.ModelResponse, error) {
	c, err := p.client.Chat.Completions.New(ctx, params, opts...)
	if err != nil {
		return nil, p.wrapErr(ctx, err)
	}
	r, err := fromCompletion(c)
	if err != nil {
		return nil, err
	}
	return r.response(), nil
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
			Type:       ae.Type,
			Code:       ae.Code,
			Message:    ae.Message,
			Err:        ae,
		}
		if ae.Response != nil {
			e.RequestID = ae.Response.Header.Get("x-request-id")
		}
		return e
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		// An error event inside a 200 stream.
		var ev struct {
			Error struct {
				Type, Code, Message string
			} `json:"error"`
		}
		_ = json.Unmarshal(se.Event.Data, &ev)
		msg := ev.Error.Message
		if msg == "" {
			msg = se.Message
		}
		return &APIError{Provider: Name, Type: ev.Error.Type, Code: ev.Error.Code, Message: msg, Err: se}
	}
	return apierr.Transport(Name, err)
}

// doneWatcher wraps a streamed response body and notes whether the
// terminal "data: [DONE]" line went by. The SDK's stream ends the same way
// on [DONE] and on a connection that simply closed, so the provider needs
// this to tell a complete stream from a cut one. The marker counts only at
// the start of a line, where event data (JSON, without raw newlines) cannot
// put it.
type doneWatcher struct {
	rc   io.ReadCloser
	tail []byte // the last bytes read, to find a marker split across reads
	done bool
}

var doneMarkers = [][]byte{[]byte("\ndata: [DONE]"), []byte("\ndata:[DONE]")}

func newDoneWatcher(rc io.ReadCloser) *doneWatcher {
	return &doneWatcher{rc: rc, tail: []byte("\n")}
}

func (w *doneWatcher) Read(b []byte) (int, error) {
	n, err := w.rc.Read(b)
	if n > 0 && !w.done {
		buf := append(w.tail, b[:n]...)
		for _, m := range doneMarkers {
			if bytes.Contains(buf, m) {
				w.done = true
			}
		}
		const keep = 16
		if len(buf) > keep {
			buf = buf[len(buf)-keep:]
		}
		w.tail = append(w.tail[:0], buf...)
	}
	return n, err
}

func (w *doneWatcher) Close() error { return w.rc.Close() }
