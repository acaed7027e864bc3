package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/harnessx/harnessx/harness"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

const methodToolsCall = "tools/call"

// errorTypeToolError is error.type of a call whose result had isError.
const errorTypeToolError = "tool_error"

// server is one configured MCP server and its connection.
type server struct {
	ext  *Extension
	name string
	tr   Transport

	sampling  bool          // AllowSampling
	samplings chan struct{} // the sampling requests being served (sampling.go)

	connMu    sync.Mutex // serializes connecting
	refreshMu sync.Mutex // serializes tool-list loads

	mu           sync.Mutex
	cs           *sdk.ClientSession // nil when not connected
	stderr       *tailBuffer        // a stdio server's standard error (this connection's)
	loaded       bool               // a tool list was loaded once
	enabled      bool
	protocol     string
	serverInfo   string
	instructions string
	resources    bool // the server offers resources: read_resource is offered
	logMeta      bool // ask for log messages in each request's _meta (protocol 2026-07-28)
	tools        []*harness.Tool
	schemas      map[string]string // input schemas that passed checkSchema, by tool
	signature    string            // what the stored tools were built from (see signature)
	entries      []toolEntry
	skipped      []skippedTool
	inflight     map[string]*callInfo // running calls by progress token (each keeps its context, for elicitations)
	auth         *oauthHandler        // set at the first connection of a server WithOAuth (oauth.go)
	// At most one reload of the tool list runs, and one more is wanted
	// when a tools/list_changed came during it, however many came.
	reloading, reloadWanted bool

	// What the adapter watches on the connection (wire.go).
	wmu          sync.Mutex
	pendingLists map[string]bool // IDs of tools/list requests not answered yet
	// A tools/list_changed notification waits in the SDK's queue.
	listChangedQueued atomic.Bool
	// The stdio transport drops the list_changed notifications that
	// received would drop, before the SDK decodes them.
	framesWatched atomic.Bool
	taskRequired  map[string]bool // tools of the list being loaded that require tasks
	logQueue      []*callInfo     // the calls of the log messages read and not handled yet

	elicitLog, serverLog logLimiter
}

// toolEntry describes one tool of a server for listings.
type toolEntry struct {
	name        string // harness name
	mcpName     string
	description string
	readOnly    bool
	idempotent  bool
	destructive bool
	policy      harness.ReplayPolicy
	permission  harness.Permission
}

// traits says what the annotations made of the tool: "read-only, replay
// safe" or "destructive, asks".
func (en toolEntry) traits() string {
	var t []string
	switch {
	case en.readOnly:
		t = append(t, "read-only")
	case en.destructive:
		t = append(t, "destructive")
	}
	if en.idempotent {
		t = append(t, "idempotent")
	}
	t = append(t, "replay "+en.policy.String())
	if en.permission == harness.PermissionAsk {
		t = append(t, "asks")
	}
	return strings.Join(t, ", ")
}

// skippedTool is a tool of a server that is not offered, and why.
type skippedTool struct {
	name   string // the server's name for it
	reason string
}

// serverState is a consistent copy of a server's fields.
type serverState struct {
	connected, loaded, enabled         bool
	protocol, serverInfo, instructions string
	entries                            []toolEntry
	skipped                            []skippedTool
}

func (st serverState) toolNames() []string {
	names := make([]string, len(st.entries))
	for i, en := range st.entries {
		names[i] = en.name
	}
	return names
}

func (s *server) snapshot() serverState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return serverState{
		connected: s.cs != nil, loaded: s.loaded, enabled: s.enabled,
		protocol: s.protocol, serverInfo: s.serverInfo, instructions: s.instructions,
		entries: s.entries, skipped: s.skipped,
	}
}

func (s *server) currentTools() []*harness.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

func (s *server) setEnabled(on bool) {
	s.mu.Lock()
	s.enabled = on
	s.mu.Unlock()
}

func (s *server) isEnabled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enabled
}

func (s *server) isConnected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cs != nil
}

