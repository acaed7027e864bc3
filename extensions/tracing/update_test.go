package tracing_test

import (
	"context"
	"testing"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// TestToolUpdateSpanEvent: harness.Update inside a tool adds a span event
// to its execute_tool span, numbers as numbers, strings redacted.
func TestToolUpdateSpanEvent(t *testing.T) {
	tp, sr := recorderTP(t)
	type none struct{}
	dl := harness.MustTool(harness.NewTool("download", "Download.", func(ctx context.Context, _ none) (string, error) {
		if err := harness.Update(ctx, map[string]any{"progress": 0.5, "bytes": 1024, "stage": "fetch api_key=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", "done": false}); err != nil {
			return "", err
		}
		return "ok", nil
	}))
	a, _ := newAgent(t, tp, []harnesstest.Response{
		harnesstest.CallTool("c1", "download", `{}`),
		harnesstest.Reply("done"),
	}, harness.WithTools(dl))
	if _, err := a.Run(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range spans(sr) {
		if s.Name() != "execute_tool download" {
			continue
		}
		for _, ev := range s.Events() {
			if ev.Name != tracing.EventToolUpdate {
				continue
			}
			found = true
			got := map[string]any{}
			for _, kv := range ev.Attributes {
				got[string(kv.Key)] = kv.Value.AsInterface()
			}
			if got["harnessx.tool.update.progress"] != 0.5 || got["harnessx.tool.update.bytes"] != int64(1024) || got["harnessx.tool.update.done"] != false {
				t.Errorf("update attributes %v", got)
			}
			stage, _ := got["harnessx.tool.update.stage"].(string)
			if stage == "" || stage == "fetch api_key=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789" {
				t.Errorf("stage %q: want it present and redacted", stage)
			}
		}
	}
	if !found {
		t.Fatal("no tool update event on the execute_tool span")
	}
}
