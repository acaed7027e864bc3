// Package push sends a bundle's spans to an OTLP/HTTP endpoint for
// flightrec push: Jaeger, an OpenTelemetry Collector or LangSmith.
package push
