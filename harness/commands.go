package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
)

var (
	// ErrUnknownCommand is returned by [Agent.Run] for "/name" input that
	// names no registered command. The error lists the available ones.
	ErrUnknownCommand = errors.New("harness: unknown command")
	// ErrDuplicateCommand is returned by [ExtensionContext.RegisterCommand]
	// for a name already registered.
	ErrDuplicateCommand = errors.New("harness: duplicate command")
)

// Command is a slash command: [Agent.Run] with the input "/name args"
// runs it instead of sending the input to the model.
type Command struct {
	// Name is what follows the slash: a letter, then letters, digits,
	// '_', '-', '.' or ':', at most 64 bytes. Required.
	Name string
	// Description says what the command does, for listings.
	Description string
	// Run runs the command with the rest of the input (trimmed; "" when
	// none). It runs under the agent's run lock: it must not call Run or
	// Resume of the same agent. A returned error fails the run; a panic
	// is recovered as one.
	Run func(ctx context.Context, args string) (CommandResult, error)
}

// CommandResult is what a [Command] returns.
type CommandResult struct {
	// Output is text for the caller; it is not sent to the model.
	Output string `json:"output,omitempty"`
	// Prompt, when not empty, becomes the user message of an ordinary run
	// that follows at once, as if the user had typed it.
	Prompt string `json:"prompt,omitempty"`
}

// CommandRun reports, in [RunResult.Command] and [Event.Command], the
// slash command a run's input named.
type CommandRun struct {
	Name string `json:"name"`
	Args string `json:"args"`
	CommandResult
	// Replayed is true when the command did not run now: the run ID was
	// given with [ContextWithRunID] and a command run under that ID had
	// already been recorded, so its recorded result was used (and, for a
	// prompt on an agent without a step runner, the recorded outcome of
	// the prompt's run: see [Agent.Run]).
	Replayed bool `json:"-"`
}

// RegisterCommand registers c. Closing the handle removes it.
func (ec *ExtensionContext) RegisterCommand(c Command) (*Handle, error) {
	if err := validCommandName(c.Name); err != nil {
		return nil, err
	}
	if c.Run == nil {
		return nil, fmt.Errorf("harness: command %q has no Run function", c.Name)
	}
	a := ec.agent
	e := &c
	if err := a.lockReg(); err != nil {
		return nil, err
	}
	defer a.unlockReg()
	if a.reg.commands[c.Name] != nil {
		return nil, fmt.Errorf("%w: /%s is already registered", ErrDuplicateCommand, c.Name)
	}
	if a.reg.commands == nil {
		a.reg.commands = map[string]*Command{}
	}
	a.reg.commands[c.Name] = e
	a.changed()
	return a.track(ec, func() {
		if a.reg.commands[c.Name] == e {
			delete(a.reg.commands, c.Name)
		}
	}), nil
}

func validCommandName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("harness: command name %q: want 1 to 64 bytes", name)
	}
	for i, r := range name {
		switch {
		case r < unicode.MaxASCII && unicode.IsLetter(r):
		case i > 0 && (r < unicode.MaxASCII && unicode.IsDigit(r) || strings.ContainsRune("_-.:", r)):
		default:
			return fmt.Errorf("harness: command name %q: want a letter, then letters, digits, '_', '-', '.' or ':'", name)
		}
	}
	return nil
}

// parseCommand splits "/name args" input. ok is false for input that does
// not name a command: no leading slash, or a first word that is not a
// command name ("/etc/hosts"), which Run sends to the model as it is.
func parseCommand(input string) (name, args string, ok bool) {
	if len(input) < 2 || input[0] != '/' {
		return "", "", false
	}
	name, args, _ = strings.Cut(input[1:], " ")
	if i := strings.IndexFunc(name, unicode.IsSpace); i >= 0 {
		name, args = name[:i], name[i:]+" "+args
	}
	if validCommandName(name) != nil {
		return "", "", false
	}
	return name, strings.TrimSpace(args), true
}

// commandsNamespace is the storage namespace of recorded command runs; it
// is not a valid extension namespace, so none can collide with it.
const commandsNamespace = "_commands"

