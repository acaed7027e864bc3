// Package e2e holds harnessx's end-to-end tests: real components wired as
// users wire them. The Jaeger test runs a traced agent (a tool call and a
// traced subagent) against a real Jaeger started by internal/jaegertest,
// exports through the exporters package over OTLP/HTTP, and checks the span
// tree and its attributes through Jaeger's query API v3. The tail-sampling
// test runs the same Jaeger binary as a collector with
// deploy/jaeger-tailsampling.yaml (a tail_sampling processor in its traces
// pipeline), sends 40 runs of which 4 fail, and checks that every failed
// trace is kept whole and that the share of the others kept is within
// bounds. The in-process tail-sampling test sends 30 runs through the
// exporters package's own tail sampler to a plain Jaeger, 6 with an error
// on a tool span only and 6 failed, and checks that Jaeger holds exactly
// those 12 traces, each whole.
//
// The tests need a Jaeger binary: set HARNESSX_JAEGER_BIN (CI runs
// .ci/jaeger.sh to build and cache one), or let jaegertest build it. With
// -short and no binary they are skipped.
package e2e
