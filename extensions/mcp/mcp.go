package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harnessx/harnessx/harness"
)

// Name is the extension's name, under which its session state is saved.
const Name = "mcp"

// EnableTool is the name of the activator tool the model calls to connect a
// server and be offered its tools.
const EnableTool = "mcp_enable"

// CommandName is the slash command that lists the servers and their tools.
const CommandName = "mcp"

// Separator joins a server's name and a tool's name: "files__read".
const Separator = "__"

// Defaults of the options.
const (
	DefaultCallTimeout    = 60 * time.Second
	DefaultConnectTimeout = 30 * time.Second
)

// Errors returned by Install for a bad configuration.
var (
	// ErrNoServers: New was given no WithServer.
	ErrNoServers = errors.New("mcp: no servers configured")
	// ErrInvalidServer: a server name that is not valid, used twice, or
	// given a zero Transport.
	ErrInvalidServer = errors.New("mcp: invalid server")
)

// config holds the options. Defaults: no servers, calls bounded by
// DefaultCallTimeout, connections (and tool listings) by
// DefaultConnectTimeout, no tools-changed callback.
type config struct {
	servers        []serverConfig
	callTimeout    time.Duration
	connectTimeout time.Duration
	onToolsChanged func(server string, tools []string)
}

type serverConfig struct {
	name     string
	tr       Transport
	sampling bool // AllowSampling
}

// Option configures an [Extension].
type Option func(*config)

// WithServer adds the MCP server name, reached through t. The name prefixes
// its tools ("name__tool"), so it is 1 to 32 letters, digits, '_' or '-',
// beginning with a letter, without "__". Servers are listed in the order
// they are given. opts set what the server may do ([AllowSampling]).
func WithServer(name string, t Transport, opts ...ServerOption) Option {
	sc := serverConfig{name: name, tr: t}
	for _, o := range opts {
		o(&sc)
	}
	return func(c *config) { c.servers = append(c.servers, sc) }
}

// WithCallTimeout bounds one tools/call: a server that has not answered by
// then gets a cancellation, and the model an error result saying that the
// server did not answer. Default DefaultCallTimeout; d <= 0 keeps it.
func WithCallTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.callTimeout = d
		}
	}
}

// WithConnectTimeout bounds connecting to a server (starting its process,
// the initialize handshake) and listing its tools. Default
// DefaultConnectTimeout; d <= 0 keeps it.
func WithConnectTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.connectTimeout = d
		}
	}
}

// WithToolsChanged sets a function called, after the catalog was rebuilt,
// each time a server's tool list was loaded: at its connection and at each
// reload after tools/list_changed notifications (one reload answers all
// the notifications that came while it waited). tools are the harness
// names ("server__tool") of the tools that were kept. It runs on the
// extension's goroutines and must not block.
func WithToolsChanged(fn func(server string, tools []string)) Option {
	return func(c *config) { c.onToolsChanged = fn }
}

// Extension is the MCP client adapter. Build it with [New] and install it
// with harness.WithExtensions; use a fresh value for each agent. Its methods
// are safe for concurrent use.
type Extension struct {
	cfg config

	// Set by Install.
	ec      *harness.ExtensionContext
	log     *slog.Logger
	servers []*server
	byName  map[string]*server
	bg      context.Context // cancelled at Teardown
	stop    context.CancelFunc
	wg      sync.WaitGroup // the goroutines of the connections and refreshes

	seq atomic.Int64 // numbers the calls' progress tokens

	mu     sync.Mutex
	closed bool
}

var (
	_ harness.Extension     = (*Extension)(nil)
	_ harness.TearDowner    = (*Extension)(nil)
	_ harness.TurnStarter   = (*Extension)(nil)
	_ harness.SessionSaver  = (*Extension)(nil)
	_ harness.SessionLoader = (*Extension)(nil)
)

