// Package jsonenc holds the JSON string encoder that the tracing extension
// and the flight recorder share on their hot paths: it appends to a byte
// slice without reflection or allocation and produces what encoding/json
// produces for a string, except that <, > and & are not escaped.
package jsonenc
