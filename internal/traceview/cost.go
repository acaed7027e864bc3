package traceview

import (
	"math"
	"strconv"
	"strings"
)

// SpanCost returns the cost in US dollars that the tracing extension
// recorded on s (harnessx.cost.usd: a model request's on a chat span, the
// run's own requests' on an invoke_agent span), and whether it has one.
func SpanCost(s *Span) (float64, bool) {
	v, ok := s.Attrs.Get(keyCost)
	if !ok {
		return 0, false
	}
	f := valueFloat(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// FormatUSD formats an amount of US dollars for people, the one way the
// viewer and flightrec show costs: from $1 up, in cents with thousands
// separated ($1,234.57); below, with 4 significant digits and no trailing
// zeros, but at least two decimals ($0.50, $0.0412, $0.000898); zero is
// $0. Float noise never shows: 0.0041199999999999995 is $0.00412.
func FormatUSD(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v < 0:
		return "-" + FormatUSD(-v)
	case v == 0:
		return "$0"
	}
	if v < 1 {
		decimals := 3 - int(math.Floor(math.Log10(v)))
		s := strconv.FormatFloat(v, 'f', decimals, 64)
		if !strings.HasPrefix(s, "1") { // not rounded up to $1
			s = strings.TrimRight(s, "0")
			if i := strings.IndexByte(s, '.'); len(s)-i-1 < 2 {
				s += strings.Repeat("0", 2-(len(s)-i-1))
			}
			return "$" + s
		}
	}
	cents := strconv.FormatFloat(v, 'f', 2, 64)
	whole, frac, _ := strings.Cut(cents, ".")
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil { // beyond int64: no separators
		return "$" + cents
	}
	return "$" + Thousands(n) + "." + frac
}
