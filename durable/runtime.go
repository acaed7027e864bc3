package durable

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite" // the default database
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/harnessx/harnessx/harness"
)

// Defaults of [Open].
const (
	// DefaultDSN is the database Open uses for an empty DSN: a SQLite file
	// under the working directory.
	DefaultDSN = "sqlite:.harnessx/runs.db"
	// DefaultAppName owns the runs in the database (see [WithAppName]).
	DefaultAppName = "harnessx"
	// DefaultAppVersion is the pinned application version (see
	// [WithAppVersion]). It changes when the steps a run records change:
	// "harnessx-2" kept tool-call markers out of DBOS's steps (see the
	// package doc); "harnessx-3" parks runs that wait for a person
	// (suspended calls are recorded and run again under
	// "<key>/answered/<n>") and records large media parts by reference.
	// Runs left pending by an older build recover only under a build of
	// their version: drain them with one before the upgrade, or run one
	// worker of each version meanwhile.
	DefaultAppVersion = "harnessx-3"
	// DefaultExecutorID is the executor ID of a single process (see
	// [WithExecutorID]).
	DefaultExecutorID = "local"
)

// Workflow names recorded in the database. They are part of the on-disk
// format: renaming one strands the runs recorded under the old name.
const (
	runWorkflowName      = "harnessx.run"
	askWorkflowName      = "harnessx.ask"
	approvalWorkflowName = "harnessx.approval"
	answerTopic          = "answer"
	decisionsTopic       = "decisions"
	// parkTimeout bounds a parked question or approval: DBOS has no
	// "forever". After it the ask fails and the run goes on with an error.
	parkTimeout = 365 * 24 * time.Hour
)

// Option configures [Open].
type Option func(*config)

type config struct {
	logs       *logState // what the logger knows of the runtime (see redactedLogger)
	appName    string
	appVersion string
	executorID string
	logger     *slog.Logger
	queue      string
	workers    int
	lease      time.Duration
	leaseSet   bool
	poll       time.Duration

	// Data at rest (seal.go, retention.go).
	keys         []PayloadKey
	keysSet      bool
	sealer       *sealer // nil: nothing is sealed
	retention    time.Duration
	retentionSet bool
}

// WithAppName sets the application name that owns the runs in the
// database (default "harnessx"): runtimes see, recover and dequeue only
// the runs of their own application name. It must match
// ^[a-z0-9-_]{3,256}$.
func WithAppName(name string) Option { return func(c *config) { c.appName = name } }

// WithAppVersion pins the application version (default "harnessx-3").
// A runtime recovers and dequeues only runs recorded under its own
// version. DBOS's own default is a hash of the binary, which strands every
// pending run after a rebuild; harnessx pins a fixed string instead. Bump
// it deliberately when a change makes old runs replay differently (other
// tools, another step order, another workflow input), and keep a process
// of the old version running until its runs have finished.
func WithAppVersion(v string) Option { return func(c *config) { c.appVersion = v } }

// WithExecutorID names this process for recovery (default "local").
// [Runtime.Launch] recovers only the pending runs recorded under its own
// executor ID, so a restarted process must reuse its ID: the default suits
// one process on one machine (SQLite). Several processes sharing one
// database (Postgres, several machines) each need a unique, stable ID
// (such as the host name, or a pod's ordinal); two live processes with
// the same ID both recover, and so both run, the same runs, and share one
// heartbeat, so that neither's death is seen. Runs of a dead executor
// whose ID is never reused are resumed elsewhere by the other workers'
// lease ([WithLease]).
func WithExecutorID(id string) Option { return func(c *config) { c.executorID = id } }

// WithLogger sets the logger DBOS and the runtime log to. The default is
// slog.Default() restricted to warnings and errors: DBOS logs every
// workflow at info level otherwise. Records pass through the built-in
// secret redaction first (see Data at rest in the package
// documentation), and while the runtime closes, DBOS's ERROR records
// about the contexts that Close cancels are logged at DEBUG.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithQueue enqueues runs on the named DBOS queue instead of running them
// in the process that calls [Runtime.Run] or [Runtime.Submit]: every
// launched runtime of the same application name and version with this
// option is a worker that listens to the queue and runs them, and the
// runtimes that only submit need not launch. A launched runtime with a
// queue also heartbeats and supervises the other workers ([WithLease]).
func WithQueue(name string) Option { return func(c *config) { c.queue = name } }

// WithWorkerConcurrency limits how many runs of the queue ([WithQueue])
// one worker runs at once (default 0: no limit). DBOS stores the limit
// with the queue in the database, not per process: give every worker the
// same limit (the last worker of the newest version to launch sets it).
// A run paused on approvals, or waiting in a tool for an answer, holds
// its slot.
func WithWorkerConcurrency(n int) Option { return func(c *config) { c.workers = n } }

// WithLease sets how long a worker may go without a heartbeat before the
// other workers consider it dead and resume its pending runs (default
// [DefaultLease], 30s). Each launched worker writes its heartbeat every
// lease/3 into a table of its own in the same database, and checks the
// others' as often. The lease runs in every launched runtime with
// [WithQueue]; WithLease turns it on without a queue too (the runs of a
// dead worker are then resumed on DBOS's internal queue), and a negative
// or zero d turns it off. A lease shorter than a stall of a live worker
// (a long GC pause, a suspended VM) moves runs that are still running:
// see the package documentation.
func WithLease(d time.Duration) Option {
	return func(c *config) { c.lease, c.leaseSet = d, true }
}

// WithPollInterval sets how often [Runtime.Wait] and its callers look at
// the database for a run's progress made by another process (default
// 100ms). Progress made in this process wakes them at once.
func WithPollInterval(d time.Duration) Option { return func(c *config) { c.poll = d } }

// Factory returns the options that build an agent: a provider, tools,
// extensions, a system prompt. The runtime adds its step runner (and, for
// a session, the saved session), and builds the agent with [harness.New]
// or [harness.LoadSession] for every run, recovered ones included, in
// whatever process runs it. A factory must return the same tools and
// extensions for the same name every time: a recovered run replays the
// recorded steps against them.
type Factory func(ctx context.Context) ([]harness.Option, error)

