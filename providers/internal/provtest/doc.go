// Package provtest holds the test fixtures and harness helpers that the
// harnessx model providers' tests share: tool definitions, a conversation
// history, golden-file comparison, request checks against a replay server,
// and drivers for the tests whose logic is the same for every provider
// (fuzzing a stream, cancellation, retries, connection failures, error
// classification, the provider name). Vendor-specific expectations (paths,
// headers, scripts, fixtures) stay in the providers' own tests and are
// passed in.
//
// It is imported only by tests. It registers the -update flag that
// rewrites golden files.
package provtest
