package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// SessionVersion is the version of the session format that SaveSession
// writes and LoadSession reads.
const SessionVersion = 1

// sessionData is the saved form of a session.
type sessionData struct {
	Version    int                        `json:"version"`
	SessionID  string                     `json:"session_id"`
	Agent      string                     `json:"agent,omitempty"`
	Model      string                     `json:"model,omitempty"`
	Messages   []Message                  `json:"messages"`
	Pending    *pendingRun                `json:"pending,omitempty"`
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
	// ActiveTools are the deferred tools the session activated.
	ActiveTools []string `json:"active_tools,omitempty"`
}

// SaveSession captures the conversation, the pending approvals, the
// activated deferred tools and each extension's state ([SessionSaver]) as versioned JSON. It waits for a
// running Run. A state that is not JSON-compatible (NaN, Inf, a function)
// is an error naming the extension.
//
// SaveSession does not wait for a running turn: it may be called from
// hooks, middleware and lifecycle callbacks (the flight recorder does), and
// captures the conversation as it stands. Extension savers may then run
// concurrently with the turn.
func (a *Agent) SaveSession(ctx context.Context) ([]byte, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	msgs, pending := a.history()
	d := sessionData{
		Version:   SessionVersion,
		SessionID: a.cfg.sessionID,
		Agent:     a.cfg.name,
		Model:     a.cfg.model,
		Messages:  msgs,
		Pending:   pending,
	}
	if act := a.Tools().Active(); len(act) > 0 {
		d.ActiveTools = act
	}
	if d.Messages == nil {
		d.Messages = []Message{}
	}
	snapshot := IsSnapshot(ctx)
	if snapshot {
		a.snapMu.Lock()
		defer a.snapMu.Unlock()
	}
	exts, _, err := a.saveExtensions(ctx, snapshot)
	if err != nil {
		return nil, err
	}
	b, err := encodeSession(d, exts)
	if err != nil {
		return nil, &SessionError{Op: "save", Reason: "encoding", Err: err}
	}
	return b, nil
}

// encodeSession encodes d with exts as its extensions: the bytes
// json.Marshal gives for d with d.Extensions = exts, without encoding/json
// checking, escaping and copying each state again (see appendStates).
func encodeSession(d sessionData, exts map[string]json.RawMessage) ([]byte, error) {
	active := d.ActiveTools
	d.Extensions, d.ActiveTools = nil, nil
	head, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	var tail []byte
	if len(active) > 0 {
		if tail, err = json.Marshal(active); err != nil {
			return nil, err
		}
	}
	b := make([]byte, 0, len(head)+len(tail)+statesLen(exts)+32)
	b = append(b, head[:len(head)-1]...) // without its closing brace
	if len(exts) > 0 {
		b = appendStates(append(b, `,"extensions":`...), exts)
	}
	if len(tail) > 0 {
		b = append(append(b, `,"active_tools":`...), tail...)
	}
	return append(b, '}'), nil
}

// appendStates appends the JSON object of the states, by sorted name:
// the bytes json.Marshal gives for exts, without encoding/json checking,
// escaping and copying each state again. The states must be
// json.Marshal's output, compact and HTML-escaped, as saveExtensions makes
// them (a spill extension's lists every stored result: hundreds of
// kilobytes for thousands).
func appendStates(b []byte, exts map[string]json.RawMessage) []byte {
	b = append(b, '{')
	for i, name := range slices.Sorted(maps.Keys(exts)) {
		if i > 0 {
			b = append(b, ',')
		}
		key, _ := json.Marshal(name) // a string always encodes
		b = append(append(append(b, key...), ':'), exts[name]...)
	}
	return append(b, '}')
}

// statesLen is about the length of appendStates' output, to size its
// buffer.
func statesLen(exts map[string]json.RawMessage) int {
	n := 2
	for name, raw := range exts {
		n += len(name) + len(raw) + 4
	}
	return n
}

