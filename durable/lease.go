package durable

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the lease table on Postgres
)

// DefaultLease is how long a worker may go without a heartbeat before the
// other workers resume its runs (see [WithLease]).
const DefaultLease = 30 * time.Second

// The lease: every launched worker (a runtime with [WithQueue], or with
// [WithLease]) writes a heartbeat row into a small table of its own in
// the same database — "harnessx.workers" on Postgres (schema "harnessx"),
// "harnessx_workers" on SQLite — every lease/3. The same loop looks for
// workers of its application name and version whose heartbeat is older
// than the lease, claims each such worker in one UPDATE (so that of two
// supervisors only one gets it), resumes its pending runs on the queue
// (dbos.ResumeWorkflows), and deletes its row. DBOS has no heartbeat of
// its own: without this, the runs of a dead executor wait until a process
// with the same executor ID launches again.

type leaseDB struct {
	db       *sql.DB
	table    string // the workers' heartbeats
	steps    string // the runs' executions and tool-call markers
	kv       string // extension storage (storage.go)
	snaps    string // the engine snapshots of extension state
	answers  string // the first answer given to each question (Reply)
	parked   string // what each parked run waits for (suspend.go)
	blobs    string // the bytes of large media parts of unfinished runs (blob.go)
	postgres bool
	seal     *sealer // seals storage values and snapshots; nil: none

	// Prepared once: these run on every run and tool call.
	execStmt, markStmt, startStmt, doneStmt *sql.Stmt
	// The engine snapshots: written when extension state changed.
	snapStmt, loadSnapStmt, doneSnapStmt *sql.Stmt
	// The answers: written by Reply, deleted with a run that asked.
	doneAnswersStmt *sql.Stmt
	// The blobs: written and read only by runs with large media parts.
	putBlobStmt, getBlobStmt, doneBlobsStmt *sql.Stmt
}

// nowMs is the database's clock in Unix milliseconds: every worker
// compares heartbeats against one clock, not against its own.
func (l *leaseDB) nowMs() string {
	if l.postgres {
		return "(extract(epoch from clock_timestamp()) * 1000)::bigint"
	}
	return "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
}

var numbered = regexp.MustCompile(`\$([0-9]+)`)

// q renders a query: $N placeholders are Postgres's; SQLite takes ?N.
func (l *leaseDB) q(query string) string {
	query = strings.ReplaceAll(query, "{T}", l.table)
	query = strings.ReplaceAll(query, "{S}", l.steps)
	query = strings.ReplaceAll(query, "{KV}", l.kv)
	query = strings.ReplaceAll(query, "{P}", l.snaps)
	query = strings.ReplaceAll(query, "{A}", l.answers)
	query = strings.ReplaceAll(query, "{K}", l.parked)
	query = strings.ReplaceAll(query, "{B}", l.blobs)
	query = strings.ReplaceAll(query, "{NOW}", l.nowMs())
	if !l.postgres {
		query = numbered.ReplaceAllString(query, "?$1")
	}
	return query
}

