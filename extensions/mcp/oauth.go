package mcp

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harnessx/harnessx/harness"
	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// OAuth configures OAuth 2.1 authorization for a streamable HTTP server
// (see [Transport.WithOAuth]). Its zero value is ready: dynamic client
// registration, a loopback redirect listener on a random port, and
// [BrowserPrompt] on standard error.
type OAuth struct {
	// ClientName is the client_name of a dynamic client registration.
	// Default "harnessx".
	ClientName string
	// ClientIDMetadataURL is the https URL of this client's ID metadata
	// document (a client ID that is a URL). It is used first, when the
	// authorization server says it supports such documents. The document
	// must list the redirect URI; with a loopback redirect that is
	// http://127.0.0.1:<port>/callback, so set RedirectPort with it.
	ClientIDMetadataURL string
	// ClientID and ClientSecret are a client registered beforehand with
	// the authorization server, used when it does not take the metadata
	// document. ClientSecret may be empty (a public client).
	ClientID     string
	ClientSecret string
	// NoDynamicRegistration turns dynamic client registration off.
	NoDynamicRegistration bool
	// RedirectPort is the port of the loopback redirect listener
	// (http://127.0.0.1:<port>/callback). Default 0: a random free port,
	// chosen at each authorization.
	RedirectPort int
	// Prompt hands the authorization URL to the user, who opens it in a
	// browser; the authorization server then redirects the browser to
	// the loopback listener. It is called on the goroutine of the request
	// the server refused and should return promptly: the adapter waits
	// for the redirect afterwards, within the connect timeout (or the call
	// timeout when a call is refused), so raise [WithConnectTimeout] when
	// a person must log in. An error ends the authorization. Default
	// BrowserPrompt(os.Stderr).
	Prompt func(ctx context.Context, server, authURL string) error
	// HTTPClient makes the requests to the authorization server (metadata,
	// registration, tokens). Default: the transport's client.
	HTTPClient *http.Client
}

// WithOAuth returns t with OAuth authorization: when the server answers a
// request with 401 (or 403 insufficient_scope), the adapter discovers its
// authorization server (protected-resource metadata, then the server's
// metadata), registers a client (a client ID metadata document, a
// preregistered client, or dynamic registration, in this order), starts
// a loopback redirect listener on 127.0.0.1, hands the authorization URL
// to o.Prompt, waits for the redirect, and exchanges the code, with PKCE,
// for a token. The request is then sent again with the token.
//
// Tokens are kept in the agent's storage ([harness.ExtensionContext.Storage],
// namespace "mcp", key "oauth/<server>"; the durable runtime's database
// when the agent uses it), so another agent with the same storage reuses
// them without asking again, and are refreshed with their refresh token
// when they expire or the server refuses them; a refused refresh starts a
// new authorization. Without storage they live as long as the agent.
// Tokens and client secrets are never logged, never put on spans and never
// shown to the model; errors from the authorization server are reduced to
// their OAuth error code and description.
//
// Only [StreamableHTTP] and [StreamableHTTPClient] transports take OAuth;
// connecting any other fails.
func (t Transport) WithOAuth(o OAuth) Transport {
	t.oauth = &o
	return t
}

// BrowserPrompt returns the default [OAuth].Prompt: it writes the
// authorization URL to w (the adapter's default is os.Stderr, the one
// place it prints to) and opens it in a browser when one exists (open on
// macOS; xdg-open on other systems, when DISPLAY or WAYLAND_DISPLAY is
// set). Opening is best effort and never fails the authorization.
func BrowserPrompt(w io.Writer) func(ctx context.Context, server, authURL string) error {
	return func(_ context.Context, server, authURL string) error {
		fmt.Fprintf(w, "MCP server %q needs authorization. Open this URL in a browser:\n\n    %s\n\n", server, authURL)
		openBrowser(authURL)
		return nil
	}
}

// openBrowser starts the system's URL opener, if there is one, and reaps
// it in the background.
func openBrowser(u string) {
	var name string
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		return
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return
		}
		name = "xdg-open"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return
	}
	cmd := exec.Command(path, u)
	if cmd.Start() == nil {
		go cmd.Wait() //nolint:errcheck // best effort
	}
}

// oauthRedirectPath is the path of the loopback redirect URI.
const oauthRedirectPath = "/callback"