// Runtime runs agents durably on a DBOS system database. Open one per
// process, [Runtime.Register] the agents, [Runtime.Launch] it (which
// recovers the runs this process left unfinished), then [Runtime.Run].
// [Runtime.Resume], [Runtime.Reply], [Runtime.Pending] and [Runtime.Wait]
// work without Launch, from any process on the same database, and so do
// Run and [Runtime.Submit] with [WithQueue]. Its methods
// are safe for concurrent use.
type Runtime struct {
	dctx   dbos.Context
	cfg    config
	runner *runner
	queue  string // the runs' queue; "" runs them where they start
	dsn    string
	super  *supervisor
	lock   executorLock // held from Launch to Close
	retain *sweeper     // retention.go

	auxMu sync.Mutex
	aux   *leaseDB // see auxDB

	wakeStop context.CancelFunc // the waker loop (suspend.go)
	wakeWG   sync.WaitGroup

	cleanMu     sync.Mutex // see finished
	cleanCh     chan finishedRun
	cleanDone   chan struct{}
	cleanClosed bool

	mu       sync.Mutex
	agents   map[string]Factory
	launched bool
	closed   bool
	closeErr error
	changed  chan struct{} // closed and replaced when a local run changes state
}

// Open opens (creating when needed) the durable runtime's database and
// returns a runtime that is not launched. dsn is "sqlite:PATH" (a file,
// created with its directory; "" means [DefaultDSN]) or a Postgres URL or
// key=value DSN ("postgres://user:pass@host:5432/db?sslmode=disable"),
// which needs a role that may create the database and its schema, or a
// database migrated beforehand. A SQLite file that is not a database
// ([ErrNotDatabase]), that belongs to another application
// ([ErrForeignDatabase]), or whose schema is newer than this build's
// ([ErrSchemaTooNew]) is refused untouched. An in-memory SQLite database
// ("sqlite::memory:") is refused: DBOS's connections would each see a
// database of their own. On Postgres, processes opening one database at
// once migrate it one after the other, under an advisory lock that Open
// waits for as long as ctx allows.
func Open(ctx context.Context, dsn string, opts ...Option) (*Runtime, error) {
	cfg := config{appName: DefaultAppName, appVersion: DefaultAppVersion, executorID: DefaultExecutorID, poll: 100 * time.Millisecond, lease: DefaultLease}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(minLevel{slog.Default().Handler(), slog.LevelWarn})
	}
	if cfg.poll <= 0 {
		cfg.poll = 100 * time.Millisecond
	}
	cfg.logs = new(logState)
	cfg.logger = redactedLogger(cfg.logger, cfg.logs) // DBOS logs errors, which may hold secrets
	if !cfg.retentionSet {
		cfg.retention = DefaultRetention
	}
	if err := resolveKeys(&cfg); err != nil {
		return nil, err
	}
	if dsn == "" {
		dsn = DefaultDSN
	}
	if err := checkEnvOverrides(cfg); err != nil {
		return nil, err
	}
	path, file := sqlitePath(dsn)
	switch {
	case file:
		if err := checkSQLite(ctx, path); err != nil {
			return nil, err
		}
		if err := createPrivate(path); err != nil {
			return nil, err
		}
	case strings.HasPrefix(dsn, "sqlite:"):
		// DBOS opens several connections, and each would have a memory
		// database of its own; and nothing could recover its runs.
		return nil, fmt.Errorf("durable: %q names no file: an in-memory SQLite database does not work; give \"sqlite:PATH\"", dsn)
	}
	var dctx dbos.Context
	var err error
	if !strings.HasPrefix(dsn, "sqlite:") {
		// Processes opening one new database at once migrate it one
		// after the other: DBOS's migrations take no lock of their own.
		unlock, err := lockMigrations(ctx, dsn)
		if err != nil {
			return nil, fmt.Errorf("durable: open %s: %w", redactDSN(dsn), err)
		}
		defer unlock()
	}
	for attempt := 1; ; attempt++ {
		dctx, err = newDBOSContext(ctx, dbos.Config{
			AppName:            cfg.appName,
			DatabaseURL:        dsn,
			ApplicationVersion: cfg.appVersion,
			ExecutorID:         cfg.executorID,
			Logger:             cfg.logger,
			Serializer:         cfg.serializer(),
		})
		if err == nil || attempt == 5 || !migrationRace(err) {
			break
		}
		// Several processes opened a new Postgres database at once, and
		// another one's migration won: the schema is there, or soon.
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("durable: open %s: %w", redactDSN(dsn), err)
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
	if err != nil {
		return nil, fmt.Errorf("durable: open %s: %w", redactDSN(dsn), err)
	}
	rt := &Runtime{dctx: dctx, cfg: cfg, queue: cfg.queue, dsn: dsn, agents: map[string]Factory{}, changed: make(chan struct{})}
	rt.runner = &runner{rt: rt}
	if err := rt.checkKeys(ctx); err != nil {
		rt.closeAux()
		dbos.Shutdown(dctx, time.Second)
		return nil, err
	}
	dbos.RegisterWorkflow(dctx, rt.sealRun, dbos.WithWorkflowName(runWorkflowName))
	dbos.RegisterWorkflow(dctx, askWorkflow, dbos.WithWorkflowName(askWorkflowName))
	dbos.RegisterWorkflow(dctx, approvalWorkflow, dbos.WithWorkflowName(approvalWorkflowName))
	return rt, nil
}

// newDBOSContext makes the runtime's DBOS context. DBOS derives the
// context of everything it runs from the one it is given: ctx bounds the
// making only (a context cancelled after Open returns must not end the
// runtime), so DBOS gets ctx without its cancellation, and an Open whose
// ctx ends first returns at once and closes the context made late.
func newDBOSContext(ctx context.Context, cfg dbos.Config) (dbos.Context, error) {
	type made struct {
		dctx dbos.Context
		err  error
	}
	ch := make(chan made, 1)
	go func() {
		dctx, err := dbos.NewContext(context.WithoutCancel(ctx), cfg)
		ch <- made{dctx, err}
	}()
	select {
	case m := <-ch:
		return m.dctx, m.err
	case <-ctx.Done():
		go func() {
			if m := <-ch; m.err == nil {
				dbos.Shutdown(m.dctx, 5*time.Second)
			}
		}()
		return nil, context.Cause(ctx)
	}
}

// checkEnvOverrides refuses DBOS's environment variables that would
// silently replace the runtime's application version (DBOS__APPVERSION)
// or executor ID (DBOS__VMID): recovery and the lease depend on both.
func checkEnvOverrides(cfg config) error {
	for _, v := range []struct{ env, opt, want string }{
		{"DBOS__APPVERSION", "WithAppVersion", cfg.appVersion},
		{"DBOS__VMID", "WithExecutorID", cfg.executorID},
	} {
		if got := os.Getenv(v.env); got != "" && got != v.want {
			return fmt.Errorf("durable: the environment sets %s=%q, which would override %s(%q) inside DBOS: unset it, or pass the value with %s",
				v.env, got, v.opt, v.want, v.opt)
		}
	}
	return nil
}

