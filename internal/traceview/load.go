package traceview

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/internal/otlpjson"
	"github.com/harnessx/harnessx/internal/otlpspans"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// ErrBadOTLP is wrapped by the errors of [ParseOTLP].
var ErrBadOTLP = errors.New("traceview: invalid OTLP JSON")

// ParseOTLP decodes one OTLP/JSON ExportTraceServiceRequest. Trace and span
// IDs may be hex (the OTLP/JSON rule, as exporters.NewFile and flight's
// spans.json write them) or base64 (as plain protojson, and older
// recordings, write them). Unknown fields are ignored.
func ParseOTLP(data []byte) ([]*Span, error) {
	req, err := decodeOTLP(data)
	if err != nil {
		return nil, err
	}
	return FromOTLP(req), nil
}

func decodeOTLP(data []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	req, err := otlpjson.Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrBadOTLP, strings.TrimPrefix(err.Error(), "otlpjson: "))
	}
	return req, nil
}

// FromOTLP converts the spans of an export request.
func FromOTLP(req *coltracepb.ExportTraceServiceRequest) []*Span {
	var out []*Span
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := &Span{
					TraceID:       hex.EncodeToString(s.GetTraceId()),
					SpanID:        hex.EncodeToString(s.GetSpanId()),
					ParentID:      hex.EncodeToString(s.GetParentSpanId()),
					Name:          s.GetName(),
					Kind:          otlpKind(s.GetKind()),
					Start:         unixNano(s.GetStartTimeUnixNano()),
					End:           unixNano(s.GetEndTimeUnixNano()),
					Status:        StatusUnset,
					StatusMessage: s.GetStatus().GetMessage(),
					Attrs:         otlpAttrs(s.GetAttributes()),
					Service:       service,
				}
				switch s.GetStatus().GetCode() {
				case tracepb.Status_STATUS_CODE_OK:
					sp.Status = StatusOK
				case tracepb.Status_STATUS_CODE_ERROR:
					sp.Status = StatusError
				}
				for _, ev := range s.GetEvents() {
					sp.Events = append(sp.Events, Event{Name: ev.GetName(), Time: unixNano(ev.GetTimeUnixNano()), Attrs: otlpAttrs(ev.GetAttributes())})
				}
				out = append(out, sp)
			}
		}
	}
	return out
}

func unixNano(n uint64) time.Time {
	if n == 0 || n > 1<<63-1 {
		return time.Time{}
	}
	return time.Unix(0, int64(n)).UTC()
}

func otlpKind(k tracepb.Span_SpanKind) string {
	switch k {
	case tracepb.Span_SPAN_KIND_INTERNAL:
		return "internal"
	case tracepb.Span_SPAN_KIND_SERVER:
		return "server"
	case tracepb.Span_SPAN_KIND_CLIENT:
		return "client"
	case tracepb.Span_SPAN_KIND_PRODUCER:
		return "producer"
	case tracepb.Span_SPAN_KIND_CONSUMER:
		return "consumer"
	}
	return "unspecified"
}

func otlpAttrs(kvs []*commonpb.KeyValue) Attrs {
	if len(kvs) == 0 {
		return nil
	}
	out := make(Attrs, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, Attr{Key: kv.GetKey(), Value: otlpValue(kv.GetValue(), 0)})
	}
	return out
}

// maxDepth bounds the nesting of array and map values converted.
const maxDepth = 32

func otlpValue(v *commonpb.AnyValue, depth int) Value {
	if depth > maxDepth {
		return Value{Type: TypeEmpty}
	}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return Value{Type: TypeString, Str: x.StringValue}
	case *commonpb.AnyValue_IntValue:
		return Value{Type: TypeInt, Int: x.IntValue}
	case *commonpb.AnyValue_DoubleValue:
		return Value{Type: TypeDouble, Double: x.DoubleValue}
	case *commonpb.AnyValue_BoolValue:
		return Value{Type: TypeBool, Bool: x.BoolValue}
	case *commonpb.AnyValue_BytesValue:
		return Value{Type: TypeBytes, Bytes: x.BytesValue}
	case *commonpb.AnyValue_ArrayValue:
		out := Value{Type: TypeArray, Array: []Value{}}
		for _, e := range x.ArrayValue.GetValues() {
			out.Array = append(out.Array, otlpValue(e, depth+1))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		out := Value{Type: TypeMap, Map: []Attr{}}
		for _, kv := range x.KvlistValue.GetValues() {
			out.Map = append(out.Map, Attr{Key: kv.GetKey(), Value: otlpValue(kv.GetValue(), depth+1)})
		}
		return out
	}
	return Value{Type: TypeEmpty}
}

