package flight

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// BenchmarkEncodeRunEvents encodes the events of one BenchmarkFullStack
// run (two model calls and one tool call: eight events, the tool's two on
// the tool's span, the others on the run's), with the default redactor:
// "binary" as the recorder does, through one encoding cache, the run's
// first line carrying its IDs and the others naming it; "json" as whole
// JSON lines, as a bundle holds them. It is the cost of turning a run's
// events into lines, apart from the ring, the journal and the lock; it
// reports the lines' bytes a run.
func BenchmarkEncodeRunEvents(b *testing.B) {
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	run := trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}
	tool := trace.SpanID{8, 7, 6, 5, 4, 3, 2, 1}
	evs := []Event{
		{Kind: KindRunStart, Text: "weather?", tid: tid, sid: run},
		{Kind: KindModelRequest, Step: 1, Model: "m", Messages: 1, hasPrefix: true, prefix: [32]byte{1}, tid: tid, sid: run},
		{Kind: KindModelResponse, Step: 1, Model: "m", Provider: "scripted", ResponseID: "resp_1", StopReason: "tool_use",
			Duration: 8242, tid: tid, sid: run},
		{Kind: KindToolCall, Step: 1, Tool: "weather", CallID: "call_1", Text: `{"city":"Paris"}`, tid: tid, sid: tool},
		{Kind: KindToolResult, Step: 1, Tool: "weather", CallID: "call_1", Status: "ok", Text: "sunny in Paris",
			Duration: 16381, tid: tid, sid: tool},
		{Kind: KindModelRequest, Step: 2, Model: "m", Messages: 3, hasPrefix: true, prefix: [32]byte{2}, tid: tid, sid: run},
		{Kind: KindModelResponse, Step: 2, Model: "m", Provider: "scripted", ResponseID: "resp_2", StopReason: "end_turn",
			InputTokens: 10, OutputTokens: 5, tid: tid, sid: run},
		{Kind: KindRunEnd, Step: 2, Status: "completed", InputTokens: 10, OutputTokens: 5, Text: "It is sunny in Paris.", tid: tid, sid: run},
	}
	for i := range evs {
		evs[i].Agent, evs[i].SessionID, evs[i].RunID = "agent", "0123456789abcdef0123456789abcdef", "e0bd7f313977b148a046311e00000000"
	}
	red := NewRedactor(nil)
	for _, bin := range []bool{true, false} {
		name := "json"
		if bin {
			name = "binary"
		}
		b.Run(name, func(b *testing.B) {
			c := newEncCache(red)
			buf := make([]byte, 0, 4096)
			now := time.Now()
			var seq uint64
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				buf = buf[:0]
				first := seq + 1
				for i := range evs {
					seq++
					evs[i].Seq = seq
					evs[i].Time = now.Add(time.Duration(seq) * time.Microsecond)
					if bin {
						c.form = lineForm{bare: true}
						if i > 0 {
							c.form.ref = first
						}
						buf = appendEventBin(buf, &evs[i], red, &c)
					} else {
						buf = appendEvent(buf, &evs[i], red)
					}
				}
				n = len(buf)
			}
			b.ReportMetric(float64(n), "bytes/run")
		})
	}
}