// oauthStorageVersion is the version of a stored grant.
const oauthStorageVersion = 1

// withOAuth gives t, a streamable HTTP transport of server s, the
// server's OAuth handler. Called under s.connMu.
func (s *server) withOAuth(t sdk.Transport) (sdk.Transport, error) {
	if s.tr.oauth == nil {
		return t, nil
	}
	st, ok := t.(*sdk.StreamableClientTransport)
	if !ok {
		return nil, fmt.Errorf("OAuth needs a streamable HTTP transport, not %s", s.tr.kind)
	}
	if s.auth == nil {
		s.auth = newOAuthHandler(s, st.Endpoint, *s.tr.oauth, st.HTTPClient)
	}
	st.OAuthHandler = s.auth
	return st, nil
}

// oauthHandler is the auth.OAuthHandler of one server: it keeps the
// server's grant (in storage when there is one) and runs the
// authorization-code flow on the SDK's auth.AuthorizationCodeHandler with
// a loopback redirect listener.
type oauthHandler struct {
	server   string
	endpoint string
	cfg      OAuth
	client   *http.Client
	log      *slog.Logger
	store    *harness.Storage // nil: tokens in memory only

	authMu sync.Mutex // one authorization at a time

	mu     sync.Mutex
	loaded bool
	grant  *grantSource // nil: none
}

var _ auth.OAuthHandler = (*oauthHandler)(nil)

func newOAuthHandler(s *server, endpoint string, cfg OAuth, transportClient *http.Client) *oauthHandler {
	h := &oauthHandler{server: s.name, endpoint: endpoint, cfg: cfg, log: s.ext.log}
	h.client = cfg.HTTPClient
	if h.client == nil {
		h.client = transportClient
	}
	if h.client == nil {
		h.client = http.DefaultClient
	}
	if h.cfg.ClientName == "" {
		h.cfg.ClientName = "harnessx"
	}
	if h.cfg.Prompt == nil {
		h.cfg.Prompt = BrowserPrompt(os.Stderr)
	}
	if ec := s.ext.ec; ec.Supports(harness.FeatureStorage) {
		h.store = ec.Storage(Name)
	} else {
		h.log.Info("mcp: the agent has no storage; OAuth tokens are kept in memory until it closes", "server", s.name)
	}
	return h
}

func (h *oauthHandler) storageKey() string { return "oauth/" + h.server }

// TokenSource returns the server's grant, loading a stored one the first
// time; nil when there is none (the request goes without a token, and
// the server's 401 starts an authorization). It does not block but for
// the first load.
func (h *oauthHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.loaded {
		h.loaded = true
		h.grant = h.load(ctx)
	}
	if h.grant == nil {
		return nil, nil
	}
	return h.grant, nil
}

func (h *oauthHandler) current() *grantSource {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.grant
}

// Authorize runs after the server refused a request. When another request
// has got a token since this one was sent, it returns at once (the
// request is sent again with that token). Otherwise, after a 401, it
// first tries to refresh the grant; when that fails it runs the
// authorization-code flow.
func (h *oauthHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	h.authMu.Lock()
	defer h.authMu.Unlock()
	if g := h.current(); g != nil && resp.StatusCode == http.StatusUnauthorized {
		sent := req.Header.Get("Authorization")
		if tok := g.lastToken(); tok != "" && sent != "Bearer "+tok {
			drain(resp)
			return nil
		}
		// A token that a refresh forced by a 401 gave, refused in turn,
		// needs a new authorization, not another refresh.
		if !g.wasForced(sent) && g.forceRefresh(ctx) == nil {
			h.log.Info("mcp: OAuth token refreshed after the server refused it", "server", h.server)
			drain(resp)
			return nil
		}
	}
	return h.authorize(ctx, req, resp)
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16)) //nolint:errcheck // draining
	resp.Body.Close()
}

type callbackResult struct {
	code, state, iss string
	err              string
}

