package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

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

	connMu    sync.Mutex // serializes connecting
	refreshMu sync.Mutex // serializes tool-list refreshes

	mu           sync.Mutex
	cs           *sdk.ClientSession // nil when not connected
	loaded       bool               // a tool list was loaded once
	enabled      bool
	protocol     string
	serverInfo   string
	instructions string
	tools        []*harness.Tool
	entries      []toolEntry
	skipped      []skippedTool
	inflight     map[*callInfo]context.Context // running calls, for elicitations outside them
	auth         *oauthHandler                 // set at the first connection of a server WithOAuth (oauth.go)
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
// connection itself outlives it.
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

	t, err := s.tr.connect(cctx)
	if err == nil {
		t, err = s.withOAuth(t)
	}
	if err != nil {
		return nil, fmt.Errorf("mcp: server %q (%s): %w", s.name, s.tr, err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "harnessx", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler:          s.elicit,
		ToolListChangedHandler:      func(context.Context, *sdk.ToolListChangedRequest) { s.refreshAsync() },
		ProgressNotificationHandler: s.progress,
		Capabilities:                &sdk.ClientCapabilities{},
	})
	cs, err = client.Connect(cctx, idTransport{t}, nil)
	if err != nil {
		return nil, s.connectError(ctx, cctx, err)
	}
	// A tools/list_changed notification may come as soon as the session is
	// up: its refresh waits until this first list is stored.
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	init := cs.InitializeResult()
	s.mu.Lock()
	s.cs = cs
	if init != nil {
		s.protocol = init.ProtocolVersion
		s.instructions = init.Instructions
		if init.ServerInfo != nil {
			s.serverInfo = strings.TrimSpace(init.ServerInfo.Name + " " + init.ServerInfo.Version)
		}
	}
	s.mu.Unlock()
	watching := s.ext.goBackground(func() {
		_ = cs.Wait() // the server closed the connection, crashed, or we closed it
		s.mu.Lock()
		if s.cs == cs {
			s.cs = nil
		}
		s.mu.Unlock()
	})
	if !watching { // Teardown ran meanwhile
		s.drop(cs)
		return nil, fmt.Errorf("mcp: server %q: the agent is closed", s.name)
	}
	list, err := listTools(cctx, cs)
	if err != nil {
		s.drop(cs)
		return nil, s.connectError(ctx, cctx, fmt.Errorf("tools/list: %w", err))
	}
	s.setTools(list)
	return cs, nil
}

func (s *server) connectError(ctx, cctx context.Context, err error) error {
	err = s.tr.redactErr(err)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("mcp: server %q (%s): connect: %w", s.name, s.tr, ctx.Err())
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("mcp: server %q (%s) did not complete the connection within %v: %w", s.name, s.tr, s.ext.cfg.connectTimeout, err)
	}
	return fmt.Errorf("mcp: server %q (%s): connect: %w", s.name, s.tr, err)
}

// listTools loads every page of the server's tool list.
func listTools(ctx context.Context, cs *sdk.ClientSession) ([]*sdk.Tool, error) {
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
	tools, entries, skipped := s.buildTools(list)
	for _, sk := range skipped {
		s.ext.log.Warn("mcp: tool skipped", "server", s.name, "tool", sk.name, "reason", sk.reason)
	}
	s.mu.Lock()
	s.tools, s.entries, s.skipped, s.loaded = tools, entries, skipped, true
	enabled := s.enabled
	s.mu.Unlock()
	s.ext.ec.RefreshTools()
	names := serverState{entries: entries}.toolNames()
	if enabled {
		if err := s.ext.ec.Agent().Tools().Activate(names...); err != nil {
			s.ext.log.Warn("mcp: cannot activate a server's tools", "server", s.name, "error", err)
		}
	}
	if fn := s.ext.cfg.onToolsChanged; fn != nil {
		fn(s.name, names)
	}
}

// refreshAsync reloads the tool list after a tools/list_changed
// notification, on a goroutine: the notification handler must not wait for
// a request of the same connection.
func (s *server) refreshAsync() {
	s.ext.goBackground(func() {
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
		list, err := listTools(ctx, cs)
		if err != nil {
			s.ext.log.Warn("mcp: reloading the tool list after tools/list_changed failed", "server", s.name, "error", err)
			return
		}
		s.setTools(list)
	})
}