// Register makes an agent available to runs under name. Register every
// agent before [Runtime.Launch]: recovery at launch builds the agents of
// the runs it recovers.
func (rt *Runtime) Register(name string, f Factory) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	switch {
	case name == "" || f == nil:
		return fmt.Errorf("%w: an agent needs a name and a factory", ErrRegistration)
	case rt.launched:
		return fmt.Errorf("%w: agent %q registered after Launch", ErrRegistration, name)
	case rt.agents[name] != nil:
		return fmt.Errorf("%w: agent %q registered twice", ErrRegistration, name)
	}
	rt.agents[name] = f
	return nil
}

// Launch starts the runtime and recovers the runs this executor (same
// executor ID, application name and version) left pending: they continue
// from their last recorded step, in the background. With [WithQueue] the
// runtime becomes a worker: it registers the queue (with
// [WithWorkerConcurrency]), runs the queue's runs, heartbeats, and
// resumes the runs of workers whose lease expired ([WithLease]). It may
// be called once.
func (rt *Runtime) Launch(ctx context.Context) error {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return ErrClosed
	}
	if rt.launched {
		rt.mu.Unlock()
		return errors.New("durable: Launch called twice")
	}
	rt.launched = true
	rt.mu.Unlock()
	// Before DBOS recovers this executor's runs: another live process
	// with the same ID would run them too.
	lock, err := rt.lockExecutor(ctx)
	if err != nil {
		rt.mu.Lock()
		rt.launched = false
		rt.mu.Unlock()
		if errors.Is(err, ErrExecutorInUse) {
			return err
		}
		return fmt.Errorf("durable: launch: lock executor ID %q: %w", rt.cfg.executorID, err)
	}
	rt.mu.Lock()
	rt.lock = lock
	rt.mu.Unlock()
	if rt.queue != "" {
		var qopts []dbos.QueueOption
		if rt.cfg.workers > 0 {
			qopts = append(qopts, dbos.WithWorkerConcurrency(rt.cfg.workers))
		}
		if _, err := dbos.RegisterQueue(rt.dctx, rt.queue, qopts...); err != nil {
			return fmt.Errorf("durable: register queue %q: %w", rt.queue, err)
		}
		dbos.ListenQueues(rt.dctx, rt.queue)
	}
	if err := dbos.Launch(rt.dctx); err != nil {
		return fmt.Errorf("durable: launch: %w", err)
	}
	rt.startSweeper()
	rt.startWaker()
	if rt.cfg.lease > 0 && (rt.queue != "" || rt.cfg.leaseSet) {
		s, err := startSupervisor(ctx, rt)
		if err != nil {
			return fmt.Errorf("durable: launch: %w", err)
		}
		rt.mu.Lock()
		rt.super = s
		rt.mu.Unlock()
	}
	return nil
}

// Close stops the runtime. Runs in flight stop where they are and stay
// pending in the database: the next Launch with the same executor ID
// recovers them. It waits for them to stop until ctx's deadline (10s
// without one). It is idempotent.
func (rt *Runtime) Close(ctx context.Context) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return rt.closeErr
	}
	rt.closed = true
	rt.cfg.logs.closing.Store(true)
	if rt.super != nil {
		rt.super.stop() // no heartbeat from here on: the others may resume what stays pending
	}
	rt.stopSweeper()
	rt.stopWaker()
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	if err := dbos.Shutdown(rt.dctx, timeout); err != nil {
		rt.closeErr = fmt.Errorf("durable: close: %w", err)
	}
	rt.cleanMu.Lock()
	rt.cleanClosed = true
	ch, done := rt.cleanCh, rt.cleanDone
	rt.cleanMu.Unlock()
	if ch != nil {
		close(ch)
		<-done
	}
	rt.auxMu.Lock()
	if rt.aux != nil {
		rt.aux.close()
	}
	rt.auxMu.Unlock()
	if rt.lock != nil {
		rt.lock.release()
	}
	return rt.closeErr
}

// Runner returns the runtime's [harness.StepRunner]. The runtime installs
// it on the agents it builds; an agent built with it outside a durable
// run runs its steps directly.
func (rt *Runtime) Runner() harness.StepRunner { return rt.runner }

// RunOption configures [Runtime.Run].
type RunOption func(*runConfig)

type runConfig struct {
	runID   string
	session string
}

// WithRunID sets the run's ID (its workflow ID): at most 128 bytes of
// valid UTF-8 without control characters. Starting a run under the ID of
// an existing one does not start another: Run returns the existing run's
// outcome. The default is a random ID. It cannot be combined with
// [WithSession], which names the runs.
func WithRunID(id string) RunOption { return func(c *runConfig) { c.runID = id } }

// WithSession continues a conversation: the run starts from the session
// saved by the session's last finished run (or a new conversation with
// that session ID), and saves the session when it finishes. A session
// runs one turn at a time ([ErrSessionBusy]); its runs are named
// "<session>/<n>", n counting from 1. The ID must not contain "/".
func WithSession(id string) RunOption { return func(c *runConfig) { c.session = id } }

// runInput is the run workflow's input. It carries everything a process
// needs to rebuild the agent and run the turn again.
type runInput struct {
	Agent     string `json:"agent"`
	Input     string `json:"input"`
	SessionID string `json:"session_id,omitempty"`
	// Session is the session saved before the run; nil for a new
	// conversation.
	Session []byte `json:"session,omitempty"`
}

// runOutput is what a finished run workflow records, and what a paused
// one reports to the approval workflow: a JSON-safe RunResult, plus the
// session after the run.
type runOutput struct {
	RunID    string                    `json:"run_id"`
	Status   harness.Status            `json:"status"`
	Text     string                    `json:"text,omitempty"`
	Messages []harness.Message         `json:"messages,omitempty"`
	Usage    harness.Usage             `json:"usage"`
	Steps    int                       `json:"steps"`
	Pending  []harness.ApprovalRequest `json:"pending,omitempty"`
	Err      string                    `json:"error,omitempty"`
	// ErrClass names the class of Err when the runtime knows it ("blob":
	// ErrBlob).
	ErrClass string `json:"error_class,omitempty"`
	Session  []byte `json:"session,omitempty"`
}

func toOutput(r *harness.RunResult) runOutput {
	o := runOutput{RunID: r.RunID, Status: r.Status, Text: r.Text, Messages: r.Messages, Usage: r.Usage, Steps: r.Steps, Pending: r.Pending}
	if r.Err != nil {
		o.Err = r.Err.Error()
		if errors.Is(r.Err, ErrBlob) {
			o.ErrClass = "blob"
		}
	}
	return o
}

