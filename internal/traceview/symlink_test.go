package traceview

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/harness"
)

// TestSymlinksLeavingDirRefused: a bundle, a recording and a span
// snapshot reached through symbolic links that lead out of the flight
// directory are refused and reported; links that stay inside are
// followed.
func TestSymlinksLeavingDirRefused(t *testing.T) {
	outside := t.TempDir()
	secret := pngBytes(t, 3, 3)
	outBundle := bundleWithParts(t, outside, "sess-out", harness.ImagePart(secret, "image/png"))

	root := t.TempDir()
	inBundle := bundleWithParts(t, root, "sess-in", harness.ImagePart(pngBytes(t, 2, 2), "image/png"))
	link := func(target, name string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	link(outBundle, "rec-a/incidents/evil.tar.gz")                             // a bundle outside
	link(filepath.Join(outside, "sess-out"), "rec-link")                       // a recording outside
	link(filepath.Join(outside, "sess-out", "spans.json"), "rec-b/spans.json") // a snapshot outside
	link(inBundle, "rec-c/incidents/alias.tar.gz")                             // a bundle inside: fine
	link(filepath.Join(root, "sess-in"), "rec-d")                              // a recording inside: fine

	cat := Load(Sources{FlightDirs: []string{root}})
	var names []string
	for _, inc := range cat.Incidents {
		names = append(names, inc.Recording+"/"+inc.Name)
		if !strings.HasPrefix(inc.Path, realRoot(root)) {
			t.Errorf("incident %s read from %s", inc.Name, inc.Path)
		}
	}
	// sess-in's bundle is found three times: in sess-in, through the
	// alias in rec-c, and in the recording rec-d links to (under its
	// resolved name).
	for _, want := range []string{"sess-in/", "rec-c/alias.tar.gz"} {
		found := false
		for _, n := range names {
			found = found || strings.HasPrefix(n, want)
		}
		if !found {
			t.Errorf("incidents %q lack %s", names, want)
		}
	}
	for _, n := range names {
		if strings.Contains(n, "evil") || strings.Contains(n, "sess-out") || strings.HasPrefix(n, "rec-link") {
			t.Errorf("incident %s was read from outside the directory", n)
		}
	}
	problems := strings.Join(cat.Problems, "\n")
	for _, want := range []string{"rec-a/incidents/evil.tar.gz: refused", "rec-link: refused", "rec-b/spans.json: refused"} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems lack %q:\n%s", want, problems)
		}
	}
	if strings.Contains(problems, "alias") || strings.Contains(problems, "rec-d") {
		t.Errorf("a link inside the directory was refused:\n%s", problems)
	}

	h := Handler(HandlerOptions{Sources: Sources{FlightDirs: []string{root}}})
	if res := get(t, h, "127.0.0.1", "/api/incidents/rec-a/evil.tar.gz"); res.StatusCode != 404 {
		t.Errorf("the outside bundle: %d", res.StatusCode)
	}
	if res := get(t, h, "127.0.0.1", "/parts/"+fileName(secret)+"?type=image/png"); res.StatusCode != 404 {
		t.Errorf("a part of the outside bundle: %d", res.StatusCode)
	}
}
