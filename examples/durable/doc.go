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
// The database is .harnessx/runs.db under the working directory, or -db.
// -reset removes it and the marker file first.
package main