// commandRecord is what a recorded command run keeps under its run ID:
// the command's run and, for a prompt on an agent without a step runner,
// the outcome of the run that the prompt started.
type commandRecord struct {
	CommandRun
	// Outcome is the prompt's run's outcome once it ended (paused
	// included, updated when Resume ends it); nil before, and always with
	// a step runner, which records the run's steps itself.
	Outcome *runOutcome `json:"outcome,omitempty"`
}

// runOutcome is the JSON-safe part of a RunResult.
type runOutcome struct {
	Status  Status            `json:"status"`
	Text    string            `json:"text,omitempty"`
	Steps   int               `json:"steps,omitempty"`
	Usage   Usage             `json:"usage"`
	Cost    float64           `json:"cost,omitempty"`
	Pending []ApprovalRequest `json:"pending,omitempty"`
	Err     string            `json:"error,omitempty"`
}

// recordsOutcome reports whether the agent records the outcome of a
// command's prompt run: only without a step runner. A runner (a durable
// runtime) records the run's steps, so a prompt run executed again under
// the same run ID replays them, and a runtime dedupes whole runs by ID.
func (a *Agent) recordsOutcome() bool { return a.cfg.steps == nil }

// runCommand resolves and runs the command input names, or returns the
// run recorded under the run ID. recorded is true when the caller gave
// the run ID.
func (a *Agent) runCommand(ctx context.Context, s *snapshot, runID string, recorded bool, name, args string) (*commandRecord, error) {
	c := s.commands[name]
	if c == nil {
		return nil, unknownCommand(s, name)
	}
	if recorded {
		rec, found, err := a.commandRecord(ctx, runID)
		if err != nil {
			return nil, fmt.Errorf("harness: reading the record of command run %q: %w", runID, err)
		}
		if found {
			if rec.Name != name || rec.Args != args {
				return nil, fmt.Errorf("%w: %q already ran /%s %s, not /%s %s", ErrInvalidRunID, runID, rec.Name, rec.Args, name, args)
			}
			rec.Replayed = true
			return rec, nil
		}
	}
	rec := &commandRecord{CommandRun: CommandRun{Name: name, Args: args}}
	err := safeCall(func() (err error) { rec.CommandResult, err = c.Run(ctx, args); return err })
	if err != nil {
		return rec, fmt.Errorf("harness: command /%s: %w", name, err)
	}
	if recorded {
		// Recorded before the prompt's run starts: a retry that finds the
		// record does not submit the prompt again.
		if err := a.recordCommand(ctx, runID, rec); err != nil {
			// The command ran: failing the run would make the caller retry
			// it, and run it twice. The record is lost; say so.
			a.logger.Error("harness: recording a command run failed; a retry of this run ID would run it again",
				"command", name, "run_id", runID, "err", err)
		}
	}
	return rec, nil
}

func unknownCommand(s *snapshot, name string) error {
	if len(s.commands) == 0 {
		return fmt.Errorf("%w /%s: this agent has no commands (start the message with // to send a leading slash to the model)", ErrUnknownCommand, name)
	}
	names := slices.Sorted(maps.Keys(s.commands))
	for i, n := range names {
		names[i] = "/" + n
	}
	return fmt.Errorf("%w /%s; available commands: %s", ErrUnknownCommand, name, strings.Join(names, ", "))
}

// commandStore returns where command runs are recorded: the agent's
// storage when it has one and the session ID can name a scope.
func (a *Agent) commandStore() (StorageBackend, StorageScope, bool) {
	if a.store == nil || validStorageName("session ID", a.cfg.sessionID) != nil {
		return nil, StorageScope{}, false
	}
	return a.store, StorageScope{Namespace: commandsNamespace, Session: a.cfg.sessionID}, true
}

func (a *Agent) commandRecord(ctx context.Context, runID string) (*commandRecord, bool, error) {
	b, scope, ok := a.commandStore()
	if !ok {
		rec, found := a.cmdRuns[runID]
		if found {
			c := *rec
			rec = &c
		}
		return rec, found, nil
	}
	raw, found, err := b.Get(ctx, scope, runID)
	if err != nil || !found {
		return nil, false, err
	}
	rec := &commandRecord{}
	if err := json.Unmarshal(raw, rec); err != nil {
		return nil, false, fmt.Errorf("corrupt record: %w", err)
	}
	return rec, true, nil
}

