package harness

import (
	"context"
	"encoding/json"
	"fmt"
)

// ToolCallFunc adapts a function to [ToolCallMiddleware], as
// http.HandlerFunc adapts one to http.Handler: pass
// ToolCallFunc(fn) to WithMiddleware or AddMiddleware. The function may
// edit the call's input ([ToolCall.SetInput]), and return [Continue],
// [Block] with a reason for the model, or [Ask] with a reason for the
// approver: the run pauses, and the approval is saved with the session
// like any other (see [Agent.Resume]).
type ToolCallFunc func(ctx context.Context, call *ToolCall) (ToolAction, error)

// BeforeToolExecution calls f.
func (f ToolCallFunc) BeforeToolExecution(ctx context.Context, call *ToolCall) (ToolAction, error) {
	return f(ctx, call)
}

// ToolResultFunc adapts a function to [ToolResultMiddleware]: it may
// replace *result, or change its fields.
type ToolResultFunc func(ctx context.Context, call *ToolCall, result *ToolResult) error

// AfterToolExecution calls f.
func (f ToolResultFunc) AfterToolExecution(ctx context.Context, call *ToolCall, result *ToolResult) error {
	return f(ctx, call, result)
}

// DecodeInput decodes the call's JSON arguments into v, as json.Unmarshal
// does; an empty input decodes as {}.
func (c *ToolCall) DecodeInput(v any) error {
	in := c.Input
	if len(in) == 0 {
		in = json.RawMessage("{}")
	}
	if err := json.Unmarshal(in, v); err != nil {
		return fmt.Errorf("harness: decoding the arguments of tool call %q: %w", c.Name, err)
	}
	return nil
}

// SetInput replaces the call's arguments with v encoded as JSON. A
// middleware edits a call this way: decode, change, set. The old input is
// not written to, so the call as the model sent it stays intact. On error
// the input is unchanged.
func (c *ToolCall) SetInput(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("harness: encoding the arguments of tool call %q: %w", c.Name, err)
	}
	c.Input = b
	return nil
}
