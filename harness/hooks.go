package harness

import (
	"context"
	"time"
)

// HookEvent names a lifecycle event that hooks observe.
type HookEvent uint8

// The lifecycle events.
const (
	// EventRunStart fires when a run (or a resumed run) begins. Event.Input
	// holds the user message.
	EventRunStart HookEvent = iota + 1
	// EventRunEnd fires when a run ends, paused included. Event.Result holds
	// the result.
	EventRunEnd
	// EventModelRequestStart fires just before the provider is called, with
	// the final Event.Request.
	EventModelRequestStart
	// EventModelRequestEnd fires when the provider returned: Event.Response,
	// or Event.Err.
	EventModelRequestEnd
	// EventToolCallStart fires when a tool call enters the pipeline.
	EventToolCallStart
	// EventToolCallEnd fires with the call's final Event.ToolResult.
	EventToolCallEnd
	// EventApprovalRequested fires when a call needs approval: Event.Approval.
	EventApprovalRequested
	// EventError fires for an error that ends a run or a step: Event.Err.
	EventError
	// EventHookFailed fires when another hook returned an error or panicked:
	// Event.Err describes it, Event.FailedEvent names the event it observed.
	// It also reports a [ToolTransform] that panicked and was skipped:
	// FailedEvent is then 0 and Err an [*ExtensionError] with Op
	// "tool_transform" naming the extension. A failure of an
	// EventHookFailed hook is only logged.
	EventHookFailed
	// EventCommand fires when a slash command ran, or its recorded result
	// was used (see [Agent.Run]): Event.Command, and Event.Err when it
	// failed. A run that follows from the command's prompt has its own
	// EventRunStart.
	EventCommand
	// EventSessionStart fires when an agent's session begins: at the end
	// of [New] for a new session (with context.Background()), and of
	// [LoadSession] for a restored one, with Event.Restored set. A
	// process that restarts and builds the agent again sees it again.
	EventSessionStart
	// EventMessage fires when a message is added to the conversation —
	// the user's, the model's, the tool results — with Event.Message.
	EventMessage
	// EventToolUpdate fires when a running tool publishes metadata with
	// [Update]: Event.ToolCall and Event.Metadata.
	EventToolUpdate

	numHookEvents
)

var hookEventNames = [...]string{
	EventRunStart:          "run_start",
	EventRunEnd:            "run_end",
	EventModelRequestStart: "model_request_start",
	EventModelRequestEnd:   "model_request_end",
	EventToolCallStart:     "tool_call_start",
	EventToolCallEnd:       "tool_call_end",
	EventApprovalRequested: "approval_requested",
	EventError:             "error",
	EventHookFailed:        "hook_failed",
	EventCommand:           "command",
	EventSessionStart:      "session_start",
	EventMessage:           "message",
	EventToolUpdate:        "tool_update",
}

func (e HookEvent) String() string {
	if e > 0 && e < numHookEvents {
		return hookEventNames[e]
	}
	return "unknown"
}

// Event is what a hook receives. The fields that an event does not name are
// zero. Hooks must not modify what the pointers point at: hooks observe,
// middleware transforms.
type Event struct {
	Type      HookEvent
	Time      time.Time
	Agent     string // the agent's name
	SessionID string
	RunID     string
	// Step counts model requests of the run from 1; 0 outside a step.
	Step int

	Input string // EventRunStart: the user message
	// Attempt counts the executions of the run from 1 (EventRunStart); see
	// [ContextRecovered]. Recovered is Attempt > 1: a durable runtime
	// executes the run again after a crash.
	Attempt   int
	Recovered bool

	Request  *ModelRequest  // model events
	Response *ModelResponse // EventModelRequestEnd
	// Duration is the time the model request or tool call took (end
	// events): from the start event's Time to the end event's Time (the
	// start event's hooks included), each read once from the clock.
	Duration   time.Duration
	ToolCall   *ToolCall        // tool and approval events
	ToolResult *ToolResult      // EventToolCallEnd
	Approval   *ApprovalRequest // EventApprovalRequested
	Result     *RunResult       // EventRunEnd
	Err        error            // EventError, EventModelRequestEnd on failure, EventHookFailed
	// FailedEvent is the event whose hook failed (EventHookFailed).
	FailedEvent HookEvent
	// Command is the slash command that ran (EventCommand).
	Command *CommandRun
	// Restored marks the start of a session restored by LoadSession
	// (EventSessionStart).
	Restored bool
	// Message is the message added to the conversation (EventMessage).
	Message *Message
	// Metadata is what the tool published (EventToolUpdate).
	Metadata map[string]any
}

// Hook observes events. It receives the context of the step the event
// belongs to, spans included. An error or a panic is logged through the
// agent's slog.Logger and reported as EventHookFailed; it never fails the
// run. Hooks of one event run in registration order, synchronously: a slow
// hook slows the agent. Hooks of tool events may run concurrently when tool
// calls do.
//
// ev is the hook's until it returns, no longer: the engine reuses the
// memory of its run's, model requests' and tool calls' events for later
// events. A hook that keeps an event, or hands it to a goroutine that
// outlives the call, keeps a copy (*ev, as harnesstest.HookRecorder
// does); what the event's fields point to (the request, the response,
// the tool call and its result, the run's result) is not reused.
type Hook func(ctx context.Context, ev *Event) error

// AllHookEvents returns every hook event, in declaration order.
func AllHookEvents() []HookEvent {
	all := make([]HookEvent, 0, numHookEvents-1)
	for e := HookEvent(1); e < numHookEvents; e++ {
		all = append(all, e)
	}
	return all
}
