package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// ToolHandler runs a tool. input is the JSON object of arguments, already
// validated against the tool's schema. The returned string is what the model
// reads; a returned error becomes an error result whose text is the error's.
// A handler should return promptly when ctx is done: the engine stops
// waiting for it then, and a handler that keeps running is abandoned.
type ToolHandler func(ctx context.Context, input json.RawMessage) (string, error)

// ReplayPolicy says whether a tool may run again when work is repeated, for
// example when a durable runtime recovers a run that crashed while the
// tool ran (see "Durable execution" in the package doc).
type ReplayPolicy uint8

const (
	// ReplayUnsafe, the default, marks a tool with external effects: a call
	// that a crash interrupted is not run again but reported to the model
	// as [ToolInterrupted].
	ReplayUnsafe ReplayPolicy = iota
	// ReplaySafe marks a tool that may run again from its start without
	// harm; only such a tool may call [AskUser].
	ReplaySafe
)

// String returns "safe" or "unsafe".
func (p ReplayPolicy) String() string {
	if p == ReplaySafe {
		return "safe"
	}
	return "unsafe"
}

// Tool is a function the model may call. Build one with [NewTool] (schema
// inferred from a Go type) or as a literal with an explicit InputSchema. Set
// the fields before registering the tool; the engine does not copy it and
// it must not change afterwards.
type Tool struct {
	// Name is the tool's unique name; required.
	Name string
	// Description tells the model what the tool does.
	Description string
	// InputSchema is the JSON schema of the arguments: an object schema.
	// Required for literal tools; NewTool infers it.
	InputSchema json.RawMessage
	// Handler runs the tool; required.
	Handler ToolHandler
	// Permission overrides the agent's [PermissionManager] for this tool.
	// The zero value, PermissionInherit, asks the manager (normally allow).
	Permission Permission
	// Concurrent lets calls of this tool in one step run in parallel with
	// other concurrent calls.
	Concurrent bool
	// ReplayPolicy says whether the tool may safely run again.
	ReplayPolicy ReplayPolicy
	// Timeout bounds one call; 0 means no bound beyond the run's context.
	Timeout time.Duration
	// Deferred keeps the tool in the catalog but out of the model's
	// offered tools until the session activates it (see [SessionTools]).
	// A call of a deferred tool that is not active gets the unknown-tool
	// error result.
	Deferred bool

	schema    *jsonschema.Resolved
	schemaSrc json.RawMessage // the InputSchema that schema was compiled from
	fast      *flatCheck
}

