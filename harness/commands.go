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
	// already been recorded, so its recorded result was used.
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

// runCommand resolves and runs the command input names, or returns the
// run recorded under the run ID. recorded is true when the caller gave
// the run ID.
func (a *Agent) runCommand(ctx context.Context, s *snapshot, runID string, recorded bool, name, args string) (*CommandRun, error) {
	c := s.commands[name]
	if c == nil {
		return nil, unknownCommand(s, name)
	}
	if recorded {
		cr, found, err := a.commandRecord(ctx, runID)
		if err != nil {
			return nil, fmt.Errorf("harness: reading the record of command run %q: %w", runID, err)
		}
		if found {
			if cr.Name != name || cr.Args != args {
				return nil, fmt.Errorf("%w: %q already ran /%s %s, not /%s %s", ErrInvalidRunID, runID, cr.Name, cr.Args, name, args)
			}
			cr.Replayed = true
			return cr, nil
		}
	}
	cr := &CommandRun{Name: name, Args: args}
	err := safeCall(func() (err error) { cr.CommandResult, err = c.Run(ctx, args); return err })
	if err != nil {
		return cr, fmt.Errorf("harness: command /%s: %w", name, err)
	}
	if recorded {
		if err := a.recordCommand(ctx, runID, cr); err != nil {
			// The command ran: failing the run would make the caller retry
			// it, and run it twice. The record is lost; say so.
			a.logger.Error("harness: recording a command run failed; a retry of this run ID would run it again",
				"command", name, "run_id", runID, "err", err)
		}
	}
	return cr, nil
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

func (a *Agent) commandRecord(ctx context.Context, runID string) (*CommandRun, bool, error) {
	b, scope, ok := a.commandStore()
	if !ok {
		cr, found := a.cmdRuns[runID]
		return cr, found, nil
	}
	raw, found, err := b.Get(ctx, scope, runID)
	if err != nil || !found {
		return nil, false, err
	}
	cr := &CommandRun{}
	if err := json.Unmarshal(raw, cr); err != nil {
		return nil, false, fmt.Errorf("corrupt record: %w", err)
	}
	return cr, true, nil
}

func (a *Agent) recordCommand(ctx context.Context, runID string, cr *CommandRun) error {
	b, scope, ok := a.commandStore()
	if !ok {
		if a.cmdRuns == nil {
			a.cmdRuns = map[string]*CommandRun{}
		}
		c := *cr
		a.cmdRuns[runID] = &c
		return nil
	}
	raw, err := json.Marshal(cr)
	if err != nil {
		return err
	}
	return b.Put(context.WithoutCancel(ctx), scope, runID, raw)
}

// command runs the command of a Run's input and sets res.Command. done is
// true when the run ends with it: the command had no prompt, or failed.
// An unknown command, or a record that cannot be read, leaves
// res.Command nil and returns the error.
func (a *Agent) command(ctx context.Context, res *RunResult, recorded bool, name, args string) (done bool, err error) {
	s := a.snap.Load()
	cr, err := a.runCommand(ctx, s, res.RunID, recorded, name, args)
	if cr == nil {
		return true, err
	}
	res.Command = cr
	if err != nil {
		res.Status, res.Err = StatusFailed, err
	} else if cr.Prompt == "" {
		res.Text = cr.Output
	}
	if len(s.hooks[EventCommand]) > 0 {
		a.emit(ctx, s, &Event{Type: EventCommand, RunID: res.RunID, Command: cr, Err: err})
	}
	return err != nil || cr.Prompt == "", err
}
