// Package harnesstest is a test kit for agents and extensions, in the way
// net/http/httptest serves HTTP code: a [ScriptedProvider] that replays a
// script of model responses (text, tool calls, usage, stop reasons,
// injected errors, delays) and records every request it receives, a
// [HookRecorder] that records every lifecycle event, and a [StepRunner]
// that plays a durable runtime: it records the steps of a run, replays
// their outcomes when the run is recovered under the same run ID, reports
// interrupted calls and answers asks.
//
// With them an extension can be tested without a live model: install it on
// an agent whose provider is scripted, run turns, and assert on the
// recorded requests, events and results.
package harnesstest
