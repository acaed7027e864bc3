// Command jaeger runs a traced agent offline and sends its spans to Jaeger
// (or any OTLP/HTTP collector), then prints where to find the trace.
//
// The agent plans with a scripted model (no API key, no network besides
// the traces): it calls a weather tool and a researcher subagent traced by
// its own extension, then answers. The scripted usage reports cache-read,
// cache-creation and reasoning tokens, so every usage field shows in the
// chat spans. The scripted replies stand in for claude-sonnet-5-5 and
// claude-haiku-5-5, so the spans carry harnessx.cost.usd from the built-in
// price table, and the example prints the planner's cost (RunResult.Cost;
// HARNESSX_PRICES extends the table or, set to off, turns costs off).
//
// Start Jaeger (docker compose -f docker-compose.otel.yml up, or the
// binary: see the README), then:
//
//	go run ./examples/jaeger
//
// It sends to OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318),
// as service OTEL_SERVICE_NAME (default harnessx-example). When nothing
// listens it still exits 0 at once and says how many spans were lost.
package main
