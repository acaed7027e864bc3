package harness

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Option configures an [Agent]. Options are applied in order by [New] and
// [LoadSession].
type Option func(*config)

// config holds an agent's settings. Defaults:
//   - name "agent";
//   - max steps 32 (model requests per run);
//   - permission manager AllowAll();
//   - logger slog.Default() at the time New is called;
//   - a random session ID;
//   - no retries (providers built on vendor SDKs retry themselves);
//   - no step runner: model requests and tool calls run directly;
//   - no answerer for AskUser (WithAsker);
//   - state directory DefaultStateDir, with the file store of Storage;
//   - inline limit DefaultInlineLimit (5 MiB) per part.
type config struct {
	provider    Provider
	model       string
	name        string
	system      string
	maxTokens   int
	temperature *float64
	stream      bool
	maxSteps    int
	perm        PermissionManager
	logger      *slog.Logger
	sessionID   string
	retry       RetryPolicy
	steps       StepRunner
	answer      AnswerFunc
	pricing     func(model string, u Usage) (usd float64, ok bool)
	stateDir    string
	stateDirSet bool
	storage     StorageBackend
	inlineLimit int64

	tools      []*Tool
	middleware []Middleware
	hooks      []hookReg
	extensions []Extension
}

type hookReg struct {
	event HookEvent
	fn    Hook
}

// RetryPolicy makes the engine send a model request again after an error
// that implements [RetryableError] and says so. Each attempt goes through
// the model interceptors and middleware again, so it is visible to tracing.
type RetryPolicy struct {
	// MaxAttempts counts the first try; 0 or 1 means no retry.
	MaxAttempts int
	// Backoff is the wait before the second attempt; it doubles after each.
	Backoff time.Duration
}

// WithPricing sets the function that prices each model response for
// [RunResult.Cost]: it gets the response's model (the agent's model when
// the response names none) and usage, and returns the cost in US dollars
// and whether it knows the model's price. pricing.Table.USD fits:
// harness.WithPricing(pricing.Default().USD). It is called on the run's
// goroutine, once per model response. Default: none, and Cost stays 0.
func WithPricing(fn func(model string, u Usage) (usd float64, ok bool)) Option {
	return func(c *config) { c.pricing = fn }
}

// WithProvider sets the model provider. Required.
func WithProvider(p Provider) Option { return func(c *config) { c.provider = p } }

// WithModel sets the model name sent with every request.
func WithModel(model string) Option { return func(c *config) { c.model = model } }

// WithName names the agent, as spans and records show it. Default "agent".
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithSystemPrompt sets the base system prompt; prompt providers append to it.
func WithSystemPrompt(s string) Option { return func(c *config) { c.system = s } }

// WithMaxTokens sets ModelRequest.MaxTokens.
func WithMaxTokens(n int) Option { return func(c *config) { c.maxTokens = n } }

// WithTemperature sets ModelRequest.Temperature.
func WithTemperature(t float64) Option { return func(c *config) { c.temperature = &t } }

// WithStreaming sets ModelRequest.Stream.
func WithStreaming(on bool) Option { return func(c *config) { c.stream = on } }

// WithMaxSteps bounds the model requests of one run; a run that needs more
// fails with [ErrMaxSteps]. Default 32.
func WithMaxSteps(n int) Option { return func(c *config) { c.maxSteps = n } }

// WithInlineLimit bounds the inline bytes of one media part, in bytes;
// n <= 0 means [DefaultInlineLimit] (5 MiB). A part over the limit is
// refused where it enters: [Agent.RunMessage] fails with a
// [*PartSizeError] and stores nothing, and a tool result carrying one
// becomes an error result whose text names the part and the limit. A part
// that refers to its content by URI or file ID has no inline bytes and
// passes.
func WithInlineLimit(n int64) Option { return func(c *config) { c.inlineLimit = n } }

// WithPermissionManager decides calls of tools that inherit their permission.
func WithPermissionManager(m PermissionManager) Option { return func(c *config) { c.perm = m } }

// WithLogger sets the logger for hook failures and other reports.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithSessionID sets the session ID. Default: random.
func WithSessionID(id string) Option { return func(c *config) { c.sessionID = id } }

// WithRetry sets the engine's retry policy for model requests.
func WithRetry(p RetryPolicy) Option { return func(c *config) { c.retry = p } }