func (o *runOutput) result() *harness.RunResult {
	r := &harness.RunResult{RunID: o.RunID, Status: o.Status, Text: o.Text, Messages: o.Messages, Usage: o.Usage, Steps: o.Steps, Pending: o.Pending}
	if o.Err != "" {
		e := &RunError{RunID: o.RunID, Msg: o.Err}
		if o.ErrClass == "blob" {
			e.Class = ErrBlob
		}
		r.Err = e
	}
	return r
}

// RunError is the error of a run whose outcome was read from the database:
// the original error's text (its type does not survive the process), and
// its class when the runtime knows it.
type RunError struct {
	RunID string
	Msg   string
	// Class is one of the Err… sentinels of this package when the run
	// failed for the runtime's own reason ([ErrBlob]); nil otherwise.
	// errors.Is matches it.
	Class error
}

func (e *RunError) Error() string { return e.Msg }

// Unwrap returns Class.
func (e *RunError) Unwrap() error { return e.Class }

// Run starts a durable run of the agent registered under agent with the
// user's input and waits until it finishes or pauses on approvals (status
// paused, the approvals in Pending; continue it with [Runtime.Resume]).
// The run executes in this process, which must be launched, or with
// [WithQueue] in a worker (this runtime then need not be launched); if
// the process running it stops, the run stays in the database and is
// recovered. Cancelling ctx stops the wait, not the run: use
// [Runtime.Wait] to wait again. A failed or cancelled run returns its
// error, as [harness.Agent.Run] does.
func (rt *Runtime) Run(ctx context.Context, agent, input string, opts ...RunOption) (*harness.RunResult, error) {
	runID, h, err := rt.start(ctx, agent, input, opts)
	if err != nil {
		return nil, opError("run", runID, err)
	}
	res, err := rt.await(ctx, runID, h, dbos.WithHandlePollingInterval(rt.cfg.poll))
	var re *RunError
	if err != nil && !errors.As(err, &re) {
		err = opError("run", runID, err)
	}
	return res, err
}

// Submit starts a durable run as [Runtime.Run] does and returns its ID
// without waiting: [Runtime.Wait] waits for it, from any process. With
// [WithQueue] it enqueues the run for the workers and works without
// Launch (a process that only submits runs should not launch); the agent
// need not be registered in this process then, only in the workers.
// Without a queue the runtime must be launched, and the run executes in
// this process, in the background.
func (rt *Runtime) Submit(ctx context.Context, agent, input string, opts ...RunOption) (string, error) {
	runID, _, err := rt.start(ctx, agent, input, opts)
	return runID, opError("submit", runID, err)
}

// start starts a run: a workflow in this process, or enqueued. ctx bounds
// the reading of a session's state; the run itself is not bound to it.
func (rt *Runtime) start(ctx context.Context, agent, input string, opts []RunOption) (string, dbos.WorkflowHandle[runOutput], error) {
	rt.mu.Lock()
	launched, closed, f := rt.launched, rt.closed, rt.agents[agent]
	rt.mu.Unlock()
	switch {
	case closed:
		return "", nil, ErrClosed
	case rt.queue == "" && !launched:
		return "", nil, ErrNotLaunched
	case agent == "" || f == nil && (rt.queue == "" || launched):
		return "", nil, fmt.Errorf("%w: %q", ErrUnknownAgent, agent)
	}
	var rc runConfig
	for _, o := range opts {
		o(&rc)
	}
	in := runInput{Agent: agent, Input: input}
	reject := false
	switch {
	case rc.session != "" && rc.runID != "":
		return "", nil, fmt.Errorf("%w: WithRunID and WithSession exclude each other: a session names its runs", ErrInvalidRunOption)
	case rc.session != "":
		if strings.Contains(rc.session, "/") {
			return "", nil, fmt.Errorf("%w: session ID %q contains \"/\"", ErrInvalidRunOption, rc.session)
		}
		id, data, err := rt.sessionState(ctx, rc.session)
		if err != nil {
			return "", nil, err
		}
		rc.runID, in.SessionID, in.Session = id, rc.session, data
		reject = true
	case rc.runID == "":
		rc.runID = newRunID()
	}
	if err := checkRunID(rc.runID); err != nil {
		return "", nil, err
	}
	var h dbos.WorkflowHandle[runOutput]
	var err error
	if rt.queue != "" {
		eopts := []dbos.EnqueueOption{dbos.WithEnqueueWorkflowID(rc.runID)}
		if reject {
			eopts = append(eopts, dbos.WithEnqueueWorkflowIDReusePolicy(dbos.WorkflowIDReusePolicyReject))
		}
		h, err = dbos.Enqueue[runOutput](rt.dctx, rt.queue, runWorkflowName, in, eopts...)
	} else {
		wopts := []dbos.WorkflowOption{dbos.WithWorkflowID(rc.runID)}
		if reject {
			wopts = append(wopts, dbos.WithWorkflowIDReusePolicy(dbos.WorkflowIDReusePolicyReject))
		}
		// DBOS executes a run started here only when this call created
		// its row: the run is new, and its workflow need not look for
		// recorded steps (freshRun).
		h, err = dbos.RunWorkflow(dbos.WithValue(rt.dctx, freshRun{}, rc.runID), rt.sealRun, in, wopts...)
	}
	if err != nil {
		if errors.Is(err, dbos.ErrWorkflowIDInUse) {
			return "", nil, fmt.Errorf("%w: session %q, run %s started meanwhile", ErrSessionBusy, rc.session, rc.runID)
		}
		return "", nil, fmt.Errorf("durable: start run %s: %w", rc.runID, err)
	}
	return rc.runID, h, nil
}

