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
	enc, ok := c.m[cacheKey{"gen_ai.tool.message", value}]
	if !ok {
		t.Fatal("the entry is lost once the caller's buffer changed")
	}
	if string(enc) != want {
		t.Errorf("entry %q, want %q", enc, want)
	}
	if got := string(c.append(nil, "gen_ai.tool.message", value, red)); got != want {
		t.Errorf("cached encoding %q, want %q", got, want)
	}
	if c.bytes != len(key)+len(value)+len(want) {
		t.Errorf("the cache counts %d bytes, want %d", c.bytes, len(key)+len(value)+len(want))
	}
}
