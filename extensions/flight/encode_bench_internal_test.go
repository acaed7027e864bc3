package flight

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// BenchmarkEncodeRunEvents encodes the events of one BenchmarkFullStack
// run (two model calls and one tool call: eight events, the tool's two on
// the tool's span, the others on the run's), with the default redactor,
// through one encoding cache as the recorder does: the cost of turning a
// run's events into lines, apart from the ring, the journal and the lock.
func BenchmarkEncodeRunEvents(b *testing.B) {
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	run := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: 1})
	tool := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{8, 7, 6, 5, 4, 3, 2, 1}, TraceFlags: 1})
	evs := []Event{
		{Kind: KindRunStart, Text: "weather?", sc: run},
		{Kind: KindModelRequest, Step: 1, Model: "m", Messages: 1, hasPrefix: true, prefix: [32]byte{1}, sc: run},
		{Kind: KindModelResponse, Step: 1, Model: "m", Provider: "scripted", ResponseID: "resp_1", StopReason: "tool_use",
			Duration: 8242, sc: run},
		{Kind: KindToolCall, Step: 1, Tool: "weather", CallID: "call_1", Text: `{"city":"Paris"}`, sc: tool},
		{Kind: KindToolResult, Step: 1, Tool: "weather", CallID: "call_1", Status: "ok", Text: "sunny in Paris",
			Duration: 16381, sc: tool},
		{Kind: KindModelRequest, Step: 2, Model: "m", Messages: 3, hasPrefix: true, prefix: [32]byte{2}, sc: run},
		{Kind: KindModelResponse, Step: 2, Model: "m", Provider: "scripted", ResponseID: "resp_2", StopReason: "end_turn",
			InputTokens: 10, OutputTokens: 5, sc: run},
		{Kind: KindRunEnd, Step: 2, Status: "completed", InputTokens: 10, OutputTokens: 5, Text: "It is sunny in Paris.", sc: run},
	}
	for i := range evs {
		evs[i].Agent, evs[i].SessionID, evs[i].RunID = "agent", "0123456789abcdef0123456789abcdef", "e0bd7f313977b148a046311e00000000"
	}
	red := NewRedactor(nil)
	c := newEncCache(red)
	buf := make([]byte, 0, 4096)
	now := time.Now()
	var seq uint64
	b.ReportAllocs()
	for b.Loop() {
		for i := range evs {
			seq++
			evs[i].Seq = seq
			evs[i].Time = now.Add(time.Duration(seq) * time.Microsecond)
			buf = appendEventCached(buf[:0], &evs[i], red, &c)
		}
	}
}
