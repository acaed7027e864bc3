// Command metrics runs a traced agent offline with the GenAI metrics on
// and sends the metrics to a local file, and to an OTLP/HTTP collector
// when OTEL_EXPORTER_OTLP_ENDPOINT is set.
//
//	go run ./examples/metrics
//
// The agent answers three questions with a scripted model standing in for
// claude-haiku-5-5 (no API key, no network), calling a weather tool, with
// cache-heavy usage. The tracing extension records
// gen_ai.client.token.usage, gen_ai.client.operation.duration,
// harnessx.client.token.usage.detail, harnessx.tool.duration,
// harnessx.run.duration and harnessx.client.cost through a MeterProvider
// built by exporters.MetersFromEnv: by default into .harnessx/metrics.jsonl
// (HARNESSX_METRICS_FILE names another file), one OTLP/JSON export request
// per line; with OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) to that collector too, e.g. the
// one of docker-compose.otel.yml, which serves them to Prometheus on
// :8889. It prints a summary of what it recorded. When the collector is
// not there it says so and still exits 0.
package main