// await waits for the run's outcome through its handle, or for its pause.
// The handle's result is taken as it is only when it is an outcome: when
// it fails (the database did not answer, the run's execution moved
// elsewhere) the database says what became of the run, and a database
// that does not answer is waited for, until ctx ends: a run is never
// reported failed because its outcome could not be read. The goroutine
// reading the handle ends with the run or at Close.
func (rt *Runtime) await(ctx context.Context, runID string, h dbos.WorkflowHandle[runOutput], opts ...dbos.GetResultOption) (*harness.RunResult, error) {
	type outcome struct {
		out runOutput
		err error
	}
	dc, end := rt.within(ctx)
	defer end()
	var done chan outcome
	if h != nil {
		done = make(chan outcome, 1)
		go func() {
			out, err := h.GetResult(opts...)
			done <- outcome{out, err}
		}()
	}
	failures := 0
	for {
		rt.mu.Lock()
		changed := rt.changed
		rt.mu.Unlock()
		wait := rt.retryWait(failures)
		select {
		case o := <-done:
			if o.err == nil {
				res := o.out.result()
				return res, res.Err
			}
			done = nil // from here on, the database tells
		case <-ctx.Done():
			return nil, &Error{Op: "wait", RunID: runID, Err: context.Cause(ctx)}
		case <-changed:
		case <-time.After(wait):
		}
		var res *harness.RunResult
		var fin bool
		var err error
		if done != nil {
			// The handle reports the outcome; only a pause is looked for.
			var ap *approvalInput
			if ap, err = rt.openApproval(dc, runID); err == nil && ap != nil {
				res, fin = ap.Paused.result(), true
			}
		} else {
			res, fin, err = rt.state(dc, runID)
		}
		switch {
		case fin: // err is the finished run's own error, if any
			if res.Status == harness.StatusPaused {
				return res, nil
			}
			return res, res.Err
		case err == nil:
			failures = 0
		case ctx.Err() != nil:
			return nil, &Error{Op: "wait", RunID: runID, Err: context.Cause(ctx)}
		case !transient(err):
			return nil, opError("wait", runID, err)
		default:
			if failures++; failures == 1 || failures%20 == 0 {
				rt.cfg.logger.Warn("durable: cannot read a run's state; waiting for the database", "run_id", runID, "error", err, "failures", failures)
			}
		}
	}
}

// sessionState returns the ID of the session's next run and the session
// saved by its last finished run.
func (rt *Runtime) sessionState(ctx context.Context, session string) (string, []byte, error) {
	dc, end := rt.within(ctx)
	defer end()
	runs, err := dbos.ListWorkflows(dc, dbos.WithFilterWorkflowIDPrefix(session+"/"), dbos.WithFilterName(runWorkflowName),
		dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return "", nil, fmt.Errorf("durable: session %q: %w", session, err)
	}
	var last string
	var lastN int
	n := 0
	for _, w := range runs {
		k, err := strconv.Atoi(strings.TrimPrefix(w.ID, session+"/"))
		if err != nil {
			continue // a run of a session whose ID extends this one's? not ours
		}
		n = max(n, k)
		switch w.Status {
		case dbos.WorkflowStatusSuccess:
			if k > lastN {
				last, lastN = w.ID, k
			}
		case dbos.WorkflowStatusPending, dbos.WorkflowStatusEnqueued, dbos.WorkflowStatusDelayed:
			return "", nil, fmt.Errorf("%w: session %q, run %s", ErrSessionBusy, session, w.ID)
		case dbos.WorkflowStatusCancelled:
			waits, _, moved, err := rt.parkedWaits(ctx, w.ID)
			if err != nil {
				return "", nil, fmt.Errorf("durable: session %q: %w", session, err)
			}
			if len(waits) > 0 || moved {
				return "", nil, fmt.Errorf("%w: session %q, run %s (parked)", ErrSessionBusy, session, w.ID)
			}
		}
	}
	next := session + "/" + strconv.Itoa(n+1)
	if last == "" {
		return next, nil, nil
	}
	h, err := dbos.RetrieveWorkflow[runOutput](dc, last)
	if err != nil {
		return "", nil, fmt.Errorf("durable: session %q: run %s: %w", session, last, err)
	}
	out, err := h.GetResult()
	if err != nil {
		return "", nil, fmt.Errorf("durable: session %q: run %s: %w", session, last, err)
	}
	return next, out.Session, nil
}

