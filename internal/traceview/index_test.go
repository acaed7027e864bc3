package traceview

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/internal/otlpjson"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

func pbStr(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}
func pbInt(n int64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: n}}
}
func pbDouble(f float64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}
}
func pbKV(k string, v *commonpb.AnyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: v}
}

func mustHex(t testing.TB, s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// synthRun returns the spans of one run (an agent span, a chat, a tool
// call and a second chat) in trace n, starting ms after t0. Runs with an
// odd n fail.
func synthRun(t testing.TB, n int, ms int64) []*tracepb.Span {
	trace := mustHex(t, fmt.Sprintf("%032x", n+1))
	sid := func(k int) []byte { return mustHex(t, fmt.Sprintf("%016x", n*16+k)) }
	ns := func(d int64) uint64 { return uint64(t0.Add(time.Duration(ms+d) * time.Millisecond).UnixNano()) }
	span := func(k, parent int, name, op string, from, to int64, attrs ...*commonpb.KeyValue) *tracepb.Span {
		s := &tracepb.Span{TraceId: trace, SpanId: sid(k), Name: name, StartTimeUnixNano: ns(from), EndTimeUnixNano: ns(to),
			Attributes: append([]*commonpb.KeyValue{pbKV("gen_ai.operation.name", pbStr(op))}, attrs...)}
		if parent > 0 {
			s.ParentSpanId = sid(parent)
		}
		return s
	}
	msgs := `[{"role":"user","parts":[{"type":"text","content":"What's the weather in Lisbon? \"quoted\" \\ and more"}]}]`
	root := span(1, 0, "invoke_agent weather", "invoke_agent", 0, 400, pbKV("gen_ai.agent.name", pbStr("weather")),
		pbKV("harnessx.run.id", pbStr(fmt.Sprintf("run-%d", n))), pbKV("gen_ai.input.messages", pbStr(msgs)),
		pbKV("gen_ai.usage.input_tokens", pbInt(880)), pbKV("gen_ai.usage.output_tokens", pbInt(53)),
		pbKV("harnessx.cost.usd", pbDouble(0.000898)))
	chat1 := span(2, 1, "chat m1", "chat", 1, 100, pbKV("gen_ai.input.messages", pbStr(msgs)),
		pbKV("gen_ai.usage.input_tokens", pbInt(412)), pbKV("gen_ai.usage.output_tokens", pbInt(31)),
		pbKV("gen_ai.usage.cache_creation.input_tokens", pbInt(380)), pbKV("harnessx.cost.usd", pbDouble(0.000662)))
	tool := span(3, 1, "execute_tool get_weather", "execute_tool", 101, 150, pbKV("gen_ai.tool.call.result", pbStr(strings.Repeat("sunny ", 50))))
	chat2 := span(4, 1, "chat m1", "chat", 151, 399, pbKV("gen_ai.usage.input_tokens", pbInt(468)), pbKV("gen_ai.usage.output_tokens", pbInt(22)),
		pbKV("gen_ai.usage.cache_read.input_tokens", pbInt(380)), pbKV("harnessx.cost.usd", pbDouble(0.000236)))
	chat2.Events = []*tracepb.Span_Event{{Name: "prompt_cache_break", TimeUnixNano: ns(152),
		Attributes: []*commonpb.KeyValue{pbKV("harnessx.prefix_key.changed", &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{
			ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{pbStr("tools")}}}})}}}
	if n%2 == 1 {
		root.Attributes = append(root.Attributes, pbKV("harnessx.run.status", pbStr("failed")), pbKV("error.type", pbStr("_OTHER")))
		root.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "model request 2: upstream overloaded"}
		chat2.Attributes = append(chat2.Attributes, pbKV("error.type", pbStr("*net.OpError")))
		chat2.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "upstream overloaded"}
	} else {
		root.Attributes = append(root.Attributes, pbKV("harnessx.run.status", pbStr("completed")))
	}
	return []*tracepb.Span{chat1, tool, chat2, root}
}

// otlpLine encodes spans as one trace-file line, as exporters.NewFile does.
func otlpLine(t testing.TB, spans ...*tracepb.Span) []byte {
	t.Helper()
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{pbKV("service.name", pbStr("test"))}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}}
	line, err := otlpjson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return append(line, '\n')
}

