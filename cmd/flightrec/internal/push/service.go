package push

import (
	"strings"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// NameService sets service.name to name on every resource of req that
// names no service: none, empty, or the SDK's "unknown_service…" default
// (what a TracerProvider built without a resource reports). Resources
// that name one keep it. An empty name changes nothing.
func NameService(req *coltracepb.ExportTraceServiceRequest, name string) {
	if name == "" {
		return
	}
	for _, rs := range req.GetResourceSpans() {
		if rs.Resource == nil {
			rs.Resource = &resourcepb.Resource{}
		}
		found := false
		for _, kv := range rs.Resource.Attributes {
			if kv.GetKey() != "service.name" {
				continue
			}
			found = true
			if v := kv.GetValue().GetStringValue(); v == "" || strings.HasPrefix(v, "unknown_service") {
				kv.Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: name}}
			}
		}
		if !found {
			rs.Resource.Attributes = append(rs.Resource.Attributes, &commonpb.KeyValue{Key: "service.name",
				Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: name}}})
		}
	}
}