// Wait waits until the run finishes or pauses on approvals, and returns
// its result (see [Runtime.Run]). It works from any process: it reads the
// run's state from the database. An unknown run is [ErrUnknownRun]; a run
// that has not finished and is pinned to another application version
// than the runtime's is [ErrVersionMismatch] at once (no worker of this
// version runs it). While the database does not answer, Wait waits for
// it, until ctx ends.
func (rt *Runtime) Wait(ctx context.Context, runID string) (*harness.RunResult, error) {
	dc, end := rt.within(ctx)
	defer end()
	for failures := 0; ; failures++ {
		res, done, err := rt.state(dc, runID)
		if done { // err is the finished run's own error, if any
			return res, res.Err
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil || !transient(err) {
			return nil, opError("wait", runID, err)
		}
		if failures == 0 {
			rt.cfg.logger.Warn("durable: cannot read a run's state; waiting for the database", "run_id", runID, "error", err)
		}
		select {
		case <-ctx.Done():
			return nil, opError("wait", runID, context.Cause(ctx))
		case <-time.After(rt.retryWait(failures)):
		}
	}
	ws, err := rt.runRow(dc, "wait", runID)
	if err == nil {
		err = rt.checkVersion("wait", ws)
	}
	if err != nil && !transient(err) {
		return nil, err
	}
	var h dbos.WorkflowHandle[runOutput]
	if err == nil {
		h, _ = dbos.RetrieveWorkflow[runOutput](dc, runID) // without a handle, await polls
	}
	return rt.await(ctx, runID, h, dbos.WithHandlePollingInterval(rt.cfg.poll))
}

// retryWait is how long a wait polls again after failures database
// errors in a row: the poll interval, doubled per failure, at most 5 s.
func (rt *Runtime) retryWait(failures int) time.Duration {
	if failures == 0 {
		return rt.cfg.poll
	}
	return min(rt.cfg.poll<<min(failures, 6), 5*time.Second)
}

// state reads a run's state: done when it finished or is paused; the
// error of a finished run is its own (res.Err), else it is the reading's.
func (rt *Runtime) state(dc dbos.Context, runID string) (*harness.RunResult, bool, error) {
	ws, err := dbos.ListWorkflows(dc, dbos.WithFilterWorkflowIDs(runID), dbos.WithFilterName(runWorkflowName),
		dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return nil, false, fmt.Errorf("durable: run %s: %w", runID, err)
	}
	if len(ws) == 0 {
		return nil, false, &Error{Op: "wait", RunID: runID, Class: ErrUnknownRun}
	}
	switch ws[0].Status {
	case dbos.WorkflowStatusSuccess, dbos.WorkflowStatusError:
		h, err := dbos.RetrieveWorkflow[runOutput](dc, runID)
		if err != nil {
			return nil, false, fmt.Errorf("durable: run %s: %w", runID, err)
		}
		out, err := h.GetResult()
		if err != nil {
			res := &harness.RunResult{RunID: runID, Status: harness.StatusFailed, Err: &RunError{RunID: runID, Msg: err.Error()}}
			return res, true, res.Err
		}
		res := out.result()
		return res, true, res.Err
	case dbos.WorkflowStatusCancelled:
		waits, _, moved, err := rt.parkedWaits(dc, runID)
		if err != nil {
			return nil, false, fmt.Errorf("durable: run %s: %w", runID, err)
		}
		if moved { // woken since its status was read
			return nil, false, nil
		}
		if len(waits) == 0 {
			res := &harness.RunResult{RunID: runID, Status: harness.StatusCancelled, Err: &RunError{RunID: runID, Msg: "durable: the run was cancelled"}}
			return res, true, res.Err
		}
		// Parked: on approvals it is paused (below); on questions, or
		// answered and about to continue, it is not done.
	case dbos.WorkflowStatusMaxRecoveryAttemptsExceeded:
		res := &harness.RunResult{RunID: runID, Status: harness.StatusFailed, Err: &RunError{RunID: runID, Msg: "durable: the run crashed too often on recovery"}}
		return res, true, res.Err
	}
	ap, err := rt.openApproval(dc, runID)
	if err != nil || ap == nil {
		return nil, false, err
	}
	return ap.Paused.result(), true, nil
}

// within returns the runtime's DBOS context, cancelled when ctx ends: the
// DBOS calls of a method made with it return with the caller's context
// (an unreachable database, a lock held elsewhere) instead of blocking on
// the runtime's own context, which only Close ends. end releases it. Runs
// are never started with it: cancelling a caller's wait does not cancel
// the run.
func (rt *Runtime) within(ctx context.Context) (dc dbos.Context, end func()) {
	if ctx.Done() == nil {
		return rt.dctx, func() {}
	}
	dc, cancel := dbos.WithCancelCause(rt.dctx)
	if ctx.Err() != nil { // AfterFunc would cancel dc later, in a goroutine
		cancel(context.Cause(ctx))
		return dc, func() {}
	}
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return dc, func() {
		stop()
		cancel(nil)
	}
}

// notify wakes the local waiters.
func (rt *Runtime) notify() {
	rt.mu.Lock()
	close(rt.changed)
	rt.changed = make(chan struct{})
	rt.mu.Unlock()
}

// wfKey holds the run's *runState in the contexts the harness hands to
// the runner; nil inside a step.
type wfKey struct{}

// freshRun holds, in the context of a run that Runtime.start executes
// directly (no queue), the run's ID: DBOS runs the workflow function on
// that path only when the call inserted the run's row, so the execution
// is the first one. Recovery, a resume and a dequeue carry no such value.
type freshRun struct{}

// runState is what the runner needs of the run it serves: the workflow,
// and for the engine snapshots the agent and the last state written.
type runState struct {
	wf    dbos.Context
	runID string
	agent *harness.Agent
	snap  context.Context // the run's context, marked harness.AsSnapshot
	last  []byte          // the extension state last written or loaded
	// epoch is the execution's number (1 for the first), its fence in
	// the runtime's tables.
	epoch int
	// fenced is set once the execution learnt that a newer one runs the
	// run (DBOS refused to record its step, or the steps table its
	// marker): it then runs no more model requests or tools, writes
	// nothing, and leaves the run's rows to the newer execution.
	fenced atomic.Bool
	// asked is set when a tool of the run asked a question, or the run
	// paused on approvals: their answers go with its rows.
	asked atomic.Bool
	// waits are the questions the run's calls parked on in this
	// execution (suspend.go).
	waits waits
	// blobs are the bytes of large parts this execution wrote or read
	// (blob.go); wroteBlobs is set once it wrote one: the run's blobs go
	// with its rows.
	blobs      blobCache
	wroteBlobs atomic.Bool
	// broken is the first ErrBlob of the execution: a recorded part whose
	// bytes are missing or damaged. The run fails with it, and no step
	// runs after it.
	broken atomic.Pointer[Error]
}

// broke records err as the run's failure, unless one was recorded.
func (rs *runState) broke(err *Error) { rs.broken.CompareAndSwap(nil, err) }

// failed returns res failed with the run's ErrBlob, if it has one: the
// engine may have ended the run otherwise (a pause, the last step).
func (rs *runState) failed(res *harness.RunResult) *harness.RunResult {
	e := rs.broken.Load()
	if e == nil || res == nil || res.Status == harness.StatusFailed && errors.Is(res.Err, ErrBlob) {
		return res
	}
	cp := *res
	cp.Status, cp.Err = harness.StatusFailed, e
	return &cp
}

// fence notes that err, returned by a DBOS step or the steps table, says
// that a newer execution owns the run; it returns err.
func (rs *runState) fence(err error) error {
	if err != nil && (errors.Is(err, errFenced) || errors.Is(err, dbos.ErrConflictingWorkflowID)) {
		rs.fenced.Store(true)
	}
	return err
}

// runWorkflow is the durable run: it builds the agent, runs the turn,
// parks on approvals, and returns the outcome with the session.
func (rt *Runtime) runWorkflow(ctx dbos.Context, in runInput) (runOutput, error) {
	runID, err := dbos.GetWorkflowID(ctx)
	if err != nil {
		return runOutput{}, err
	}
	rt.mu.Lock()
	f := rt.agents[in.Agent]
	rt.mu.Unlock()
	if f == nil {
		return runOutput{}, fmt.Errorf("%w: %q (register it before Launch in every process that runs or recovers runs)", ErrUnknownAgent, in.Agent)
	}
	opts, err := f(ctx)
	if err != nil {
		return runOutput{}, fmt.Errorf("durable: agent %q: %w", in.Agent, err)
	}
	opts = append(opts[:len(opts):len(opts)], harness.WithStepRunner(rt.runner))
	// First: a factory's own storage wins.
	opts = append([]harness.Option{harness.WithStorage(rt.Storage())}, opts...)
	var agent *harness.Agent
	if in.Session != nil {
		agent, err = harness.LoadSession(ctx, in.Session, opts...)
	} else {
		if in.SessionID != "" {
			opts = append(opts, harness.WithSessionID(in.SessionID))
		}
		agent, err = harness.New(opts...)
	}
	if err != nil {
		return runOutput{}, fmt.Errorf("durable: build agent %q: %w", in.Agent, err)
	}
	defer agent.Close(context.WithoutCancel(ctx))
	rs := &runState{wf: ctx, runID: runID, agent: agent}
	hctx := harness.ContextWithRunID(context.WithValue(ctx, wfKey{}, rs), runID)
	rs.snap = harness.AsSnapshot(hctx)
	rs.epoch = rt.execution(ctx, runID)
	if n := rs.epoch; n > 1 {
		hctx = harness.ContextRecovered(hctx, n)
		if err := rt.restore(ctx, rs); err != nil {
			return runOutput{}, err
		}
	}
	res, err := agent.Run(hctx, in.Input)
	res = rs.failed(res)
	for n := 1; res != nil && (res.Status == harness.StatusPaused || res.Status == harness.StatusSuspended); n++ {
		if res.Status == harness.StatusSuspended {
			return rt.park(ctx, rs, rs.waits.list())
		}
		rs.asked.Store(true) // the decisions are kept with the answers
		out := toOutput(res)
		id := runID + "/approval/" + strconv.Itoa(n)
		h, err := dbos.RunWorkflow(ctx, approvalWorkflow, approvalInput{RunID: runID, Seq: n, Paused: out}, dbos.WithWorkflowID(id))
		if err != nil {
			return runOutput{}, rs.fence(err)
		}
		rt.notify()
		enc, ok, err := rt.recorded(ctx, runID, approvalWait(n))
		if err != nil {
			return runOutput{}, err
		}
		if !ok {
			return rt.park(ctx, rs, []string{approvalWait(n)})
		}
		var decisions []harness.Decision
		if err := json.Unmarshal(enc, &decisions); err != nil {
			return runOutput{}, fmt.Errorf("durable: run %s: the recorded decisions: %w", runID, err)
		}
		settle(rt, h, runID, id, decisionsTopic, decisions)
		res, err = agent.Resume(hctx, decisions...)
		res = rs.failed(res)
		if err != nil && res == nil {
			return runOutput{}, fmt.Errorf("durable: resume run %s: %w", runID, err)
		}
	}
	if res == nil {
		return runOutput{}, fmt.Errorf("durable: run %s: %w", runID, err)
	}
	out := toOutput(res)
	if in.SessionID != "" {
		data, err := agent.SaveSession(ctx)
		if err != nil {
			return runOutput{}, fmt.Errorf("durable: save session %q: %w", in.SessionID, err)
		}
		out.Session = data
	}
	// A run stopped by Close stays pending, its markers needed; a fenced
	// execution's run belongs to a newer one.
	if ctx.Err() == nil && !rs.fenced.Load() {
		// A re-execution deletes blobs too: an earlier one may have written
		// some that no recorded step references.
		rt.finished(finishedRun{id: runID, snap: rs.last != nil, asked: rs.asked.Load(), blobs: rs.wroteBlobs.Load() || rs.epoch > 1, epoch: rs.epoch})
	}
	return out, nil
}

// execution returns which execution of the run this is: 1 for a run with
// no recorded step, else (a re-execution after its process stopped:
// recovery at Launch, a lease supervisor's resume) its count in the
// runtime's steps table, 2 for the first re-execution. The number is the
// execution's fence too: the steps table refuses the markers, snapshots
// and deletions of an execution whose number is no longer the run's.
// DBOS's recovery_attempts cannot serve: ResumeWorkflow resets it. A
// first execution that stopped before recording a step is not told apart
// from a first one: nothing of it was recorded, and DBOS refuses its
// first step's record once another execution owns the run. A run that Run
// or Submit executes directly (no queue) is known to be new (freshRun)
// and costs nothing; a dequeued one costs one read, no write. While the
// database cannot be read the execution waits (until the runtime closes):
// a wrong count would fence it, or another.
func (rt *Runtime) execution(ctx context.Context, runID string) int {
	if id, _ := ctx.Value(freshRun{}).(string); id == runID {
		return 1
	}
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		n, err := rt.count(ctx, runID)
		if err == nil {
			return n
		}
		rt.cfg.logger.Warn("durable: cannot count the executions of a run; trying again", "run_id", runID, "error", err)
		select {
		case <-ctx.Done():
			return n
		case <-time.After(wait):
		}
	}
}