func appendFile(t testing.TB, path string, data ...[]byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range data {
		if _, err := f.Write(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// infos returns the runs of the spans of a whole read of path, as the
// catalog should list them.
func infos(t *testing.T, path string) []*RunInfo {
	t.Helper()
	spans, _, err := ReadTraceFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*RunInfo
	for _, r := range BuildRuns(spans) {
		out = append(out, r.Info())
	}
	return out
}

// sameRuns compares the catalog's runs with want (keys and summaries),
// and each run read by offset with the run of a whole read.
func sameRuns(t *testing.T, cat *Catalog, path string) {
	t.Helper()
	want := infos(t, path)
	if len(cat.Runs) != len(want) {
		t.Fatalf("%d runs, want %d", len(cat.Runs), len(want))
	}
	spans, _, _ := ReadTraceFile(path)
	whole := BuildRuns(spans)
	for i, got := range cat.Runs {
		if got.Key != want[i].Key || got.ID != want[i].ID || got.Name != want[i].Name || !reflect.DeepEqual(got.Summary, want[i].Summary) {
			t.Errorf("run %d:\n got %s %+v\nwant %s %+v", i, got.Key, got.Summary, want[i].Key, want[i].Summary)
			continue
		}
		r, err := cat.Run(got)
		if err != nil {
			t.Fatal(err)
		}
		if treeText(t, r) != treeText(t, whole[i]) {
			t.Errorf("run %s read by offset:\n%s\nwant\n%s", got.Key, treeText(t, r), treeText(t, whole[i]))
		}
	}
}

// TestIndex: the index lists the runs a whole read finds, with the same
// summaries; a run read by its offsets is the run of a whole read; the
// index reads only what is appended, leaves an incomplete last line for
// later, and starts again on a file that was cut.
func TestIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	// Line 1: runs 0 and 1 together, as a batch exporter writes them;
	// line 2 is empty; line 3 is run 2, its spans split across two
	// resource entries; line 4 is not JSON.
	r2 := synthRun(t, 2, 3000)
	split := otlpLine(t, r2[:2]...)
	split = append(bytes.TrimSuffix(split, []byte("]}\n")), ',')
	split = append(split, bytes.TrimPrefix(otlpLine(t, r2[2:]...), []byte(`{"resourceSpans":[`))...)
	line1 := otlpLine(t, append(synthRun(t, 0, 0), synthRun(t, 1, 1000)...)...)
	appendFile(t, path, line1, []byte("\n"), split, []byte("not json\n"))

	x := NewIndex(Sources{TraceFiles: []string{path}})
	cat := x.Catalog()
	if len(cat.Runs) != 3 || cat.Runs[2].Summary.Spans != 4 {
		t.Fatalf("%d runs", len(cat.Runs))
	}
	sameRuns(t, cat, path)
	fi := x.files[0]
	// Every non-empty line has its place (the one that is not JSON too).
	wantLines := []lineLoc{{0, int32(len(line1) - 1)}, {int64(len(line1) + 1), int32(len(split) - 1)},
		{int64(len(line1) + 1 + len(split)), int32(len("not json"))}}
	if !slices.Equal(fi.lines, wantLines) {
		t.Errorf("lines %+v, want %+v", fi.lines, wantLines)
	}
	if len(cat.Problems) != 1 || !strings.Contains(cat.Problems[0], "line 4 is not OTLP JSON") {
		t.Errorf("problems %q", cat.Problems)
	}
	if s := cat.Runs[1].Summary; s.State != "error" || s.ErrorType != "*net.OpError" || s.Cost != "$0.000898" || s.Error != "model request 2: upstream overloaded" ||
		!slices.Equal(s.CacheBreaks, []string{"tools"}) {
		t.Errorf("failed run %+v", s)
	}
	if again := x.Catalog(); again != cat {
		t.Error("an unchanged file gave a new catalog")
	}

	// Growth: a run appended, then an incomplete line.
	before := fi.scanned
	line5 := otlpLine(t, synthRun(t, 3, 4000)...)
	next := otlpLine(t, synthRun(t, 4, 5000)...)
	appendFile(t, path, line5, next[:len(next)/2])
	cat = x.Catalog()
	if fi.scanned-before != int64(len(line5)) {
		t.Errorf("scanned %d bytes after an append of %d", fi.scanned-before, len(line5))
	}
	if len(cat.Runs) != 4 {
		t.Fatalf("%d runs after the append", len(cat.Runs))
	}
	sameRuns(t, cat, path)
	before = fi.scanned
	if x.Catalog() != cat || fi.scanned != before {
		t.Error("an unchanged incomplete line was read again")
	}
	appendFile(t, path, next[len(next)/2:])
	cat = x.Catalog()
	if len(cat.Runs) != 5 || fi.scanned-before != int64(len(next)) {
		t.Errorf("%d runs, %d bytes scanned once the line is complete", len(cat.Runs), fi.scanned-before)
	}
	sameRuns(t, cat, path)

	// A run whose spans come in two lines: the root later.
	r6 := synthRun(t, 6, 6000)
	appendFile(t, path, otlpLine(t, r6[:3]...))
	cat = x.Catalog()
	appendFile(t, path, otlpLine(t, r6[3]))
	cat = x.Catalog()
	sameRuns(t, cat, path)
	if last := cat.Runs[len(cat.Runs)-1]; last.ID != "run-6" || len(last.files) != 1 || len(last.files[0].lines) != 2 {
		t.Errorf("last run %+v", last)
	}

	// A file cut (or replaced) is indexed again.
	old := cat.Runs[0]
	if err := os.WriteFile(path, otlpLine(t, synthRun(t, 8, 0)...), 0o600); err != nil {
		t.Fatal(err)
	}
	cat = x.Catalog()
	if len(cat.Runs) != 1 || cat.Runs[0].ID != "run-8" || len(cat.Problems) != 0 {
		t.Errorf("after the file was cut: %d runs, problems %q", len(cat.Runs), cat.Problems)
	}
	sameRuns(t, cat, path)
	if _, err := cat.Run(old); err == nil {
		t.Error("a run of the old file was read from the new one")
	}
}

// TestIndexRealRuns: the spans of real runs (the tracing extension and
// the file exporter) give the same catalog through the index as through
// a whole read.
func TestIndexRealRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	recordRun(t, path, "weather", "Lisbon: 18°C")
	recordRun(t, path, "second", strings.Repeat("long result ", 1000))
	cat := Load(Sources{TraceFiles: []string{path}})
	if len(cat.Runs) != 2 || len(cat.Problems) != 0 {
		t.Fatalf("%d runs, problems %q", len(cat.Runs), cat.Problems)
	}
	sameRuns(t, cat, path)
}

// TestLongLine: a line longer than MaxLine is reported by its number as
// too long, not as a line that is not OTLP JSON, and the lines around it
// are read.
func TestLongLine(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB")
	}
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	long := make([]byte, MaxLine+10)
	for i := range long {
		long[i] = 'x'
	}
	long[len(long)-1] = '\n'
	appendFile(t, path, otlpLine(t, synthRun(t, 0, 0)...), long, otlpLine(t, synthRun(t, 2, 10)...))
	cat := Load(Sources{TraceFiles: []string{path}})
	if len(cat.Runs) != 2 || len(cat.Problems) != 1 {
		t.Fatalf("%d runs, problems %q", len(cat.Runs), cat.Problems)
	}
	want := "line 2 is longer than the limit (64 MiB)"
	if p := cat.Problems[0]; !strings.Contains(p, want) || strings.Contains(p, "OTLP") {
		t.Errorf("problem %q, want %q", p, want)
	}
	_, st, err := ReadTraceFile(path)
	if err != nil || st.TooLong != 1 || st.Corrupt != 0 || !slices.Equal(st.TooLongAt, []int{2}) || st.Lines != 2 {
		t.Errorf("ReadTraceFile: %+v, %v", st, err)
	}
}