func openLeaseDB(ctx context.Context, dsn string) (*leaseDB, error) {
	l := &leaseDB{}
	var err error
	if path, ok := sqlitePath(dsn); ok {
		l.table, l.steps, l.kv, l.snaps, l.answers, l.parked = "harnessx_workers", "harnessx_steps", "harnessx_storage", "harnessx_snapshots", "harnessx_answers", "harnessx_parked"
		l.blobs = "harnessx_blobs"
		l.db, err = sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	} else { // Open refuses SQLite DSNs without a file
		l.table, l.steps, l.kv, l.snaps, l.answers, l.parked, l.postgres = "harnessx.workers", "harnessx.steps", "harnessx.storage", "harnessx.snapshots", "harnessx.answers", "harnessx.parked", true
		l.blobs = "harnessx.blobs"
		l.db, err = sql.Open("pgx", dsn)
	}
	if err != nil {
		return nil, err
	}
	l.db.SetMaxOpenConns(2)
	schema, bytes := "", "BLOB"
	if l.postgres {
		schema, bytes = "CREATE SCHEMA IF NOT EXISTS harnessx;\n", "BYTEA"
	}
	stmts := schema + `CREATE TABLE IF NOT EXISTS {T} (
	app_name     TEXT NOT NULL,
	executor_id  TEXT NOT NULL,
	app_version  TEXT NOT NULL,
	last_seen_ms BIGINT NOT NULL,
	claimed_by   TEXT,
	claimed_ms   BIGINT,
	PRIMARY KEY (app_name, executor_id)
);
CREATE TABLE IF NOT EXISTS {S} (
	run_id     TEXT NOT NULL,
	step_key   TEXT NOT NULL,
	started_ms BIGINT NOT NULL,
	n          BIGINT NOT NULL,
	PRIMARY KEY (run_id, step_key)
);
CREATE TABLE IF NOT EXISTS {KV} (
	namespace TEXT NOT NULL,
	session   TEXT NOT NULL,
	key       TEXT NOT NULL,
	value     TEXT NOT NULL,
	PRIMARY KEY (namespace, session, key)
);
CREATE TABLE IF NOT EXISTS {P} (
	run_id   TEXT NOT NULL PRIMARY KEY,
	step_key TEXT NOT NULL,
	state    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS {A} (
	run_id TEXT NOT NULL,
	ask_id TEXT NOT NULL,
	answer TEXT NOT NULL,
	PRIMARY KEY (run_id, ask_id)
);
CREATE TABLE IF NOT EXISTS {K} (
	run_id    TEXT NOT NULL,
	wait_id   TEXT NOT NULL,
	queue     TEXT NOT NULL,
	since_ms  BIGINT NOT NULL,
	waking_ms BIGINT,
	PRIMARY KEY (run_id, wait_id)
);
CREATE TABLE IF NOT EXISTS {B} (
	run_id TEXT NOT NULL,
	sha256 TEXT NOT NULL,
	size   BIGINT NOT NULL,
	data   {BYTES} NOT NULL,
	PRIMARY KEY (run_id, sha256)
)`
	stmts = strings.ReplaceAll(stmts, "{BYTES}", bytes)
	for _, s := range strings.Split(l.q(stmts), ";\n") {
		// Two workers creating the schema at once on Postgres: one may
		// fail on the catalog's unique index while the other's CREATE
		// commits. IF NOT EXISTS then succeeds at a later attempt.
		var err error
		for attempt := 1; attempt <= 5; attempt++ {
			if _, err = l.db.ExecContext(ctx, s); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				attempt = 5
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			}
		}
		if err != nil {
			l.db.Close()
			return nil, fmt.Errorf("durable: create the runtime's tables: %w", err)
		}
	}
	for _, p := range []struct {
		stmt **sql.Stmt
		q    string
	}{
		{&l.execStmt, `INSERT INTO {S} AS s (run_id, step_key, started_ms, n) VALUES ($1, '', $2, 2)
ON CONFLICT (run_id, step_key) DO UPDATE SET n = s.n + 1 RETURNING n`},
		// The marker, written only while the run's execution count is
		// the writer's own (the fence: an execution that another one
		// replaced writes nothing).
		{&l.markStmt, `INSERT INTO {S} (run_id, step_key, started_ms, n) SELECT $1, $2, $3, 1
WHERE COALESCE((SELECT n FROM {S} WHERE run_id = $1 AND step_key = ''), 1) = $4
ON CONFLICT (run_id, step_key) DO NOTHING`},
		{&l.startStmt, `SELECT (SELECT started_ms FROM {S} WHERE run_id = $1 AND step_key = $2),
COALESCE((SELECT n FROM {S} WHERE run_id = $1 AND step_key = ''), 1)`},
		// epoch < 0: the retention's sweep of a finished run's rows.
		{&l.doneStmt, `DELETE FROM {S} WHERE run_id = $1
AND ($2 < 0 OR COALESCE((SELECT n FROM {S} WHERE run_id = $1 AND step_key = ''), 1) = $2)`},
		{&l.snapStmt, `INSERT INTO {P} (run_id, step_key, state) SELECT $1, $2, $3
WHERE COALESCE((SELECT n FROM {S} WHERE run_id = $1 AND step_key = ''), 1) = $4
ON CONFLICT (run_id) DO UPDATE SET step_key = excluded.step_key, state = excluded.state`},
		{&l.loadSnapStmt, `SELECT state FROM {P} WHERE run_id = $1`},
		{&l.doneAnswersStmt, `DELETE FROM {A} WHERE run_id = $1`},
		{&l.doneSnapStmt, `DELETE FROM {P} WHERE run_id = $1
AND ($2 < 0 OR COALESCE((SELECT n FROM {S} WHERE run_id = $1 AND step_key = ''), 1) = $2)`},
		{&l.putBlobStmt, `INSERT INTO {B} (run_id, sha256, size, data) VALUES ($1, $2, $3, $4) ON CONFLICT (run_id, sha256) DO NOTHING`},
		{&l.getBlobStmt, `SELECT size, data FROM {B} WHERE run_id = $1 AND sha256 = $2`},
		{&l.doneBlobsStmt, `DELETE FROM {B} WHERE run_id = $1
AND ($2 < 0 OR COALESCE((SELECT n FROM {S} WHERE run_id = $1 AND step_key = ''), 1) = $2)`},
	} {
		if *p.stmt, err = l.db.PrepareContext(ctx, l.q(p.q)); err != nil {
			l.db.Close()
			return nil, fmt.Errorf("durable: prepare the runtime's statements: %w", err)
		}
	}
	return l, nil
}

