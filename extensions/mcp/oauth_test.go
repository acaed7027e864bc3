package mcp_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/extensions/mcp"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// authServer is an MCP server over streamable HTTP behind a small OAuth
// authorization server, both on one loopback listener: protected-resource
// metadata, authorization-server metadata, dynamic registration, an
// authorization endpoint that redirects at once with a code (the user
// said yes), and a token endpoint with PKCE and refresh tokens.
type authServer struct {
	t   *testing.T
	srv *httptest.Server
	url string // the MCP endpoint

	mu            sync.Mutex
	clients       map[string]asClient // by client ID
	codes         map[string]asCode
	access        map[string]bool // valid access tokens
	refresh       map[string]string
	expiresIn     int
	refuseRefresh bool       // tokens from refresh grants are not valid
	posts         []postSeen // the authorized POSTs to the MCP endpoint
	secrets       []string   // every token and client secret issued
	registrations int
	authorizes    int
	exchanges     int
	refreshes     int
}

type asClient struct {
	secret    string
	redirects []string
}

type asCode struct {
	client, redirect, challenge string
}

func newAuthServer(t *testing.T) *authServer {
	a := &authServer{t: t, clients: map[string]asClient{}, codes: map[string]asCode{}, access: map[string]bool{}, refresh: map[string]string{}, expiresIn: 3600}
	mcpSrv := sdk.NewServer(&sdk.Implementation{Name: "protected", Version: "1"}, nil)
	sdk.AddTool(mcpSrv, &sdk.Tool{Name: "whoami", Description: "says who you are"},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			// Notifications during the call, which the adapter's HTTP
			// watch must see behind OAuth too.
			if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
				ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 2, Message: "checking the badge",
			}); err != nil {
				return nil, nil, err
			}
			if err := req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "warning", Logger: "guard", Data: "badge checked"}); err != nil {
				return nil, nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "you are authorized"}}}, nil, nil
		})
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcpSrv }, nil)

	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		a.mu.Lock()
		valid := ok && a.access[tok]
		a.mu.Unlock()
		if valid && r.Method == http.MethodPost {
			ps := postSeen{r.Header.Get("Mcp-Protocol-Version"), bodyMethod(r)}
			a.mu.Lock()
			a.posts = append(a.posts, ps)
			a.mu.Unlock()
		}
		if !valid {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, a.srv.URL))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"resource": a.url, "authorization_servers": []string{a.srv.URL}})
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"issuer":                                a.srv.URL,
			"authorization_endpoint":                a.srv.URL + "/authorize",
			"token_endpoint":                        a.srv.URL + "/token",
			"registration_endpoint":                 a.srv.URL + "/register",
			"response_types_supported":              []string{"code"},
			"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported":      []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic"},
		})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var md struct {
			RedirectURIs []string `json:"redirect_uris"`
		}
		if err := json.NewDecoder(r.Body).Decode(&md); err != nil || len(md.RedirectURIs) == 0 {
			http.Error(w, "bad registration", http.StatusBadRequest)
			return
		}
		for _, u := range md.RedirectURIs {
			if p, err := url.Parse(u); err != nil || p.Hostname() != "127.0.0.1" {
				t.Errorf("redirect URI %q is not on the loopback address", u)
			}
		}
		id, secret := "client-"+randText(), a.issue("cs-")
		a.mu.Lock()
		a.clients[id] = asClient{secret: secret, redirects: md.RedirectURIs}
		a.registrations++
		a.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		writeJSON(w, map[string]any{"client_id": id, "client_secret": secret, "redirect_uris": md.RedirectURIs, "token_endpoint_auth_method": "client_secret_basic"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a.mu.Lock()
		c, ok := a.clients[q.Get("client_id")]
		a.mu.Unlock()
		redirect := q.Get("redirect_uri")
		switch {
		case !ok || !slices.Contains(c.redirects, redirect):
			http.Error(w, "unknown client or redirect URI", http.StatusBadRequest)
			return
		case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
			http.Error(w, "PKCE is required", http.StatusBadRequest)
			return
		case q.Get("resource") != a.url:
			http.Error(w, "wrong resource "+q.Get("resource"), http.StatusBadRequest)
			return
		}
		code := "code-" + randText()
		a.mu.Lock()
		a.codes[code] = asCode{client: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge")}
		a.authorizes++
		a.mu.Unlock()
		http.Redirect(w, r, redirect+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		a.mu.Lock()
		defer a.mu.Unlock()
		if c, ok := a.clients[id]; !ok || c.secret != secret {
			w.WriteHeader(http.StatusUnauthorized)
			writeJSON(w, map[string]string{"error": "invalid_client"})
			return
		}
		switch r.FormValue("grant_type") {
		case "authorization_code":
			c, ok := a.codes[r.FormValue("code")]
			sum := sha256.Sum256([]byte(r.FormValue("code_verifier")))
			if !ok || c.client != id || c.redirect != r.FormValue("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
				w.WriteHeader(http.StatusBadRequest)
				writeJSON(w, map[string]string{"error": "invalid_grant"})
				return
			}
			delete(a.codes, r.FormValue("code"))
			a.exchanges++
		case "refresh_token":
			if a.refresh[r.FormValue("refresh_token")] != id {
				w.WriteHeader(http.StatusBadRequest)
				writeJSON(w, map[string]string{"error": "invalid_grant"})
				return
			}
			delete(a.refresh, r.FormValue("refresh_token"))
			a.refreshes++
		default:
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]string{"error": "unsupported_grant_type"})
			return
		}
		at, rt := a.issueLocked("at-"), a.issueLocked("rt-")
		a.access[at] = !(a.refuseRefresh && r.FormValue("grant_type") == "refresh_token")
		a.refresh[rt] = id
		writeJSON(w, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": a.expiresIn, "refresh_token": rt})
	})
	a.srv = httptest.NewServer(mux)
	a.url = a.srv.URL + "/mcp"
	t.Cleanup(a.srv.Close)
	return a
}

