package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/durable"
	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

func main() {
	err := run(context.Background(), os.Stdout, os.Args[1:])
	var ue usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintln(os.Stderr, "durable example:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "durable example:", err)
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// crashRunID names the crash demo's run, so that the second invocation
// continues it.
const crashRunID = "charge-demo"

// executed records what this process actually ran (not replayed).
type executed struct {
	mu      sync.Mutex
	models  []int
	tools   map[string]bool
	attempt int // the run's execution, from its run-start event
}

func (e *executed) model(step int) {
	e.mu.Lock()
	e.models = append(e.models, step)
	e.mu.Unlock()
}

func (e *executed) tool(id string) {
	e.mu.Lock()
	e.tools[id] = true
	e.mu.Unlock()
}

func run(ctx context.Context, w io.Writer, args []string) error {
	fs := flag.NewFlagSet("durable", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	db := fs.String("db", filepath.Join(".harnessx", "runs.db"), "the database: a SQLite file (or sqlite:FILE), or a postgres:// URL")
	ask := fs.Bool("ask", false, "run an agent whose tool asks a question, and wait for the answer")
	reply := fs.Bool("reply", false, "answer the open question of run RUNID: -reply RUNID ANSWER")
	reset := fs.Bool("reset", false, "remove the database and the marker file first")
	worker := fs.String("worker", "", "run as worker ID on the queue \""+demoQueue+"\" until interrupted")
	submit := fs.Int("submit", 0, "submit N runs to the workers' queue and wait for them")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *reply && fs.NArg() != 2 || !*reply && fs.NArg() != 0 || *submit < 0 {
		return usageError{"usage: durable [-db FILE] [-reset] [-ask] | durable [-db FILE] -reply RUNID ANSWER | durable [-db FILE] -worker ID | durable [-db FILE] -submit N"}
	}
	dsn, file, err := database(*db)
	if err != nil {
		return usageError{err.Error()}
	}
	marker := filepath.Join(".harnessx", "charge-demo.crashed")
	if file != "" {
		marker = file + ".crashed"
	}
	if *reset {
		if file == "" {
			return usageError{"-reset removes a SQLite file; drop a Postgres database with psql"}
		}
		for _, f := range []string{file, file + "-wal", file + "-shm", marker} {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if *reply {
		// A process that only answers does not launch: it must not recover
		// (and so run) the runs of the process that waits.
		rt, err := durable.Open(ctx, dsn, durable.WithLogger(logger), durable.WithExecutorID("reply-cli"))
		if err != nil {
			return err
		}
		defer rt.Close(ctx)
		return answer(ctx, w, rt, fs.Arg(0), fs.Arg(1))
	}

	switch {
	case *worker != "":
		return work(ctx, w, dsn, *worker, logger)
	case *submit > 0:
		return submitRuns(ctx, w, dsn, *submit, logger)
	}

	// The runs' spans go to .harnessx/traces.jsonl (or wherever the
	// environment says): "go run ./cmd/flightrec trace --last" shows the
	// recovered run's span and its link to the crashed one.
	tp, err := exporters.FromEnv(ctx, exporters.WithLogger(logger))
	if err != nil {
		return err
	}
	defer tp.Shutdown(context.WithoutCancel(ctx))
	ex := &executed{tools: map[string]bool{}}
	rt, err := durable.Open(ctx, dsn, durable.WithLogger(logger))
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	if err := rt.Register("billing", billing(ex, marker, tp)); err != nil {
		return err
	}
	if err := rt.Register("asker", asker(ex)); err != nil {
		return err
	}
	// Launch recovers the runs this process (executor "local") left
	// unfinished: after a crash, the charge demo continues here, in the
	// background, before Run below even asks for it.
	if err := rt.Launch(ctx); err != nil {
		return err
	}
	if *ask {
		return askDemo(ctx, w, rt)
	}
	fmt.Fprintf(w, "run %s: starting or continuing\n", crashRunID)
	res, err := rt.Run(ctx, "billing", "Refund order 42 and charge the fee.", durable.WithRunID(crashRunID))
	if err != nil {
		return err
	}
	report(w, res, ex)
	return nil
}

// database turns -db into a DSN: a file or "sqlite:FILE" is SQLite (file
// is its path), a postgres:// or postgresql:// URL is Postgres; anything
// else is refused rather than taken for a file name.
func database(db string) (dsn, file string, err error) {
	switch {
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		return db, "", nil
	case strings.HasPrefix(db, "sqlite:"):
		file = strings.TrimPrefix(db, "sqlite:")
	case strings.Contains(db, "://"):
		return "", "", fmt.Errorf("-db %q: not a SQLite file nor a postgres:// URL", redactURL(db))
	case strings.Contains(db, "="):
		// A key=value DSN may hold a password: it is not echoed.
		return "", "", errors.New("-db: not a SQLite file nor a postgres:// URL (give a key=value DSN as a postgres:// URL)")
	default:
		file = db
	}
	if file == "" {
		return "", "", errors.New("-db: empty file name")
	}
	return "sqlite:" + file, file, nil
}

// redactURL hides the password of a URL in messages.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return s
}

// demoQueue is the workers' queue.
const demoQueue = "demo"

// work is a worker: it runs the queue's runs, one at a time, until
// SIGINT or SIGTERM. A worker that dies leaves its runs to the others
// once its lease expires.
func work(ctx context.Context, w io.Writer, dsn, id string, logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	rt, err := durable.Open(ctx, dsn, durable.WithLogger(logger), durable.WithExecutorID(id),
		durable.WithQueue(demoQueue), durable.WithWorkerConcurrency(1), durable.WithLease(5*time.Second))
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	if err := rt.Register("greeter", greeter(w, id)); err != nil {
		return err
	}
	if err := rt.Launch(ctx); err != nil {
		if errors.Is(err, durable.ErrExecutorInUse) {
			return fmt.Errorf("%w (is another \"-worker %s\" running?)", err, id)
		}
		return err
	}
	fmt.Fprintf(w, "worker %s: waiting for runs on queue %q (Ctrl-C stops it)\n", id, demoQueue)
	<-ctx.Done()
	fmt.Fprintf(w, "worker %s: stopping\n", id)
	return nil
}

// greeter is the workers' agent: its tool says which worker ran it.
func greeter(w io.Writer, worker string) durable.Factory {
	return func(ctx context.Context) ([]harness.Option, error) {
		type none struct{}
		whoami := harness.MustTool(harness.NewTool("whoami", "Say which worker runs this.", func(ctx context.Context, _ none) (string, error) {
			fmt.Fprintf(w, "worker %s: runs %s\n", worker, harness.ExecutionKey(ctx))
			time.Sleep(300 * time.Millisecond) // some work, so that the runs spread
			return "handled by " + worker, nil
		}))
		whoami.ReplayPolicy = harness.ReplaySafe
		model := harness.ProviderFunc(func(ctx context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
			if req.Step == 1 {
				return toolCall(harnesstest.Call("w1", "whoami", json.RawMessage(`{}`))), nil
			}
			last := req.Messages[len(req.Messages)-1].Content[0].ToolResult
			return &harness.ModelResponse{Message: harness.AssistantMessage(last.Content), StopReason: harness.StopEndTurn, Provider: "scripted"}, nil
		})
		// A run that another worker started and this one continues (its
		// worker stopped, and the lease moved the run here) says so.
		takeover := harness.WithHooks(func(_ context.Context, ev *harness.Event) error {
			if ev.Recovered {
				fmt.Fprintf(w, "worker %s: took over run %s (execution %d): the worker that ran it stopped\n", worker, ev.RunID, ev.Attempt)
			}
			return nil
		}, harness.EventRunStart)
		return []harness.Option{harness.WithProvider(model), harness.WithModel("scripted-1"), harness.WithTools(whoami), takeover}, nil
	}
}

// submitRuns is a client: it submits n runs to the workers' queue, without
// launching (it runs nothing itself), and waits for each.
func submitRuns(ctx context.Context, w io.Writer, dsn string, n int, logger *slog.Logger) error {
	rt, err := durable.Open(ctx, dsn, durable.WithLogger(logger), durable.WithExecutorID("client"), durable.WithQueue(demoQueue))
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	ids := make([]string, n)
	for i := range ids {
		if ids[i], err = rt.Submit(ctx, "greeter", "Who runs this?"); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "submitted %d runs to queue %q\n", n, demoQueue)
	for _, id := range ids {
		res, err := rt.Wait(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "run %s %s: %s\n", id, res.Status, res.Text)
	}
	return nil
}

// billing is the crash demo's agent: lookup (safe to repeat), then
// charge (not safe to repeat), which kills its process on its first
// attempt.
func billing(ex *executed, marker string, tp trace.TracerProvider) durable.Factory {
	return func(ctx context.Context) ([]harness.Option, error) {
		type order struct {
			Order int `json:"order" jsonschema:"the order number"`
		}
		lookup := harness.MustTool(harness.NewTool("lookup", "Look an order up.", func(ctx context.Context, in order) (string, error) {
			ex.tool("lookup")
			return fmt.Sprintf("order %d: 30 EUR, paid", in.Order), nil
		}))
		lookup.ReplayPolicy = harness.ReplaySafe
		charge := harness.MustTool(harness.NewTool("charge", "Charge the fee of an order.", func(ctx context.Context, in order) (string, error) {
			ex.tool("charge")
			if _, err := os.Stat(marker); errors.Is(err, os.ErrNotExist) {
				if err := os.WriteFile(marker, nil, 0o644); err != nil {
					return "", err
				}
				fmt.Println("charge: the process dies in the middle of the charge (SIGKILL)")
				fmt.Println("run the same command again: the run continues from its last recorded step")
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				time.Sleep(time.Hour)
			}
			return "charged 2 EUR (key " + harness.ExecutionKey(ctx) + ")", nil
		}))
		charge.ReplayPolicy = harness.ReplayUnsafe
		model := harness.ProviderFunc(func(ctx context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
			ex.model(req.Step)
			switch req.Step {
			case 1:
				return toolCall(harnesstest.Call("c1", "lookup", order{42})), nil
			case 2:
				return toolCall(harnesstest.Call("c2", "charge", order{42})), nil
			}
			last := req.Messages[len(req.Messages)-1].Content[0].ToolResult
			return &harness.ModelResponse{Message: harness.AssistantMessage("The charge's outcome is " + string(last.Status) + "; I will check the ledger before charging again."),
				StopReason: harness.StopEndTurn, Provider: "scripted", Model: "scripted-1"}, nil
		})
		started := harness.WithHooks(func(_ context.Context, ev *harness.Event) error {
			ex.mu.Lock()
			ex.attempt = ev.Attempt
			ex.mu.Unlock()
			return nil
		}, harness.EventRunStart)
		return []harness.Option{harness.WithProvider(model), harness.WithModel("scripted-1"), harness.WithTools(lookup, charge), started,
			harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp)))}, nil
	}
}

func toolCall(c harness.ToolCall) *harness.ModelResponse {
	return &harness.ModelResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: []harness.Part{{Type: harness.PartToolCall, ToolCall: &c}}},
		StopReason: harness.StopToolUse, Provider: "scripted", Model: "scripted-1"}
}

