package jsonenc

import (
	"bytes"
	"encoding/json"
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