func (a *authServer) issue(prefix string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.issueLocked(prefix)
}

func (a *authServer) issueLocked(prefix string) string {
	s := prefix + randText()
	a.secrets = append(a.secrets, s)
	return s
}

// expireAll makes the server refuse every access token issued so far;
// later tokens expire after expiresIn seconds (as the client is told).
func (a *authServer) expireAll(expiresIn int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.access)
	a.expiresIn = expiresIn
}

type asCounts struct{ registrations, authorizes, exchanges, refreshes int }

func (a *authServer) counts() asCounts {
	a.mu.Lock()
	defer a.mu.Unlock()
	return asCounts{a.registrations, a.authorizes, a.exchanges, a.refreshes}
}

func (a *authServer) allSecrets() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.secrets)
}

func randText() string { return strings.ToLower(rand.Text()) }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// browser is an OAuth prompt that plays the user: it opens the
// authorization URL and follows its redirect to the loopback listener.
type browser struct {
	mu    sync.Mutex
	opens int
}

func (b *browser) prompt(ctx context.Context, server, authURL string) error {
	b.mu.Lock()
	b.opens++
	b.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the redirect ended with %s", resp.Status)
	}
	return nil
}

func (b *browser) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opens
}

// TestOAuth runs the whole flow on loopback: the first agent is refused,
// discovers the authorization server, registers, authorizes through the
// prompt and calls the tool; a second agent with the same storage uses
// the stored token without asking; a third, whose token the server no
// longer takes, refreshes it (and refreshes again when the new token
// expires at once). No token or client secret reaches the spans, the
// logs, the model or the saved session. Behind OAuth the adapter's HTTP
// watch still works: each call's span has its jsonrpc.request.id and the
// server's progress and log messages as events.
func TestOAuth(t *testing.T) {
	as := newAuthServer(t)
	store := harnesstest.NewMemoryStorage()
	b := &browser{}
	var logs logBuffer
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	tr := mcp.StreamableHTTP(as.url).WithOAuth(mcp.OAuth{Prompt: b.prompt})
	flightDir := t.TempDir() // the flight recordings, whose bundles are checked below

	var seen []string // what the model and the saved sessions got
	agentRun := func(name string) *harness.ToolResult {
		t.Helper()
		p := harnesstest.NewScriptedProvider(enable("c1", "web"), harnesstest.CallTool("c2", "web__whoami", map[string]any{}), harnesstest.Reply("done"))
		a := newAgent(t, p, mcp.New(mcp.WithServer("web", tr)),
			harness.WithStorage(store),
			harness.WithLogger(newLogger(&logs)),
			harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp), tracing.WithBuiltinRedaction(false)),
				flight.New(flight.WithDir(flightDir))))
		r := run(t, a, "who am I? ("+name+")")
		res := results(r)
		if res["c1"] == nil || res["c1"].IsError {
			t.Fatalf("%s: mcp_enable: %+v", name, res["c1"])
		}
		for _, req := range p.Requests() {
			b, _ := json.Marshal(req)
			seen = append(seen, string(b))
		}
		sess, err := a.SaveSession(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, string(sess))
		// Close now, while the server still takes the agent's token for
		// the closing DELETE.
		if err := a.Close(context.Background()); err != nil {
			t.Errorf("%s: Close: %v", name, err)
		}
		return res["c2"]
	}

	// 1: the first agent authorizes.
	if got := agentRun("first"); got == nil || got.IsError || got.Content != "you are authorized" {
		t.Fatalf("first agent's call: %+v", got)
	}
	if got, want := as.counts(), (asCounts{registrations: 1, authorizes: 1, exchanges: 1}); got != want {
		t.Errorf("after the first agent: %+v, want %+v", got, want)
	}
	if b.count() != 1 {
		t.Errorf("prompted %d times, want 1", b.count())
	}
	keys, _ := store.List(context.Background(), harness.StorageScope{Namespace: mcp.Name}, "oauth/")
	if !slices.Equal(keys, []string{"oauth/web"}) {
		t.Errorf("stored keys %q, want [oauth/web]", keys)
	}

	// 2: a second agent with the same storage reuses the token.
	if got := agentRun("second"); got == nil || got.IsError {
		t.Fatalf("second agent's call: %+v", got)
	}
	if got, want := as.counts(), (asCounts{registrations: 1, authorizes: 1, exchanges: 1}); got != want {
		t.Errorf("after the second agent: %+v, want %+v (no new authorization)", got, want)
	}
	if b.count() != 1 {
		t.Errorf("prompted %d times, want still 1", b.count())
	}

	// 3: the server no longer takes the token: it is refreshed, and the
	// new one, which expires at once, is refreshed again before use.
	as.expireAll(1)
	if got := agentRun("third"); got == nil || got.IsError {
		t.Fatalf("third agent's call: %+v", got)
	}
	c := as.counts()
	if c.registrations != 1 || c.authorizes != 1 || c.exchanges != 1 || c.refreshes < 2 {
		t.Errorf("after the third agent: %+v, want no new authorization and at least 2 refreshes", c)
	}
	if b.count() != 1 {
		t.Errorf("prompted %d times, want still 1", b.count())
	}
	var stored map[string]any
	raw, found, err := store.Get(context.Background(), harness.StorageScope{Namespace: mcp.Name}, "oauth/web")
	if err != nil || !found {
		t.Fatalf("stored grant: found %v, %v", found, err)
	}
	json.Unmarshal(raw, &stored)
	secrets := as.allSecrets()
	if last := lastWithPrefix(secrets, "at-"); stored["access_token"] != last {
		t.Errorf("stored access token is not the last one issued")
	}

	// Each agent's call has its request ID, and the server's progress and
	// log message during it, on its span.
	var calls int
	for _, s := range exp.GetSpans() {
		if s.Name != "execute_tool web__whoami" {
			continue
		}
		calls++
		var id string
		for _, kv := range s.Attributes {
			if kv.Key == "jsonrpc.request.id" {
				id = kv.Value.Emit()
			}
		}
		var progress, logged bool
		for _, ev := range s.Events {
			for _, kv := range ev.Attributes {
				switch {
				case kv.Key == tracing.KeyToolUpdatePrefix+mcp.MetaProgressMessage && kv.Value.AsString() == "checking the badge":
					progress = true
				case kv.Key == tracing.KeyToolUpdatePrefix+mcp.MetaLogData && kv.Value.AsString() == "badge checked":
					logged = true
				}
			}
		}
		if id == "" || !progress || !logged {
			t.Errorf("whoami span: jsonrpc.request.id %q, progress event %v, log event %v; events %v", id, progress, logged, s.Events)
		}
	}
	if calls != 3 {
		t.Errorf("%d whoami spans, want 3", calls)
	}
	// The SDK's connection is not hidden behind a wrapper: requests after
	// the handshake carry Mcp-Protocol-Version.
	as.mu.Lock()
	var calledWith []string
	for _, ps := range as.posts {
		if ps.method == "tools/call" {
			calledWith = append(calledWith, ps.protocol)
		}
	}
	as.mu.Unlock()
	if len(calledWith) != 3 || slices.Contains(calledWith, "") {
		t.Errorf("the Mcp-Protocol-Version of the authorized tools/call requests: %q, want 3 set", calledWith)
	}

	// Nothing secret leaks.
	var where []string
	for _, s := range exp.GetSpans() {
		where = append(where, fmt.Sprintf("span %s: %v %v %v %v", s.Name, s.Attributes, s.Events, s.Status, s.Links))
	}
	where = append(where, "logs: "+logs.String())
	where = append(where, seen...)
	// The incident bundles the flight recorder exports of each agent's
	// recording: every member, decompressed.
	recs, err := os.ReadDir(flightDir)
	if err != nil {
		t.Fatal(err)
	}
	bundles := 0
	for _, r := range recs {
		if !r.IsDir() {
			continue
		}
		var buf bytes.Buffer
		if _, err := flight.ExportJournal(context.Background(), filepath.Join(flightDir, r.Name()), &buf, flight.ExportOptions{}); err != nil {
			t.Fatalf("export %s: %v", r.Name(), err)
		}
		b, err := flight.ReadBundle(&buf, flight.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range b.Members {
			data, _ := b.Member(m.Name)
			where = append(where, "bundle "+r.Name()+"/"+m.Name+": "+string(data))
		}
		bundles++
	}
	if bundles == 0 || !slices.ContainsFunc(where, func(w string) bool { return strings.HasPrefix(w, "bundle ") && strings.Contains(w, "web__whoami") }) {
		t.Fatalf("no flight bundle (%d) records the authorized call", bundles)
	}
	if len(exp.GetSpans()) == 0 || !strings.Contains(logs.String(), "OAuth") {
		t.Fatalf("no spans (%d) or no OAuth log lines:\n%s", len(exp.GetSpans()), logs.String())
	}
	for _, sec := range secrets {
		for _, w := range where {
			if strings.Contains(w, sec) {
				t.Errorf("the secret %q leaked into %.200s", sec, w)
			}
		}
	}
}

