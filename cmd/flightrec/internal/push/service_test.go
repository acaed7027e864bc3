package push

import (
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

func resourceWith(service *string) *tracepb.ResourceSpans {
	rs := &tracepb.ResourceSpans{}
	if service != nil {
		rs.Resource = &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
			{Key: "host.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "h"}}},
			{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: *service}}},
		}}
	}
	return rs
}

func serviceOf(rs *tracepb.ResourceSpans) string {
	for _, kv := range rs.GetResource().GetAttributes() {
		if kv.GetKey() == "service.name" {
			return kv.GetValue().GetStringValue()
		}
	}
	return "<none>"
}

func TestNameService(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		service *string
		give    string
		want    string
	}{
		{"the SDK default is replaced", str("unknown_service:flight"), "weather", "weather"},
		{"an empty name is replaced", str(""), "weather", "weather"},
		{"no resource gets one", nil, "weather", "weather"},
		{"a named service stays", str("checkout"), "weather", "checkout"},
		{"no name given changes nothing", str("unknown_service:flight"), "", "unknown_service:flight"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{resourceWith(tt.service)}}
			NameService(req, tt.give)
			if got := serviceOf(req.ResourceSpans[0]); got != tt.want {
				t.Errorf("service.name %q, want %q", got, tt.want)
			}
		})
	}
}
