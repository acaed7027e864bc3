package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// AgentTool wraps child as a tool named name: the model passes a task, the
// child runs it as one turn of its own conversation and its final text is
// the result. The child keeps its own tools, middleware and extensions; it
// inherits none of the parent's. Its run's context derives from the tool
// call's, so a span the parent opened for the call (tracing) contains the
// child's spans. A child run that pauses for approval is an error result:
// approve the child's calls through its own permission manager.
func AgentTool(child *Agent, name, description string) *Tool {
	return &Tool{
		Name:        name,
		Description: description,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","description":"The task for the subagent, in full."}},"required":["task"],"additionalProperties":false}`),
		Handler: func(ctx context.Context, input json.RawMessage) (string, error) {
			var in struct {
				Task string `json:"task"`
			}
			if err := json.Unmarshal(input, &in); err != nil {
				return "", &InputError{Err: err}
			}
			res, err := child.Run(ctx, in.Task)
			if err != nil {
				return "", fmt.Errorf("subagent %q: %w", child.Name(), err)
			}
			if res.Status == StatusPaused {
				return "", errors.New("subagent " + child.Name() + " paused awaiting approval")
			}
			return res.Text, nil
		},
	}
}