// report prints what this process ran, what it replayed from the
// database, and which call it reported interrupted.
func report(w io.Writer, res *harness.RunResult, ex *executed) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.attempt > 1 {
		fmt.Fprintf(w, "run %s: recovered, execution %d (its span says harnessx.recovered and links to the crashed one: go run ./cmd/flightrec trace --last)\n", res.RunID, ex.attempt)
	}
	ran := map[int]bool{}
	for _, s := range ex.models {
		ran[s] = true
	}
	for s := 1; s <= res.Steps; s++ {
		if ran[s] {
			fmt.Fprintf(w, "model request %d: ran\n", s)
		} else {
			fmt.Fprintf(w, "model request %d: replayed from the database\n", s)
		}
	}
	for _, m := range res.Messages {
		for _, p := range m.Content {
			r := p.ToolResult
			if r == nil {
				continue
			}
			switch {
			case r.Status == harness.ToolInterrupted:
				fmt.Fprintf(w, "tool %s (%s): reported interrupted, not run again (not safe to repeat)\n", r.Name, r.CallID)
			case ex.tools[r.Name]:
				fmt.Fprintf(w, "tool %s (%s): ran: %s\n", r.Name, r.CallID, r.Content)
			default:
				fmt.Fprintf(w, "tool %s (%s): skipped, its result replayed from the database: %s\n", r.Name, r.CallID, r.Content)
			}
		}
	}
	fmt.Fprintf(w, "run %s %s: %s\n", res.RunID, res.Status, res.Text)
}