// New returns an extension for the servers given with [WithServer].
// The configuration is checked when the extension is installed.
func New(opts ...Option) *Extension {
	cfg := config{callTimeout: DefaultCallTimeout, connectTimeout: DefaultConnectTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	return &Extension{cfg: cfg}
}

// Name returns [Name].
func (e *Extension) Name() string { return Name }

var serverNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,31}$`)

// Install registers the mcp_enable tool, the /mcp command and the tool
// transform that adds the connected servers' tools to the catalog. It
// connects to nothing: a server is started when first enabled.
func (e *Extension) Install(ec *harness.ExtensionContext) error {
	if len(e.cfg.servers) == 0 {
		return ErrNoServers
	}
	if err := ec.Require(harness.FeatureDeferredTools, harness.FeatureToolTransforms, harness.FeatureCommands); err != nil {
		return err
	}
	e.byName = make(map[string]*server, len(e.cfg.servers))
	for _, sc := range e.cfg.servers {
		switch {
		case !serverNameRE.MatchString(sc.name) || strings.Contains(sc.name, Separator):
			return fmt.Errorf("%w: name %q: want 1 to 32 letters, digits, '_' or '-', beginning with a letter, without %q", ErrInvalidServer, sc.name, Separator)
		case e.byName[sc.name] != nil:
			return fmt.Errorf("%w: %q is given twice", ErrInvalidServer, sc.name)
		case sc.tr.connect == nil && sc.tr.newCmd == nil:
			return fmt.Errorf("%w: %q has no transport (use Command, StreamableHTTP or SDKTransport)", ErrInvalidServer, sc.name)
		}
		s := &server{ext: e, name: sc.name, tr: sc.tr, sampling: sc.sampling}
		if sc.sampling {
			s.samplings = make(chan struct{}, MaxConcurrentSamplings)
		}
		e.servers = append(e.servers, s)
		e.byName[sc.name] = s
	}
	e.ec = ec
	e.log = ec.Logger()
	e.bg, e.stop = context.WithCancel(context.Background())

	if _, err := ec.TransformTools(e.transform); err != nil {
		return err
	}
	if _, err := ec.RegisterTool(e.enableTool()); err != nil {
		return err
	}
	if _, err := ec.RegisterCommand(harness.Command{
		Name:        CommandName,
		Description: "list the MCP servers and their tools; /mcp <server> connects one first",
		Run:         e.runCommand,
	}); err != nil {
		return err
	}
	return nil
}

// transform appends the tools of every connected server, deferred, to the
// catalog. It reads the lists the servers keep; it does no I/O.
func (e *Extension) transform(tools []*harness.Tool) []*harness.Tool {
	for _, s := range e.servers {
		tools = append(tools, s.currentTools()...)
	}
	return tools
}

// ---- mcp_enable ----

type enableInput struct {
	Server string `json:"server"`
}

func (e *Extension) enableTool() *harness.Tool {
	names := make([]string, len(e.servers))
	var desc strings.Builder
	desc.WriteString("Connect an MCP server and make its tools available from the next step on. Servers:")
	for i, s := range e.servers {
		names[i] = s.name
		// The kind only: a command line or URL may hold a secret.
		fmt.Fprintf(&desc, "\n- %s (%s)", s.name, s.tr.kind)
	}
	schema, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"server": map[string]any{"type": "string", "enum": names, "description": "the server to enable"},
		},
		"required":             []string{"server"},
		"additionalProperties": false,
	})
	return &harness.Tool{
		Name:         EnableTool,
		Description:  desc.String(),
		InputSchema:  schema,
		ReplayPolicy: harness.ReplaySafe, // connecting again does no harm
		Handler: func(ctx context.Context, input json.RawMessage) (string, error) {
			var in enableInput
			if err := json.Unmarshal(input, &in); err != nil {
				return "", &harness.InputError{Err: err}
			}
			return e.enable(ctx, in.Server)
		},
	}
}

// enable connects the server, activates its tools for the session and
// says which tools the model can now call.
func (e *Extension) enable(ctx context.Context, name string) (string, error) {
	s := e.byName[name]
	if s == nil {
		return "", fmt.Errorf("mcp: no server %q; the servers are %s", name, strings.Join(e.serverNames(), ", "))
	}
	if _, err := s.session(ctx); err != nil {
		return "", err
	}
	s.setEnabled(true)
	st := s.snapshot()
	if err := harness.ActivateTools(ctx, st.toolNames()...); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Enabled MCP server %s", s.name)
	if st.serverInfo != "" {
		fmt.Fprintf(&b, " (%s)", st.serverInfo)
	}
	fmt.Fprintf(&b, ": %d tools available from the next step on.", len(st.entries))
	for _, en := range st.entries {
		fmt.Fprintf(&b, "\n- %s: %s", en.name, oneLine(en.description))
	}
	for _, sk := range st.skipped {
		fmt.Fprintf(&b, "\nSkipped %s: %s", shortName(sk.name), sk.reason)
	}
	if st.instructions != "" {
		fmt.Fprintf(&b, "\nServer instructions: %s", st.instructions)
	}
	return b.String(), nil
}

func (e *Extension) serverNames() []string {
	names := make([]string, len(e.servers))
	for i, s := range e.servers {
		names[i] = s.name
	}
	return names
}

// ---- /mcp ----

func (e *Extension) runCommand(ctx context.Context, args string) (harness.CommandResult, error) {
	list := e.servers
	if args != "" {
		s := e.byName[args]
		if s == nil {
			return harness.CommandResult{}, fmt.Errorf("mcp: no server %q; the servers are %s", args, strings.Join(e.serverNames(), ", "))
		}
		if _, err := s.session(ctx); err != nil {
			return harness.CommandResult{}, err
		}
		list = []*server{s}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "MCP servers (%d):", len(e.servers))
	if args != "" {
		b.Reset()
	}
	for _, s := range list {
		st := s.snapshot()
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s (%s): ", s.name, s.tr)
		switch {
		case !st.connected && !st.loaded:
			fmt.Fprintf(&b, "not connected; %s connects it", EnableTool)
			continue
		case !st.connected:
			b.WriteString("disconnected (reconnects at the next call)")
		default:
			b.WriteString("connected")
			if st.serverInfo != "" {
				fmt.Fprintf(&b, " to %s", st.serverInfo)
			}
			if st.protocol != "" {
				fmt.Fprintf(&b, ", protocol %s", st.protocol)
			}
		}
		if st.enabled {
			b.WriteString(", enabled")
		}
		fmt.Fprintf(&b, "; %d tools", len(st.entries))
		for _, en := range st.entries {
			fmt.Fprintf(&b, "\n  %s [%s]: %s", en.name, en.traits(), oneLine(en.description))
		}
		for _, sk := range st.skipped {
			fmt.Fprintf(&b, "\n  skipped %s: %s", shortName(sk.name), sk.reason)
		}
	}
	return harness.CommandResult{Output: b.String()}, nil
}

// oneLine returns the first line of s, at most 120 bytes.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 120 {
		s = strings.ToValidUTF8(s[:117], "") + "..."
	}
	return s
}

// ---- lifecycle ----

// state is what the extension saves with a session: the servers it
// enabled, so that a loaded session reconnects them.
type state struct {
	Version int      `json:"version"`
	Enabled []string `json:"enabled,omitempty"`
}

const stateVersion = 1

// OnSaveSession saves the names of the enabled servers.
func (e *Extension) OnSaveSession(context.Context, *harness.ExtensionContext) (any, error) {
	st := state{Version: stateVersion}
	for _, s := range e.servers {
		if s.isEnabled() {
			st.Enabled = append(st.Enabled, s.name)
		}
	}
	return st, nil
}

// OnLoadSession marks the saved servers enabled; the next turn connects
// them. A server that is no longer configured is logged and ignored.
func (e *Extension) OnLoadSession(_ context.Context, _ *harness.ExtensionContext, raw json.RawMessage) error {
	var st state
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("mcp: session state: %w", err)
	}
	if st.Version != stateVersion {
		return fmt.Errorf("mcp: session state version %d, want %d", st.Version, stateVersion)
	}
	for _, name := range st.Enabled {
		if s := e.byName[name]; s != nil {
			s.setEnabled(true)
		} else {
			e.log.Warn("mcp: the loaded session enabled a server that is not configured", "server", name)
		}
	}
	return nil
}

// OnTurnStart connects the enabled servers that are not connected (after
// LoadSession), so that the session's activated tools are in the catalog
// again. A server that cannot be reached is logged; the turn goes on
// without its tools.
func (e *Extension) OnTurnStart(ctx context.Context, _ *harness.ExtensionContext, _ string) error {
	for _, s := range e.servers {
		if !s.isEnabled() || s.isConnected() {
			continue
		}
		if _, err := s.session(ctx); err != nil {
			e.log.Warn("mcp: cannot reconnect an enabled server", "server", s.name, "error", err)
			continue
		}
		if err := e.ec.Agent().Tools().Activate(s.snapshot().toolNames()...); err != nil {
			e.log.Warn("mcp: cannot activate a server's tools", "server", s.name, "error", err)
		}
	}
	return nil
}

// Teardown closes every connection (a stdio server's process is stopped)
// and waits for the extension's goroutines.
func (e *Extension) Teardown(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	if e.stop != nil {
		e.stop()
	}
	var errs []error
	for _, s := range e.servers {
		if err := s.close(); err != nil {
			errs = append(errs, fmt.Errorf("mcp: closing server %q: %w", s.name, err))
		}
	}
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("mcp: teardown: %w", ctx.Err()))
	}
	return errors.Join(errs...)
}

// isClosed reports whether Teardown ran.
func (e *Extension) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// go runs fn on a goroutine that Teardown waits for, unless the extension
// is closed.
func (e *Extension) goBackground(fn func()) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		fn()
	}()
	return true
}

// sortedCopy returns a sorted copy of names.
func sortedCopy(names []string) []string {
	c := slices.Clone(names)
	slices.Sort(c)
	return c
}
