package exporters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/harnessx/harnessx/internal/otlpjson"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
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
// request body with Content-Type application/json. flightrec ui and
// flightrec runs read the file.
func NewFile(ctx context.Context, opts ...Option) (*Provider, error) {
	c, err := newConfig(bFile, opts)
	if err != nil {
		return nil, err
	}
	spec, err := fileBackend(ctx, &c)
	if err != nil {
		return nil, err
	}
	return newProvider(ctx, &c, []backendSpec{spec})
}

// TracesFile returns the path the file backend would use with opts: the
// [WithFile] path, else HARNESSX_TRACES_FILE, else .harnessx/traces.jsonl.
func TracesFile(opts ...Option) string {
	c := settings(opts)
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
	line, err := otlpjson.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: rs})
	if err != nil {
		return fmt.Errorf("exporters: encoding spans: %w", err)
	}
	line = append(line, '\n')
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.closed {
		return errClosed
	}
	_, err = fc.w.Write(line)
	return err
}
