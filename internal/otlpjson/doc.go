// Package otlpjson encodes and decodes OTLP trace export requests in
// OTLP/JSON, the JSON encoding of OTLP/HTTP: protojson's mapping with two
// corrections the OTLP specification requires, trace and span IDs as hex
// strings (protojson writes bytes as base64) and enum values as integers.
//
// [Marshal] and [Unmarshal] encode and decode one request ([Marshal]
// writes the request itself, without protojson's reflection, the bytes
// protojson writes once compacted; it falls back to protojson for OTLP
// messages whose fields it does not know); [ReadLines]
// and [ReadFile] read the JSON-lines files of the file exporter, one
// request a line.
//
// It is internal: the flight recorder's spans.json, the file exporter, the
// flightrec command and traceview share it, so that generated protobuf
// types stay out of the public API.
package otlpjson
