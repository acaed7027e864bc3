package exporters

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// NewFile returns a provider that appends spans to a local file, one OTLP
// JSON ExportTraceServiceRequest per line: the offline default. The path
// comes from [WithFile], else HARNESSX_TRACES_FILE, else
// .harnessx/traces.jsonl under the working directory; missing directories
// are created (mode 0700) and the file is opened for appending (mode 0600:
// spans may hold prompts). [WithFileWriter] writes to a writer instead.
//
// Each line is the OTLP/JSON encoding of the OpenTelemetry protocol: the
// SDK converts the spans to OTLP protobuf messages (otlptrace), which are
// encoded by protojson with the OTLP/JSON rules (enums as numbers, trace and
// span IDs as hex), so a collector's OTLP/HTTP receiver accepts a line as a
// request body with Content-Type application/json. [ReadFile] and
// [DecodeLine] read the lines back.
func NewFile(ctx context.Context, opts ...Option) (*Provider, error) {
	c := newConfig(opts)
	spec, err := fileBackend(ctx, &c)
	if err != nil {
		return nil, err
	}
	return newProvider(ctx, &c, []backendSpec{spec})
}

// TracesFile returns the path the file backend would use with opts: the
// [WithFile] path, else HARNESSX_TRACES_FILE, else .harnessx/traces.jsonl.
func TracesFile(opts ...Option) string {
	c := newConfig(opts)
	return tracesFile(&c)
}

func tracesFile(c *config) string {
	if c.filePath != "" {
		return c.filePath
	}
	if v := strings.TrimSpace(os.Getenv("HARNESSX_TRACES_FILE")); v != "" {
		return v
	}
	return defaultTracesFile
}

func fileBackend(ctx context.Context, c *config) (backendSpec, error) {
	fc := &fileClient{w: c.fileWriter}
	target := "writer"
	if c.fileWriter == nil {
		path := tracesFile(c)
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return backendSpec{}, fmt.Errorf("exporters: file: %w", err)
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return backendSpec{}, fmt.Errorf("exporters: file: %w", err)
		}
		fc.w, fc.closer, target = f, f, path
	}
	exp, err := otlptrace.New(ctx, fc)
	if err != nil {
		_ = fc.Stop(ctx)
		return backendSpec{}, fmt.Errorf("exporters: file: %w", err)
	}
	return backendSpec{Backend{Name: "file", Target: target}, exp}, nil
}

// errClosed is returned by a fileClient used after Stop.
var errClosed = errors.New("exporters: file backend closed")

// fileClient is an otlptrace.Client that writes each upload as one JSON
// line. UploadTraces may be called concurrently; each line is written
// with one Write call.
type fileClient struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer // nil when the writer is the caller's
	closed bool
}

var _ otlptrace.Client = (*fileClient)(nil)

// Start does nothing: the file is opened by the builder.
func (*fileClient) Start(context.Context) error { return nil }

// Stop closes the file, if the client opened it.
func (fc *fileClient) Stop(context.Context) error {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.closed {
		return nil
	}
	fc.closed = true
	if fc.closer != nil {
		return fc.closer.Close()
	}
	return nil
}

// UploadTraces encodes the spans as one ExportTraceServiceRequest line.
func (fc *fileClient) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	line, err := EncodeLine(&coltracepb.ExportTraceServiceRequest{ResourceSpans: rs})
	if err != nil {
		return err
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.closed {
		return errClosed
	}
	_, err = fc.w.Write(line)
	return err
}

// EncodeLine returns req in OTLP/JSON followed by a newline: protojson's
// encoding with enum values as numbers and trace and span IDs as hex, as
// the OTLP specification requires (protojson alone writes bytes as
// base64). The output is compact and its keys are sorted.
func EncodeLine(req *coltracepb.ExportTraceServiceRequest) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("exporters: encoding spans: %w", err)
	}
	doc, err := decodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("exporters: encoding spans: %w", err)
	}
	if err := convertIDs(doc, base64ToHex); err != nil {
		return nil, fmt.Errorf("exporters: encoding spans: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("exporters: encoding spans: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodeLine parses one OTLP/JSON line (as EncodeLine or a collector's
// file exporter writes it) into an ExportTraceServiceRequest. IDs may be hex
// (the OTLP/JSON rule) in either case. Unknown fields are ignored.
func DecodeLine(line []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	doc, err := decodeJSON(line)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadLine, err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, fmt.Errorf("%w: not a JSON object", ErrBadLine)
	}
	if err := convertIDs(doc, hexToBase64); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadLine, err)
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadLine, err)
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, req); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadLine, err)
	}
	return req, nil
}

// maxLine bounds one line read by ReadRequests.
const maxLine = 64 << 20

// ReadRequests decodes every non-empty line of r with [DecodeLine]. An
// error names the line.
func ReadRequests(r io.Reader) ([]*coltracepb.ExportTraceServiceRequest, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var out []*coltracepb.ExportTraceServiceRequest
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		req, err := DecodeLine(line)
		if err != nil {
			return out, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, req)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("exporters: reading spans: %w", err)
	}
	return out, nil
}

// ReadFile decodes the OTLP JSON-lines file at path (see [NewFile]).
func ReadFile(path string) ([]*coltracepb.ExportTraceServiceRequest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("exporters: %w", err)
	}
	defer f.Close()
	reqs, err := ReadRequests(f)
	if err != nil {
		return reqs, fmt.Errorf("%s: %w", path, err)
	}
	return reqs, nil
}

func decodeJSON(b []byte) (any, error) {
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

// convertIDs rewrites the ID fields of an ExportTraceServiceRequest held
// as generic JSON: resourceSpans[].scopeSpans[].spans[] traceId, spanId
// and parentSpanId, and their links' traceId and spanId.
func convertIDs(doc any, conv func(string) (string, error)) error {
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
			out, err := conv(s)
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

func base64ToHex(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func hexToBase64(s string) (string, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("not hex: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}
