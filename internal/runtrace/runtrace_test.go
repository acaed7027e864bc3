package runtrace

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestTraceID(t *testing.T) {
	sum := sha256.Sum256([]byte("harnessx/run/run-1"))
	id := TraceID("run-1")
	if hex.EncodeToString(id[:]) != hex.EncodeToString(sum[:16]) {
		t.Fatalf("TraceID = %x, want %x", id, sum[:16])
	}
	if TraceID("run-1") != id || TraceID("run-2") == id {
		t.Fatal("TraceID is not a function of the run ID")
	}
	long := strings.Repeat("x", 1000) // longer than the stack buffer
	if TraceID(long) == TraceID(long[:999]) {
		t.Fatal("a long run ID")
	}
}

func TestRootSpanID(t *testing.T) {
	sum := sha256.Sum256([]byte("harnessx/run/run-1/attempt/2/steps/0"))
	id := RootSpanID("run-1", 2, 0)
	if hex.EncodeToString(id[:]) != hex.EncodeToString(sum[:8]) {
		t.Fatalf("RootSpanID = %x, want %x", id, sum[:8])
	}
	seen := map[[8]byte]bool{}
	for _, r := range []string{"run-1", "run-2"} {
		for a := 1; a <= 3; a++ {
			for s := range 3 {
				x := RootSpanID(r, a, s)
				if seen[x] {
					t.Fatalf("RootSpanID(%q, %d, %d) repeats", r, a, s)
				}
				seen[x] = true
			}
		}
	}
}

func BenchmarkTraceID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = TraceID("run-0123456789abcdef01234567")
		_ = RootSpanID("run-0123456789abcdef01234567", 1, 0)
	}
}