func lastWithPrefix(list []string, prefix string) string {
	for i := len(list) - 1; i >= 0; i-- {
		if strings.HasPrefix(list[i], prefix) {
			return list[i]
		}
	}
	return ""
}

// TestOAuthRefusedAuthorization: a prompt that fails ends the
// authorization; the model gets an error that says so, and the run goes on.
func TestOAuthRefusedAuthorization(t *testing.T) {
	as := newAuthServer(t)
	tr := mcp.StreamableHTTP(as.url).WithOAuth(mcp.OAuth{Prompt: func(context.Context, string, string) error {
		return fmt.Errorf("the user closed the window")
	}})
	p := harnesstest.NewScriptedProvider(enable("c1", "web"), harnesstest.Reply("done"))
	a := newAgent(t, p, mcp.New(mcp.WithServer("web", tr)), harness.WithStorage(harnesstest.NewMemoryStorage()))
	r := run(t, a, "go")
	got := results(r)["c1"]
	if got == nil || !got.IsError {
		t.Fatalf("mcp_enable: %+v, want an error result", got)
	}
	mustContain(t, "the error", got.Content, "OAuth authorization failed", "the user closed the window")
	for _, sec := range as.allSecrets() {
		if strings.Contains(got.Content, sec) {
			t.Errorf("the error shows the secret %q: %s", sec, got.Content)
		}
	}
}

