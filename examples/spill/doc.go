// Command spill shows the result-spilling extension offline: a tool
// exports several megabytes of CSV, which the extension stores, handing the
// model a compact envelope instead; the scripted model then reads the
// stored result with read_result — a search, a slice and a filtered count —
// without the export ever entering its context or running again.
//
// Run it with
//
//	go run ./examples/spill
//
// It prints the envelope the model received and each read_result call with
// its answer. The stored export lives in a temporary directory that is
// removed when the agent closes.
package main