func (a *Agent) recordCommand(ctx context.Context, runID string, rec *commandRecord) error {
	b, scope, ok := a.commandStore()
	if !ok {
		if a.cmdRuns == nil {
			a.cmdRuns = map[string]*commandRecord{}
		}
		c := *rec
		a.cmdRuns[runID] = &c
		return nil
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return b.Put(context.WithoutCancel(ctx), scope, runID, raw)
}

// recordOutcome adds the outcome of the run that a recorded command's
// prompt started (res) to the command's record; cr is the command's run,
// read from the record when nil (on Resume). A failure is logged: the run
// happened, and a retry then fails rather than run it again.
func (a *Agent) recordOutcome(ctx context.Context, cr *CommandRun, res *RunResult) {
	if cr == nil {
		old, found, err := a.commandRecord(context.WithoutCancel(ctx), res.RunID)
		if err != nil || !found {
			a.logger.Error("harness: the record of a command's run is missing; its outcome is not recorded",
				"run_id", res.RunID, "err", err)
			return
		}
		cr = &old.CommandRun
	}
	rec := &commandRecord{CommandRun: *cr}
	rec.Replayed = false
	rec.Outcome = &runOutcome{Status: res.Status, Text: res.Text, Steps: res.Steps, Usage: res.Usage, Cost: res.Cost, Pending: res.Pending}
	if res.Err != nil {
		rec.Outcome.Err = res.Err.Error()
	}
	if err := a.recordCommand(ctx, res.RunID, rec); err != nil {
		a.logger.Error("harness: recording the outcome of a command's run failed; a retry of this run ID will fail instead of returning it",
			"command", rec.Name, "run_id", res.RunID, "err", err)
	}
}

// command runs the command of a Run's input and sets res.Command. done is
// true when the run ends with it: the command had no prompt, or failed,
// or its prompt's run was recorded already (res then has the recorded
// outcome). An unknown command, or a record that cannot be read, leaves
// res.Command nil and returns the error.
func (a *Agent) command(ctx context.Context, res *RunResult, recorded bool, name, args string) (done bool, err error) {
	s := a.snap.Load()
	rec, err := a.runCommand(ctx, s, res.RunID, recorded, name, args)
	if rec == nil {
		return true, err
	}
	cr := &rec.CommandRun
	res.Command = cr
	evErr := err // the command's failure, not its prompt's run's
	switch {
	case err != nil:
		res.Status, res.Err = StatusFailed, err
	case cr.Prompt == "":
		res.Text = cr.Output
	case cr.Replayed && a.recordsOutcome():
		// The prompt went to the model under this run ID before: it is not
		// submitted again. The result is the recorded outcome, when there
		// is one.
		err = replayOutcome(res, rec)
		if rec.Outcome == nil {
			evErr = err
		}
	}
	if len(s.hooks[EventCommand]) > 0 {
		a.emit(ctx, s, &Event{Type: EventCommand, RunID: res.RunID, Command: cr, Err: evErr})
	}
	return err != nil || cr.Prompt == "" || cr.Replayed && a.recordsOutcome(), err
}

// replayOutcome sets res to the outcome recorded in rec, and returns its
// error: the recorded error's text, or, when no outcome was recorded (the
// process stopped during the run), an error saying that the outcome is
// unknown.
func replayOutcome(res *RunResult, rec *commandRecord) error {
	o := rec.Outcome
	if o == nil {
		res.Status = StatusFailed
		res.Err = fmt.Errorf("%w: run %q already submitted the prompt of /%s to the model, and its outcome was not recorded (the run may not have ended); it is not submitted again: use a new run ID to submit it again",
			ErrInvalidRunID, res.RunID, rec.Name)
		return res.Err
	}
	res.Status, res.Text, res.Steps, res.Usage, res.Cost, res.Pending = o.Status, o.Text, o.Steps, o.Usage, o.Cost, o.Pending
	if o.Err != "" {
		res.Err = errors.New(o.Err)
	}
	return res.Err
}