// TestOAuthNeedsStreamableHTTP: OAuth on another transport fails to
// connect, saying why.
func TestOAuthNeedsStreamableHTTP(t *testing.T) {
	tr := memServer(t, sdk.NewServer(&sdk.Implementation{Name: "m", Version: "1"}, nil)).WithOAuth(mcp.OAuth{})
	p := harnesstest.NewScriptedProvider(enable("c1", "m"), harnesstest.Reply("done"))
	a := newAgent(t, p, mcp.New(mcp.WithServer("m", tr)))
	got := results(run(t, a, "go"))["c1"]
	if got == nil || !got.IsError || !strings.Contains(got.Content, "OAuth needs a streamable HTTP transport") {
		t.Fatalf("mcp_enable: %+v", got)
	}
}

// TestBrowserPrompt: the default prompt writes the URL and, with no
// display, opens nothing and does not fail.
func TestBrowserPrompt(t *testing.T) {
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	var buf bytes.Buffer
	if err := mcp.BrowserPrompt(&buf)(context.Background(), "web", "http://127.0.0.1:1/authorize?x=1"); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "the prompt", buf.String(), `MCP server "web" needs authorization`, "http://127.0.0.1:1/authorize?x=1")
}

// TestURLCredentialsNotListed: /mcp and the model never see a URL's
// credentials.
func TestURLCredentialsNotListed(t *testing.T) {
	tr := mcp.StreamableHTTP("https://user:pw-secret@example.com/mcp?api_key=key-secret")
	if s := tr.String(); strings.Contains(s, "pw-secret") || strings.Contains(s, "key-secret") || !strings.Contains(s, "example.com/mcp") {
		t.Errorf("String() = %q", s)
	}
}