// session returns the server's connection, connecting (and loading its
// tools into the catalog) when there is none. ctx bounds the wait; the
// connection itself outlives it. Its errors are redacted: they reach the
// model.
func (s *server) session(ctx context.Context) (*sdk.ClientSession, error) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	s.mu.Lock()
	cs := s.cs
	s.mu.Unlock()
	if cs != nil {
		return cs, nil
	}
	if s.ext.isClosed() {
		return nil, fmt.Errorf("mcp: server %q: the agent is closed", s.name)
	}
	// The connection belongs to the extension, not to the call that
	// happened to open it: connect under the extension's context, bounded
	// by the connect timeout and by the caller's context.
	cctx, cancel := context.WithTimeout(s.ext.bg, s.ext.cfg.connectTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()

	t, tail, err := s.tr.open(cctx)
	if err == nil {
		// Before watch: the OAuth handler's requests to the authorization
		// server go through the user's client, not the watched one.
		t, err = s.withOAuth(t)
	}
	if err != nil {
		return nil, s.redactErr(fmt.Errorf("mcp: server %q (%s): %w", s.name, s.tr, err))
	}
	copts := &sdk.ClientOptions{
		ElicitationHandler: s.elicit,
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			s.listChangedQueued.Store(false)
			s.listChanged()
		},
		ProgressNotificationHandler: s.progress,
		LoggingMessageHandler:       s.logMessage,
		ResourceUpdatedHandler:      s.resourceUpdated,
		Capabilities:                &sdk.ClientCapabilities{},
	}
	if s.sampling {
		// The handler makes the SDK advertise the sampling capability.
		copts.CreateMessageHandler = s.createMessage
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "harnessx", Version: "1"}, copts)
	if !s.sampling {
		client.AddReceivingMiddleware(s.refuseSampling)
	}
	// What was watched on a previous connection is void.
	s.wmu.Lock()
	s.pendingLists, s.taskRequired, s.logQueue = nil, nil, nil
	s.wmu.Unlock()
	s.listChangedQueued.Store(false)
	cs, err = client.Connect(cctx, s.watch(t), nil)
	if err != nil {
		return nil, s.connectError(ctx, cctx, err, tail)
	}
	// A tools/list_changed notification may come as soon as the session is
	// up: its reload waits until this first list is stored.
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	init := cs.InitializeResult()
	var logging bool
	s.mu.Lock()
	s.cs, s.stderr = cs, tail
	if init != nil {
		s.protocol = init.ProtocolVersion
		s.instructions = clip(init.Instructions, maxDescription)
		if init.ServerInfo != nil {
			s.serverInfo = clip(strings.TrimSpace(init.ServerInfo.Name+" "+init.ServerInfo.Version), maxShownName)
		}
		if c := init.Capabilities; c != nil {
			s.resources = c.Resources != nil
			logging = c.Logging != nil
		}
	}
	logMeta := logging && s.protocol >= protocolStateless
	s.logMeta = logMeta
	s.mu.Unlock()
	watching := s.ext.goBackground(func() {
		_ = cs.Wait() // the server closed the connection, crashed, or we closed it
		s.mu.Lock()
		lost := s.cs == cs
		if lost {
			s.cs = nil
		}
		s.mu.Unlock()
		if lost && !s.ext.isClosed() {
			args := []any{"server", s.name}
			if tail != nil {
				args = append(args, "stderr", redacted(tail.String()))
			}
			s.ext.log.Warn("mcp: the server's connection was lost; the next call reconnects", args...)
		}
	})
	if !watching { // Teardown ran meanwhile
		s.drop(cs)
		return nil, fmt.Errorf("mcp: server %q: the agent is closed", s.name)
	}
	if logging && !logMeta {
		// Protocols before 2026-07-28 send log messages only once the
		// client set a level.
		if err := cs.SetLoggingLevel(cctx, &sdk.SetLoggingLevelParams{Level: serverLogLevel}); err != nil {
			s.ext.log.Debug("mcp: logging/setLevel failed", "server", s.name, "error", s.redactErr(err))
		}
	}
	list, err := s.listTools(cctx, cs)
	if err != nil {
		s.drop(cs)
		return nil, s.connectError(ctx, cctx, fmt.Errorf("tools/list: %w", err), tail)
	}
	s.setTools(list)
	return cs, nil
}

// protocolStateless is the first protocol version whose requests carry
// their log level in _meta (and that has no initialize handshake).
const protocolStateless = "2026-07-28"

// serverLogLevel is the level of the log messages the adapter asks servers
// for.
const serverLogLevel = "info"

