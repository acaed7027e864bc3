package tracing

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/harness"
)

// EventToolUpdate is the name of the span event that a tool's live
// update ([harness.Update]) adds to its execute_tool span. Each metadata
// entry is an attribute "harnessx.tool.update.<key>": booleans and
// numbers as they are; strings and other values (as JSON) only when
// content is captured, through the same redaction and size cap as other
// content.
const EventToolUpdate = "harnessx.tool.update"

// KeyToolUpdatePrefix prefixes the attributes of an [EventToolUpdate].
const KeyToolUpdatePrefix = "harnessx.tool.update."

// toolUpdate is the extension's harness.EventToolUpdate hook. The hook
// runs in the tool call's context, so the current span is the call's.
func (e *Extension) toolUpdate(ctx context.Context, ev *harness.Event) error {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() || len(ev.Metadata) == 0 {
		return nil
	}
	kvs := make([]attribute.KeyValue, 0, len(ev.Metadata))
	for _, k := range slices.Sorted(maps.Keys(ev.Metadata)) {
		key := KeyToolUpdatePrefix + k
		switch v := ev.Metadata[k].(type) {
		case bool:
			kvs = append(kvs, attribute.Bool(key, v))
		case int:
			kvs = append(kvs, attribute.Int(key, v))
		case int64:
			kvs = append(kvs, attribute.Int64(key, v))
		case float64:
			kvs = append(kvs, attribute.Float64(key, v))
		case string:
			if e.cfg.capture {
				s, _ := e.process(key, v)
				kvs = append(kvs, attribute.String(key, s))
			}
		default:
			if e.cfg.capture {
				if b, err := json.Marshal(v); err == nil {
					s, _ := e.process(key, string(b))
					kvs = append(kvs, attribute.String(key, s))
				}
			}
		}
	}
	span.AddEvent(EventToolUpdate, trace.WithAttributes(kvs...))
	return nil
}