// LoadSession builds an agent from opts (as [New] does: supply the provider,
// tools and extensions again) and restores a session saved by
// [Agent.SaveSession] into it: the session ID, the conversation, the pending
// approvals, the activated deferred tools and, through [SessionLoader],
// each extension's state, in install order; then hooks see
// [EventSessionStart] with Event.Restored set. Every saved extension name must be installed. A corrupt,
// truncated or newer-version session, a missing extension, or a failing
// loader is an error; the agent built for it is closed and nothing else is
// changed.
func LoadSession(ctx context.Context, data []byte, opts ...Option) (*Agent, error) {
	d, err := decodeSession(data)
	if err != nil {
		return nil, err
	}
	a, err := newAgent(append(slices.Clip(opts), WithSessionID(d.SessionID)))
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Agent, error) {
		return nil, errors.Join(err, a.Close(ctx))
	}
	if err := a.loadExtensions(ctx, d.Extensions); err != nil {
		return fail(err)
	}
	a.messages = d.Messages
	a.pending = d.Pending
	if len(d.ActiveTools) > 0 {
		// Kept whether or not the tools are in the catalog yet: a source
		// may add them later (a server that connects).
		a.regMu.Lock()
		a.activate(d.ActiveTools)
		a.unlockReg()
	}
	a.sessionStarted(ctx, true)
	return a, nil
}

// SaveExtensionState returns the state of each installed extension that
// implements [SessionSaver], as [Agent.SaveSession] saves it: a JSON object
// from the extension's name to its state. It is nil, and costs nothing,
// when no extension saves state. A durable runtime takes it between the
// steps of a run under [AsSnapshot] (an engine snapshot), and gives it to
// [Agent.LoadExtensionState] when it executes the run again after a crash,
// so that extensions continue from the state of the last recorded step.
// Like SaveSession it does not wait for a running turn.
//
// For a snapshot, an extension that implements [StateVersioner] is not
// asked again while its version stays the same: its last encoded state
// is reused, and when no extension changed the result is the previous
// snapshot's slice itself. Treat the result as read-only.
func (a *Agent) SaveExtensionState(ctx context.Context) (json.RawMessage, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	snapshot := IsSnapshot(ctx)
	if snapshot {
		a.snapMu.Lock()
		defer a.snapMu.Unlock()
	}
	exts, changed, err := a.saveExtensions(ctx, snapshot)
	if err != nil || exts == nil {
		return nil, err
	}
	if snapshot && !changed && a.snapOut != nil {
		return a.snapOut, nil
	}
	out := encodeExtensionStates(exts)
	if snapshot {
		a.snapOut = out
	}
	return out, nil
}

// encodeExtensionStates encodes the states of SaveExtensionState.
func encodeExtensionStates(exts map[string]json.RawMessage) json.RawMessage {
	return appendStates(make([]byte, 0, statesLen(exts)), exts)
}

// LoadExtensionState gives the extensions the states of a
// [Agent.SaveExtensionState], through [SessionLoader] in install order.
// Every named extension must be installed and able to load state, which
// is checked before any loads: an error names the extension and loads
// nothing. Malformed JSON is an error. The conversation, the pending
// approvals and the activated tools are not part of it and do not change.
func (a *Agent) LoadExtensionState(ctx context.Context, state json.RawMessage) error {
	if a.closed.Load() {
		return ErrClosed
	}
	var exts map[string]json.RawMessage
	if err := json.Unmarshal(state, &exts); err != nil {
		return &SessionError{Op: "load", Reason: "extension state is not a JSON object", Err: err}
	}
	if err := checkExtensionStates(exts); err != nil {
		return &SessionError{Op: "load", Reason: err.Error()}
	}
	return a.loadExtensions(ctx, exts)
}

