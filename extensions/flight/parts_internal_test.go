package flight

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/internal/partref"
)

func TestSessionRefs(t *testing.T) {
	a, b := []byte("first image"), []byte("<svg onload=alert(1)>")
	enc := base64.StdEncoding.EncodeToString
	in := `{"version":1,"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image","media":{"mime_type":"image/png","name":"a.png","data":"` + enc(a) + `"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_result":{"call_id":"c","parts":[{"type":"image","media":{"mime_type":"image/svg+xml","data":"` + enc(b) + `"}}]}}]},` +
		`{"role":"assistant","content":[{"type":"tool_call","tool_call":{"id":"c","name":"t","input":{"media":{"data":"not a part"}}}}]}],` +
		`"pending":{"results":[{"parts":[{"type":"image","media":{"mime_type":"image/png","data":"%%%"}}]}]}}`
	cache := newSumCache()
	var found []string
	for round := 0; round < 2; round++ {
		out, err := sessionRefs([]byte(in), cache, func(sum [32]byte, raw []byte) {
			if sha256.Sum256(raw) != sum {
				t.Errorf("found bytes do not match their sum")
			}
			found = append(found, string(raw))
		})
		if err != nil {
			t.Fatal(err)
		}
		s := string(out)
		for _, want := range []string{
			`"uri":"` + partref.URI(sha256.Sum256(a)) + `"`, `"size":11`, `"name":"a.png"`,
			`"uri":"` + partref.URI(sha256.Sum256(b)) + `"`,
			`"data_omitted":3`,
			`"input":{"media":{"data":"not a part"}}`, // a tool's input is not a part
		} {
			if !strings.Contains(s, want) {
				t.Errorf("round %d: %s lacks %s", round, s, want)
			}
		}
		if strings.Contains(s, enc(a)) || strings.Contains(s, enc(b)) {
			t.Errorf("bytes left inline: %s", s)
		}
		if !json.Valid(out) {
			t.Errorf("not JSON: %s", s)
		}
	}
	if len(found) != 2 {
		t.Errorf("found %q: want each part once (the cache knows them the second time)", found)
	}
	plain := []byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"data"}]}]}`)
	if out, _ := sessionRefs(plain, cache, nil); string(out) != string(plain) {
		t.Errorf("a session without media changed: %s", out)
	}
}

func TestScanRefs(t *testing.T) {
	h1, h2 := strings.Repeat("ab", 32), strings.Repeat("0f", 32)
	data := `x artifact:sha256:` + h1 + ` \"uri\":\"artifact:sha256:` + h2 + `\" artifact:sha256:` + h1 +
		` artifact:sha256:` + h1 + `0 artifact:sha256:` + strings.ToUpper(h2) + ` artifact:sha256:` + h2[:10]
	var got []string
	scanRefs([]byte(data), func(sum [32]byte) { got = append(got, partref.URI(sum)) })
	want := []string{"artifact:sha256:" + h1, "artifact:sha256:" + h2, "artifact:sha256:" + h1}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %v, want %v", got, want)
	}
}