// asker is the -ask demo's agent: its tool asks which environment to
// deploy to.
func asker(ex *executed) durable.Factory {
	return func(ctx context.Context) ([]harness.Option, error) {
		type none struct{}
		deploy := harness.MustTool(harness.NewTool("deploy", "Deploy, asking where.", func(ctx context.Context, _ none) (string, error) {
			ex.tool("deploy")
			a, err := harness.AskUser(ctx, harness.AskRequest{Kind: harness.AskInput, Prompt: "Deploy to which environment?"})
			if err != nil {
				return "", err
			}
			return "deployed to " + a.Text, nil
		}))
		deploy.ReplayPolicy = harness.ReplaySafe // an asking tool reruns from its start
		model := harness.ProviderFunc(func(ctx context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
			if req.Step == 1 {
				return toolCall(harnesstest.Call("d1", "deploy", json.RawMessage(`{}`))), nil
			}
			last := req.Messages[len(req.Messages)-1].Content[0].ToolResult
			return &harness.ModelResponse{Message: harness.AssistantMessage("Done: " + last.Content + "."), StopReason: harness.StopEndTurn, Provider: "scripted"}, nil
		})
		return []harness.Option{harness.WithProvider(model), harness.WithModel("scripted-1"), harness.WithTools(deploy)}, nil
	}
}