// connectError is the error of a failed connection: what failed, the tail
// of a stdio server's standard error, all redacted. The log gets the whole
// tail that was kept.
func (s *server) connectError(ctx, cctx context.Context, err error, tail *tailBuffer) error {
	err = s.tr.redactErr(err)
	switch {
	case ctx.Err() != nil:
		err = fmt.Errorf("mcp: server %q (%s): connect: %w", s.name, s.tr, ctx.Err())
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		err = fmt.Errorf("mcp: server %q (%s) did not complete the connection within %v: %w", s.name, s.tr, s.ext.cfg.connectTimeout, err)
	default:
		err = fmt.Errorf("mcp: server %q (%s): connect: %w", s.name, s.tr, err)
	}
	err = withStderr(err, tail)
	if tail != nil {
		s.ext.log.Warn("mcp: cannot connect a server", "server", s.name, "error", err, "stderr", redacted(tail.String()))
	}
	return err
}

// withStderr returns err, redacted, followed by the last lines of the
// server's standard error when there are any.
func withStderr(err error, tail *tailBuffer) error {
	if tail == nil {
		return redactError(err)
	}
	text, cut := tail.last(stderrInError)
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return redactError(err)
	}
	what := "its standard error"
	if cut {
		what = fmt.Sprintf("the end of its standard error (%d bytes in all)", tail.written())
	}
	return &redactedError{msg: redacted(fmt.Sprintf("%v\n%s:\n%s", err, what, text)), err: err}
}

// listTools loads every page of the server's tool list. The caller holds
// refreshMu.
func (s *server) listTools(ctx context.Context, cs *sdk.ClientSession) ([]*sdk.Tool, error) {
	s.wmu.Lock()
	s.taskRequired, s.pendingLists = nil, nil
	s.wmu.Unlock()
	var list []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		list = append(list, t)
	}
	return list, nil
}

// setTools turns the server's tool list into harness tools, stores them,
// rebuilds the agent's catalog, and, when the server is enabled, activates
// its new tools.
func (s *server) setTools(list []*sdk.Tool) {
	s.wmu.Lock()
	taskRequired := s.taskRequired
	s.wmu.Unlock()
	s.mu.Lock()
	resources := s.resources
	s.mu.Unlock()
	tools, entries, skipped := s.buildTools(list, taskRequired, resources)
	sig := signature(tools, skipped)
	names := serverState{entries: entries}.toolNames()
	s.mu.Lock()
	same := s.loaded && sig == s.signature
	if !same {
		s.tools, s.entries, s.skipped, s.loaded, s.signature = tools, entries, skipped, true, sig
	}
	enabled := s.enabled
	s.mu.Unlock()
	// A list that did not change (a server may send list_changed again and
	// again) costs no rebuild of the catalog, and is not logged again.
	if !same {
		for _, sk := range skipped {
			s.ext.log.Warn("mcp: tool skipped", "server", s.name, "tool", shortName(sk.name), "reason", sk.reason)
		}
		s.ext.ec.RefreshTools()
		if enabled {
			if err := s.ext.ec.Agent().Tools().Activate(names...); err != nil {
				s.ext.log.Warn("mcp: cannot activate a server's tools", "server", s.name, "error", err)
			}
		}
	}
	if fn := s.ext.cfg.onToolsChanged; fn != nil {
		fn(s.name, names)
	}
}

// signature describes what a server's harness tools are made of, so that a
// list loaded again can be told from the one stored.
func signature(tools []*harness.Tool, skipped []skippedTool) string {
	var b strings.Builder
	for _, t := range tools {
		fmt.Fprintf(&b, "%s\x00%s\x00%s\x00%s\x00%s\x00%v\x01", t.Name, t.Description, t.InputSchema, t.Permission, t.ReplayPolicy, t.Concurrent)
	}
	for _, sk := range skipped {
		fmt.Fprintf(&b, "%s\x00%s\x01", sk.name, sk.reason)
	}
	return b.String()
}

// listChanged handles a tools/list_changed notification: it reloads the
// tool list on a goroutine (the notification handler must not wait for a
// request of the same connection). However many notifications come, one
// reload runs at a time and at most one more is wanted after it: the
// notifications that come during a reload are answered by the next one.
func (s *server) listChanged() {
	s.mu.Lock()
	s.reloadWanted = true
	if s.reloading {
		s.mu.Unlock()
		return
	}
	s.reloading = true
	s.mu.Unlock()
	if !s.ext.goBackground(s.reloadLoop) {
		s.mu.Lock()
		s.reloading = false
		s.mu.Unlock()
	}
}

// reloadDelay is how long a reload waits after the notification that
// wanted it, so that a burst of notifications is answered by one reload.
const reloadDelay = 50 * time.Millisecond