// FromSDK converts spans of the OpenTelemetry SDK, such as those an
// in-memory recorder (sdk/trace/tracetest.SpanRecorder) or a
// flight.SpanProcessor holds. They go through the OTLP exporter's own
// conversion (as the trace file and recordings do), then [FromOTLP].
func FromSDK(spans []sdktrace.ReadOnlySpan) []*Span {
	req, err := otlpspans.FromSDK(context.Background(), spans)
	if err != nil {
		return nil // the capturing client never fails
	}
	return FromOTLP(req)
}

// FileStats says what a read of a trace file found.
type FileStats struct {
	Lines   int  // complete lines decoded
	Corrupt int  // complete lines skipped: not OTLP JSON
	TooLong int  // complete lines skipped: longer than MaxLine
	Torn    bool // the file ends with an incomplete line, skipped
	// CorruptAt and TooLongAt are the numbers (from 1, counted from
	// where the read started) of the first few lines skipped.
	CorruptAt, TooLongAt []int
}

// MaxLine bounds one line of a trace file; longer lines are skipped and
// reported as such.
const MaxLine = 64 << 20

// ReadTraceFile reads every span of the JSON-lines trace file at path,
// one OTLP/JSON ExportTraceServiceRequest per line, as exporters.NewFile
// writes it. The file is streamed line by line. Lines that do not decode
// are skipped and counted; an incomplete last line (a writer killed during
// a write, or one still writing) is skipped.
func ReadTraceFile(path string) ([]*Span, FileStats, error) {
	spans, _, st, err := ReadTraceFileFrom(path, 0)
	return spans, st, err
}

// ReadTraceFileFrom reads the complete lines of the trace file at path
// from byte offset off, as [ReadTraceFile] does, and returns the offset
// just past the last complete line: pass it to the next call to read
// only what was appended since. An incomplete last line is left for the
// next call.
func ReadTraceFileFrom(path string, off int64) ([]*Span, int64, FileStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, off, FileStats{}, fmt.Errorf("traceview: %w", err)
	}
	defer f.Close()
	if off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return nil, off, FileStats{}, fmt.Errorf("traceview: %s: %w", path, err)
		}
	}
	spans, n, st, err := ReadTraces(f)
	if err != nil {
		err = fmt.Errorf("traceview: %s: %w", path, err)
	}
	return spans, off + n, st, err
}

// ReadTraces reads the JSON-lines trace stream r (see [ReadTraceFile])
// and returns its spans and the number of bytes of complete lines read.
func ReadTraces(r io.Reader) ([]*Span, int64, FileStats, error) {
	var (
		st    FileStats
		spans []*Span
		n     int
	)
	end, torn, err := eachLine(r, func(_ int64, line []byte, tooLong bool) {
		n++
		switch {
		case tooLong:
			st.TooLong++
			if len(st.TooLongAt) < maxLinesNamed {
				st.TooLongAt = append(st.TooLongAt, n)
			}
		case len(bytes.TrimSpace(line)) == 0:
		default:
			ss, perr := ParseOTLP(line)
			if perr != nil {
				st.Corrupt++
				if len(st.CorruptAt) < maxLinesNamed {
					st.CorruptAt = append(st.CorruptAt, n)
				}
				return
			}
			st.Lines++
			spans = append(spans, ss...)
		}
	})
	st.Torn = torn
	return spans, end, st, err
}

// ReadRecording reads the spans of the flight recording in dir: its span
// snapshot (spans.json) and the spans appended since (spans.jsonl).
func ReadRecording(dir string) ([]*Span, error) {
	req, err := otlpspans.ReadRecording(dir)
	if err != nil {
		return nil, fmt.Errorf("traceview: %w", err)
	}
	return FromOTLP(req), nil
}

// ReadBundle reads the incident bundle at path with flight's verifying
// reader and returns its spans and the bundle. A bundle without spans
// gives no spans and no error.
func ReadBundle(path string) ([]*Span, *flight.Bundle, error) {
	b, err := flight.ReadBundleFile(path, flight.ReadOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("traceview: %s: %s", path, strings.TrimPrefix(err.Error(), "flight: "))
	}
	data, ok := b.Member(flight.SpansName)
	if !ok {
		return nil, b, nil
	}
	spans, err := ParseOTLP(data)
	if err != nil {
		return nil, b, fmt.Errorf("traceview: %s: %s: %s", path, flight.SpansName, strings.TrimPrefix(err.Error(), "traceview: "))
	}
	return spans, b, nil
}
