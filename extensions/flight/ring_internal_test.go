package flight

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestEventRing checks the ring against a slice of the last n lines, with
// lines that fit a slot and lines that do not, across many wraps.
func TestEventRing(t *testing.T) {
	const n = 16
	r := newEventRing(n)
	var want [][]byte
	rnd := rand.New(rand.NewPCG(1, 2))
	for k := 0; k < 500; k++ {
		size := rnd.IntN(3 * slotBytes)
		if k%5 == 0 {
			size = slotBytes + rnd.IntN(2) - 1
		}
		line := bytes.Repeat([]byte{byte('a' + k%26)}, size)
		line = append(line, fmt.Sprint(k)...)
		got, evicted := r.add(false, func(dst []byte) []byte { return append(dst, line...) })
		if !bytes.Equal(got, line) {
			t.Fatalf("add %d returned %d bytes, want %d", k, len(got), len(line))
		}
		if evicted != (len(want) == n) {
			t.Fatalf("add %d: evicted %v with %d lines", k, evicted, len(want))
		}
		want = append(want, line)
		if len(want) > n {
			want = want[1:]
		}
		var all [][]byte
		r.each(func(l []byte) bool { all = append(all, bytes.Clone(l)); return true })
		if len(all) != len(want) {
			t.Fatalf("after %d: %d lines, want %d", k, len(all), len(want))
		}
		for i := range all {
			if !bytes.Equal(all[i], want[i]) {
				t.Fatalf("after %d: line %d differs", k, i)
			}
		}
	}
	if len(r.long) > n {
		t.Fatalf("%d long lines kept for %d slots", len(r.long), n)
	}
}

// TestEventRingLetsLongLinesGo checks that once the lines too long for a
// slot are all overwritten, the ring keeps nothing of them: not even the
// room of the map that held them, which the collector would scan.
func TestEventRingLetsLongLinesGo(t *testing.T) {
	const n = 64
	r := newEventRing(n)
	long := bytes.Repeat([]byte("x"), 2*slotBytes)
	for range n {
		r.add(false, func(dst []byte) []byte { return append(dst, long...) })
	}
	if len(r.long) != n {
		t.Fatalf("%d long lines kept, want %d", len(r.long), n)
	}
	for range n {
		r.add(false, func(dst []byte) []byte { return append(dst, "short"...) })
	}
	if r.long != nil {
		t.Fatalf("the map of long lines stays, with %d lines", len(r.long))
	}
}
