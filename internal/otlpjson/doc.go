// Package otlpjson encodes and decodes OTLP trace export requests in
// OTLP/JSON, the JSON encoding of OTLP/HTTP: protojson's mapping with two
// corrections the OTLP specification requires, trace and span IDs as hex
// strings (protojson writes bytes as base64) and enum values as integers.
//
// It is internal: the flight recorder's spans.json and the file exporter
// share it.
package otlpjson