// TestURLCredentialsNotInConnectErrors: a server that cannot be reached
// fails mcp_enable with an error that does not show the URL's credentials.
func TestURLCredentialsNotInConnectErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens there now
	tr := mcp.StreamableHTTP("http://user:pw-secret@" + srv.Listener.Addr().String() + "/mcp?api_key=key-secret")
	p := harnesstest.NewScriptedProvider(enable("c1", "web"), harnesstest.Reply("done"))
	var logs logBuffer
	a := newAgent(t, p, mcp.New(mcp.WithServer("web", tr)), harness.WithLogger(newLogger(&logs)))
	got := results(run(t, a, "go"))["c1"]
	if got == nil || !got.IsError {
		t.Fatalf("mcp_enable: %+v, want an error", got)
	}
	for _, w := range []string{got.Content, logs.String()} {
		if strings.Contains(w, "pw-secret") || strings.Contains(w, "key-secret") {
			t.Errorf("a URL credential leaked: %s", w)
		}
	}
}

// TestOAuthRefreshedTokenRefused: when the server refuses the token that
// a refresh forced by its 401 gave, the adapter authorizes again rather
// than refreshing once more. (The SDK's connect sends server/discover
// first, refused after the refresh, then initialize, which authorizes.)
func TestOAuthRefreshedTokenRefused(t *testing.T) {
	as := newAuthServer(t)
	store := harnesstest.NewMemoryStorage()
	b := &browser{}
	tr := mcp.StreamableHTTP(as.url).WithOAuth(mcp.OAuth{Prompt: b.prompt})
	p := harnesstest.NewScriptedProvider(enable("c1", "web"), harnesstest.Reply("done"))
	a := newAgent(t, p, mcp.New(mcp.WithServer("web", tr)), harness.WithStorage(store))
	if got := results(run(t, a, "go"))["c1"]; got == nil || got.IsError {
		t.Fatalf("first agent: %+v", got)
	}
	a.Close(context.Background())

	as.mu.Lock()
	clear(as.access)
	as.refuseRefresh = true
	as.mu.Unlock()
	p = harnesstest.NewScriptedProvider(enable("c1", "web"), harnesstest.CallTool("c2", "web__whoami", map[string]any{}), harnesstest.Reply("done"))
	a = newAgent(t, p, mcp.New(mcp.WithServer("web", tr)), harness.WithStorage(store))
	res := results(run(t, a, "go"))
	for _, id := range []string{"c1", "c2"} {
		if got := res[id]; got == nil || got.IsError {
			t.Errorf("%s: %+v, want a success after a new authorization", id, got)
		}
	}
	if c := as.counts(); c.refreshes != 1 || c.authorizes != 2 || b.count() != 2 {
		t.Errorf("%+v and %d prompts, want 1 refresh, 2 authorizations, 2 prompts", c, b.count())
	}
	a.Close(context.Background())
}

// An HTTP server that wants OAuth: the first refused request runs the
// authorization; the token is kept in the agent's storage (here the file
// store under the state directory) for the next agents.
func ExampleTransport_WithOAuth() {
	ext := mcp.New(
		mcp.WithServer("notes", mcp.StreamableHTTP("https://notes.example.com/mcp").WithOAuth(mcp.OAuth{
			// Show the URL in the app instead of printing it on stderr.
			Prompt: func(ctx context.Context, server, authURL string) error {
				fmt.Printf("Sign in to %s: %s\n", server, authURL)
				return nil
			},
		})),
		// A person logs in: give the connection time.
		mcp.WithConnectTimeout(5*time.Minute),
	)
	_, _ = harness.New(
		harness.WithProvider(harnesstest.NewScriptedProvider()),
		harness.WithStateDir(".harnessx"),
		harness.WithExtensions(ext),
	)
}