func (s *server) reloadLoop() {
	t := time.NewTimer(reloadDelay)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.ext.bg.Done():
		}
		s.mu.Lock()
		if !s.reloadWanted || s.ext.bg.Err() != nil {
			s.reloading = false
			s.mu.Unlock()
			return
		}
		s.reloadWanted = false
		s.mu.Unlock()
		s.reload()
		t.Reset(reloadDelay)
	}
}

// reload loads the tool list again.
func (s *server) reload() {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	s.mu.Lock()
	cs := s.cs
	s.mu.Unlock()
	if cs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ext.bg, s.ext.cfg.connectTimeout)
	defer cancel()
	list, err := s.listTools(ctx, cs)
	if err != nil {
		s.ext.log.Warn("mcp: reloading the tool list after tools/list_changed failed", "server", s.name, "error", s.redactErr(err))
		return
	}
	s.setTools(list)
}

// ReadResourceTool is the name, after the server's name and [Separator],
// of the tool that reads a server's resources: "files__read_resource". It
// is offered with the server's tools when the server has resources.
const ReadResourceTool = "read_resource"

// buildTools makes the harness tools of a server's list. A tool whose
// name is empty or longer than 128 bytes, whose input schema is not a valid
// object schema (or nests more than 64 levels), that requires task
// augmentation (taskRequired, by name), or whose name collides with
// another once sanitized, is skipped with a reason. Descriptions are cut
// to 8 KiB. With resources, the read_resource tool comes first.
func (s *server) buildTools(list []*sdk.Tool, taskRequired map[string]bool, resources bool) ([]*harness.Tool, []toolEntry, []skippedTool) {
	var (
		tools   []*harness.Tool
		entries []toolEntry
		skipped []skippedTool
		seen    = map[string]string{}
		checked = map[string]string{}
	)
	defer func() {
		s.mu.Lock()
		s.schemas = checked
		s.mu.Unlock()
	}()
	if resources {
		t := s.readResourceTool()
		seen[t.Name] = ReadResourceTool
		entries = append(entries, toolEntry{name: t.Name, mcpName: ReadResourceTool, description: t.Description,
			readOnly: true, policy: harness.ReplaySafe})
		tools = append(tools, t)
	}
	for _, t := range list {
		if t == nil {
			continue
		}
		if t.Name == "" {
			skipped = append(skipped, skippedTool{t.Name, "the tool has no name"})
			continue
		}
		if len(t.Name) > maxToolName {
			skipped = append(skipped, skippedTool{t.Name, fmt.Sprintf("its name is %d bytes long, more than %d", len(t.Name), maxToolName)})
			continue
		}
		name := toolName(s.name, t.Name)
		if other, dup := seen[name]; dup {
			reason := fmt.Sprintf("its name %s is taken by the tool %s", name, shownName(other))
			if other == ReadResourceTool && resources {
				reason = fmt.Sprintf("its name %s is the adapter's tool that reads the server's resources", name)
			}
			skipped = append(skipped, skippedTool{t.Name, reason})
			continue
		}
		if taskRequired[t.Name] {
			skipped = append(skipped, skippedTool{t.Name, "it requires task augmentation (execution.taskSupport is \"required\"), which the adapter does not support"})
			continue
		}
		schema, err := s.checkedSchema(t.Name, t.InputSchema, checked)
		if err != nil {
			skipped = append(skipped, skippedTool{t.Name, "malformed input schema: " + clip(err.Error(), 200)})
			continue
		}
		seen[name] = t.Name
		en := toolEntry{name: name, mcpName: t.Name, description: t.Description}
		if en.description == "" {
			en.description = t.Title
		}
		if a := t.Annotations; a != nil {
			en.readOnly = a.ReadOnlyHint
			en.idempotent = a.IdempotentHint
			en.destructive = !a.ReadOnlyHint && a.DestructiveHint != nil && *a.DestructiveHint
			if en.description == "" {
				en.description = a.Title
			}
		}
		en.description = clip(en.description, maxDescription)
		if en.readOnly || en.idempotent {
			en.policy = harness.ReplaySafe
		}
		if en.destructive {
			en.permission = harness.PermissionAsk
		}
		entries = append(entries, en)
		tools = append(tools, &harness.Tool{
			Name:         name,
			Description:  en.description,
			InputSchema:  schema,
			Handler:      s.handler(en.mcpName),
			Permission:   en.permission,
			ReplayPolicy: en.policy,
			Concurrent:   en.readOnly,
			Deferred:     true,
		})
	}
	return tools, entries, skipped
}