func askDemo(ctx context.Context, w io.Writer, rt *durable.Runtime) error {
	type result struct {
		res *harness.RunResult
		err error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		res, err := rt.Run(ctx, "asker", "Deploy the release.")
		done <- result{res, err}
	}()
	announced := false
	for {
		select {
		case r := <-done:
			if r.err != nil {
				return r.err
			}
			fmt.Fprintf(w, "run %s %s: %s\n", r.res.RunID, r.res.Status, r.res.Text)
			return nil
		case <-time.After(100 * time.Millisecond):
		}
		if announced {
			continue
		}
		p, err := rt.Pending(ctx)
		if err != nil {
			return err
		}
		for _, a := range p.Asks {
			fmt.Fprintf(w, "run %s asks %q (question %s)\nanswer from another terminal: durable -reply %s ANSWER\n", a.RunID, a.Request.Prompt, a.Request.ID, a.RunID)
			announced = true
		}
	}
}

// answer replies to the open question of a run.
func answer(ctx context.Context, w io.Writer, rt *durable.Runtime, runID, text string) error {
	p, err := rt.Pending(ctx, durable.PendingOf(runID))
	if err != nil {
		return err
	}
	for _, a := range p.Asks {
		if a.RunID != runID {
			continue
		}
		if err := rt.Reply(ctx, runID, a.Request.ID, harness.Answer{Text: text}); err != nil {
			return err
		}
		fmt.Fprintf(w, "answered %q to %q of run %s\n", text, a.Request.Prompt, runID)
		return nil
	}
	return fmt.Errorf("run %s has no open question", runID)
}