// authorize runs the authorization-code flow with a fresh loopback
// listener.
func (h *oauthHandler) authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(h.cfg.RedirectPort)))
	if err != nil {
		drain(resp)
		return fmt.Errorf("mcp: server %q: OAuth redirect listener: %w", h.server, err)
	}
	redirect := "http://" + ln.Addr().String() + oauthRedirectPath
	results := make(chan callbackResult, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+oauthRedirectPath, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		res := callbackResult{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss")}
		if e := q.Get("error"); e != "" {
			res.err = boundText(e + " " + q.Get("error_description"))
		} else if res.code == "" {
			http.Error(w, "no authorization code", http.StatusBadRequest)
			return
		}
		select {
		case results <- res:
		default: // a second redirect: the first one counts
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		msg := "Authorization complete. You can close this window."
		if res.err != "" {
			msg = "Authorization failed: " + res.err
		}
		fmt.Fprintf(w, "<!doctype html><title>harnessx</title><p>%s</p>\n", html.EscapeString(msg))
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() { defer close(served); hs.Serve(ln) }() //nolint:errcheck // ends with Close
	defer func() { hs.Close(); <-served }()

	fetch := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		h.log.Info("mcp: server needs OAuth authorization; waiting for the redirect", "server", h.server, "redirect", redirect)
		if err := h.cfg.Prompt(ctx, h.server, args.URL); err != nil {
			return nil, fmt.Errorf("authorization prompt: %w", err)
		}
		select {
		case r := <-results:
			if r.err != "" {
				return nil, fmt.Errorf("the authorization server refused: %s", r.err)
			}
			return &auth.AuthorizationResult{Code: r.code, State: r.state, Iss: r.iss}, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the authorization redirect: %w", ctx.Err())
		}
	}

	var granted []string
	if g := h.current(); g != nil {
		granted = g.scopes()
	}
	var got *grantSource
	conf := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: fetch,
		RequestRefreshToken:      true,
		Client:                   h.client,
		// A new authorization (a step-up) keeps the scopes granted before.
		ScopeFilter: func(discovered []string) []string { return unionScopes(granted, discovered) },
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			got = h.newGrant(ctx, c, tok)
			return got, nil
		},
	}
	if h.cfg.ClientIDMetadataURL != "" {
		conf.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: h.cfg.ClientIDMetadataURL}
	}
	if h.cfg.ClientID != "" {
		pc := &oauthex.ClientCredentials{ClientID: h.cfg.ClientID}
		if h.cfg.ClientSecret != "" {
			pc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: h.cfg.ClientSecret}
		}
		conf.PreregisteredClient = pc
	}
	if !h.cfg.NoDynamicRegistration {
		conf.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs:  []string{redirect},
				ClientName:    h.cfg.ClientName,
				GrantTypes:    []string{"authorization_code", "refresh_token"},
				ResponseTypes: []string{"code"},
			},
		}
	}
	ah, err := auth.NewAuthorizationCodeHandler(conf)
	if err != nil {
		drain(resp)
		return fmt.Errorf("mcp: server %q: OAuth configuration: %w", h.server, err)
	}
	if err := ah.Authorize(ctx, req, resp); err != nil {
		return fmt.Errorf("mcp: server %q: OAuth authorization failed: %s", h.server, h.sanitize(err))
	}
	if got == nil { // a 403 that is not insufficient_scope: nothing was asked
		return nil
	}
	h.mu.Lock()
	h.grant = got
	h.mu.Unlock()
	got.save(ctx)
	h.log.Info("mcp: OAuth authorization complete", "server", h.server)
	return nil
}

// sanitize describes an error of the flow without what the authorization
// server's response body or a secret would add: an OAuth error is its code
// and description.
func (h *oauthHandler) sanitize(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return boundText("the token request was refused: " + re.ErrorCode + " " + re.ErrorDescription)
		}
		status := ""
		if re.Response != nil {
			status = re.Response.Status
		}
		return "the token request failed: " + status
	}
	msg := err.Error()
	for _, s := range h.secrets() {
		msg = strings.ReplaceAll(msg, s, "[REDACTED]")
	}
	return boundText(msg)
}

// secrets are the strings that must not appear in an error.
func (h *oauthHandler) secrets() []string {
	var s []string
	if h.cfg.ClientSecret != "" {
		s = append(s, h.cfg.ClientSecret)
	}
	if g := h.current(); g != nil {
		s = append(s, g.secrets()...)
	}
	return s
}

// boundText keeps the first line of s, at most 300 bytes.
func boundText(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:297], "") + "..."
	}
	return s
}

