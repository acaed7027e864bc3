package durable

import "errors"

// Errors returned by the runtime. They are sentinels: test with errors.Is;
// the returned errors wrap them with details.
var (
	// ErrNotDatabase: the SQLite file exists but is not a SQLite database
	// (a text file, a truncated or corrupted file). Nothing was written to
	// it.
	ErrNotDatabase = errors.New("durable: not a SQLite database")
	// ErrForeignDatabase: the SQLite database holds tables but not the
	// runtime's; the runtime refuses to add its tables to another
	// application's database. Nothing was written to it.
	ErrForeignDatabase = errors.New("durable: the database belongs to another application")
	// ErrSchemaTooNew: the database was migrated by a newer DBOS than this
	// binary's; an older binary must not run or recover its runs.
	ErrSchemaTooNew = errors.New("durable: the database schema is newer than this build")
	// ErrUnknownAgent: no agent was registered under the name.
	ErrUnknownAgent = errors.New("durable: unknown agent")
	// ErrUnknownRun: no run has the ID.
	ErrUnknownRun = errors.New("durable: unknown run")
	// ErrUnknownAsk: the run has no question with the ID.
	ErrUnknownAsk = errors.New("durable: unknown question")
	// ErrNotPaused: the run does not wait for approvals (it finished, or
	// it runs, or it waits for an answer instead).
	ErrNotPaused = errors.New("durable: the run is not paused on approvals")
	// ErrInvalidDecision: a decision names no pending approval, or a
	// pending approval has no decision or two.
	ErrInvalidDecision = errors.New("durable: invalid decisions")
	// ErrInvalidAnswer: the answer's kind is not the question's, or a
	// choice is not one of the question's options.
	ErrInvalidAnswer = errors.New("durable: invalid answer")
	// ErrAlreadyAnswered: the question was answered, differently. The same
	// answer given twice is not an error.
	ErrAlreadyAnswered = errors.New("durable: the question was already answered")
	// ErrSessionBusy: another run of the session has not finished (it runs
	// or is paused); a session runs one turn at a time.
	ErrSessionBusy = errors.New("durable: the session has a run that has not finished")
	// ErrRegistration: Register was called after Launch, twice with one
	// name, or with an empty name or a nil factory.
	ErrRegistration = errors.New("durable: invalid registration")
	// ErrNotLaunched: Run needs Launch first.
	ErrNotLaunched = errors.New("durable: the runtime is not launched")
	// ErrExecutorInUse: Launch found the executor ID held by another live
	// process (of the same application name) on the database; two
	// processes with one ID would both recover, and so both run, the same
	// runs. Give each process its own stable ID (WithExecutorID).
	ErrExecutorInUse = errors.New("durable: the executor ID is in use by another process")
	// ErrInvalidRunOption: the options of Run or Submit contradict each
	// other, or a session ID is malformed.
	ErrInvalidRunOption = errors.New("durable: invalid run options")
	// ErrVersionMismatch: the run is pinned to another application
	// version than the runtime's (WithAppVersion); no worker of this
	// version runs, recovers or resumes it, so the runtime neither waits
	// for it nor moves it.
	ErrVersionMismatch = errors.New("durable: the run belongs to another application version")
	// ErrDatabase: the database failed or could not be reached. Calls that
	// wait (Run, Wait, Resume) wait such errors out until their context
	// ends; the others return them.
	ErrDatabase = errors.New("durable: database error")
	// ErrBlob: a recovered run's recorded step references the bytes of a
	// large media part that are missing from the runtime's blobs table,
	// cannot be opened, or do not match the SHA-256 the step recorded (a
	// damaged or deleted row). The run fails rather than go on with other
	// bytes; the error names the run, the step and the hash.
	ErrBlob = errors.New("durable: a recorded part's bytes are missing or damaged")
	// ErrClosed: the runtime was closed.
	ErrClosed = errors.New("durable: the runtime is closed")
)
