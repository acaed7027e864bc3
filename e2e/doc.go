// Package e2e holds harnessx's end-to-end tests: real components wired as
// users wire them. The Jaeger test runs a traced agent (a tool call and a
// traced subagent) against a real Jaeger started by internal/jaegertest,
// exports through the exporters package over OTLP/HTTP, and checks the span
// tree and its attributes through Jaeger's query API v3.
//
// The tests need a Jaeger binary: set HARNESSX_JAEGER_BIN (CI runs
// .ci/jaeger.sh to build and cache one), or let jaegertest build it. With
// -short and no binary they are skipped.
package e2e