// toolName is the harness name of a server's tool: "server__tool", with
// the characters model APIs refuse in tool names (anything but letters,
// digits, '_' and '-') replaced by '_', at most 64 bytes.
func toolName(server, tool string) string {
	b := []byte(server + Separator + tool)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}

// checkedSchema is checkSchema, skipped when the tool's schema is the one
// that passed at the last load (a server that sends list_changed again
// and again must not cost a compilation of every schema each time). The
// schemas that pass are added to checked.
func (s *server) checkedSchema(name string, v any, checked map[string]string) (json.RawMessage, error) {
	if v == nil {
		return nil, errors.New("missing")
	}
	if m, ok := v.(map[string]any); ok {
		if why, ok := m[refusedKey].(string); ok {
			return nil, errors.New(why)
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	prev, ok := s.schemas[name]
	s.mu.Unlock()
	if !ok || prev != string(raw) {
		if _, err := checkSchema(json.RawMessage(raw)); err != nil {
			return nil, err
		}
	}
	checked[name] = string(raw)
	return raw, nil
}

// checkSchema returns the JSON of a tool's input schema, as the server sent
// it, after checking that it is an object schema the harness can compile,
// nested at most maxSchemaDepth levels.
func checkSchema(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, errors.New("missing")
	}
	if m, ok := v.(map[string]any); ok {
		if why, ok := m[refusedKey].(string); ok {
			return nil, errors.New(why)
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if d := jsonDepth(raw, maxSchemaDepth); d > maxSchemaDepth {
		return nil, fmt.Errorf("it nests more than %d levels", maxSchemaDepth)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("type is %q, want \"object\"", s.Type)
	}
	if _, err := s.Resolve(nil); err != nil {
		return nil, err
	}
	return raw, nil
}

// ---- calls ----

func (s *server) handler(mcpName string) harness.ToolHandler {
	return func(ctx context.Context, input json.RawMessage) (string, error) {
		return s.call(ctx, mcpName, input)
	}
}

// errCallTimeout is the cause of a call's context when the server did not
// answer within the call timeout.
var errCallTimeout = errors.New("mcp: call timeout")

// call runs tools/call. It adds the MCP attributes to the span of ctx (the
// execute_tool span when the tracing extension is installed) and sends the
// trace context to the server in params._meta.
func (s *server) call(ctx context.Context, mcpName string, input json.RawMessage) (string, error) {
	span := trace.SpanFromContext(ctx)
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, semconv.McpMethodNameToolsCall)
	if s.tr.network != "" {
		attrs = append(attrs, semconv.NetworkTransportKey.String(s.tr.network))
	}
	cs, err := s.session(ctx)
	if err != nil {
		span.SetAttributes(append(attrs, semconv.ErrorTypeKey.String(errorTypeConnect))...)
		return "", &callError{typ: errorTypeConnect, err: err}
	}
	if id := cs.ID(); id != "" {
		attrs = append(attrs, semconv.McpSessionID(id))
	}
	s.mu.Lock()
	protocol, logMeta, readTool := s.protocol, s.logMeta, ""
	if s.resources {
		readTool = toolName(s.name, ReadResourceTool)
	}
	s.mu.Unlock()
	if protocol != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(protocol))
	}

	params := &sdk.CallToolParams{Name: mcpName, Arguments: input}
	var carrier propagation.MapCarrier
	if span.SpanContext().IsValid() {
		carrier = propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, carrier)
	}
	if len(carrier) > 0 || logMeta {
		params.Meta = sdk.Meta{}
		for k, v := range carrier {
			params.Meta[k] = v
		}
		if logMeta {
			params.Meta[sdk.MetaKeyLogLevel] = serverLogLevel
		}
	}
	info := &callInfo{token: "harnessx-" + strconv.FormatInt(s.ext.seq.Add(1), 10), ctx: ctx}
	// Progress notifications are asked for only when someone observes the
	// call's updates: a progress token costs the client and the server
	// about a tenth of a call.
	if harness.UpdatesObserved(ctx) {
		params.SetProgressToken(info.token)
	}
	cctx, cancel := context.WithCancelCause(context.WithValue(ctx, callInfoKey{}, info))
	defer cancel(nil)
	info.timer = newCallTimer(s.ext.cfg.callTimeout, func() { cancel(errCallTimeout) })
	defer info.timer.stop()
	s.track(info)
	defer s.untrack(info)
	res, err := cs.CallTool(cctx, params)
	info.waitNotes(ctx, progressDrainTimeout)
	if id := info.getID(); id != "" {
		attrs = append(attrs, semconv.JSONRPCRequestID(id))
	}
	if err != nil {
		err := s.callError(ctx, cctx, cs, mcpName, err)
		span.SetAttributes(append(attrs, semconv.ErrorTypeKey.String(err.typ))...)
		return "", err
	}
	c, cerr := resultContent(res, readTool, !res.IsError)
	text := strings.Join(c.text, "\n")
	if res.IsError {
		span.SetAttributes(append(attrs, semconv.ErrorTypeKey.String(errorTypeToolError))...)
		if text == "" {
			text = fmt.Sprintf("mcp: the tool %s of server %q reported an error without a message", mcpName, s.name)
		}
		return "", toolError(text)
	}
	if cerr != nil {
		span.SetAttributes(append(attrs, semconv.ErrorTypeKey.String(errorTypeInvalidContent))...)
		return "", &callError{errorTypeInvalidContent, s.redactErr(fmt.Errorf("mcp: the result of tools/call %s of server %q cannot be shown: %w", shortName(mcpName), s.name, cerr))}
	}
	if len(c.parts) > 0 {
		if err := harness.AddResultParts(ctx, c.parts...); err != nil {
			span.SetAttributes(append(attrs, semconv.ErrorTypeKey.String(errorTypeInvalidContent))...)
			return "", &callError{errorTypeInvalidContent, fmt.Errorf("mcp: the result of tools/call %s of server %q: %w", shortName(mcpName), s.name, err)}
		}
	}
	span.SetAttributes(attrs...)
	return text, nil
}

