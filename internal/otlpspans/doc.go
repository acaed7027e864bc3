// Package otlpspans works on OTLP trace export requests: it converts SDK
// spans into one with the OTLP exporter's own conversion ([FromSDK]),
// counts ([Count]), filters ([Filter]) and redacts ([Redact]) their spans,
// and finds the service they name ([ServiceName]).
//
// It is internal: the flight recorder builds its spans.json with it, and
// the flightrec command and traceview read bundles with it. Generated
// protobuf types stay out of the public API of flight and exporters.
package otlpspans
