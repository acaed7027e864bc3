package media

import (
	"encoding/base64"
	"testing"
)

func TestEncode(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 1000, 5000} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i * 7)
		}
		want := base64.StdEncoding.EncodeToString(data)
		if got := Base64(data); got != want {
			t.Errorf("Base64 of %d bytes: %q", n, got)
		}
		if got := DataURL("image/png", data); got != "data:image/png;base64,"+want {
			t.Errorf("DataURL of %d bytes: %q", n, got)
		}
	}
	big := make([]byte, 1<<20)
	r := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Base64(big)
		}
	})
	if n := int64(base64.StdEncoding.EncodedLen(len(big))); r.AllocedBytesPerOp() > n+n/100 {
		t.Errorf("Base64 of 1 MiB allocated %d bytes, want about %d (the string alone)", r.AllocedBytesPerOp(), n)
	}
}
