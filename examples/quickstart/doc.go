// Command quickstart runs a small traced agent: the model asks a weather
// tool, reads its answer and replies. It prints the transcript, the token
// usage (cache-read, cache-creation and reasoning tokens included), the
// run's span tree (agent → chat / execute_tool, with durations, tokens,
// stop reasons and any prompt-cache break), and where the spans went and
// how to look at them again.
//
//	go run ./examples/quickstart
//
// It runs offline, on a scripted model, unless -live asks for a real one,
// even when ANTHROPIC_API_KEY or OPENAI_API_KEY is set (it then says so on
// standard error). Spans go where the environment says (see
// exporters.FromEnv): by default they are appended to the OTLP JSON file
// .harnessx/traces.jsonl, which `go run ./cmd/flightrec trace --last` and
// `go run ./cmd/flightrec ui` read.
//
// A real model needs its vendor's SDK, which the default build leaves out,
// and its API key:
//
//	ANTHROPIC_API_KEY=sk-ant-… go run -tags anthropic ./examples/quickstart -live   # model claude-haiku-5-5
//	OPENAI_API_KEY=sk-…        go run -tags openai ./examples/quickstart -live      # model gpt-5.4-mini
//
// The first build with a vendor SDK takes minutes (later ones come from
// Go's build cache); the offline build compiles neither SDK. HARNESSX_MODEL
// picks another model. With both tags and both keys, -live uses Anthropic.
// -live without a vendor tag, or without the key of the vendor compiled
// in, fails with one line saying which, and exit status 2.
package main