// FuzzScanLine: whatever a line holds, the index's reading of it agrees
// with the full decoder's: when both accept it, the runs and summaries
// are the same.
func FuzzScanLine(f *testing.F) {
	f.Add(otlpLine(f, synthRun(f, 1, 0)...))
	f.Add(otlpLine(f, synthRun(f, 2, 0)...))
	f.Add([]byte(`{"resource_spans":[{"scope_spans":[{"spans":[{"trace_id":"AAAAAAAAAAAAAAAAAAAAAQ==","span_id":"AAAAAAAAAAE=","name":"invoke_agent x",` +
		`"status":{"code":"STATUS_CODE_ERROR","message":"b\u00e9"},"start_time_unix_nano":1,"attributes":[{"value":{"intValue":"5"},"key":"gen_ai.usage.input_tokens"}]}]}]}]}`))
	f.Add([]byte(`{"resourceSpans":null}`))
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"a\"b\\u00e9\ud83d\ude00"}]}]}]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		full, ferr := ParseOTLP(line)
		var skels []skel
		var traces [][16]byte
		serr := scanLine(line, 0, interner{}, func(tr [16]byte, sk skel) {
			traces = append(traces, tr)
			skels = append(skels, sk)
		})
		if ferr != nil || serr != nil {
			return // the index skips lines the full decoder takes only when their IDs are not OTLP's sizes
		}
		byTrace := map[[16]byte][]skel{}
		for i, tr := range traces {
			byTrace[tr] = append(byTrace[tr], skels[i])
		}
		var light []*RunInfo
		for tr, sk := range byTrace {
			light = append(light, runsOf(hex.EncodeToString(tr[:]), []skelGroup{{skels: sk}})...)
		}
		want := BuildRuns(full)
		if len(light) != len(want) {
			t.Fatalf("%d runs from the index, %d from the full decoder", len(light), len(want))
		}
		slices.SortFunc(light, func(a, b *RunInfo) int { return strings.Compare(a.Key, b.Key) })
		slices.SortFunc(want, func(a, b *Run) int { return strings.Compare(a.Key(), b.Key()) })
		for i := range want {
			if light[i].Key != want[i].Key() || !reflect.DeepEqual(light[i].Summary, want[i].Summary) {
				t.Errorf("run %s: %+v\nwant %s: %+v", light[i].Key, light[i].Summary, want[i].Key(), want[i].Summary)
			}
		}
	})
}
