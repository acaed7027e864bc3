package timeline

import (
	"strings"
	"testing"

	"github.com/harnessx/harnessx/extensions/flight"
)

func TestDetailRecovered(t *testing.T) {
	got := detail(&flight.Event{Kind: flight.KindRecovered, Attempt: 2})
	if !strings.Contains(got, "attempt 2") {
		t.Errorf("detail of a recovered event: %q, want the attempt", got)
	}
}
