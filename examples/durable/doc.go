// Command durable shows a harnessx run surviving the death of its process,
// offline (a scripted model, no network).
//
//	go run ./examples/durable            # dies (SIGKILL) inside the "charge" tool
//	go run ./examples/durable            # resumes the same run and finishes it
//
// The first invocation runs an agent whose model asks for a "lookup" and
// then a "charge"; the charge tool kills its own process on its first
// attempt (a marker file remembers it). The second invocation launches the
// durable runtime, which recovers the run: the recorded model responses
// are not requested again, the recorded lookup does not run again, and the
// charge — not safe to repeat — is reported interrupted to the model
// instead of charging twice. It prints which step ran, which was replayed
// and which was reported interrupted.
//
//	go run ./examples/durable -ask                  # parks on a question and waits
//	go run ./examples/durable -reply RUNID ANSWER   # from another terminal
//
// With -ask the run's tool asks the user a question and waits for the
// answer; -reply answers it from another process.
//
//	go run ./examples/durable -worker w1      # a worker; another terminal: -worker w2
//	go run ./examples/durable -submit 6       # a client: submits 6 runs, waits for them
//
// With -worker the process is a worker on the queue "demo" (one run at a
// time) until Ctrl-C; -submit hands runs to the workers without running
// any itself, and prints which worker ran each. A worker killed while it
// runs one leaves it to the others once its lease (5 s here) expires.
//
// The database is .harnessx/runs.db under the working directory, or -db:
// a SQLite file (or sqlite:FILE) or a postgres:// URL; anything else is
// refused. -reset removes the SQLite file and the marker file first.
//
// The crash demo traces its runs to .harnessx/traces.jsonl (or where the
// environment says, see package exporters): after the second invocation,
// "go run ./cmd/flightrec trace --last" shows the recovered run's span,
// marked harnessx.recovered, and its link to the crashed attempt. A worker
// that continues a run another worker left says so ("took over").
package main
