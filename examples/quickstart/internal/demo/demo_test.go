package demo

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestOfflineCost: the scripted model has a price, so the offline run's
// span tree shows its cost; HARNESSX_PRICES=off still turns costs off.
func TestOfflineCost(t *testing.T) {
	for _, tt := range []struct {
		prices string
		want   []string
	}{
		{"", []string{"cost $0.000898", "out 31  $0.000662", "out 22  $0.000236"}},
		{"off", nil},
	} {
		t.Setenv("HARNESSX_PRICES", tt.prices)
		t.Setenv("HARNESSX_MODEL", "")
		t.Setenv("OTEL_TRACES_EXPORTER", "")
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
		t.Setenv("LANGSMITH_API_KEY", "")
		t.Setenv("HARNESSX_TRACES_FILE", filepath.Join(t.TempDir(), "traces.jsonl"))
		var out bytes.Buffer
		if err := Run(context.Background(), &out, Offline()); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("HARNESSX_PRICES=%q: output lacks %q:\n%s", tt.prices, w, got)
			}
		}
		if tt.want == nil && strings.Contains(got, "$") {
			t.Errorf("HARNESSX_PRICES=off: output shows a cost:\n%s", got)
		}
	}
}