// WithTools registers tools, in order.
func WithTools(tools ...*Tool) Option {
	return func(c *config) { c.tools = append(c.tools, tools...) }
}

// WithMiddleware registers middleware, in order.
func WithMiddleware(m ...Middleware) Option {
	return func(c *config) { c.middleware = append(c.middleware, m...) }
}

// WithHook subscribes fn to event.
func WithHook(event HookEvent, fn Hook) Option {
	return func(c *config) { c.hooks = append(c.hooks, hookReg{event, fn}) }
}

// WithHooks subscribes fn to each of events, or to every event when none
// is given.
func WithHooks(fn Hook, events ...HookEvent) Option {
	if len(events) == 0 {
		events = AllHookEvents()
	}
	return func(c *config) {
		for _, e := range events {
			c.hooks = append(c.hooks, hookReg{e, fn})
		}
	}
}

// WithExtensions installs extensions. Use a fresh extension value for each
// agent: extensions hold state and registrations.
func WithExtensions(ext ...Extension) Option {
	return func(c *config) { c.extensions = append(c.extensions, ext...) }
}

// Agent runs a conversation with a model and its tools. Build one with
// [New]; release it with [Agent.Close].
//
// Run and Resume on one agent are serialized: a second call waits for the
// first. The other methods are safe for concurrent use.
type Agent struct {
	cfg          config
	logger       *slog.Logger
	providerName string         // from ProviderNamer, when the provider implements it
	keyUser      PrefixKeyUser  // from the provider, when it implements PrefixKeyUser
	store        StorageBackend // nil: no storage

	regMu sync.Mutex // guards reg and the extension contexts' handle lists
	reg   registry
	snap  atomic.Pointer[snapshot]
	// stale is set while a batch of registrations (an Install, New,
	// an extension's rollback) has changes that snap does not show yet.
	stale atomic.Bool
	// transformG is the ID of the goroutine that runs the tool transforms
	// (under regMu), 0 when none runs: a registration from that goroutine
	// comes from inside a transform and fails instead of deadlocking.
	transformG atomic.Int64
	// installing is set while New installs the extensions: Run, Resume and
	// Close fail with ErrInstalling then.
	installing atomic.Bool

	exts []*ExtensionContext // in install order

	// snapMu serializes snapshots of extension state (SaveExtensionState
	// under AsSnapshot), which reuse encodings; snapOut is the last one.
	snapMu  sync.Mutex
	snapOut json.RawMessage

	stateMu sync.Mutex
	state   map[string]any

	runMu  sync.Mutex // serializes runs; guards prefix, runIDs, cur and cmdRuns
	prefix prefixHasher
	runIDs runIDs
	cur    *runState // the bookkeeping of the running Run or Resume
	// freeParts is the rest of the chunk newParts carves message contents
	// from.
	freeParts []Part
	freeIDs   []byte                    // the rest of the chunk newRunID carves run IDs from
	cmdRuns   map[string]*commandRecord // command runs by run ID, when the agent has no storage

	histMu   sync.Mutex // guards messages and pending (see appendMessage)
	messages []Message
	pending  *pendingRun

	closeMu  sync.Mutex
	closed   atomic.Bool
	closeErr error
}

// New builds an agent: it applies the options, registers the given tools,
// middleware and hooks, then installs the extensions in priority order.
// If an extension fails to install, its registrations are rolled back, the
// extensions installed before it are torn down, and New returns an
// [*ExtensionError] naming it. The new session is announced to hooks as
// [EventSessionStart].
func New(opts ...Option) (*Agent, error) {
	a, err := newAgent(opts)
	if err != nil {
		return nil, err
	}
	a.sessionStarted(context.Background(), false)
	return a, nil
}

