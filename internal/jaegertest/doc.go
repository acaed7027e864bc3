// Package jaegertest runs a real Jaeger v2 for tests and queries it through
// its HTTP API v3, in the way net/http/httptest runs a real server.
//
// [Start] launches the Jaeger binary as a child process on free loopback
// ports, with in-memory storage, only the OTLP receiver and the query
// extension running (no other default port is bound, so parallel test
// binaries do not collide), and its own telemetry off. It waits until
// Jaeger answers and kills it when the test ends.
//
// The binary comes from HARNESSX_JAEGER_BIN. When that is unset, it is
// looked up in the cache directory that .ci/jaeger.sh fills
// (${HARNESSX_CACHE:-$HOME/.cache/harnessx}/jaeger-<version>, the version
// pinned in tools/go.mod) and, when missing there, built into it with
// `go build` in tools/ — several minutes, logged. A test that cannot get a
// binary fails; in -short mode it is skipped instead.
//
// [WithConfigFile] runs Jaeger with a configuration file instead — for
// instance deploy/jaeger-tailsampling.yaml, whose traces pipeline passes
// through the collector's tail_sampling processor — still on free
// loopback ports; [WithSet] and [WithEnv] tune it per test.
//
// [Jaeger.FindTraces] and [Jaeger.WaitForSpans] query
// GET /api/v3/traces and decode its OTLP JSON result into [Span]s.
package jaegertest