// saveExtensions collects the savers' states; nil when there are none.
// With reuse (a snapshot; the caller holds snapMu), a [StateVersioner]
// whose version did not move since the last snapshot gives its last
// encoding without being asked; changed reports whether any state was
// encoded anew.
func (a *Agent) saveExtensions(ctx context.Context, reuse bool) (exts map[string]json.RawMessage, changed bool, err error) {
	for _, ec := range a.exts {
		sv, ok := ec.ext.(SessionSaver)
		if !ok {
			continue
		}
		if exts == nil {
			exts = map[string]json.RawMessage{}
		}
		vs, versioned := ec.ext.(StateVersioner)
		versioned = versioned && reuse
		var ver uint64
		if versioned {
			// Read before saving: a change while OnSaveSession runs moves
			// the version past ver, and the next snapshot saves again.
			ver = vs.StateVersion()
			if ec.snapRaw != nil && ec.snapVer == ver {
				exts[ec.name] = ec.snapRaw
				continue
			}
		}
		var state any
		err := safeCall(func() (err error) { state, err = sv.OnSaveSession(ctx, ec); return err })
		if err != nil {
			return nil, false, &SessionError{Op: "save", Reason: fmt.Sprintf("extension %q", ec.name), Err: err}
		}
		raw, err := json.Marshal(state)
		if err != nil {
			return nil, false, &SessionError{Op: "save", Reason: fmt.Sprintf("extension %q: state is not JSON-compatible", ec.name), Err: err}
		}
		exts[ec.name] = raw
		changed = true
		if versioned {
			ec.snapVer, ec.snapRaw = ver, raw
		}
	}
	return exts, changed, nil
}

// loadExtensions checks that every state has an installed loader, then
// loads them in install order.
func (a *Agent) loadExtensions(ctx context.Context, exts map[string]json.RawMessage) error {
	// Every name in error, in name order: the same state gives the same
	// error, whatever the map's order.
	var missing, noLoader []string
	for _, name := range slices.Sorted(maps.Keys(exts)) {
		i := slices.IndexFunc(a.exts, func(ec *ExtensionContext) bool { return ec.name == name })
		if i < 0 {
			missing = append(missing, strconv.Quote(name))
		} else if _, ok := a.exts[i].ext.(SessionLoader); !ok {
			noLoader = append(noLoader, strconv.Quote(name))
		}
	}
	switch {
	case len(missing) == 1:
		return &SessionError{Op: "load", Reason: fmt.Sprintf("saved state for extension %s, which is not installed", missing[0])}
	case len(missing) > 1:
		return &SessionError{Op: "load", Reason: fmt.Sprintf("saved state for extensions %s, which are not installed", strings.Join(missing, ", "))}
	case len(noLoader) > 0:
		return &SessionError{Op: "load", Reason: fmt.Sprintf("saved state for extension %s, which cannot load state (no OnLoadSession)", strings.Join(noLoader, ", "))}
	}
	// A loaded state is new: the next snapshot asks the extensions again,
	// whatever their versions say.
	a.snapMu.Lock()
	a.snapOut = nil
	for _, ec := range a.exts {
		ec.snapRaw = nil
	}
	a.snapMu.Unlock()
	for _, ec := range a.exts {
		state, ok := exts[ec.name]
		if !ok {
			continue
		}
		ld := ec.ext.(SessionLoader)
		if err := safeCall(func() error { return ld.OnLoadSession(ctx, ec, state) }); err != nil {
			return &SessionError{Op: "load", Reason: fmt.Sprintf("extension %q", ec.name), Err: err}
		}
	}
	return nil
}

// checkExtensionStates checks the names and JSON of extension states.
func checkExtensionStates(exts map[string]json.RawMessage) error {
	for name, raw := range exts {
		if name == "" {
			return errors.New("extension state under an empty name")
		}
		if !json.Valid(raw) {
			return fmt.Errorf("extension %q: invalid JSON", name)
		}
	}
	return nil
}

