package jsonenc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
)

// reference is encoding/json without HTML escaping.
func reference(t testing.TB, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote\`, "tab\tnl\ncr\r", "\x00\x1f\x7f", "<a&b>", "é✓😀", "\xff\xfe", "line\u2028sep\u2029", "mixed \xc3 end"} {
		got := AppendString([]byte("prefix:"), s)
		want := append([]byte("prefix:"), reference(t, s)...)
		if !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\u2028", "\xff", "\x01", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		if want := reference(t, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("not valid JSON: %s: %v", got, err)
		}
	})
}

func BenchmarkAppendString(b *testing.B) {
	s := "The weather in Lisbon is 18°C with light rain.\nTake an umbrella."
	buf := make([]byte, 0, 256)
	for b.Loop() {
		buf = AppendString(buf[:0], s)
	}
}

// TestPlain8 checks the word-at-a-time test against a byte-at-a-time one
// on words made of the bytes around each boundary, in every position.
func TestPlain8(t *testing.T) {
	edge := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, '"' - 1, '"', '"' + 1, '\\' - 1, '\\', '\\' + 1, 'a', 0x7e, 0x7f, 0x80, 0xc3, 0xfe, 0xff}
	slow := func(w []byte) bool {
		for _, c := range w {
			if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
				return false
			}
		}
		return true
	}
	w := []byte("abcdefgh")
	for pos := 0; pos < 8; pos++ {
		for _, c := range edge {
			for pos2 := 0; pos2 < 8; pos2++ {
				for _, c2 := range edge {
					copy(w, "abcdefgh")
					w[pos], w[pos2] = c, c2
					if got, want := plain8(binary.LittleEndian.Uint64(w)), slow(w); got != want {
						t.Fatalf("plain8(%q) = %v, want %v", w, got, want)
					}
				}
			}
		}
	}
	for _, s := range []string{strings.Repeat("x", 7) + "\"" + strings.Repeat("y", 9), strings.Repeat("ab", 20) + "\n\\é" + strings.Repeat("z", 17)} {
		if got, want := AppendString(nil, s), reference(t, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func BenchmarkAppendStringASCII(b *testing.B) {
	s := "0123456789abcdef0123456789abcdef Lisbon: 18 C, light rain, wind 12 km/h from the north-west, humidity 81%."
	buf := make([]byte, 0, 256)
	for b.Loop() {
		buf = AppendString(buf[:0], s)
	}
}