// newAgent builds an agent for New and LoadSession, which announce its
// session.
func newAgent(opts []Option) (*Agent, error) {
	a := &Agent{}
	for _, o := range opts {
		o(&a.cfg)
	}
	c := &a.cfg
	if c.provider == nil {
		return nil, ErrNoProvider
	}
	if c.name == "" {
		c.name = "agent"
	}
	if c.inlineLimit <= 0 {
		c.inlineLimit = DefaultInlineLimit
	}
	if c.maxSteps <= 0 {
		c.maxSteps = 32
	}
	if c.perm == nil {
		c.perm = AllowAll()
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	a.logger = c.logger.With("agent", c.name)
	if n, ok := c.provider.(ProviderNamer); ok {
		a.providerName = n.ProviderName()
	}
	a.keyUser, _ = c.provider.(PrefixKeyUser)
	if c.sessionID == "" {
		c.sessionID = newID()
	}
	a.store = c.newStore()
	a.reg.tools = map[string][]*toolBinding{}
	a.rebuild()

	// The registrations of the options and of each Install are batched:
	// the catalog is rebuilt, and the transforms run, once at the end of
	// each, not at every registration.
	a.beginBatch()
	for _, t := range c.tools {
		if _, err := a.registerTool(t, false, nil); err != nil {
			return nil, err
		}
	}
	for _, m := range c.middleware {
		if _, err := a.addMiddleware(m, nil); err != nil {
			return nil, err
		}
	}
	for _, h := range c.hooks {
		if _, err := a.onHook(h.event, h.fn, nil); err != nil {
			return nil, err
		}
	}
	a.endBatch()
	if err := a.install(c.extensions); err != nil {
		return nil, err
	}
	return a, nil
}

// Name returns the agent's name.
func (a *Agent) Name() string { return a.cfg.name }

// SessionID returns the session ID.
func (a *Agent) SessionID() string { return a.cfg.sessionID }

// Model returns the model name.
func (a *Agent) Model() string { return a.cfg.model }

// Logger returns the agent's logger.
func (a *Agent) Logger() *slog.Logger { return a.logger }

// Messages returns a copy of the conversation so far. It may be called
// during a run, from a hook for instance.
func (a *Agent) Messages() []Message {
	msgs, _ := a.history()
	return slices.Clone(msgs)
}

// Extensions returns the installed extensions, in install order.
func (a *Agent) Extensions() []Extension {
	out := make([]Extension, len(a.exts))
	for i, ec := range a.exts {
		out[i] = ec.ext
	}
	return out
}

// Reset forgets the conversation and any pending approvals, keeping the
// tools, extensions and session ID. It waits for a running Run.
func (a *Agent) Reset() {
	a.runMu.Lock()
	defer a.runMu.Unlock()
	a.histMu.Lock()
	a.messages = nil // not cleared in place: saved snapshots may share it
	a.pending = nil
	a.histMu.Unlock()
	a.prefix.reset()
}

// Tool returns the tool of that name in the catalog: the active
// registration of the name, after the tool transforms, offered to the
// model or not (see [SessionTools]).
func (a *Agent) Tool(name string) (*Tool, bool) {
	t, ok := a.current().tools[name]
	return t, ok
}

// Inventory lists what is registered on an agent, for tests and diagnostics.
type Inventory struct {
	Tools           []string // the catalog's tool names, deferred ones included, in catalog order
	Middleware      []Middleware
	Hooks           map[HookEvent]int // how many hooks each event has
	PromptProviders int
	Extensions      []string // installed extensions, in install order
	Commands        []string // registered commands, sorted, without the slash
}

// Inventory returns what is registered now.
func (a *Agent) Inventory() Inventory {
	s := a.current()
	inv := Inventory{Hooks: map[HookEvent]int{}, PromptProviders: len(s.prompts)}
	for _, t := range s.catalog {
		inv.Tools = append(inv.Tools, t.Name)
	}
	inv.Middleware = slices.Clone(s.middleware)
	for e := HookEvent(1); e < numHookEvents; e++ {
		if n := len(s.hooks[e]); n > 0 {
			inv.Hooks[e] = n
		}
	}
	for _, ec := range a.exts {
		inv.Extensions = append(inv.Extensions, ec.name)
	}
	inv.Commands = slices.Sorted(maps.Keys(s.commands))
	return inv
}

// Close tears the agent down: for each extension in reverse install order
// it calls Teardown and removes the extension's registrations in reverse
// order. It tries every teardown and returns their errors joined. Close
// waits for a running Run; it is idempotent and returns the same error on
// later calls. ctx bounds teardowns that honour it. Called from an
// extension's Install, it fails with [ErrInstalling] and closes nothing.
func (a *Agent) Close(ctx context.Context) error {
	if a.installing.Load() {
		return fmt.Errorf("%w: Close during an extension's Install", ErrInstalling)
	}
	a.closeMu.Lock()
	defer a.closeMu.Unlock()
	if a.closed.Load() {
		return a.closeErr
	}
	a.runMu.Lock()
	a.closed.Store(true)
	a.runMu.Unlock()
	a.closeErr = a.teardown(ctx, a.exts)
	return a.closeErr
}

func (a *Agent) teardown(ctx context.Context, exts []*ExtensionContext) error {
	var errs []error
	for i := len(exts) - 1; i >= 0; i-- {
		ec := exts[i]
		if td, ok := ec.ext.(TearDowner); ok {
			if err := safeCall(func() error { return td.Teardown(ctx) }); err != nil {
				errs = append(errs, &ExtensionError{Extension: ec.name, Op: "teardown", Err: err})
			}
		}
		ec.closeAll()
	}
	return errors.Join(errs...)
}

// State access shared by all extensions (ExtensionContext.GetState/SetState).
func (a *Agent) getState(key string) (any, bool) {
	a.stateMu.Lock()
	defer a.stateMu.Unlock()
	v, ok := a.state[key]
	return v, ok
}

func (a *Agent) setState(key string, v any) {
	a.stateMu.Lock()
	defer a.stateMu.Unlock()
	if a.state == nil {
		a.state = map[string]any{}
	}
	a.state[key] = v
}

// ---- registry ----

// registry is the mutable source of registrations, guarded by regMu. Every
// change rebuilds the immutable snapshot that runs read without locking,
// at once or, within a batch, once at the batch's end.
type registry struct {
	tools      map[string][]*toolBinding // a stack per name; the top is active
	toolOrder  []string                  // names in first-registration order
	middleware []*entry[Middleware]
	hooks      [numHookEvents][]*entry[Hook]
	prompts    []*entry[func() string]
	transforms []*entry[ToolTransform]
	active     map[string]bool // the session's activated tools

	instructions map[string]*instruction
	commands     map[string]*Command

	batch int  // open batches: changes wait for the last one's end
	dirty bool // a change waits for the batch's end
	// failed are the transform failures of the last rebuilds, reported
	// when regMu is unlocked (hooks must not run under it).
	failed []error
}

type toolBinding struct{ tool *Tool }

// entry is one registration; owner names the extension that made it (""
// for the agent's options).
type entry[T any] struct {
	v     T
	owner string
}

// snapshot is what a run reads: built on each registration change.
type snapshot struct {
	catalog    []*Tool          // the tools after the transforms
	tools      map[string]*Tool // the catalog by name
	hidden     map[string]bool  // deferred tools the session has not activated; nil when none
	defs       []ToolDefinition // the offered tools
	middleware []Middleware
	reqMW      []ModelRequestMiddleware
	respMW     []ModelResponseMiddleware
	callMW     []ToolCallMiddleware
	resultMW   []ToolResultMiddleware
	runIC      []RunInterceptor
	modelIC    []ModelInterceptor
	toolIC     []ToolInterceptor
	hooks      [numHookEvents][]Hook
	prompts    []func() string
	system     string // the base system prompt with the instruction sections
	commands   map[string]*Command
}

// lockReg locks regMu. Called from inside a tool transform, which runs
// under regMu on the goroutine that holds it, it returns ErrInTransform
// instead of deadlocking. Another goroutine waits for the transforms to
// end, as for any holder of the lock.
func (a *Agent) lockReg() error {
	if a.regMu.TryLock() {
		return nil
	}
	if g := a.transformG.Load(); g != 0 && g == goroutineID() {
		return fmt.Errorf("%w: a transform must not change the agent's registrations", ErrInTransform)
	}
	a.regMu.Lock()
	return nil
}

// unlockReg unlocks regMu, then reports the transform failures that the
// rebuilds under it met.
func (a *Agent) unlockReg() {
	failed := a.reg.failed
	a.reg.failed = nil
	a.regMu.Unlock()
	if len(failed) == 0 {
		return
	}
	if s := a.snap.Load(); len(s.hooks[EventHookFailed]) > 0 {
		for _, err := range failed {
			a.emit(context.Background(), s, &Event{Type: EventHookFailed, Err: err})
		}
	}
}

// changed rebuilds the snapshot after a change of reg, or, within a
// batch, marks it for the batch's end. The caller holds regMu.
func (a *Agent) changed() {
	if a.reg.batch > 0 {
		a.reg.dirty = true
		a.stale.Store(true)
		return
	}
	a.rebuild()
}

// beginBatch defers the rebuilds of the changes that follow until
// endBatch.
func (a *Agent) beginBatch() {
	a.regMu.Lock()
	a.reg.batch++
	a.regMu.Unlock()
}

// endBatch ends a batch: the snapshot is rebuilt once if anything changed.
func (a *Agent) endBatch() {
	a.regMu.Lock()
	a.reg.batch--
	if a.reg.batch == 0 && a.reg.dirty {
		a.rebuild()
	}
	a.unlockReg()
}

// current returns the snapshot, rebuilt first when a batch has changes
// it does not show yet (an Install that reads the catalog it is
// building). From inside a transform it returns the last snapshot.
func (a *Agent) current() *snapshot {
	if a.stale.Load() && a.lockReg() == nil {
		if a.reg.dirty {
			a.rebuild()
		}
		a.unlockReg()
	}
	return a.snap.Load()
}

// rebuild makes a new snapshot from reg. The caller holds regMu (or owns a
// during New).
func (a *Agent) rebuild() {
	a.reg.dirty = false
	a.stale.Store(false)
	s := &snapshot{catalog: a.catalog()}
	s.tools = make(map[string]*Tool, len(s.catalog))
	for _, t := range s.catalog {
		s.tools[t.Name] = t
		if t.Deferred && !a.reg.active[t.Name] {
			if s.hidden == nil {
				s.hidden = map[string]bool{}
			}
			s.hidden[t.Name] = true
			continue
		}
		s.defs = append(s.defs, t.Definition())
	}
	for _, e := range a.reg.middleware {
		m := e.v
		s.middleware = append(s.middleware, m)
		addStage(&s.reqMW, m)
		addStage(&s.respMW, m)
		addStage(&s.callMW, m)
		addStage(&s.resultMW, m)
		addStage(&s.runIC, m)
		addStage(&s.modelIC, m)
		addStage(&s.toolIC, m)
	}
	for e := range a.reg.hooks {
		for _, h := range a.reg.hooks[e] {
			s.hooks[e] = append(s.hooks[e], h.v)
		}
	}
	for _, p := range a.reg.prompts {
		s.prompts = append(s.prompts, p.v)
	}
	s.system = a.baseSystem()
	if len(a.reg.commands) > 0 {
		s.commands = maps.Clone(a.reg.commands)
	}
	a.snap.Store(s)
}

// addStage appends m to dst when m implements the stage T.
func addStage[T any](dst *[]T, m Middleware) {
	if x, ok := m.(T); ok {
		*dst = append(*dst, x)
	}
}

// Handle removes one registration. Close is idempotent and safe for
// concurrent use. It returns nil, except when it is called from inside a
// tool transform: then it removes nothing and returns [ErrInTransform],
// and a later Close outside the transform still removes the registration.
type Handle struct {
	a      *Agent
	remove func() // called under regMu
	done   bool   // guarded by regMu
}

// Close removes the registration.
func (h *Handle) Close() error {
	if h == nil {
		return nil
	}
	if err := h.a.lockReg(); err != nil {
		return err
	}
	defer h.a.unlockReg()
	if !h.done {
		h.done = true
		h.remove()
		h.a.changed()
	}
	return nil
}

// track returns the handle of a registration that remove undoes, and adds
// it to owner's. The caller holds regMu.
func (a *Agent) track(owner *ExtensionContext, remove func()) *Handle {
	h := &Handle{a: a, remove: remove}
	if owner != nil {
		owner.handles = append(owner.handles, h)
	}
	return h
}

func (a *Agent) registerTool(t *Tool, replace bool, owner *ExtensionContext) (*Handle, error) {
	if err := t.prepare(); err != nil {
		return nil, err
	}
	if err := a.lockReg(); err != nil {
		return nil, err
	}
	defer a.unlockReg()
	stack := a.reg.tools[t.Name]
	if len(stack) > 0 && !replace {
		return nil, fmt.Errorf("%w: %q is already registered (replace it deliberately with ReplaceTool)", ErrDuplicateTool, t.Name)
	}
	b := &toolBinding{tool: t}
	if len(stack) == 0 {
		a.reg.toolOrder = append(a.reg.toolOrder, t.Name)
	}
	a.reg.tools[t.Name] = append(stack, b)
	a.changed()
	return a.track(owner, func() {
		stack := a.reg.tools[t.Name]
		i := slices.Index(stack, b)
		if i < 0 {
			return
		}
		stack = slices.Delete(stack, i, i+1)
		if len(stack) == 0 {
			delete(a.reg.tools, t.Name)
			a.reg.toolOrder = slices.DeleteFunc(a.reg.toolOrder, func(n string) bool { return n == t.Name })
		} else {
			a.reg.tools[t.Name] = stack
		}
	}), nil
}

func (a *Agent) addMiddleware(m Middleware, owner *ExtensionContext) (*Handle, error) {
	if m == nil || !isMiddleware(m) {
		return nil, fmt.Errorf("%w: %T implements no middleware stage", ErrInvalidMiddleware, m)
	}
	return register(a, &a.reg.middleware, m, owner)
}

func (a *Agent) onHook(event HookEvent, fn Hook, owner *ExtensionContext) (*Handle, error) {
	if event == 0 || event >= numHookEvents {
		return nil, fmt.Errorf("harness: unknown hook event %d", event)
	}
	if fn == nil {
		return nil, fmt.Errorf("harness: nil hook for %s", event)
	}
	return register(a, &a.reg.hooks[event], fn, owner)
}

func (a *Agent) addPrompt(fn func() string, owner *ExtensionContext) (*Handle, error) {
	if fn == nil {
		return nil, errors.New("harness: nil prompt provider")
	}
	return register(a, &a.reg.prompts, fn, owner)
}

// register appends v to the registration list *list and returns the
// handle that removes it. list points into a.reg, guarded by regMu.
func register[T any](a *Agent, list *[]*entry[T], v T, owner *ExtensionContext) (*Handle, error) {
	e := &entry[T]{v: v}
	if owner != nil {
		e.owner = owner.name
	}
	if err := a.lockReg(); err != nil {
		return nil, err
	}
	defer a.unlockReg()
	*list = append(*list, e)
	a.changed()
	return a.track(owner, func() {
		*list = slices.DeleteFunc(*list, func(x *entry[T]) bool { return x == e })
	}), nil
}

// ---- extensions ----

func (a *Agent) install(exts []Extension) error {
	seen := map[string]bool{}
	for i, e := range exts {
		if e == nil {
			return &ExtensionError{Extension: fmt.Sprintf("#%d", i), Op: "name", Err: errors.New("nil extension")}
		}
		name := e.Name()
		if name == "" {
			return &ExtensionError{Extension: fmt.Sprintf("#%d (%T)", i, e), Op: "name", Err: errors.New("empty name")}
		}
		if seen[name] {
			return &ExtensionError{Extension: name, Op: "name", Err: errors.New("name used by more than one extension")}
		}
		seen[name] = true
	}
	order := slices.Clone(exts)
	slices.SortStableFunc(order, func(x, y Extension) int { return cmp.Compare(priority(x), priority(y)) })
	a.installing.Store(true)
	defer a.installing.Store(false)
	for _, e := range order {
		ec := &ExtensionContext{agent: a, ext: e, name: e.Name(), installing: true}
		a.beginBatch()
		err := safeCall(func() error { return e.Install(ec) })
		if err == nil {
			err = ec.unmetErr()
		}
		ec.mu.Lock()
		ec.installing = false
		ec.mu.Unlock()
		if err != nil {
			ec.closeAll() // within the batch: no rebuild for what is undone
		}
		a.endBatch()
		if err != nil {
			terr := a.teardown(context.Background(), a.exts)
			a.exts = nil
			return errors.Join(&ExtensionError{Extension: ec.name, Op: "install", Err: err}, terr)
		}
		a.exts = append(a.exts, ec)
	}
	return nil
}

func priority(e Extension) int {
	if p, ok := e.(Prioritizer); ok {
		return p.Priority()
	}
	return DefaultPriority
}

// ---- helpers ----

// safeCall runs fn, turning a panic into an error.
func safeCall(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r}
		}
	}()
	return fn()
}

// PanicError reports a recovered panic.
type PanicError struct{ Value any }

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// systemPrompt appends prompt providers' texts to the base system prompt
// and the instruction sections.
func (a *Agent) systemPrompt(s *snapshot) string {
	if len(s.prompts) == 0 {
		return s.system
	}
	var b strings.Builder
	b.WriteString(s.system)
	for _, p := range s.prompts {
		text := func() (out string) {
			defer func() {
				if r := recover(); r != nil {
					a.logger.Warn("harness: prompt provider panicked; ignored", "panic", r)
					out = ""
				}
			}()
			return p()
		}()
		if text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(text)
	}
	return b.String()
}