// decodeSession parses and checks a saved session.
func decodeSession(data []byte) (*sessionData, error) {
	loadErr := func(reason string, err error) error { return &SessionError{Op: "load", Reason: reason, Err: err} }
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, loadErr("not a session (corrupt or truncated JSON)", err)
	}
	switch {
	case head.Version == nil:
		return nil, loadErr("no version field", nil)
	case *head.Version > SessionVersion:
		return nil, loadErr(fmt.Sprintf("version %d is newer than this harness reads (%d)", *head.Version, SessionVersion), nil)
	case *head.Version < 1:
		return nil, loadErr(fmt.Sprintf("invalid version %d", *head.Version), nil)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var d sessionData
	if err := dec.Decode(&d); err != nil {
		return nil, loadErr("malformed session", err)
	}
	if dec.More() {
		return nil, loadErr("trailing data after the session", nil)
	}
	if d.SessionID == "" {
		return nil, loadErr("empty session_id", nil)
	}
	if d.Messages == nil {
		return nil, loadErr("no messages field", nil)
	}
	for i, m := range d.Messages {
		if err := checkMessage(m); err != nil {
			return nil, loadErr(fmt.Sprintf("message %d", i), err)
		}
	}
	if p := d.Pending; p != nil {
		if err := checkPending(p, len(d.Messages)); err != nil {
			return nil, loadErr("pending approvals", err)
		}
	}
	for _, name := range d.ActiveTools {
		if name == "" {
			return nil, loadErr("active_tools: an empty tool name", nil)
		}
	}
	if err := checkExtensionStates(d.Extensions); err != nil {
		return nil, loadErr(err.Error(), nil)
	}
	return &d, nil
}

func checkMessage(m Message) error {
	if !m.Role.valid() {
		return fmt.Errorf("unknown role %q", m.Role)
	}
	for j, p := range m.Content {
		ok := false
		switch p.Type {
		case PartText, PartReasoning:
			ok = p.ToolCall == nil && p.ToolResult == nil && p.Media == nil
		case PartToolCall:
			ok = p.ToolCall != nil && p.ToolResult == nil && p.Media == nil && p.ToolCall.Name != "" && m.Role == RoleAssistant &&
				(len(p.ToolCall.Input) == 0 || json.Valid(p.ToolCall.Input))
		case PartToolResult:
			ok = p.ToolResult != nil && p.ToolCall == nil && p.Media == nil && m.Role == RoleTool
			if ok {
				for k := range p.ToolResult.Parts {
					if err := checkContentPart(&p.ToolResult.Parts[k]); err != nil {
						return fmt.Errorf("part %d: result part %d: %v", j, k, err)
					}
				}
			}
		case PartImage, PartDocument, PartAudio:
			if m.Role == RoleTool {
				return fmt.Errorf("part %d: a %q part in a tool message", j, p.Type)
			}
			if err := checkContentPart(&p); err != nil {
				return fmt.Errorf("part %d: %v", j, err)
			}
			ok = true
		}
		if !ok {
			return fmt.Errorf("part %d: malformed %q part", j, p.Type)
		}
	}
	return nil
}

func checkPending(p *pendingRun, nmsg int) error {
	switch {
	case p.RunID == "":
		return errors.New("empty run_id")
	case len(p.Calls) == 0 || len(p.Results) != len(p.Calls):
		return errors.New("calls and results do not match")
	case len(p.Requests) == 0:
		return errors.New("no approval requests")
	case p.MsgStart < 0 || p.MsgStart > nmsg || p.Steps < 0:
		return errors.New("position out of range")
	}
	for _, r := range p.Requests {
		i := slices.IndexFunc(p.Calls, func(c ToolCall) bool { return c.ID == r.ID })
		if i < 0 || p.Results[i] != nil {
			return fmt.Errorf("request %q names no waiting call", r.ID)
		}
	}
	for i, r := range p.Results {
		if r == nil && !slices.ContainsFunc(p.Requests, func(q ApprovalRequest) bool { return q.ID == p.Calls[i].ID }) {
			return fmt.Errorf("call %q has neither a result nor a request", p.Calls[i].ID)
		}
	}
	return nil
}

type snapshotKey struct{}

// AsSnapshot marks ctx for an [Agent.SaveSession] taken to observe the
// agent, such as a flight recorder's snapshot, rather than to persist the
// session. A [SessionSaver] must then take no ownership action: a spill
// extension, for example, retains its files for a persisted session but not
// for a snapshot.
func AsSnapshot(ctx context.Context) context.Context {
	return context.WithValue(ctx, snapshotKey{}, true)
}

// IsSnapshot reports whether ctx was marked by [AsSnapshot].
func IsSnapshot(ctx context.Context) bool {
	v, _ := ctx.Value(snapshotKey{}).(bool)
	return v
}
