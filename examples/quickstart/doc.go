// Command quickstart runs a small traced agent: the model asks a weather
// tool, reads its answer and replies. It prints the transcript, the token
// usage (cache-read, cache-creation and reasoning tokens included), the
// run's span tree (agent → chat / execute_tool, with durations, tokens,
// stop reasons and any prompt-cache break), and where the spans went and
// how to look at them again.
//
//	go run ./examples/quickstart
//
// It runs offline on a scripted model by default. Spans go where the
// environment says (see exporters.FromEnv): by default they are appended
// to the OTLP JSON file .harnessx/traces.jsonl, which
// `go run ./cmd/flightrec trace --last` and `go run ./cmd/flightrec ui` read.
//
// With ANTHROPIC_API_KEY set it uses Anthropic (model claude-haiku-5-5),
// with OPENAI_API_KEY set OpenAI (model gpt-5.4-mini); HARNESSX_MODEL picks
// another model. Those runs are the program examples/quickstart/live,
// which quickstart starts with go run: the offline path never compiles the
// vendor SDKs, so a first run on a fresh machine is quick.
package main