func unionScopes(a, b []string) []string {
	if len(a) == 0 {
		return b
	}
	out := append([]string(nil), a...)
	for _, s := range b {
		if !containsString(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ---- grants ----

// storedGrant is a grant as kept in storage: the client it was issued to,
// the token endpoint and the token.
type storedGrant struct {
	Version      int       `json:"version"`
	Endpoint     string    `json:"endpoint"` // the MCP server URL it was granted for
	ClientID     string    `json:"client_id"`
	ClientSecret string    `json:"client_secret,omitempty"`
	AuthURL      string    `json:"auth_url,omitempty"`
	TokenURL     string    `json:"token_url"`
	AuthStyle    int       `json:"auth_style,omitempty"`
	Scopes       []string  `json:"scopes,omitempty"`
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
}

// grantSource is the token source of a grant: it refreshes the token
// when it expires (oauth2's reuse-and-refresh source) and stores each new
// token.
type grantSource struct {
	h    *oauthHandler
	conf *oauth2.Config
	rctx context.Context // carries the HTTP client for refreshes

	mu     sync.Mutex
	inner  oauth2.TokenSource
	tok    *oauth2.Token // the last token, as stored
	forced string        // the access token of the last forced refresh
}

func (h *oauthHandler) newGrant(rctx context.Context, c *oauth2.Config, tok *oauth2.Token) *grantSource {
	return &grantSource{h: h, conf: c, rctx: rctx, inner: c.TokenSource(rctx, tok), tok: tok}
}

// Token returns a valid token, refreshing it when it expired. A refresh
// the authorization server refuses drops the grant, and returns an
// invalid_grant error, so that the request goes without a token and the
// server's 401 starts a new authorization.
func (g *grantSource) Token() (*oauth2.Token, error) {
	g.mu.Lock()
	inner := g.inner
	g.mu.Unlock()
	tok, err := inner.Token()
	if err != nil {
		return nil, g.refreshFailed(err)
	}
	g.mu.Lock()
	changed := g.tok == nil || g.tok.AccessToken != tok.AccessToken
	if changed {
		g.tok = tok
	}
	g.mu.Unlock()
	if changed {
		g.h.log.Info("mcp: OAuth token refreshed", "server", g.h.server)
		g.save(g.rctx)
	}
	return tok, nil
}

// forceRefresh gets a new token with the refresh token, whatever the
// expiry of the current one says.
func (g *grantSource) forceRefresh(ctx context.Context) error {
	g.mu.Lock()
	rt := ""
	if g.tok != nil {
		rt = g.tok.RefreshToken
	}
	g.mu.Unlock()
	if rt == "" {
		return errors.New("no refresh token")
	}
	rctx := context.WithValue(ctx, oauth2.HTTPClient, g.h.client)
	tok, err := g.conf.TokenSource(rctx, &oauth2.Token{RefreshToken: rt}).Token()
	if err != nil {
		g.refreshFailed(err)
		return err
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = rt
	}
	g.mu.Lock()
	g.tok = tok
	g.forced = tok.AccessToken
	g.inner = g.conf.TokenSource(g.rctx, tok)
	g.mu.Unlock()
	g.save(ctx)
	return nil
}

// refreshFailed handles a failed refresh: a refusal drops the grant.
func (g *grantSource) refreshFailed(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return fmt.Errorf("mcp: server %q: refreshing the OAuth token: %s", g.h.server, g.h.sanitize(err))
	}
	g.h.log.Info("mcp: the authorization server refused to refresh the OAuth token; authorizing again", "server", g.h.server, "error", re.ErrorCode)
	g.h.forget(g)
	return &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "the refresh was refused: " + boundText(re.ErrorCode)}
}

// wasForced reports whether the Authorization header sent carried the
// token of the last forced refresh.
func (g *grantSource) wasForced(sent string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.forced != "" && sent == "Bearer "+g.forced
}

func (g *grantSource) lastToken() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tok == nil {
		return ""
	}
	return g.tok.AccessToken
}

func (g *grantSource) scopes() []string { return g.conf.Scopes }

func (g *grantSource) secrets() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := []string{}
	if g.conf.ClientSecret != "" {
		s = append(s, g.conf.ClientSecret)
	}
	if g.tok != nil {
		for _, t := range []string{g.tok.AccessToken, g.tok.RefreshToken} {
			if t != "" {
				s = append(s, t)
			}
		}
	}
	return s
}