func (l *leaseDB) close() {
	for _, s := range []*sql.Stmt{l.execStmt, l.markStmt, l.startStmt, l.doneStmt, l.snapStmt, l.loadSnapStmt, l.doneSnapStmt, l.doneAnswersStmt,
		l.putBlobStmt, l.getBlobStmt, l.doneBlobsStmt} {
		if s != nil {
			s.Close()
		}
	}
	l.db.Close()
}

// beat records that executor is alive, and clears a claim on it: a worker
// that was only slow takes its row back (its runs may have moved already).
func (l *leaseDB) beat(ctx context.Context, app, executor, version string) error {
	_, err := l.db.ExecContext(ctx, l.q(`INSERT INTO {T} (app_name, executor_id, app_version, last_seen_ms) VALUES ($1, $2, $3, {NOW})
ON CONFLICT (app_name, executor_id) DO UPDATE SET app_version = excluded.app_version, last_seen_ms = excluded.last_seen_ms, claimed_by = NULL, claimed_ms = NULL`),
		app, executor, version)
	return err
}

// claim takes the workers of app and version, other than me, whose
// heartbeat is older than lease and which nobody claimed within ttl (a
// supervisor that died while resuming a worker's runs leaves its claim,
// which another takes over after ttl). One statement: of two supervisors,
// one gets each worker.
func (l *leaseDB) claim(ctx context.Context, app, version, me string, lease, ttl time.Duration) ([]string, error) {
	rows, err := l.db.QueryContext(ctx, l.q(`UPDATE {T} SET claimed_by = $1, claimed_ms = {NOW}
WHERE app_name = $2 AND app_version = $3 AND executor_id <> $1 AND last_seen_ms < {NOW} - $4
  AND (claimed_by IS NULL OR claimed_ms < {NOW} - $5)
RETURNING executor_id`), me, app, version, lease.Milliseconds(), ttl.Milliseconds())
	if err != nil {
		return nil, err
	}
	return scanStrings(rows)
}

// release deletes a dead worker's row once its runs were resumed, unless
// it came back meanwhile (its heartbeat cleared the claim).
func (l *leaseDB) release(ctx context.Context, app, executor, me string) error {
	_, err := l.db.ExecContext(ctx, l.q(`DELETE FROM {T} WHERE app_name = $1 AND executor_id = $2 AND claimed_by = $3`), app, executor, me)
	return err
}

// The steps table: one marker per tool call that started (step_key the
// call's step name) and, for a run executed again after a crash, its
// execution count (step_key ""), of the runs that have not finished. The
// marker is what tells, after a crash, a call that started from one that
// did not; it is one prepared statement, cheaper than a DBOS step (a
// read, a write and a transaction). A finished run's rows are deleted in
// the background, in batches (Runtime.finished).

// execution counts one more re-execution of runID and returns its
// number: 2 for the first. The number is also the execution's fence: the
// markers, snapshots and deletions of an execution with another number
// are refused (errFenced).
func (l *leaseDB) execution(ctx context.Context, runID string) (int, error) {
	var n int
	err := l.execStmt.QueryRowContext(ctx, runID, time.Now().UnixMilli()).Scan(&n)
	return n, err
}

// attempt returns the run's execution count, 1 when it has none and 0
// when it has no rows (it finished, or never started a tool call after a
// recovery).
func (l *leaseDB) attempt(ctx context.Context, runID string) (int, error) {
	var n int
	err := l.db.QueryRowContext(ctx, l.q(`SELECT n FROM {S} WHERE run_id = $1 AND step_key = ''`), runID).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 1, nil
	}
	return n, err
}

// errFenced: the run is executed by a newer execution (its lease moved,
// or it was resumed elsewhere) than the one that tried to write.
var errFenced = errors.New("durable: this execution of the run was replaced by a newer one (the run moved to another worker); it stops")

// markTime is the time a marker records, in the precision the database
// keeps (milliseconds, UTC): a call's first start and its rerun see the
// same time.
func markTime() time.Time { return time.UnixMilli(time.Now().UnixMilli()).UTC() }