// toolError is a server's isError result. Its class, "tool_error",
// becomes the result's harness.ToolResult.ErrorType, which the tracing
// extension puts on the execute_tool span as error.type.
type toolError string

func (e toolError) Error() string     { return string(e) }
func (e toolError) ErrorType() string { return errorTypeToolError }

// The error.type of calls that failed (besides a JSON-RPC error's code).
const (
	errorTypeConnect   = "connect_error"
	errorTypeTimeout   = "timeout"
	errorTypeCancelled = "cancelled"
	errorTypeClosed    = "connection_closed"
)

// callError is a tools/call that failed. Its class (timeout,
// connection_closed, the JSON-RPC error code…) becomes the result's
// harness.ToolResult.ErrorType, and so error.type on the execute_tool span.
type callError struct {
	typ string
	err error
}

func (e *callError) Error() string     { return e.err.Error() }
func (e *callError) Unwrap() error     { return e.err }
func (e *callError) ErrorType() string { return e.typ }

// callError turns a failed tools/call into a clear error and its
// error.type. A lost connection is dropped, so that the next call
// reconnects.
func (s *server) callError(ctx, cctx context.Context, cs *sdk.ClientSession, tool string, err error) *callError {
	err = s.tr.redactErr(err)
	var werr *jsonrpc.Error
	tool = shortName(tool)
	switch {
	case ctx.Err() != nil:
		return &callError{errorTypeCancelled, ctx.Err()}
	case errors.Is(context.Cause(cctx), errCallTimeout):
		return &callError{errorTypeTimeout, fmt.Errorf("mcp: server %q did not answer tools/call %s within %v; the call was cancelled", s.name, tool, s.ext.cfg.callTimeout)}
	case errors.As(err, new(base64.CorruptInputError)):
		// The SDK decodes image, audio and blob data as it reads the
		// result; the connection is fine.
		return &callError{errorTypeInvalidContent, s.redactErr(fmt.Errorf("mcp: server %q answered tools/call %s with content whose base64 data is malformed: %v", s.name, tool, err))}
	case errors.As(err, &werr):
		return &callError{strconv.FormatInt(werr.Code, 10), s.redactErr(fmt.Errorf("mcp: server %q refused tools/call %s: %s (JSON-RPC error %d)", s.name, tool, clip(werr.Message, maxDescription), werr.Code))}
	case errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		s.mu.Lock()
		tail := s.stderr
		s.mu.Unlock()
		s.drop(cs)
		if tail != nil {
			s.ext.log.Warn("mcp: the server closed the connection during a call", "server", s.name, "stderr", redacted(tail.String()))
		}
		return &callError{errorTypeClosed, withStderr(fmt.Errorf("mcp: server %q closed the connection during tools/call %s (did it crash?); the next call reconnects: %w", s.name, tool, err), tail)}
	}
	return &callError{"_OTHER", redactError(fmt.Errorf("mcp: server %q: tools/call %s: %w", s.name, tool, err))}
}