// save stores the grant. A failure is logged: the grant still works until
// the agent closes.
func (g *grantSource) save(ctx context.Context) {
	h := g.h
	if h.store == nil {
		return
	}
	g.mu.Lock()
	tok := g.tok
	g.mu.Unlock()
	if tok == nil {
		return
	}
	rec := storedGrant{
		Version: oauthStorageVersion, Endpoint: h.endpoint,
		ClientID: g.conf.ClientID, ClientSecret: g.conf.ClientSecret,
		AuthURL: g.conf.Endpoint.AuthURL, TokenURL: g.conf.Endpoint.TokenURL,
		AuthStyle: int(g.conf.Endpoint.AuthStyle), Scopes: g.conf.Scopes,
		AccessToken: tok.AccessToken, TokenType: tok.TokenType,
		RefreshToken: tok.RefreshToken, Expiry: tok.Expiry,
	}
	ctx = context.WithoutCancel(ctx)
	if err := h.store.Put(ctx, h.storageKey(), rec); err != nil {
		h.log.Warn("mcp: cannot store the OAuth token; it lasts until the agent closes", "server", h.server, "error", err)
	}
}

// load reads the stored grant of the server, if it was granted for the
// same endpoint.
func (h *oauthHandler) load(ctx context.Context) *grantSource {
	if h.store == nil {
		return nil
	}
	var rec storedGrant
	found, err := h.store.Get(ctx, h.storageKey(), &rec)
	switch {
	case err != nil:
		h.log.Warn("mcp: cannot read the stored OAuth token", "server", h.server, "error", err)
		return nil
	case !found:
		return nil
	case rec.Version != oauthStorageVersion || rec.Endpoint != h.endpoint || rec.AccessToken == "" || rec.TokenURL == "":
		h.log.Info("mcp: the stored OAuth token is for another endpoint or version; ignored", "server", h.server)
		return nil
	}
	c := &oauth2.Config{
		ClientID: rec.ClientID, ClientSecret: rec.ClientSecret, Scopes: rec.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: rec.AuthURL, TokenURL: rec.TokenURL, AuthStyle: oauth2.AuthStyle(rec.AuthStyle)},
	}
	tok := &oauth2.Token{AccessToken: rec.AccessToken, TokenType: rec.TokenType, RefreshToken: rec.RefreshToken, Expiry: rec.Expiry}
	rctx := context.WithValue(context.Background(), oauth2.HTTPClient, h.client)
	return h.newGrant(rctx, c, tok)
}

// forget drops g, in memory and in storage, if it is still the grant.
func (h *oauthHandler) forget(g *grantSource) {
	h.mu.Lock()
	if h.grant != g {
		h.mu.Unlock()
		return
	}
	h.grant = nil
	h.mu.Unlock()
	if h.store != nil {
		if err := h.store.Delete(context.Background(), h.storageKey()); err != nil {
			h.log.Warn("mcp: cannot delete the refused OAuth token", "server", h.server, "error", err)
		}
	}
}

// redactURL returns u without its user information and with its query
// values replaced, for listings and errors: a URL may carry a credential.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "[unparsable URL]"
	}
	p.User = nil
	if p.RawQuery != "" {
		q := p.Query()
		for k := range q {
			q[k] = []string{"REDACTED"}
		}
		p.RawQuery = q.Encode()
	}
	p.Fragment = ""
	return p.String()
}

// urlSecrets returns the parts of a URL that may be credentials: the
// password and the query values (of 4 bytes or more, so that short flags
// such as "1" are not taken for secrets).
func urlSecrets(u string) []string {
	p, err := url.Parse(u)
	if err != nil {
		return nil
	}
	var s []string
	if pw, ok := p.User.Password(); ok && pw != "" {
		s = append(s, pw)
	}
	for _, vs := range p.Query() {
		for _, v := range vs {
			if len(v) >= 4 {
				s = append(s, v, url.QueryEscape(v))
			}
		}
	}
	return s
}

// redactErr returns err without the credentials of t's URL in its
// message (the SDK's and net/http's errors quote the request URL).
func (t Transport) redactErr(err error) error {
	if err == nil || len(t.secrets) == 0 {
		return err
	}
	msg := err.Error()
	for _, s := range t.secrets {
		msg = strings.ReplaceAll(msg, s, "REDACTED")
	}
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}
