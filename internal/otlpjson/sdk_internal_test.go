package otlpjson

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/harnessx/harnessx/internal/redact"
)

// TestStringCacheKeepsCopies: the cache keys an entry by copies of the
// strings it was given. A string that shares a larger buffer (a span the
// flight recorder decoded from a snapshot's copy) then does not keep that
// buffer alive, and the caller writing its buffer again leaves the entry
// as it was.
func TestStringCacheKeepsCopies(t *testing.T) {
	value := strings.Repeat("v", cacheMin+44)
	buf := []byte("gen_ai.tool.message=" + value + ";the rest of a large buffer")
	key := unsafe.String(&buf[0], len("gen_ai.tool.message"))
	s := unsafe.String(&buf[len(key)+1], len(value))
	var c StringCache
	red := redact.New(nil)
	want := string(c.append(nil, key, s, red))

	lo, hi := uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&buf[len(buf)-1]))
	if len(c.m) != 1 {
		t.Fatalf("%d entries, want 1", len(c.m))
	}
	for k := range c.m {
		for _, str := range []string{k.key, k.s} {
			if p := uintptr(unsafe.Pointer(unsafe.StringData(str))); p >= lo && p <= hi {
				t.Errorf("the cache keeps the caller's string %.24q…, not a copy", str)
			}
		}
	}

	for i := range buf {
		buf[i] = 'x'
	}
	e, ok := c.m[cacheKey{"gen_ai.tool.message", value}]
	if !ok {
		t.Fatal("the entry is lost once the caller's buffer changed")
	}
	if string(e.enc) != want {
		t.Errorf("entry %q, want %q", e.enc, want)
	}
	if got := string(c.append(nil, "gen_ai.tool.message", value, red)); got != want {
		t.Errorf("cached encoding %q, want %q", got, want)
	}
	if c.bytes != len(key)+len(value)+len(want) {
		t.Errorf("the cache counts %d bytes, want %d", c.bytes, len(key)+len(value)+len(want))
	}
}

// TestStringCacheGenerations: Rotate drops the entries not used since the
// Rotate before, keeps (and moves to the new generation) those used, and
// the cache counts the bytes of what it keeps.
func TestStringCacheGenerations(t *testing.T) {
	var c StringCache
	red := redact.New(nil)
	a, b := strings.Repeat("a", cacheMin), strings.Repeat("b", cacheMin+1)
	encA := string(c.append(nil, "k", a, red))
	encB := string(c.append(nil, "k", b, red))
	size := func(s, enc string) int { return len("k") + len(s) + len(enc) }
	if c.bytes != size(a, encA)+size(b, encB) {
		t.Fatalf("%d bytes, want %d", c.bytes, size(a, encA)+size(b, encB))
	}
	c.Rotate()
	// a is used in the new generation, b is not.
	if got := string(c.append(nil, "k", a, red)); got != encA {
		t.Errorf("a from the generation before: %q, want %q", got, encA)
	}
	if _, ok := c.m[cacheKey{"k", a}]; !ok {
		t.Error("a, used again, did not move to the new generation")
	}
	c.Rotate()
	if _, ok := c.old[cacheKey{"k", b}]; ok {
		t.Error("b, unused for a generation, was kept")
	}
	if _, ok := c.old[cacheKey{"k", a}]; !ok {
		t.Error("a, used in the last generation, was dropped")
	}
	if c.bytes != size(a, encA) {
		t.Errorf("%d bytes after b was dropped, want %d", c.bytes, size(a, encA))
	}
	c.Rotate()
	if len(c.m)+len(c.old) != 0 || c.bytes != 0 {
		t.Errorf("after two generations unused: %d+%d entries, %d bytes", len(c.m), len(c.old), c.bytes)
	}
	if got := string(c.append(nil, "k", b, red)); got != encB {
		t.Errorf("b encoded again: %q, want %q", got, encB)
	}
}