// mark records that the tool call stepped under key starts now, for
// execution epoch of the run. fresh is false when an earlier execution
// had started it: start is then the time it first started. A newer
// execution than epoch is errFenced, and nothing is written.
func (l *leaseDB) mark(ctx context.Context, runID, key string, epoch int) (start time.Time, fresh bool, err error) {
	now := markTime()
	r, err := l.markStmt.ExecContext(ctx, runID, key, now.UnixMilli(), epoch)
	if err != nil {
		return now, false, err
	}
	if n, err := r.RowsAffected(); err != nil || n == 1 {
		return now, err == nil, err
	}
	var ms sql.NullInt64
	var cur int
	if err := l.startStmt.QueryRowContext(ctx, runID, key).Scan(&ms, &cur); err != nil {
		return now, false, err
	}
	if cur != epoch {
		return now, false, errFenced
	}
	if !ms.Valid { // deleted in between: only a finished run's rows go
		return now, false, errFenced
	}
	return time.UnixMilli(ms.Int64).UTC(), false, nil
}

// done deletes the rows of finished runs, and the snapshots and blobs of
// those that have them, in one transaction; the rows of a run are deleted only while
// its execution count is still that of the execution that finished it.
func (l *leaseDB) done(ctx context.Context, runs []finishedRun) error {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	steps := tx.StmtContext(ctx, l.doneStmt)
	var snaps *sql.Stmt
	if slices.ContainsFunc(runs, func(r finishedRun) bool { return r.snap }) {
		snaps = tx.StmtContext(ctx, l.doneSnapStmt)
	}
	var answers *sql.Stmt
	if slices.ContainsFunc(runs, func(r finishedRun) bool { return r.asked }) {
		answers = tx.StmtContext(ctx, l.doneAnswersStmt)
	}
	var blobs *sql.Stmt
	if slices.ContainsFunc(runs, func(r finishedRun) bool { return r.blobs }) {
		blobs = tx.StmtContext(ctx, l.doneBlobsStmt)
	}
	for _, r := range runs {
		if r.asked {
			if _, err := answers.ExecContext(ctx, r.id); err != nil {
				tx.Rollback()
				return err
			}
			if _, err := tx.ExecContext(ctx, l.q(`DELETE FROM {K} WHERE run_id = $1`), r.id); err != nil {
				tx.Rollback()
				return err
			}
		}
		// The snapshot and the blobs first: the steps' delete takes the
		// count with it.
		if r.blobs {
			if _, err := blobs.ExecContext(ctx, r.id, r.epoch); err != nil {
				tx.Rollback()
				return err
			}
		}
		if r.snap {
			if _, err := snaps.ExecContext(ctx, r.id, r.epoch); err != nil {
				tx.Rollback()
				return err
			}
		}
		if _, err := steps.ExecContext(ctx, r.id, r.epoch); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// saveSnapshot writes the run's engine snapshot, taken after the step
// named key by execution epoch, over the one before; errFenced when a
// newer execution runs the run.
func (l *leaseDB) saveSnapshot(ctx context.Context, runID, key string, epoch int, state []byte) error {
	r, err := l.snapStmt.ExecContext(ctx, runID, key, l.seal.sealValue("snapshot", state, runID), epoch)
	if err != nil {
		return err
	}
	if n, err := r.RowsAffected(); err == nil && n == 0 {
		return errFenced
	}
	return nil
}

// answer records ans as the answer to the question askID of runID, unless
// one was recorded before; it returns the answer that stands. Answers are
// sealed with a key, bound to their question.
func (l *leaseDB) answer(ctx context.Context, runID, askID string, ans []byte) ([]byte, error) {
	bind := runID + "\x00" + askID
	if _, err := l.db.ExecContext(ctx, l.q(`INSERT INTO {A} (run_id, ask_id, answer) VALUES ($1, $2, $3) ON CONFLICT (run_id, ask_id) DO NOTHING`),
		runID, askID, l.seal.sealValue("answer", ans, bind)); err != nil {
		return nil, err
	}
	var got string
	if err := l.db.QueryRowContext(ctx, l.q(`SELECT answer FROM {A} WHERE run_id = $1 AND ask_id = $2`), runID, askID).Scan(&got); err != nil {
		return nil, err
	}
	return l.seal.openValue("answer", got, bind)
}

// loadSnapshot reads the run's last engine snapshot; nil when it has none.
func (l *leaseDB) loadSnapshot(ctx context.Context, runID string) ([]byte, error) {
	var state string
	err := l.loadSnapStmt.QueryRowContext(ctx, runID).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return l.seal.openValue("snapshot", state, runID)
}

// supervisor runs the heartbeat and the lease checks of a launched runtime.
type supervisor struct {
	rt     *Runtime
	db     *leaseDB
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startSupervisor(ctx context.Context, rt *Runtime) (*supervisor, error) {
	db, err := rt.auxDB(ctx)
	if err != nil {
		return nil, err
	}
	s := &supervisor{rt: rt, db: db}
	c := rt.cfg
	if err := db.beat(ctx, c.appName, c.executorID, c.appVersion); err != nil {
		return nil, fmt.Errorf("durable: heartbeat: %w", err)
	}
	lctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Go(func() { s.loop(lctx) })
	return s, nil
}

func (s *supervisor) loop(ctx context.Context) {
	c := s.rt.cfg
	tick := time.NewTicker(max(c.lease/3, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := s.db.beat(ctx, c.appName, c.executorID, c.appVersion); err != nil && ctx.Err() == nil {
			c.logger.Warn("durable: heartbeat failed", "executor_id", c.executorID, "error", err)
		}
		if err := s.supervise(ctx); err != nil && ctx.Err() == nil {
			c.logger.Warn("durable: lease check failed", "executor_id", c.executorID, "error", err)
		}
	}
}

// supervise resumes the pending runs of the workers whose lease expired.
func (s *supervisor) supervise(ctx context.Context) error {
	c := s.rt.cfg
	dead, err := s.db.claim(ctx, c.appName, c.appVersion, c.executorID, c.lease, max(c.lease, time.Minute))
	if err != nil {
		return err
	}
	for _, ex := range dead {
		n, err := s.rt.resumeExecutor(ctx, ex)
		if err != nil {
			return fmt.Errorf("resume the runs of executor %q: %w", ex, err)
		}
		c.logger.Warn("durable: a worker's lease expired; its runs were resumed", "dead_executor", ex, "runs", n, "executor_id", c.executorID)
		if err := s.db.release(ctx, c.appName, ex, c.executorID); err != nil {
			return err
		}
	}
	return nil
}

func (s *supervisor) stop() {
	s.cancel()
	s.wg.Wait()
}

// auxDB opens, at its first use, the connection to the runtime's own
// tables (the lease, the steps table, storage) in the same database.
// Close closes it.
func (rt *Runtime) auxDB(ctx context.Context) (*leaseDB, error) {
	rt.auxMu.Lock()
	defer rt.auxMu.Unlock()
	if rt.aux == nil {
		db, err := openLeaseDB(ctx, rt.dsn)
		if err != nil {
			return nil, err // tried again at the next use
		}
		db.seal = rt.cfg.sealer
		rt.aux = db
	}
	return rt.aux, nil
}

// resumeExecutor re-enqueues the pending workflows that executor ex
// recorded under this runtime's application name and version: runs on
// the runtime's queue (so that its concurrency limit holds), parked
// questions and approvals on DBOS's internal queue (they wait, and must
// not take a worker's slot). It returns how many it resumed.
func (rt *Runtime) resumeExecutor(ctx context.Context, ex string) (int, error) {
	dc, end := rt.within(ctx)
	defer end()
	ws, err := dbos.ListWorkflows(dc, dbos.WithFilterStatus(dbos.WorkflowStatusPending), dbos.WithFilterExecutorIDs(ex),
		dbos.WithFilterAppVersion(rt.cfg.appVersion), dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return 0, err
	}
	var runs, parked []string
	for _, w := range ws {
		if w.Name == runWorkflowName {
			runs = append(runs, w.ID)
		} else {
			parked = append(parked, w.ID)
		}
	}
	if err := rt.resumeWorkflows(dc, runs, parked); err != nil {
		return 0, err
	}
	return len(runs) + len(parked), nil
}

// resumeWorkflows re-enqueues runs on the runtime's queue (DBOS's internal
// one without a queue) and parked questions and approvals on DBOS's
// internal queue, where they wait without taking a worker's slot.
func (rt *Runtime) resumeWorkflows(dc dbos.Context, runs, parked []string) error {
	if len(parked) > 0 {
		if _, err := dbos.ResumeWorkflows[any](dc, parked); err != nil {
			return err
		}
	}
	if len(runs) > 0 {
		var opts []dbos.ResumeWorkflowOption
		if rt.queue != "" {
			opts = append(opts, dbos.WithResumeQueue(rt.queue))
		}
		if _, err := dbos.ResumeWorkflows[any](dc, runs, opts...); err != nil {
			return err
		}
	}
	return nil
}
