package flight

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/recording"
)

// TestSessionCacheMatchesJSON checks that the member-by-member redaction
// of session snapshots gives what Redactor.JSON gives for the whole
// document, as members change, stay, appear and go, and for documents it
// cannot split.
func TestSessionCacheMatchesJSON(t *testing.T) {
	red := NewRedactor([]Rule{{Name: "custom-x", Pattern: regexp.MustCompile(`xsecret\d+`)}}, func(s string) string {
		return strings.ReplaceAll(s, "hunter2", Marker("fn"))
	})
	docs := []string{
		`{"version":1,"session_id":"s","messages":[{"role":"user","content":[{"type":"text","text":"key sk-ant-api03-` + strings.Repeat("a", 40) + `"}]}],"extensions":{"spill":{"results":[],"version":1}}}`,
		`{"version":1,"session_id":"s","messages":[{"role":"user","content":[{"type":"text","text":"again"}]}],"extensions":{"spill":{"results":[],"version":1}}}`,
		`{"version":1,"session_id":"s","messages":[{"role":"user","content":[{"type":"text","text":"again"}]}],"extensions":{"spill":{"results":[{"id":"r1","token":"abc"}],"version":1}}}`,
		`{"api_key":"top","password":["a","b"],"auth":{"token":"t"},"n":1.50,"b":true,"z":null,"ü":"xsecret12 hunter2","e":[],"o":{}}`,
		`{"api_key":"top","password":["a","c"],"auth":{"token":"t"},"n":1.50,"b":true,"z":null,"ü":"xsecret12 hunter2","e":[],"o":{}}`,
		"  {\n \"b\" : \"Bearer abcdefghijklmnopqrstuvwxyz0123\" ,\t\"a\":[1, 2 ,{\"secret\":\"s\"}] }\n",
		`{"a\"b":"x","password":"p"}`,
		`{"a":1,"a":"dup password=hunter2"}`,
		`[1,2]`,
		`{}`,
		`{"a":"<&>\u2028","b":"caf\u00e9"}`,
		// A member that changes and keeps its length.
		`{"version":1,"messages":[{"text":"first"}],"extensions":{}}`,
		`{"version":1,"messages":[{"text":"fir5t"}],"extensions":{}}`,
		`{"a":1} trailing`,
		`{"a":"x"`,
		`{"a":[1,}`,
		`{"version":1,"session_id":"s","messages":[{"role":"user","content":[{"type":"text","text":"again"}]}],"extensions":{"spill":{"results":[{"id":"r1","token":"abc"}],"version":1}}}`,
	}
	var c sessionCache
	for round := 0; round < 2; round++ {
		for _, d := range docs {
			want, werr := red.JSON([]byte(d))
			got, gerr := c.redact(red, []byte(d))
			if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("%s\ncached %s (%v)\nwhole  %s (%v)", d, got, gerr, want, werr)
			}
		}
	}
}

// TestSessionSnapshotOnlyWhenChanged checks that a session snapshot of a
// session that did not change since the last one leaves session.json as
// it is (the same file), and that one of a changed session writes it with
// the redacted session.
func TestSessionSnapshotOnlyWhenChanged(t *testing.T) {
	rec := New(WithDir(t.TempDir()), WithSnapshotInterval(time.Hour))
	p := harnesstest.NewScriptedProvider(harnesstest.Reply("token=abcdef123456 ok"), harnesstest.Reply("second"))
	a, err := harness.New(harness.WithProvider(p), harness.WithExtensions(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	ctx := context.Background()
	if _, err := a.Run(ctx, "first password: hunter22"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(rec.Dir(), recording.SessionSnapshot)
	check := func() {
		t.Helper()
		rec.snapshotSession(ctx)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data, err := a.SaveSession(harness.AsSnapshot(ctx))
		if err != nil {
			t.Fatal(err)
		}
		want, err := rec.red.JSON(data)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("session.json\n%s\nwant\n%s", got, want)
		}
		if bytes.Contains(got, []byte("hunter22")) || bytes.Contains(got, []byte("abcdef123456")) {
			t.Fatalf("a secret reached session.json: %s", got)
		}
	}
	// A marker in place of session.json shows whether a snapshot wrote it.
	mark := func() {
		t.Helper()
		if err := os.WriteFile(path, []byte("marker"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	check()
	mark()
	rec.snapshotSession(ctx)
	if got, _ := os.ReadFile(path); string(got) != "marker" {
		t.Fatalf("an unchanged session was written again: %s", got)
	}
	if _, err := a.Run(ctx, "more"); err != nil {
		t.Fatal(err)
	}
	check() // a changed session is written
	// A snapshot that failed to write is written again, changed or not.
	mark()
	rec.sess.written(sessionSum{})
	check()
}

// TestSessionCacheLetsOldDocumentsGo checks that the members the cache
// keeps for later snapshots do not keep alive the document, or its
// redaction, that they came in: after a large session (its messages
// since gone) and a small one with the same extension states, the large
// document is collected.
func TestSessionCacheLetsOldDocumentsGo(t *testing.T) {
	red := NewRedactor(nil)
	var c sessionCache
	state := `"extensions":{"spill":{"results":[{"id":"r1"}],"version":1}}`
	big := []byte(`{"messages":"` + strings.Repeat("m", 1<<20) + `",` + state + `}`)
	if _, err := c.redact(red, big); err != nil {
		t.Fatal(err)
	}
	gone := weak.Make(&big[0])
	big = nil
	small := []byte(`{"messages":"short",` + state + `}`)
	got, err := c.redact(red, small)
	if err != nil || !strings.Contains(string(got), `"results":[{"id":"r1"}]`) {
		t.Fatalf("%s %v", got, err)
	}
	runtime.GC()
	runtime.GC()
	if gone.Value() != nil {
		t.Error("the first document is still alive through the cache's members")
	}
	for k, m := range c.members {
		if cap(m.red) > 2*len(small) {
			t.Errorf("member %s keeps %d bytes of room", k, cap(m.red))
		}
	}
	runtime.KeepAlive(small)
}

// TestSessionCacheUnchanged checks that the cache, which knows the last
// document written by its length and hash, tells it from another of the
// same length or a different one, and from none after a failed write.
func TestSessionCacheUnchanged(t *testing.T) {
	var c sessionCache
	unchanged := func(b []byte) bool {
		_, same := c.unchanged(b)
		return same
	}
	a := []byte(`{"messages":["aaaa"]}`)
	b := []byte(`{"messages":["aaab"]}`)
	sa, same := c.unchanged(a)
	if same {
		t.Fatal("a document is unchanged before any was written")
	}
	c.written(sa)
	switch {
	case !unchanged(bytes.Clone(a)):
		t.Error("the document written is not unchanged")
	case unchanged(b):
		t.Error("another document of the same length is unchanged")
	case unchanged(a[:len(a)-1]):
		t.Error("a shorter document is unchanged")
	}
	c.written(sessionSum{})
	if unchanged(a) {
		t.Error("a document is unchanged after a failed write")
	}
	empty, _ := c.unchanged([]byte{})
	c.written(empty)
	if !unchanged(nil) || unchanged(a) {
		t.Error("an empty document written: want it, and only it, unchanged")
	}
}