// buildTools makes the harness tools of a server's list. A tool whose
// input schema is not a valid object schema, or whose name collides with
// another once sanitized, is skipped with a reason.
func (s *server) buildTools(list []*sdk.Tool) ([]*harness.Tool, []toolEntry, []skippedTool) {
	var (
		tools   []*harness.Tool
		entries []toolEntry
		skipped []skippedTool
		seen    = map[string]string{}
	)
	for _, t := range list {
		if t == nil {
			continue
		}
		name := toolName(s.name, t.Name)
		if t.Name == "" {
			skipped = append(skipped, skippedTool{t.Name, "the tool has no name"})
			continue
		}
		if other, dup := seen[name]; dup {
			skipped = append(skipped, skippedTool{t.Name, fmt.Sprintf("its name %s is taken by the tool %q", name, other)})
			continue
		}
		schema, err := checkSchema(t.InputSchema)
		if err != nil {
			skipped = append(skipped, skippedTool{t.Name, "malformed input schema: " + err.Error()})
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

// checkSchema returns the JSON of a tool's input schema, as the server sent
// it, after checking that it is an object schema the harness can compile.
func checkSchema(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, errors.New("missing")
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
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

// call runs tools/call. It adds the MCP attributes to the span of ctx (the
// execute_tool span when the tracing extension is installed) and sends the
// trace context to the server in params._meta.
func (s *server) call(ctx context.Context, mcpName string, input json.RawMessage) (string, error) {
	span := trace.SpanFromContext(ctx)
	attrs := []attribute.KeyValue{semconv.McpMethodNameToolsCall}
	if s.tr.network != "" {
		attrs = append(attrs, semconv.NetworkTransportKey.String(s.tr.network))
	}
	cs, err := s.session(ctx)
	if err != nil {
		span.SetAttributes(append(attrs, semconv.ErrorTypeKey.String("connect_error"))...)
		return "", err
	}
	if id := cs.ID(); id != "" {
		attrs = append(attrs, semconv.McpSessionID(id))
	}
	if p := s.snapshot().protocol; p != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(p))
	}

	params := &sdk.CallToolParams{Name: mcpName, Arguments: input}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	if len(carrier) > 0 {
		params.Meta = sdk.Meta{}
		for k, v := range carrier {
			params.Meta[k] = v
		}
	}
	info := &callInfo{token: fmt.Sprintf("harnessx-%d", s.ext.seq.Add(1))}
	params.SetProgressToken(info.token)
	s.track(info, ctx)
	defer s.untrack(info)
	cctx, cancel := context.WithTimeout(context.WithValue(ctx, callInfoKey{}, info), s.ext.cfg.callTimeout)
	defer cancel()
	res, err := cs.CallTool(cctx, params)
	if id := info.get(); id != "" {
		attrs = append(attrs, semconv.JSONRPCRequestID(id))
	}
	if err != nil {
		typ, err := s.callError(ctx, cctx, cs, mcpName, err)
		span.SetAttributes(append(attrs, semconv.ErrorTypeKey.String(typ))...)
		return "", err
	}
	text := resultText(res)
	if res.IsError {
		span.SetAttributes(append(attrs, semconv.ErrorTypeKey.String(errorTypeToolError))...)
		if text == "" {
			text = fmt.Sprintf("mcp: the tool %s of server %q reported an error without a message", mcpName, s.name)
		}
		return "", toolError(text)
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

// callError turns a failed tools/call into a clear error and its
// error.type. A lost connection is dropped, so that the next call
// reconnects.
func (s *server) callError(ctx, cctx context.Context, cs *sdk.ClientSession, tool string, err error) (string, error) {
	err = s.tr.redactErr(err)
	var werr *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		return "cancelled", ctx.Err()
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return "timeout", fmt.Errorf("mcp: server %q did not answer tools/call %s within %v; the call was cancelled", s.name, tool, s.ext.cfg.callTimeout)
	case errors.As(err, &werr):
		return strconv.FormatInt(werr.Code, 10), fmt.Errorf("mcp: server %q refused tools/call %s: %s (JSON-RPC error %d)", s.name, tool, werr.Message, werr.Code)
	case errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		s.drop(cs)
		return "connection_closed", fmt.Errorf("mcp: server %q closed the connection during tools/call %s (did it crash?); the next call reconnects: %w", s.name, tool, err)
	}
	return "_OTHER", fmt.Errorf("mcp: server %q: tools/call %s: %w", s.name, tool, err)
}

func (s *server) track(info *callInfo, ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight == nil {
		s.inflight = map[*callInfo]context.Context{}
	}
	s.inflight[info] = ctx
}

func (s *server) untrack(info *callInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, info)
}

// runningCall returns the context of the server's only running call, and
// how many calls are running.
func (s *server) runningCall() (context.Context, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ctx := range s.inflight {
		return ctx, len(s.inflight)
	}
	return nil, 0
}

// progress publishes a server's progress notification as live metadata of
// the call it belongs to (harness.Update: hooks see EventToolUpdate, and
// the tracing extension adds an event to the call's span). A notification
// for a call that has ended is dropped.
func (s *server) progress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p := req.Params
	if p == nil {
		return
	}
	token, _ := p.ProgressToken.(string)
	s.mu.Lock()
	var call context.Context
	for info, ctx := range s.inflight {
		if info.token == token {
			call = ctx
		}
	}
	s.mu.Unlock()
	if call == nil {
		return
	}
	md := map[string]any{MetaProgress: p.Progress}
	if p.Total > 0 {
		md[MetaProgressTotal] = p.Total
	}
	if p.Message != "" {
		md[MetaProgressMessage] = p.Message
	}
	if err := harness.Update(call, md); err != nil {
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

// resultText is what the model reads of a tool result: the text of its
// content, one block after another; a note for content that is not text;
// the structured content's JSON when there is no content.
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource: %s %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil {
				if r.Text != "" || len(r.Blob) == 0 {
					parts = append(parts, r.Text)
				} else {
					parts = append(parts, fmt.Sprintf("[resource: %s, %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
				}
			}
		default:
			if b, err := json.Marshal(c); err == nil {
				parts = append(parts, string(b))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}
