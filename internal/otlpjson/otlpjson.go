package otlpjson

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// Marshal encodes req in OTLP/JSON: compact, fields in the proto's
// order, enum values as integers, trace and span IDs as lowercase hex.
// Equal requests give equal bytes. The output has no trailing newline.
func Marshal(req *coltracepb.ExportTraceServiceRequest) ([]byte, error) {
	if directEncoding {
		e := encoder{out: make([]byte, 0, 4096)}
		e.request(req)
		if e.err != nil {
			return nil, fmt.Errorf("otlpjson: %w", e.err)
		}
		return e.out, nil
	}
	return marshalProtojson(req)
}

// marshalProtojson is Marshal through protojson.
func marshalProtojson(req *coltracepb.ExportTraceServiceRequest) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("otlpjson: %w", err)
	}
	// protojson varies its whitespace from build to build on purpose:
	// compact it (in the same pass as the IDs) so that equal requests
	// give equal bytes.
	out, err := hexIDs(raw)
	if err != nil {
		return nil, fmt.Errorf("otlpjson: %w", err)
	}
	return out, nil
}

// hexIDs compacts valid JSON (drops the whitespace outside strings, as
// json.Compact does) and rewrites the base64 values of the object keys
// traceId, spanId and parentSpanId as hex. In an ExportTraceServiceRequest
// only span and link IDs have these keys (attribute names are values of
// "key", not keys). It scans the bytes once, tracking strings, so that no
// string content is mistaken for a key or for whitespace.
func hexIDs(in []byte) ([]byte, error) {
	out := make([]byte, 0, len(in)+len(in)/16)
	i := 0
	for i < len(in) {
		c := in[i]
		if c != '"' {
			if c != ' ' && c != '\n' && c != '\t' && c != '\r' {
				out = append(out, c)
			}
			i++
			continue
		}
		// A string: find its end.
		j := i + 1
		for j < len(in) && in[j] != '"' {
			if in[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(in) {
			return nil, errors.New("unterminated string")
		}
		str := in[i : j+1]
		out = append(out, str...)
		i = j + 1
		// A key among the IDs, followed by a string value?
		if !isIDKey(str) {
			continue
		}
		v := skipSpace(in, i)
		if v >= len(in) || in[v] != ':' {
			continue
		}
		v = skipSpace(in, v+1)
		if v < len(in) && in[v] == '"' {
			k := v + 1
			for k < len(in) && in[k] != '"' {
				k++
			}
			if k >= len(in) {
				return nil, errors.New("unterminated string")
			}
			id, err := base64.StdEncoding.DecodeString(string(in[v+1 : k]))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", str, err)
			}
			out = append(out, ':', '"')
			out = hex.AppendEncode(out, id)
			out = append(out, '"')
			i = k + 1
		}
	}
	return out, nil
}

// skipSpace returns the index of the first byte of in at or after i that
// is not JSON whitespace.
func skipSpace(in []byte, i int) int {
	for i < len(in) && (in[i] == ' ' || in[i] == '\n' || in[i] == '\t' || in[i] == '\r') {
		i++
	}
	return i
}

func isIDKey(quoted []byte) bool {
	switch string(quoted) {
	case `"traceId"`, `"spanId"`, `"parentSpanId"`:
		return true
	}
	return false
}

// Unmarshal decodes an OTLP/JSON export request. IDs may be hex (the
// OTLP/JSON rule, either case) or base64 (plain protojson, as older files
// hold): a value that is not hex is read as base64 (protojson's padded
// base64 of a 16- or 8-byte ID is never hex). What Marshal writes reads
// back as the same request. Unknown fields are ignored.
func Unmarshal(data []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	doc, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("otlpjson: %w", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, errors.New("otlpjson: not a JSON object")
	}
	if err := convertIDs(doc, toBase64); err != nil {
		return nil, fmt.Errorf("otlpjson: %w", err)
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("otlpjson: %w", err)
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, req); err != nil {
		return nil, fmt.Errorf("otlpjson: %w", err)
	}
	return req, nil
}

func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// idSize is the byte length of each ID field: trace IDs 16, span IDs 8.
var idSize = map[string]int{"traceId": 16, "spanId": 8, "parentSpanId": 8}

// convertIDs rewrites the ID fields of an ExportTraceServiceRequest held
// as generic JSON: resourceSpans[].scopeSpans[].spans[] traceId, spanId
// and parentSpanId, and their links' traceId and spanId.
func convertIDs(doc any, conv func(s string, size int) (string, error)) error {
	fix := func(obj map[string]any, keys ...string) error {
		for _, k := range keys {
			v, ok := obj[k]
			if !ok {
				continue
			}
			s, ok := v.(string)
			if !ok {
				return fmt.Errorf("%s is not a string", k)
			}
			out, err := conv(s, idSize[k])
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			obj[k] = out
		}
		return nil
	}
	for _, rs := range objects(field(doc, "resourceSpans")) {
		for _, ss := range objects(rs["scopeSpans"]) {
			for _, sp := range objects(ss["spans"]) {
				if err := fix(sp, "traceId", "spanId", "parentSpanId"); err != nil {
					return err
				}
				for _, l := range objects(sp["links"]) {
					if err := fix(l, "traceId", "spanId"); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func field(v any, key string) any {
	if m, ok := v.(map[string]any); ok {
		return m[key]
	}
	return nil
}

// objects returns the objects of a JSON array; other values are skipped
// (protojson reports them when it parses the result).
func objects(v any) []map[string]any {
	arr, _ := v.([]any)
	out := make([]map[string]any, 0, len(arr))
	for _, e := range arr {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// toBase64 turns a hex ID into base64 for protojson. A value that is not
// hex is left for protojson to read as base64, unless it has the length of
// a hex ID of the expected size.
func toBase64(s string, size int) (string, error) {
	if s == "" {
		return s, nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		if len(s) == 2*size {
			return "", fmt.Errorf("not hex: %w", err)
		}
		return s, nil
	}
	return base64.StdEncoding.EncodeToString(b), nil
}
