package partref

import (
	"crypto/sha256"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	sum := sha256.Sum256([]byte("png bytes"))
	u := URI(sum)
	if !strings.HasPrefix(u, "artifact:sha256:") || len(u) != len("artifact:sha256:")+64 {
		t.Fatalf("URI = %q", u)
	}
	got, ok := Parse(u)
	if !ok || got != sum {
		t.Fatalf("Parse(%q) = %x, %v", u, got, ok)
	}
	if FileName(sum) != "sha256-"+u[len("artifact:sha256:"):] {
		t.Fatalf("FileName = %q", FileName(sum))
	}
}

func TestParseRefuses(t *testing.T) {
	good := URI(sha256.Sum256(nil))
	for _, s := range []string{
		"", "artifact:sha256:", good[:len(good)-1], good + "0",
		strings.ToUpper(good), strings.Replace(good, "artifact", "https", 1),
		"artifact:sha256:" + strings.Repeat("g", 64), "artifact:sha256:../../" + strings.Repeat("0", 58),
	} {
		if _, ok := Parse(s); ok {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}
