package otlpjson_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/internal/otlpjson"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

func sample() *coltracepb.ExportTraceServiceRequest {
	tid := []byte{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0xf0}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			TraceId: tid, SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 0xff}, ParentSpanId: []byte{9, 9, 9, 9, 9, 9, 9, 9},
			Name: `chat m "traceId":"AAECAwQFBgcICQoLDA0ODw==" \\`, Kind: tracepb.Span_SPAN_KIND_CLIENT,
			Links: []*tracepb.Span_Link{{TraceId: tid, SpanId: []byte{8, 7, 6, 5, 4, 3, 2, 1}}},
		}}}},
	}}}
}

func TestMarshal(t *testing.T) {
	data, err := otlpjson.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []struct {
					TraceID      string `json:"traceId"`
					SpanID       string `json:"spanId"`
					ParentSpanID string `json:"parentSpanId"`
					Kind         any    `json:"kind"`
					Links        []struct {
						TraceID string `json:"traceId"`
						SpanID  string `json:"spanId"`
					} `json:"links"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.ResourceSpans[0].ScopeSpans[0].Spans[0]
	if s.TraceID != "0102030405060708090a0b0c0d0e0ff0" || s.SpanID != "01020304050607ff" || s.ParentSpanID != "0909090909090909" {
		t.Errorf("ids %q %q %q", s.TraceID, s.SpanID, s.ParentSpanID)
	}
	if s.Links[0].TraceID != s.TraceID || s.Links[0].SpanID != "0807060504030201" {
		t.Errorf("link ids %+v", s.Links[0])
	}
	if k, ok := s.Kind.(float64); !ok || k != 3 {
		t.Errorf("kind %v, want the integer 3", s.Kind)
	}
	if !bytes.Contains(data, []byte(`chat m \"traceId\":\"AAECAwQFBgcICQoLDA0ODw==\" \\\\`)) {
		t.Errorf("a string's content was rewritten: %s", data)
	}
	if bytes.Contains(data, []byte("\n")) || bytes.Contains(data, []byte(": ")) {
		t.Errorf("not compact: %s", data)
	}
	again, err := otlpjson.Marshal(sample())
	if err != nil || !bytes.Equal(again, data) {
		t.Errorf("not deterministic")
	}
	back, err := otlpjson.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(back, sample()) {
		t.Errorf("round trip changed the request")
	}
}

func TestUnmarshalBase64(t *testing.T) {
	// Plain protojson (base64 IDs), as older spans.json files hold.
	data, err := protojson.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	back, err := otlpjson.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(back, sample()) {
		t.Errorf("base64 input decoded differently")
	}
	if _, err := otlpjson.Unmarshal([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz02030405060708090a0b0c0d0e0ff0"}]}]}]}`)); err == nil {
		t.Error("bad hex accepted")
	}
	if _, err := otlpjson.Unmarshal([]byte(`[]`)); err == nil {
		t.Error("non-object accepted")
	}
}

func TestUnmarshalErrors(t *testing.T) {
	tests := []struct{ name, data string }{
		{"not JSON", `{"resourceSpans":`},
		{"not an object", `[1,2]`},
		{"trailing data", `{} {}`},
		{"bad base64", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz!"}]}]}]}`},
		{"id not a string", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"spanId":7}]}]}]}`},
		{"wrong field type", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":7}]}]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := otlpjson.Unmarshal([]byte(tt.data)); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestReadLinesNamesLine(t *testing.T) {
	in := "{}\n\n" + `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"q"}]}]}]}` + "\n"
	reqs, err := otlpjson.ReadLines(bytes.NewBufferString(in))
	if err == nil || len(reqs) != 1 || !strings.HasPrefix(err.Error(), "line 3: ") {
		t.Errorf("got %d requests, err %v; want 1 and a line 3 error", len(reqs), err)
	}
}

func TestReadFile(t *testing.T) {
	line, err := otlpjson.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	if err := os.WriteFile(path, append(append(line, '\n'), append(line, '\n')...), 0o600); err != nil {
		t.Fatal(err)
	}
	reqs, err := otlpjson.ReadFile(path)
	if err != nil || len(reqs) != 2 || !proto.Equal(reqs[1], sample()) {
		t.Fatalf("%d requests, err %v", len(reqs), err)
	}
	if _, err := otlpjson.ReadFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing file read")
	}
}

func FuzzUnmarshal(f *testing.F) {
	seed, err := otlpjson.Marshal(sample())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"00","links":[{"spanId":"AB"}]}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := otlpjson.Unmarshal(data)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes, and decodes again to the same message.
		enc, err := otlpjson.Marshal(req)
		if err != nil {
			t.Fatalf("Marshal of a decoded request: %v", err)
		}
		back, err := otlpjson.Unmarshal(enc)
		if err != nil {
			t.Fatalf("Unmarshal of %s: %v", enc, err)
		}
		if !proto.Equal(req, back) {
			t.Fatalf("round trip changed the message:\n%v\n%v", req, back)
		}
	})
}
