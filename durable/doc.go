// Package durable makes harnessx runs survive a crash. It implements the
// engine's step seam ([harness.StepRunner], [harness.Asker],
// [harness.Clock]) on DBOS Transact Go: each model response and each tool
// outcome is recorded in a database as it happens, and a run whose process
// died continues from its last recorded step when a process launches
// again. Paid model responses are not requested again, finished tools do
// not run again, and pending approvals and questions wait in the database
// for an answer from any process.
//
// # One option: the runtime
//
//	rt, err := durable.Open(ctx, "sqlite:.harnessx/runs.db") // or "postgres://…"
//	rt.Register("support", func(ctx context.Context) ([]harness.Option, error) {
//		return []harness.Option{harness.WithProvider(p), harness.WithTools(tools...)}, nil
//	})
//	err = rt.Launch(ctx)                        // recovers this process's unfinished runs
//	res, err := rt.Run(ctx, "support", "hello") // a durable run
//	defer rt.Close(ctx)
//
// An agent is registered as a [Factory] of its options, not as an agent:
// every run builds its own agent (a recovered run in a new process too),
// and the runtime adds its step runner and, for a session, the saved
// session ([harness.LoadSession]). Register every agent before Launch, in
// every process that runs or recovers runs, under the same names and with
// the same tools and extensions. Build the tools and the provider once,
// outside the factory, and let it return them: making a tool infers and
// compiles its schema, which costs more than a run's bookkeeping; only
// extensions, which hold per-agent state, need to be made per run.
//
// # Databases
//
// The default is SQLite through DBOS's pure-Go driver (modernc.org/sqlite,
// no cgo): "sqlite:PATH", [DefaultDSN] for "". The file and its directory
// are created. It serves one machine: several processes of that machine
// may share the file (WAL), never over a network file system; a change
// made by another process is seen within about a second. A Postgres DSN
// ("postgres://user:pass@host:5432/db?sslmode=disable", or key=value)
// serves several machines with the same code; the role needs to create
// the database (or it exists) and the "dbos" schema, or the schema is
// migrated beforehand with DBOS's CLI; a missing database is created
// when the role may (CREATEDB), and Open names it otherwise. Several
// processes may open a new
// Postgres database at once: Open migrates under a Postgres advisory lock,
// so they migrate it one after the other (DBOS's migrations take no lock
// of their own, and two at once fail on each other's columns or wait on
// each other's index builds); a process that is not a harnessx runtime
// and migrates at the same time makes Open retry. Open waits for the lock
// as long as its context allows. Open refuses a file that is not a
// SQLite database ([ErrNotDatabase]), another application's database
// ([ErrForeignDatabase]) and a schema newer than this build
// ([ErrSchemaTooNew]) without writing to them; a SQLite file whose pages
// fail SQLite's integrity check (quick_check) is not a database either.
// The context given to Open bounds Open only: cancelling it later ends
// nothing of the runtime. DBOS reads two environment variables that
// would silently replace the runtime's options, DBOS__APPVERSION and
// DBOS__VMID; Open refuses them unless they equal [WithAppVersion] and
// [WithExecutorID].
//
// # Executor IDs and versions
//
// [Runtime.Launch] recovers the runs recorded by its own executor ID
// ([WithExecutorID], default "local") under its own application version
// ([WithAppVersion], default "harnessx-3") and name ([WithAppName],
// default "harnessx"). One process per machine keeps the defaults, and its
// restart recovers its runs. Several processes on one database need one
// unique, stable ID each — a restarted worker must come back with its ID
// — and a process that only answers questions or approvals (a CLI) should
// not Launch at all: Resume, Reply, Pending and Wait work without it, and
// a launched process with another's ID would run that one's runs too. A
// dead worker whose ID never returns leaves its runs pending until the
// lease moves them (next section), or until any process moves one with
// [Runtime.Resume] and no decisions.
//
// Launch takes a lock on its executor ID (and application name) that
// lives as long as the process: an flock on a file beside a SQLite
// database ("<database>-executor-<hash>.lock"), a session advisory lock on
// Postgres. A second live process launched with the same ID is refused
// with [ErrExecutorInUse], instead of recovering, and so running, the
// same runs; a process that died (killed included) holds nothing, so its
// restart gets the ID back at once. On Postgres the lock goes with the
// connection that holds it: after the server restarted, a process is no
// longer protected against a twin until it launches again.
//
// The version is pinned, unlike DBOS's
// default (a hash of the binary, which strands every pending run after a
// rebuild); bump it when a change makes recorded runs replay differently:
// workers dequeue and resume only runs of their own version. A run that
// has not finished and is pinned to another version is neither waited
// for nor moved by a runtime of this one: [Runtime.Wait] and
// [Runtime.Resume] return [ErrVersionMismatch] at once, naming both
// versions; a finished run's outcome reads from any version.
//
// # Several machines
//
// Several worker processes on one database (Postgres across machines;
// SQLite only for processes of one host) share the runs through a DBOS
// queue:
//
//	// every worker, each with a unique, stable executor ID:
//	rt, _ := durable.Open(ctx, dsn, durable.WithExecutorID(host),
//		durable.WithQueue("runs"), durable.WithWorkerConcurrency(4))
//	rt.Register("support", factory)
//	rt.Launch(ctx)
//	// a client (an API server, a CLI), which does not Launch:
//	cl, _ := durable.Open(ctx, dsn, durable.WithExecutorID("api-1"), durable.WithQueue("runs"))
//	id, _ := cl.Submit(ctx, "support", "hello") // or cl.Run, which also waits
//	res, _ := cl.Wait(ctx, id)
//
// [Runtime.Submit] and [Runtime.Run] enqueue the run; a launched worker
// with the queue dequeues it when it has a free slot
// ([WithWorkerConcurrency]: a limit per worker, stored with the queue in
// the database, so give every worker the same) and runs it; the queue is
// polled about once a second. A run that waits for an approval or an
// answer keeps its slot (see Not done).
//
// DBOS recovers at Launch only the runs of the executor ID that launches.
// For a worker that dies and does not come back, the runtime keeps a
// lease: every launched worker with a queue (or with [WithLease]) writes
// a heartbeat every lease/3 into a table of its own in the same database
// ("harnessx.workers" on Postgres, "harnessx_workers" on SQLite), and
// checks the others' as often. A worker of the same application name and
// version whose heartbeat is older than the lease ([WithLease], default
// 30s, measured on the database's clock) is claimed by one supervisor in
// one UPDATE, its pending runs are resumed on the queue
// (dbos.ResumeWorkflows; parked questions and approvals on DBOS's internal
// queue, where they take no slot) and its row is deleted; any worker then
// runs them from their last recorded step, with the same rules as a
// recovery in one process. A supervisor that dies between the claim and
// the resume leaves the claim, which another takes over after a minute
// (or the lease, if longer). A worker stopped by [Runtime.Close] stops
// its heartbeat too: its unfinished runs move after the lease unless it
// comes back first, with its executor ID, and recovers them itself.
//
// # Fencing: a stalled worker never repeats an unsafe call
//
// A lease tells a dead worker from a silent one only by time. A worker
// that was only stalled longer than the lease (a stopped VM, a long GC
// pause, a partitioned network) wakes up with runs that have moved. Two
// fences keep it from doing their work again:
//
//   - DBOS's: resuming a run gives it a new owner, and the old execution's
//     next step record is refused.
//   - The runtime's own: every execution of a run has a number (its
//     attempt, counted in the steps table) and writes its tool-call
//     markers, its engine snapshots and, once finished, the deletion of
//     the run's rows only while that number is still the run's. An
//     execution that learns it was replaced (from either fence) stops:
//     it requests no more model responses, runs no more tools and writes
//     nothing; the newer execution records the run and its outcome.
//
// So a ReplayUnsafe call runs at most once: the call in flight when the
// worker stalled may finish (its effect happened once), and the new
// owner, finding its marker without an outcome, reports it interrupted
// to the model, as after a crash. A ReplaySafe call may run again, even
// at the same time as the stalled one. Tools with effects should pass
// [harness.ExecutionKey] (or [harness.ToolCallID]) as the idempotency key
// of what they call, and the lease should be well above the longest stall a live worker may
// have.
//
// TestStalledWorkerNeverRepeatsAnUnsafeCall checks it with real
// processes on SQLite and Postgres: two workers run a stream of runs
// whose ReplayUnsafe calls last 1.5 s, and twenty times the worker in the
// middle of such a call is stopped (SIGSTOP) for 1.5 times the lease and
// continued (SIGCONT); every call runs once, by the counters the tools
// append to a file, and every run completes. Before the runtime's own
// fence, a finished (fenced) execution deleted the run's markers, and the
// same test saw 18 of 126 calls run two to four times.
//
// # Outcomes, state and errors
//
// [Runtime.Status] reports where a run stands (queued, running, waiting
// for an answer, paused for approvals, completed, failed, cancelled), its
// application version, executor, attempt and the questions it waits on,
// without side effects. [Runtime.Run], [Runtime.Wait] and [Runtime.Resume]
// report a run failed only when the database says it failed: while the
// database does not answer they wait, until their context ends (tested
// with a Postgres stopped for 15 s in the middle of a run's tool call).
// Errors of calls about a run are [*Error]: errors.As gives the call, the
// run and the class, one of the Err… sentinels (errors.Is matches them
// too); [ErrDatabase] is the class of a database that failed.
//
// # What is recorded, and what repeats on recovery
//
// A run is a DBOS workflow whose ID is the run ID ([WithRunID], or
// random). Its input holds the agent's name, the user's input and the
// session saved before the run; its output the [harness.RunResult] (its
// error as text: [RunError]) and the session after it. Starting a run
// under an existing ID returns that run's outcome.
//
// Each model request is a step named by its key ("<run>/model/<n>"); the
// response is recorded whole (JSON) and replayed without a request and
// without a span. Each tool call is a step named by its key; before the
// tool runs, the step writes the call's marker (that it started, and
// when) into the runtime's own steps table, "harnessx.steps" on Postgres
// and "harnessx_steps" on SQLite: one prepared statement instead of a
// second DBOS step, which costs a read, a write and a transaction. The
// same table counts each run's executions, and a run's rows (its blobs,
// below, included) go when it finishes. The calls of a parallel group start in call order (dbos.Go)
// and run in parallel. On recovery a recorded call is not run again; a
// call whose marker was written but whose outcome was not recorded was
// interrupted by the crash: a ReplaySafe tool runs again from its start, a ReplayUnsafe tool
// does not, and the model gets [harness.InterruptedResult] (status
// interrupted). A model request interrupted mid-flight is requested again.
// [harness.Now] inside a tool returns the time the call first started, in
// milliseconds (UTC), the same on every attempt.
//
// The bytes of large media parts are recorded once, by reference. An
// image, document or audio part with at least 16 KiB inline in a tool
// result or a model response is written to the runtime's blobs table
// ("harnessx.blobs" on Postgres, "harnessx_blobs" on SQLite: one row per
// run and content, keyed by the SHA-256 of the bytes, stored as bytes:
// BYTEA, BLOB) before the step is recorded, and the step's record holds a
// copy of the part whose Media has no Data and the URI
// "artifact:sha256:<hex>?harnessx-blob=<size>" (the reference the tracing
// extension and the flight recorder use, plus the size); the engine's
// own Media is not changed. So a 2 MiB image a tool returns costs one row
// of 2 MiB, not 2.7 MiB of DBOS's base64 JSON in every step that records
// it. The engine never sees a reference: the runner hands it the bytes,
// the first time from what the execution just wrote, on replay from the
// table, checked against the SHA-256 and the size. A blob that is missing,
// does not open or does not match fails the run, and no step runs after
// it, with an error that names the run, the step, the part and the hash
// (class [ErrBlob]; from [Runtime.Wait], a [RunError] whose Class it is).
// A smaller part stays inline in the step's record, and so do the parts
// of a step recorded before references existed: it replays as it was. A
// media part that a tool or a model returns with no bytes and a URI of
// that form is taken for a reference. What keeps its bytes inline: the
// run's output (its Messages hold each part once, so that a finished run's
// result still has them after its blobs went), a saved session (as
// [harness.Agent.SaveSession] keeps bytes), and the paused result a run
// hands to its approval. A durable run's input is text.
// BenchmarkDurableRunWithImage (a tool returns a 1 MiB image) allocates
// about half of what recording it inline did: 6 MB instead of 12 MB a run
// on SQLite, 13 MB instead of 21 MB on Postgres.
//
// A re-execution knows it is one: the run's invoke_agent span carries
// harnessx.recovered and harnessx.run.attempt and links to the crashed
// attempt's span, and the flight recorder records a recovered event
// (through [harness.ContextRecovered], with the execution count of the
// steps table; DBOS's own recovery_attempts is reset by ResumeWorkflow).
//
// Everything else of the run runs again on recovery: building the agent,
// turn-start callbacks, prompt providers, run interceptors and hooks, the
// middleware and hooks of steps that did not finish. Hooks see replayed
// steps only through the engine's own replay (no model or tool span is
// emitted again for a recorded step).
//
// # Approvals
//
// A run that pauses on approvals parks: it starts a child workflow
// "<run>/approval/<n>" that lists the pause ([Runtime.Pending]), and
// [Runtime.Run] returns the paused result. [Runtime.Resume] from any
// process checks the decisions (one per pending approval), records them
// (the first decisions stand: different ones later are
// [ErrAlreadyAnswered]), sends them, wakes the run and waits for its next
// outcome. A process that dies while a run is paused loses nothing.
//
// # Questions
//
// A ReplaySafe tool may ask the user with [harness.AskUser]. The question
// becomes a workflow "<run>/ask/<ask id>" that waits for
// [Runtime.Reply]. Without an answer yet, the run parks (below). Once
// answered, the run continues and the asking tool runs again from its
// start: [harness.AskUser] returns the answer at once, without asking
// twice. Make what a tool does before it asks safe to repeat. A tool run
// again after a crash finds the recorded answer, or the same open
// question, the same way. [Runtime.Pending] lists the open approvals and
// questions of every run in the database, or of one ([PendingOf]), each
// question with the tool that asks it. The first answer stands: it is
// recorded before it is sent, so a different second [Runtime.Reply] is
// [ErrAlreadyAnswered] whether the question still waits, was answered,
// or its run finished. [harness.AskUser] through [Runtime.Runner] outside
// a durable run is [harness.ErrAskUnsupported].
//
// # Parked runs hold no worker
//
// A run that waits for a person does not execute while it waits, so it
// holds no queue slot ([WithWorkerConcurrency]) and no goroutine of its
// worker: with concurrency 2 and any number of runs waiting, new runs
// still run. Parking: a question without an answer ends the asking call
// with [harness.ErrSuspended] (the call's status is
// [harness.ToolSuspended], and the run's [harness.StatusSuspended]: not
// errors on spans); a pause on approvals without decisions parks the
// same way. The execution records what the run waits for in the parked
// table ("harnessx.parked" on Postgres, "harnessx_parked" on SQLite),
// fenced on its execution number like the markers, cancels the run's
// workflow from outside it (DBOS's row becomes CANCELLED, leaves its
// queue and loses its owner; harnessx reads it as parked) and returns.
// [Runtime.Status] reports a parked run with Parked set, and its state is
// waiting or paused; [Runtime.Wait] keeps waiting for a run parked on a
// question, and returns the paused result of one parked on approvals.
//
// Reply and Resume record the answer before they send it, then wake the
// run once everything it waits for is answered: they claim its parked
// rows in one statement (so that of two wakers one moves it) and move
// the run back to the queue it came from (dbos.ResumeWorkflow; DBOS's
// internal queue for a run without one). Its next execution replays its
// recorded steps (no model request or tool call is made again; the spans
// show it as the run's next attempt, with harnessx.recovered) and
// continues from the answer. The parker writes before it reads what the
// waker wrote, and the waker the other way round, so an answer given
// while the run parks is never missed; every launched runtime also looks
// every 2 s for parked runs with all their answers (a waker that stopped
// mid-wake, after a 30 s claim) and wakes them. TestParkedRunsFreeTheirSlots
// (a worker process with concurrency 2, five runs parked on questions and
// three on approvals, three new runs complete; then all answered, all
// complete, each asking tool run twice) and TestAnswerRacesThePark
// (twenty runs answered the moment their question shows) test it on
// SQLite and Postgres.
//
// # Sessions
//
// [WithSession] continues a conversation across runs and processes: the
// run starts from the session its predecessor saved and saves its own.
// A session's runs are named "<session>/<n>" and run one at a time
// ([ErrSessionBusy]).
//
// # Extension storage
//
// The agents the runtime builds keep extension storage
// ([harness.ExtensionContext.Storage]) in the runtime's database
// ([Runtime.Storage]): one table beside the runs, which every worker on
// the database shares, instead of files under each process's state
// directory. A factory's own harness.WithStorage wins. Writes are not
// steps: a re-executed run writes again, so extensions write idempotently.
//
// # Large results
//
// A tool step records the result the model gets: with the spill extension
// that is the envelope, not the content, which stays in the spill store.
// Give spill a lasting store shared by the processes that may resume the
// run (spill.WithDir on one host; a shared store across machines): a
// result spilled by a crashed execution is then adopted by the next one's
// read_result.
//
// # Engine snapshots of extension state
//
// Replaying the recorded steps restores a run's conversation exactly, but
// not what its extensions keep in memory (spill's index of stored results,
// a counter, the servers an MCP extension enabled). So, as the extension
// guide asks, after every model step and every group of tool calls the
// runtime takes an engine snapshot: [harness.Agent.SaveExtensionState],
// which calls each extension's OnSaveSession under [harness.AsSnapshot]
// (a saver takes no ownership action for it: spill retains no file). The
// snapshot is written to the runtime's snapshots table
// ("harnessx.snapshots" on Postgres, "harnessx_snapshots" on SQLite), one
// row per unfinished run, only when it differs from the last one written:
// an agent without stateful extensions writes nothing, and a step that
// changed no state costs the encoding and a comparison. A re-executed run
// gives its last snapshot to [harness.Agent.LoadExtensionState] before it
// replays (OnLoadSession runs, after the session's own load for a run of
// a session), so extensions continue from the state of the last step
// recorded before the crash; steps that did not finish run again with
// their hooks, as always. The factory must install the same extensions
// as when the run started: a snapshot naming an extension that is not
// installed, or one that cannot load state, fails the recovered run with
// an error that says so. A finished run's snapshot is deleted with its
// markers. A snapshot that cannot be written is logged and tried again
// after the next step.
//
// Per step, encoding costs what the extensions' states weigh, unless an
// extension implements [harness.StateVersioner]: then its state is
// encoded again only after it changed. Spill does (its state lists every
// stored result: with 2,000 of them a snapshot costs about 11 ms to
// encode, and 0.5 µs while no result was added).
//
// With the snapshot, a result spilled to spill's default temporary
// directory by a crashed process on the same host is found again by the
// recovered run (read-only: the directory, which the crash left behind,
// is not removed by anyone; give spill a lasting store with retention to
// manage it). A result spilled by a crashed execution after its last
// snapshot is still found by read_result when spill has a lasting store
// of its own (spill.WithDir, spill.WithStore), which adopts it.
//
// # Data at rest
//
// What a run records holds what the run saw: prompts, tool arguments and
// results, MCP results, answers, provider errors. Without a key DBOS
// stores them as base64 JSON, readable by anyone who reads the database.
//
// With a key ([WithPayloadKey], or [EnvPayloadKey] in the environment:
// "ID:BASE64KEY[,ID:BASE64KEY…]", the first the current key, the others
// older keys, each 32 bytes in standard base64, as `openssl rand -base64
// 32` prints; see [ParsePayloadKeys]) every payload the runtime hands to
// DBOS is sealed with AES-256-GCM by a DBOS serializer: runs' inputs and
// outputs (with the session), each model response and tool result, the
// questions, answers, approval requests and decisions, and what DBOS
// records itself through the serializer. So are the values of the
// runtime's own tables: extension storage, engine snapshots, the first
// answer given to each question and the bytes of large media parts. Each
// sealed payload names the ID of its key, "hx1:<key id>:<kind>:<base64>",
// the header authenticated with it (and, in the runtime's tables, the row
// it belongs to), as Temporal's payload codecs do. Nonces are random (96
// bits): rotate a key well before it has sealed 2^32 payloads (a run seals
// about ten). DBOS records a step's or a workflow's error in plain text
// beside the sealed output, so with a key a model request's error (and a
// panic of a step) is recorded inside the step's sealed output instead,
// and a run's own error inside its output; a replay returns the same error
// text. Tool-call markers hold no content and are not sealed.
//
// Not sealed: workflow IDs (run IDs, session IDs, question IDs), step
// names ("<run>/model/<n>", "<run>/tool/<n>/<call id>"), queue names,
// executor IDs, statuses, timestamps, counts, the sizes of the
// payloads, extension storage's namespaces, sessions and keys, and the
// SHA-256 and size of each large media part (the blobs table's key: who
// holds a file can tell whether a run that has not finished saw it). The
// threat model: someone who reads the database file, a backup or a dump
// without the key learns which runs there were, when, how long they took,
// how many model requests and tool calls they made and how large their
// payloads were, not what they said or which tools they called; someone
// with the key, or with the memory of a process that has it, learns
// everything. The key protects the confidentiality and integrity of each
// payload, not against a writer of the database who drops, replays or
// swaps whole rows of DBOS's tables.
//
// Keys rotate: give the new key first and the old ones after it, in every
// process on the database; the new one seals, the old ones still open what
// they sealed. Roll it out in two steps: first give every process the new
// key as an older one, then make it current; a process that runs without a
// key that another already seals with cannot open those runs, and DBOS
// fails a run whose input it cannot open. For the same reason a first key
// is given to all the processes of a database at once (the ones without it
// stopped first). The runtime records the IDs of the keys that sealed
// payloads in a table of its own ("harnessx.keys", "harnessx_keys"), and
// Open refuses a runtime that lacks one of them, or has no key at all,
// with [ErrPayloadKey] naming the missing IDs, before anything runs: DBOS
// would otherwise fail, for good, a run whose input it cannot open. A key
// ID whose key opens nothing (a wrong key under a known ID) shows at the
// first payload read, again as ErrPayloadKey naming it. An old key is
// needed as long as a payload it sealed remains: [Runtime.RetireKey]
// checks that none does and forgets its ID, after which runtimes without
// it open the database. Rows written before the first key stay readable.
// The first runtime with a key is refused while a workflow recorded
// without one is unfinished (a run parked on a question, a pending run):
// DBOS fixes a workflow's serialization when it starts, so finish those
// without a key first. Sealing costs about what DBOS's own JSON encoding
// costs per payload (BenchmarkSealPayload); BenchmarkDurableRunSealed
// stays within the noise of BenchmarkDurableRun (11 more allocations and
// 2.5 KB more per run).
//
// Logs: the runtime passes its logger to DBOS wrapped in the built-in
// secret redaction of the flight recorder and the tracing extension (API
// keys, bearer tokens, URL passwords, secret-looking JSON members and
// assignments): DBOS logs a failed step's error, which may quote a
// provider's key. The redaction finds known secret shapes, not content in
// general; with a key DBOS sees no provider error to log.
//
// Retention: a launched runtime deletes the rows of runs that finished
// (succeeded, failed, were cancelled) more than [WithRetention] ago
// (default [DefaultRetention], 7 days; zero or negative keeps them
// forever), with their steps, questions and approvals
// (dbos.DeleteWorkflows) and the runtime's markers, snapshots and blobs, in the
// background every retention/4 but at most hourly (the first time within a
// minute of Launch), at most 10,000 workflows a time. It never deletes a row
// of an unfinished run (pending, enqueued, parked on a question or
// approvals), nor a finished run's while one of its questions or approvals
// waits, and it keeps the newest successful run of a session (the
// session's next run starts from it). The same sweep deletes markers,
// snapshots and blobs left by a crash for runs that succeeded, failed or
// no longer exist. A finished run's blobs do not wait for the retention:
// they go with its markers when it finishes. A deleted run is unknown ([ErrUnknownRun]) and its ID may be used
// again. Extension storage is not subject to retention.
//
// Files: Open creates a SQLite database file with mode 0600 (SQLite gives
// its -wal and -shm files the same mode) and the directories it creates
// for it, ".harnessx" included, with mode 0700. A file or directory that
// exists keeps its mode.
//
// # Not done
//
//   - A run continued after its answer is its next attempt: it replays
//     its recorded steps and counts as recovered on its spans, which
//     cannot tell a continuation from a crash's recovery.
//   - A question's own workflow ("<run>/ask/<id>") still waits in a
//     process (a goroutine, not a queue slot) until it is answered.
//   - Per-machine concurrency limits need one queue per machine: DBOS
//     stores a queue's worker limit once for all workers.
//   - Errors of a recorded run come back as text ([RunError]), not as
//     their original types.
//   - The SQLite driver is always linked (about 7 MB and a long first
//     build); a Postgres-only build cannot leave it out yet.
//   - A parked question or approval gives up after a year (DBOS has no
//     unbounded wait).
//   - An engine snapshot is one more database write after a step that
//     changed extension state (BenchmarkDurableRunWithState), apart from
//     the step's own record.
//   - A finished run's output and a saved session hold the bytes of their
//     media parts inline (once per run, not per step), sealed with a key.
//   - The temporary spill directory of a crashed process stays on disk
//     after its run recovered.
//   - Nothing re-seals old rows under a new key: an old key retires
//     ([Runtime.RetireKey]) only once nothing it sealed remains (retention
//     deletes finished runs; extension storage values stay until
//     rewritten).
//   - A run cannot switch from unsealed to sealed while unfinished (see
//     Data at rest).
//   - On SQLite, a process stopped (a frozen VM, SIGSTOP) inside a write
//     transaction holds the database's only write lock: the others' writes
//     wait and fail after the busy timeout (5 s). Several machines belong
//     on Postgres.
package durable