// Definition returns what the model is told about t.
func (t *Tool) Definition() ToolDefinition {
	return ToolDefinition{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
}

// prepare checks t and compiles its schema. It is idempotent.
func (t *Tool) prepare() error {
	if t == nil {
		return fmt.Errorf("%w: nil tool", ErrInvalidTool)
	}
	if t.Name == "" {
		return fmt.Errorf("%w: empty name", ErrInvalidTool)
	}
	if t.Handler == nil {
		return fmt.Errorf("%w: %q has no handler", ErrInvalidTool, t.Name)
	}
	if t.schema != nil && sameSlice(t.schemaSrc, t.InputSchema) {
		return nil // compiled; a copy with a new schema compiles it again
	}
	if len(t.InputSchema) == 0 {
		return fmt.Errorf("%w: %q has no input schema", ErrInvalidTool, t.Name)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(t.InputSchema, &s); err != nil {
		return fmt.Errorf("%w: %q: input schema: %v", ErrInvalidTool, t.Name, err)
	}
	if s.Type != "object" {
		return fmt.Errorf("%w: %q: input schema must have type \"object\", not %q", ErrInvalidTool, t.Name, s.Type)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return fmt.Errorf("%w: %q: input schema: %v", ErrInvalidTool, t.Name, err)
	}
	t.schema, t.schemaSrc = r, t.InputSchema
	t.fast = newFlatCheck(&s)
	return nil
}

// validate checks input against the schema and returns the normalized
// input ("{}" for an empty one).
func (t *Tool) validate(input json.RawMessage) (json.RawMessage, error) {
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage("{}")
	}
	if t.fast != nil && t.fast.check(input) {
		return input, nil
	}
	var v any
	if err := json.Unmarshal(input, &v); err != nil {
		return input, errors.New("arguments are not valid JSON: " + boundText(err.Error()))
	}
	if err := t.schema.Validate(v); err != nil {
		return input, errors.New("arguments do not match the schema: " + boundText(err.Error()))
	}
	return input, nil
}

// maxErrorText bounds the text of an invalid-arguments error. The schema
// validator and encoding/json quote the offending value in full, and a
// model may send a value of megabytes: the error result must stay small.
const maxErrorText = 1024

// boundText returns s when it is at most maxErrorText bytes, and otherwise
// its start and its end (where the validator says what was wanted) around
// a note of how much was cut, on UTF-8 boundaries.
func boundText(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	head, tail := maxErrorText/2, len(s)-maxErrorText/4
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + " … [" + strconv.Itoa(tail-head) + " bytes cut] … " + s[tail:]
}

// boundedError is an error whose text boundText cut. It unwraps to the
// original error.
type boundedError struct {
	err error
	msg string
}

func (e *boundedError) Error() string { return e.msg }
func (e *boundedError) Unwrap() error { return e.err }

// bound returns err, or an error with its text bounded by boundText that
// wraps it.
func bound(err error) error {
	if msg := err.Error(); len(msg) > maxErrorText {
		return &boundedError{err: err, msg: boundText(msg)}
	}
	return err
}

// NewTool builds a tool from a typed function. The input schema is inferred
// from In, which should be a struct: exported fields become properties
// named by their json tags; fields without omitempty or omitzero are
// required; a `jsonschema:"..."` tag gives a property's description. Unknown
// properties are rejected.
//
// The result is the string itself when Out is a string; Text, followed by
// Parts as [ToolResult.Parts], when Out is [ToolOutput] or *ToolOutput;
// and Out's JSON encoding otherwise.
func NewTool[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error)) (*Tool, error) {
	if fn == nil {
		return nil, fmt.Errorf("%w: %q has no function", ErrInvalidTool, name)
	}
	s, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: inferring the input schema: %v", ErrInvalidTool, name, err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: encoding the input schema: %v", ErrInvalidTool, name, err)
	}
	t := &Tool{
		Name:        name,
		Description: description,
		InputSchema: raw,
		Handler: func(ctx context.Context, input json.RawMessage) (string, error) {
			var in In
			if err := json.Unmarshal(input, &in); err != nil {
				// An input that the schema accepts may still not decode
				// (an integral number of a 10 MB literal for an int field);
				// the error quotes the value, so its text is bounded.
				return "", &InputError{Err: bound(err)}
			}
			out, err := fn(ctx, in)
			if err != nil {
				return "", err
			}
			switch v := any(out).(type) {
			case string:
				return v, nil
			case []byte:
				return string(v), nil
			case ToolOutput:
				return toolOutput(ctx, &v)
			case *ToolOutput:
				if v == nil {
					return "", nil
				}
				return toolOutput(ctx, v)
			}
			b, err := json.Marshal(out)
			if err != nil {
				return "", fmt.Errorf("encoding the result: %w", err)
			}
			return string(b), nil
		},
	}
	if err := t.prepare(); err != nil {
		return nil, err
	}
	return t, nil
}

// toolOutput adds o's parts to the call's result and returns its text.
func toolOutput(ctx context.Context, o *ToolOutput) (string, error) {
	if len(o.Parts) > 0 {
		if err := AddResultParts(ctx, o.Parts...); err != nil {
			return "", err
		}
	}
	return o.Text, nil
}

// MustTool returns t and panics if err is not nil. It is for tools built
// in package initialisation or tests: MustTool(NewTool(...)).
func MustTool(t *Tool, err error) *Tool {
	if err != nil {
		panic(err)
	}
	return t
}

// InputError is returned by a handler whose input does not decode. The
// engine reports it to the model as invalid arguments.
type InputError struct{ Err error }

func (e *InputError) Error() string { return "invalid arguments: " + e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Permission decides whether a tool call may run.
type Permission uint8

const (
	// PermissionInherit defers to the agent's PermissionManager.
	PermissionInherit Permission = iota
	// PermissionAllow runs the call.
	PermissionAllow
	// PermissionAsk pauses the run until the call is approved or denied.
	PermissionAsk
	// PermissionDeny refuses the call; the model receives an error result.
	PermissionDeny
)

func (p Permission) String() string {
	switch p {
	case PermissionAllow:
		return "allow"
	case PermissionAsk:
		return "ask"
	case PermissionDeny:
		return "deny"
	}
	return "inherit"
}

// PermissionManager decides calls of tools whose Permission is
// PermissionInherit. It may be called from several goroutines at once. A
// returned PermissionInherit means allow. The reason is shown to the
// model on deny and to the approver on ask.
type PermissionManager interface {
	Permission(ctx context.Context, tool *Tool, call *ToolCall) (p Permission, reason string)
}

// PermissionFunc adapts a function to [PermissionManager].
type PermissionFunc func(ctx context.Context, tool *Tool, call *ToolCall) (Permission, string)

// Permission calls f.
func (f PermissionFunc) Permission(ctx context.Context, tool *Tool, call *ToolCall) (Permission, string) {
	return f(ctx, tool, call)
}

// AllowAll returns the default permission manager: every call is allowed.
func AllowAll() PermissionManager { return allowAll{} }

type allowAll struct{}

func (allowAll) Permission(context.Context, *Tool, *ToolCall) (Permission, string) {
	return PermissionAllow, ""
}

var errToolTimeout = errors.New("tool timed out")