func (rt *Runtime) count(ctx context.Context, runID string) (int, error) {
	steps, err := dbos.GetWorkflowSteps(rt.dctx, runID, dbos.WithStepsLimit(1), dbos.WithStepsLoadOutput(false))
	if err != nil || len(steps) == 0 {
		return 1, err
	}
	db, err := rt.auxDB(ctx)
	if err != nil {
		return 2, err
	}
	return db.execution(ctx, runID)
}

// restore gives a re-executed run's extensions the state of its last
// engine snapshot, before the run replays its recorded steps.
func (rt *Runtime) restore(ctx context.Context, rs *runState) error {
	db, err := rt.auxDB(ctx)
	if err != nil {
		return fmt.Errorf("durable: run %s: read its extension state: %w", rs.runID, err)
	}
	state, err := db.loadSnapshot(ctx, rs.runID)
	if err != nil {
		return fmt.Errorf("durable: run %s: read its extension state: %w", rs.runID, err)
	}
	if state == nil {
		return nil
	}
	if err := rs.agent.LoadExtensionState(ctx, state); err != nil {
		return fmt.Errorf("durable: run %s: restore its extension state (the factory must install the same extensions as when the run started): %w", rs.runID, err)
	}
	rs.last = state
	return nil
}

// snapshot takes the engine snapshot of the run after the step named
// key: the extensions' state (harness.Agent.SaveExtensionState, under
// harness.AsSnapshot), written to the snapshots table when it differs from
// the last one written. An agent without stateful extensions costs a
// loop over its extensions. A failure is logged: the run's steps are
// recorded apart, and the next step tries again.
func (rt *Runtime) snapshot(rs *runState, key string) {
	if rs.fenced.Load() {
		return
	}
	state, err := rs.agent.SaveExtensionState(rs.snap)
	if err == nil && bytes.Equal(state, rs.last) {
		return
	}
	if err == nil {
		var db *leaseDB
		if db, err = rt.auxDB(rs.snap); err == nil {
			err = rs.fence(db.saveSnapshot(context.WithoutCancel(rs.snap), rs.runID, key, rs.epoch, state))
		}
	}
	if errors.Is(err, errFenced) {
		return
	}
	if err != nil {
		rt.cfg.logger.Warn("durable: cannot write the extension state of a run", "run_id", rs.runID, "step", key, "error", err)
		return
	}
	rs.last = state
}

