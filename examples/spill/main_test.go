package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	start := time.Now()
	if err := run(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second { // about 1 s alone; generous for -race on a shared machine
		t.Errorf("took %v", d)
	}
	s := out.String()
	for _, want := range []string{
		"[result spilled: export_orders returned 4,757,244 bytes in 80,001 lines",
		"type: csv",
		"columns: order_id, placed_at, customer, country, amount, status",
		"3 matching lines; stopped at max_matches=3",
		"4244: 104242,2026-07-15T18:42:00Z,customer-11502,PT,206.42,disputed",
		"lines 4242 to 4244 of 80001",
		"count: 960 of 80000 rows where country eq \"JP\" and status eq \"refunded\" and amount gt 250",
		"stored: res_",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if len(s) > 20_000 {
		t.Errorf("the transcript is %d bytes: the export leaked into it", len(s))
	}
}