// redactErr returns err without the credentials of the server's URL and
// redacted with the built-in rules: for errors that reach the model or the
// log from anything that may quote the URL (the SDK, net/http, the server).
func (s *server) redactErr(err error) error { return redactError(s.tr.redactErr(err)) }

// callTimer cancels a call when the server has not answered in time. It
// is paused while the user is asked for input on the call's behalf: a
// person's answer may take longer than a server's.
type callTimer struct {
	mu        sync.Mutex
	t         *time.Timer
	deadline  time.Time
	remaining time.Duration // while paused; < 0 when it had fired
	paused    int
}

func newCallTimer(d time.Duration, fire func()) *callTimer {
	return &callTimer{t: time.AfterFunc(d, fire), deadline: time.Now().Add(d)}
}

func (c *callTimer) pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused++
	if c.paused > 1 {
		return
	}
	if c.t.Stop() {
		c.remaining = time.Until(c.deadline)
	} else {
		c.remaining = -1
	}
}

func (c *callTimer) resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused--
	if c.paused > 0 || c.remaining < 0 {
		return
	}
	c.deadline = time.Now().Add(c.remaining)
	c.t.Reset(c.remaining)
}

func (c *callTimer) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t.Stop()
	c.remaining = -1
}

func (s *server) track(info *callInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight == nil {
		s.inflight = map[string]*callInfo{}
	}
	s.inflight[info.token] = info
}

func (s *server) untrack(info *callInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, info.token)
}

func (s *server) callByToken(token string) *callInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight[token]
}

// runningCall returns the server's only running call, and how many calls
// are running.
func (s *server) runningCall() (*callInfo, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, info := range s.inflight {
		return info, len(s.inflight)
	}
	return nil, 0
}

// progress publishes a server's progress notification as live metadata of
// the call it belongs to (harness.Update: hooks see EventToolUpdate, and
// the tracing extension adds an event to the call's span). A notification
// for a call that has ended is dropped; a call waits for those that came
// before its response.
func (s *server) progress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p := req.Params
	if p == nil {
		return
	}
	token, _ := p.ProgressToken.(string)
	info := s.callByToken(token)
	if info == nil {
		return
	}
	defer info.noteHandled()
	md := map[string]any{MetaProgress: p.Progress}
	if p.Total > 0 {
		md[MetaProgressTotal] = p.Total
	}
	if p.Message != "" {
		md[MetaProgressMessage] = clip(p.Message, maxLogData)
	}
	if err := harness.Update(info.ctx, md); err != nil {
		s.ext.log.Debug("mcp: progress not published", "server", s.name, "error", err)
	}
}

// The keys of the metadata that a server's progress notification publishes
// with harness.Update.
const (
	MetaProgress        = "mcp.progress"
	MetaProgressTotal   = "mcp.progress.total"
	MetaProgressMessage = "mcp.progress.message"
)

// The keys of the metadata that a server's log message publishes with
// harness.Update, when it comes during the server's only running call.
const (
	MetaLogLevel  = "mcp.log.level"
	MetaLogLogger = "mcp.log.logger"
	MetaLogData   = "mcp.log.data"
)

// logMessage handles a server's notifications/message. During the
// server's only running call it is published as the call's live metadata
// (an EventToolUpdate; a span event with the tracing extension); it is
// always logged, at most logBurst messages per logWindow and server. Its
// data is redacted and cut to 4 KiB.
func (s *server) logMessage(_ context.Context, req *sdk.LoggingMessageRequest) {
	p := req.Params
	if p == nil {
		return
	}
	var data string
	switch d := p.Data.(type) {
	case string:
		data = d
	default:
		b, _ := json.Marshal(d)
		data = string(b)
	}
	data = redacted(clip(data, maxLogData))
	logger := clip(p.Logger, maxShownName)
	info, seen := s.logCall()
	if !seen {
		if only, n := s.runningCall(); n == 1 {
			info = only
		}
	} else if info != nil {
		defer info.noteHandled()
	}
	if info != nil {
		md := map[string]any{MetaLogLevel: string(p.Level), MetaLogData: data}
		if logger != "" {
			md[MetaLogLogger] = logger
		}
		if err := harness.Update(info.ctx, md); err != nil {
			s.ext.log.Debug("mcp: log message not published", "server", s.name, "error", err)
		}
	}
	ok, suppressed := s.serverLog.allow(time.Now())
	if !ok {
		return
	}
	args := []any{"server", s.name, "level", string(p.Level), "data", data}
	if logger != "" {
		args = append(args, "logger", logger)
	}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	s.ext.log.Log(context.Background(), slogLevel(p.Level), "mcp: server log", args...)
}