// mark writes the marker of a tool call about to start (leaseDB.mark).
func (rt *Runtime) mark(ctx context.Context, rs *runState, key string) (time.Time, bool, error) {
	db, err := rt.auxDB(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	// A database that does not answer is waited for, as DBOS waits to
	// record a step: a call that did not start must not be reported.
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		start, fresh, err := db.mark(ctx, rs.runID, key, rs.epoch)
		if err == nil || errors.Is(err, errFenced) || ctx.Err() != nil {
			return start, fresh, rs.fence(err)
		}
		if wait == 100*time.Millisecond {
			rt.cfg.logger.Warn("durable: cannot record that a tool call starts; waiting for the database", "run_id", rs.runID, "step", key, "error", err)
		}
		select {
		case <-ctx.Done():
			return start, fresh, err
		case <-time.After(wait):
		}
	}
}

// finished queues a finished run's rows for deletion from the steps
// table. A background cleaner deletes them in batches, off the run's
// path; rows a crash leaves behind are never read again (a finished run
// does not execute again) and only take room.
func (rt *Runtime) finished(run finishedRun) {
	rt.cleanMu.Lock()
	defer rt.cleanMu.Unlock()
	if rt.cleanClosed {
		return
	}
	if rt.cleanCh == nil {
		rt.cleanCh = make(chan finishedRun, 1024)
		rt.cleanDone = make(chan struct{})
		go rt.cleaner(rt.cleanCh)
	}
	select {
	case rt.cleanCh <- run:
	default: // the cleaner is behind: leave these rows
	}
}

// finishedRun names a finished run whose rows the cleaner deletes; snap
// says whether it has an engine snapshot (it wrote or loaded one).
type finishedRun struct {
	id    string
	snap  bool
	asked bool // it asked questions: their answers go too
	blobs bool // it may have blobs
	epoch int  // the execution that finished it; -1: any (the retention's sweep)
}

// cleaner deletes the rows of finished runs until Close closes cleanCh.
func (rt *Runtime) cleaner(ch <-chan finishedRun) {
	defer close(rt.cleanDone)
	ctx := context.Background()
	for run := range ch {
		batch := []finishedRun{run}
	more:
		for len(batch) < 256 {
			select {
			case run, ok := <-ch:
				if !ok {
					break more
				}
				batch = append(batch, run)
			default:
				break more
			}
		}
		db, err := rt.auxDB(ctx)
		if err == nil {
			err = db.done(ctx, batch)
		}
		if err != nil {
			rt.cfg.logger.Warn("durable: cannot clear the markers of finished runs", "runs", len(batch), "error", err)
		}
	}
}

// migrateLockKey is the Postgres advisory lock that serializes the DBOS
// migrations of the processes opening one database ("hxmigrat").
const migrateLockKey int64 = 0x6878_6d69_6772_6174

// lockMigrations takes the migration lock of the Postgres database of
// dsn, on a connection of its own, waiting as long as ctx allows; unlock
// releases it and closes the connection.
//
// It polls pg_try_advisory_lock rather than waiting in pg_advisory_lock:
// a statement waiting for the lock holds a snapshot, which the holder's
// CREATE INDEX CONCURRENTLY waits for, a deadlock that Postgres cannot
// see (the holder's lock and its migration are on two connections).
func lockMigrations(ctx context.Context, dsn string) (unlock func(), err error) {
	cfg, err := pgxpool.ParseConfig(dsn) // accepts the pool's parameters, as DBOS does
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "3D000" { // invalid_catalog_name: no such database
		if err := createDatabase(ctx, cfg.ConnConfig); err != nil {
			return nil, err
		}
		conn, err = pgx.ConnectConfig(ctx, cfg.ConnConfig)
	}
	if err != nil {
		return nil, err
	}
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		var got bool
		err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", migrateLockKey).Scan(&got)
		if err == nil && got {
			break
		}
		if err == nil {
			select {
			case <-ctx.Done():
				err = context.Cause(ctx)
			case <-time.After(wait):
				continue
			}
		}
		conn.Close(context.Background())
		return nil, fmt.Errorf("take the migration lock: %w", err)
	}
	return func() {
		// Closing the session releases the lock too; unlocking first
		// frees it for the next process without waiting for the close.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", migrateLockKey)
		conn.Close(ctx)
	}, nil
}

// createDatabase creates the database that cc names, connected to the
// server's "postgres" database (then "template1") with the same role. A
// role that may not create databases gets an error that names the
// database and what to do.
func createDatabase(ctx context.Context, cc *pgx.ConnConfig) error {
	name := cc.Database
	var conn *pgx.Conn
	var err error
	for _, maint := range []string{"postgres", "template1"} {
		c := cc.Copy()
		c.Database = maint
		if conn, err = pgx.ConnectConfig(ctx, c); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("database %q does not exist, and the server's maintenance database could not be reached to create it: %w", name, err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pe *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe) && pe.Code == "42P04": // duplicate_database: another process made it
		return nil
	case errors.As(err, &pe) && pe.Code == "42501": // insufficient_privilege
		return fmt.Errorf("database %q does not exist and role %q may not create it: create it (CREATE DATABASE %s) or grant CREATEDB to the role",
			name, cc.User, pgx.Identifier{name}.Sanitize())
	}
	return fmt.Errorf("database %q does not exist, and creating it failed: %w", name, err)
}

// migrationRace tells a failed DBOS migration that lost a race with
// another process migrating the same new Postgres database (duplicate
// type, table, schema or object; a deadlock or serialization failure).
func migrationRace(err error) bool {
	msg := err.Error()
	if !strings.Contains(msg, "migration") {
		return false
	}
	for _, code := range []string{"23505", "42P07", "42701", "42710", "42P06", "40P01", "40001", "55P03"} {
		if strings.Contains(msg, "SQLSTATE "+code) {
			return true
		}
	}
	// Two processes changing one catalog row at once (dropping or
	// creating the same index): Postgres reports it as an internal error.
	return strings.Contains(msg, "tuple concurrently updated")
}

func newRunID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "run-" + hex.EncodeToString(b[:])
}

// checkRunID applies harness's rules for run IDs, by asking it.
func checkRunID(id string) error {
	if id == "" || len(id) > 128 {
		return fmt.Errorf("%w: run ID %q", harness.ErrInvalidRunID, id)
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return fmt.Errorf("%w: run ID %q", harness.ErrInvalidRunID, id)
		}
	}
	return nil
}

// redactDSN hides a password in a Postgres URL.
func redactDSN(dsn string) string {
	if i := strings.Index(dsn, "://"); i >= 0 {
		if j := strings.Index(dsn[i+3:], "@"); j >= 0 {
			cred := dsn[i+3 : i+3+j]
			if k := strings.Index(cred, ":"); k >= 0 {
				return dsn[:i+3] + cred[:k] + ":***" + dsn[i+3+j:]
			}
		}
	}
	return dsn
}

// minLevel filters a handler's records below a level.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(a), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}
