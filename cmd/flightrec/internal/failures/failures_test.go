package failures

import (
	"testing"

	"github.com/harnessx/harnessx/extensions/flight"
)

func TestCounter(t *testing.T) {
	const boom = "harness: model request 2: upstream overloaded"
	tests := []struct {
		name   string
		events []flight.Event
		want   int
	}{
		{name: "model failure reported three times", want: 1, events: []flight.Event{
			{Kind: flight.KindModelResponse, RunID: "r", Error: boom},
			{Kind: flight.KindError, RunID: "r", Error: boom},
			{Kind: flight.KindRunEnd, RunID: "r", Status: "failed", Error: boom},
		}},
		{name: "failed tool then failed run", want: 1, events: []flight.Event{
			{Kind: flight.KindToolResult, RunID: "r", Status: "error", Error: "x"},
			{Kind: flight.KindRunEnd, RunID: "r", Status: "failed", Error: "y"},
		}},
		{name: "two failed tools", want: 2, events: []flight.Event{
			{Kind: flight.KindToolResult, RunID: "r", Status: "error", Error: "same"},
			{Kind: flight.KindToolResult, RunID: "r", Status: "error", Error: "same"},
		}},
		{name: "cancelled run alone", want: 1, events: []flight.Event{
			{Kind: flight.KindRunStart, RunID: "r"},
			{Kind: flight.KindRunEnd, RunID: "r", Status: "cancelled"},
		}},
		{name: "same error in two runs", want: 2, events: []flight.Event{
			{Kind: flight.KindError, RunID: "a", Error: boom},
			{Kind: flight.KindError, RunID: "b", Error: boom},
		}},
		{name: "no failure", want: 0, events: []flight.Event{
			{Kind: flight.KindRunEnd, RunID: "r", Status: "completed"},
			{Kind: flight.KindToolResult, RunID: "r", Status: "ok"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Counter
			for i := range tt.events {
				c.Add(&tt.events[i])
			}
			if c.Total() != tt.want {
				t.Errorf("Total %d, want %d", c.Total(), tt.want)
			}
		})
	}
}
