package traceview

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func treeText(t *testing.T, r *Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteTree(&b, r, TreeOptions{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestRealRun records a real run (tracing extension, file exporter, flight
// recorder, in-memory SDK recorder) and checks that every loader gives
// the same run.
func TestRealRun(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "traces.jsonl")
	flightDir := filepath.Join(dir, "flight")
	sdkRec := tracetest.NewSpanRecorder()
	rec := flight.New(flight.WithDir(flightDir))
	var bundle string
	recordRunWith(t, runSetup{
		path: file, agent: "weather", result: "Lisbon: 18°C",
		fileOpts: []exporters.Option{exporters.WithSpanProcessor(sdkRec), exporters.WithSpanProcessor(rec.SpanProcessor())},
		exts:     []harness.Extension{rec},
		afterRun: func(ctx context.Context) {
			p, err := rec.Trigger(ctx, "test")
			if err != nil {
				t.Fatal(err)
			}
			bundle = p
		},
	})

	fromFile, st, err := ReadTraceFile(file)
	if err != nil || st.Corrupt != 0 || st.Torn {
		t.Fatalf("ReadTraceFile: %v %+v", err, st)
	}
	runs := BuildRuns(fromFile)
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	r := runs[0]
	var shape []string
	for i, s := range r.Spans {
		shape = append(shape, strings.Repeat(".", r.Depths[i])+strings.Fields(s.Name)[0])
	}
	if got := strings.Join(shape, " "); got != "invoke_agent .chat .execute_tool .chat" {
		t.Errorf("shape %s", got)
	}
	want := Usage{Input: 880, Output: 53, CacheRead: 380, CacheCreation: 380}
	if r.Summary.Usage != want || r.Summary.Status != "completed" || r.Summary.Agent != "weather" || r.Root.Service != "traceview-test" {
		t.Errorf("summary %+v service %q", r.Summary, r.Root.Service)
	}
	text := treeText(t, r)

	fromSDK := BuildRuns(FromSDK(sdkRec.Ended()))
	if len(fromSDK) != 1 || treeText(t, fromSDK[0]) != text {
		t.Errorf("from the SDK recorder:\n%s\nwant\n%s", treeText(t, fromSDK[0]), text)
	}
	if !reflect.DeepEqual(stripChildren(fromSDK[0].Spans), stripChildren(r.Spans)) {
		t.Error("spans from the SDK differ from the spans of the file")
	}

	sessions, _ := os.ReadDir(flightDir)
	if len(sessions) != 1 {
		t.Fatalf("%d recordings", len(sessions))
	}
	fromRec, err := ReadRecording(filepath.Join(flightDir, sessions[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	if rr := BuildRuns(fromRec); len(rr) != 1 || treeText(t, rr[0]) != text {
		t.Errorf("from the recording: %d runs", len(rr))
	}
	fromBundle, b, err := ReadBundle(bundle)
	if err != nil || b == nil {
		t.Fatal(err)
	}
	if rr := BuildRuns(fromBundle); len(rr) != 1 || treeText(t, rr[0]) != text {
		t.Errorf("from the bundle: %d runs", len(rr))
	}

	cat := Load(Sources{TraceFiles: []string{file, filepath.Join(dir, "missing.jsonl")}, FlightDirs: []string{flightDir}})
	if len(cat.Runs) != 1 || len(cat.Incidents) != 1 || len(cat.Problems) != 0 {
		t.Errorf("catalog: %d runs, %d incidents, problems %v", len(cat.Runs), len(cat.Incidents), cat.Problems)
	}
	for _, key := range []string{r.ID, r.TraceID, r.Key()} {
		if got, ok := cat.FindRun(key); !ok || got.Key != r.Key() {
			t.Errorf("FindRun(%s) failed", key)
		}
	}
	// The run read back from the catalog (the trace file's lines, the
	// recording's and the bundle's spans) is the run of the file.
	if info, ok := cat.FindRun(r.Key()); ok {
		got, err := cat.Run(info)
		if err != nil {
			t.Fatal(err)
		}
		if treeText(t, got) != text || !reflect.DeepEqual(info.Summary, r.Summary) {
			t.Errorf("catalog run:\n%s\nsummary %+v\nwant\n%s\nsummary %+v", treeText(t, got), info.Summary, text, r.Summary)
		}
	}
}

func stripChildren(spans []*Span) []Span {
	out := make([]Span, len(spans))
	for i, s := range spans {
		out[i] = *s
		out[i].Children = nil
	}
	return out
}

func TestReadTraceFileTornAndCorrupt(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "traces.jsonl")
	recordRun(t, file, "weather", "sunny")
	whole, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := ReadTraceFile(file)
	f, _ := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("this is not json\n\n")
	f.Write(whole[:len(whole)/2]) // torn: a killed writer
	f.Close()
	got, st, err := ReadTraceFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Corrupt != 1 || !st.Torn || st.Lines == 0 {
		t.Errorf("stats %+v", st)
	}
	if len(got) != len(want) {
		t.Errorf("%d spans, want %d", len(got), len(want))
	}

	// Reading on from the returned offset sees the torn line once it is
	// complete.
	_, off, _, err := ReadTraceFileFrom(file, 0)
	if err != nil {
		t.Fatal(err)
	}
	if off != int64(len(whole)+len("this is not json\n\n")) {
		t.Errorf("offset %d", off)
	}
	f, _ = os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(whole[len(whole)/2:])
	f.Close()
	more, off2, st, err := ReadTraceFileFrom(file, off)
	if err != nil || st.Torn || st.Corrupt != 0 {
		t.Fatalf("%v %+v", err, st)
	}
	if off2 != off+int64(len(whole)) || len(more) != len(want) {
		t.Errorf("read on: offset %d, %d spans", off2, len(more))
	}
}

func TestParseOTLPIDs(t *testing.T) {
	tid, sid, pid := "0102030405060708090a0b0c0d0e0f10", "1112131415161718", "2122232425262728"
	doc := func(enc func(string) string) string {
		return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},
		"scopeSpans":[{"spans":[{"traceId":"` + enc(tid) + `","spanId":"` + enc(sid) + `","parentSpanId":"` + enc(pid) + `",
		"name":"chat m","kind":3,"startTimeUnixNano":"1764504000000000000","endTimeUnixNano":"1764504000500000000",
		"status":{"code":2,"message":"boom"},
		"attributes":[{"key":"gen_ai.usage.input_tokens","value":{"intValue":"12"}},
		{"key":"l","value":{"arrayValue":{"values":[{"stringValue":"a"},{"boolValue":true}]}}},
		{"key":"d","value":{"doubleValue":0.5}},
		{"key":"m","value":{"kvlistValue":{"values":[{"key":"k","value":{"stringValue":"v"}}]}}}],
		"events":[{"name":"prompt_cache_break","timeUnixNano":"1764504000100000000"}]}]}]}]}`
	}
	b64 := func(h string) string { b, _ := hex.DecodeString(h); return base64.StdEncoding.EncodeToString(b) }
	tests := []struct {
		name string
		enc  func(string) string
	}{
		{"hex", func(s string) string { return s }},
		{"upper hex", strings.ToUpper},
		{"base64", b64},
	}
	var first []*Span
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spans, err := ParseOTLP([]byte(doc(tt.enc)))
			if err != nil {
				t.Fatal(err)
			}
			if len(spans) != 1 {
				t.Fatalf("%d spans", len(spans))
			}
			s := spans[0]
			if s.TraceID != tid || s.SpanID != sid || s.ParentID != pid || s.Kind != "client" || s.Status != StatusError ||
				s.StatusMessage != "boom" || s.Service != "svc" || s.Duration() != 500*time.Millisecond || len(s.Events) != 1 {
				t.Errorf("span %+v", s)
			}
			if got := s.Attrs.Str("l") + " " + s.Attrs.Str("d") + " " + s.Attrs.Str("m"); got != `["a",true] 0.5 {"k":"v"}` {
				t.Errorf("values %s", got)
			}
			if s.Attrs.Int("gen_ai.usage.input_tokens") != 12 {
				t.Error("int value")
			}
			if first == nil {
				first = spans
			} else if !reflect.DeepEqual(first, spans) {
				t.Error("differs from the hex encoding")
			}
		})
	}
	for _, bad := range []string{``, `[]`, `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz!"}]}]}]}`, `{} {}`, `{"resourceSpans":"x"}`} {
		if _, err := ParseOTLP([]byte(bad)); err == nil {
			t.Errorf("ParseOTLP(%q) accepted", bad)
		}
	}
}

func FuzzParseOTLP(f *testing.F) {
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","name":"invoke_agent a","attributes":[{"key":"harnessx.prefix_key.changed","value":{"arrayValue":{"values":[{"stringValue":"tools"}]}}}]}]}]}]}`))
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"AQIDBAUGBwgJCgsMDQ4PEA==","spanId":"ERITFBUWFxg=","parentSpanId":"ERITFBUWFxg="}]}]}]}`))
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":[{"key":"k","value":{"kvlistValue":{"values":[{"key":"x","value":{"arrayValue":{}}}]}}}]}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		spans, err := ParseOTLP(data)
		if err != nil {
			return
		}
		// Whatever decodes builds runs and renders without failing.
		for _, r := range BuildRuns(spans) {
			if len(r.Spans) != len(r.Depths) || r.Spans[0] != r.Root {
				t.Fatal("inconsistent run")
			}
			var b bytes.Buffer
			if err := WriteTree(&b, r, TreeOptions{Attributes: true}); err != nil {
				t.Fatal(err)
			}
			if bytes.ContainsAny(b.Bytes(), "\x1b\r") {
				t.Fatal("control characters in the tree")
			}
		}
	})
}