// slogLevel maps an MCP log level (syslog's) onto slog's.
func slogLevel(l sdk.LoggingLevel) slog.Level {
	switch l {
	case "debug":
		return slog.LevelDebug
	case "info", "notice":
		return slog.LevelInfo
	case "warning":
		return slog.LevelWarn
	}
	return slog.LevelError
}

// resourceUpdated logs a notifications/resources/updated.
func (s *server) resourceUpdated(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
	if p := req.Params; p != nil {
		s.ext.log.Debug("mcp: resource updated", "server", s.name, "uri", redacted(clip(p.URI, maxDescription)))
	}
}

// ---- resources ----

type readResourceInput struct {
	URI string `json:"uri"`
}

// readResourceTool is the tool that reads one of the server's resources,
// such as those a tool result links to.
func (s *server) readResourceTool() *harness.Tool {
	schema, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"uri": map[string]any{"type": "string", "description": "the URI of the resource, as a resource link gives it"},
		},
		"required":             []string{"uri"},
		"additionalProperties": false,
	})
	return &harness.Tool{
		Name:         toolName(s.name, ReadResourceTool),
		Description:  fmt.Sprintf("Read a resource of the MCP server %s by its URI (resource links in its tools' results name them).", s.name),
		InputSchema:  schema,
		ReplayPolicy: harness.ReplaySafe,
		Concurrent:   true,
		Deferred:     true,
		Handler: func(ctx context.Context, input json.RawMessage) (string, error) {
			var in readResourceInput
			if err := json.Unmarshal(input, &in); err != nil || in.URI == "" {
				return "", &harness.InputError{Err: fmt.Errorf("want {\"uri\": \"…\"}: %v", err)}
			}
			return s.readResource(ctx, in.URI)
		},
	}
}

func (s *server) readResource(ctx context.Context, uri string) (string, error) {
	span := trace.SpanFromContext(ctx)
	attrs := []attribute.KeyValue{semconv.McpMethodNameResourcesRead}
	cs, err := s.session(ctx)
	if err != nil {
		span.SetAttributes(append(attrs, semconv.ErrorTypeKey.String(errorTypeConnect))...)
		return "", &callError{typ: errorTypeConnect, err: err}
	}
	cctx, cancel := context.WithTimeoutCause(ctx, s.ext.cfg.callTimeout, errCallTimeout)
	defer cancel()
	res, err := cs.ReadResource(cctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		e := s.callError(ctx, cctx, cs, "resources/read "+uri, err)
		span.SetAttributes(append(attrs, semconv.ErrorTypeKey.String(e.typ))...)
		return "", e
	}
	c, cerr := resourceContent(res.Contents)
	if cerr != nil {
		span.SetAttributes(append(attrs, semconv.ErrorTypeKey.String(errorTypeInvalidContent))...)
		return "", &callError{errorTypeInvalidContent, s.redactErr(fmt.Errorf("mcp: resources/read %s of server %q cannot be shown: %w", shownName(uri), s.name, cerr))}
	}
	if len(c.parts) > 0 {
		if err := harness.AddResultParts(ctx, c.parts...); err != nil {
			span.SetAttributes(append(attrs, semconv.ErrorTypeKey.String(errorTypeInvalidContent))...)
			return "", &callError{errorTypeInvalidContent, fmt.Errorf("mcp: resources/read of server %q: %w", s.name, err)}
		}
	}
	span.SetAttributes(attrs...)
	return strings.Join(c.text, "\n"), nil
}

// drop forgets cs, and closes it, if it is still the server's connection.
func (s *server) drop(cs *sdk.ClientSession) {
	s.mu.Lock()
	if s.cs == cs {
		s.cs = nil
	}
	s.mu.Unlock()
	_ = cs.Close()
}

// close closes the connection, if any.
func (s *server) close() error {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	s.mu.Lock()
	cs := s.cs
	s.cs = nil
	s.mu.Unlock()
	if cs == nil {
		return nil
	}
	err := cs.Close()
	if errors.Is(err, sdk.ErrConnectionClosed) {
		err = nil
	}
	return err
}
