package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

// funcExt is an extension whose Install is a function.
type funcExt struct {
	name    string
	install func(ec *harness.ExtensionContext) error
	ec      *harness.ExtensionContext
}

func (e *funcExt) Name() string { return e.name }
func (e *funcExt) Install(ec *harness.ExtensionContext) error {
	e.ec = ec
	if e.install == nil {
		return nil
	}
	return e.install(ec)
}

func TestFileStorageConformance(t *testing.T) {
	var mu sync.Mutex
	dirs := map[harness.StorageBackend]string{}
	ht.RunStorageTests(t,
		func(t *testing.T) harness.StorageBackend {
			dir := t.TempDir()
			b := harness.NewFileStorage(dir)
			mu.Lock()
			dirs[b] = dir
			mu.Unlock()
			return b
		},
		func(_ *testing.T, b harness.StorageBackend) harness.StorageBackend {
			// A second file store over the same directory, as after a restart.
			mu.Lock()
			defer mu.Unlock()
			return harness.NewFileStorage(dirs[b])
		})
}

func TestMemoryStorageConformance(t *testing.T) {
	ht.RunStorageTests(t, func(*testing.T) harness.StorageBackend { return ht.NewMemoryStorage() },
		func(_ *testing.T, b harness.StorageBackend) harness.StorageBackend { return b })
}

type page struct {
	URL   string   `json:"url"`
	Words int      `json:"words"`
	Tags  []string `json:"tags"`
}

// storageAgent builds an agent over dir whose extension "web" keeps the
// extension context.
func storageAgent(t *testing.T, dir string, opts ...harness.Option) (*harness.Agent, *funcExt) {
	t.Helper()
	ext := &funcExt{name: "web"}
	a := newAgent(t, ht.NewScriptedProvider(), append([]harness.Option{harness.WithStateDir(dir), harness.WithSessionID("sess-1"),
		harness.WithExtensions(ext)}, opts...)...)
	return a, ext
}

func TestStorageRoundTripAndScopes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, ext := storageAgent(t, dir)
	st := ext.ec.Storage("web")
	sess := st.Session(ext.ec.SessionID())

	in := page{URL: "https://example.test/a", Words: 120, Tags: []string{"x", "y"}}
	if err := sess.Put(ctx, "pages/a", in); err != nil {
		t.Fatal(err)
	}
	if err := sess.Put(ctx, "pages/b", page{URL: "b"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "pages/shared", page{URL: "shared"}); err != nil {
		t.Fatal(err)
	}
	var out page
	if ok, err := sess.Get(ctx, "pages/a", &out); !ok || err != nil {
		t.Fatalf("Get = %v, %v", ok, err)
	}
	if out.URL != in.URL || out.Words != in.Words || !slices.Equal(out.Tags, in.Tags) {
		t.Errorf("round trip: got %+v, want %+v", out, in)
	}
	keys, err := sess.List(ctx, "pages/")
	if err != nil || !slices.Equal(keys, []string{"pages/a", "pages/b"}) {
		t.Errorf("session List = %q, %v; want [pages/a pages/b] (not the shared key)", keys, err)
	}
	keys, err = st.List(ctx, "")
	if err != nil || !slices.Equal(keys, []string{"pages/shared"}) {
		t.Errorf("shared List = %q, %v; want [pages/shared]", keys, err)
	}
	if err := sess.Delete(ctx, "pages/b"); err != nil {
		t.Fatal(err)
	}
	if ok, err := sess.Get(ctx, "pages/b", &out); ok || err != nil {
		t.Errorf("Get after Delete = %v, %v; want not found", ok, err)
	}
	var raw json.RawMessage
	if ok, err := st.Get(ctx, "pages/shared", &raw); !ok || err != nil || string(raw) != `{"url":"shared","words":0,"tags":null}` {
		t.Errorf("raw Get = %s, %v, %v", raw, ok, err)
	}
	// The files are under the state directory, and no temporary file is left.
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 2 {
		t.Errorf("files under the state directory: %q; want 2 value files", files)
	}
	for _, f := range files {
		if !strings.HasPrefix(f, filepath.Join(dir, "storage", "web")) || !strings.HasSuffix(f, ".json") {
			t.Errorf("unexpected file %s", f)
		}
	}
}

func TestStorageSurvivesRestartAndSessionLoad(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, ext := storageAgent(t, dir)
	if err := ext.ec.Storage("web").Session(ext.ec.SessionID()).Put(ctx, "last", "hello"); err != nil {
		t.Fatal(err)
	}
	saved, err := a.SaveSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a.Close(ctx)

	// A new process: a new agent over the same state directory.
	ext2 := &funcExt{name: "web"}
	b := newAgent(t, ht.NewScriptedProvider(), harness.WithStateDir(dir), harness.WithSessionID("sess-1"), harness.WithExtensions(ext2))
	var got string
	if ok, err := ext2.ec.Storage("web").Session(b.SessionID()).Get(ctx, "last", &got); !ok || err != nil || got != "hello" {
		t.Errorf("after restart: %q, %v, %v", got, ok, err)
	}
	b.Close(ctx)

	// A loaded session sees its session's values.
	ext3 := &funcExt{name: "web"}
	c, err := harness.LoadSession(ctx, saved, harness.WithProvider(ht.NewScriptedProvider()), harness.WithStateDir(dir), harness.WithExtensions(ext3))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	got = ""
	if ok, err := ext3.ec.Storage("web").Session(ext3.ec.SessionID()).Get(ctx, "last", &got); !ok || err != nil || got != "hello" {
		t.Errorf("after LoadSession: %q, %v, %v", got, ok, err)
	}
	// Another session does not.
	if ok, _ := ext3.ec.Storage("web").Session("sess-2").Get(ctx, "last", &got); ok {
		t.Error("another session sees the value")
	}
}

func TestStorageBadInput(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, ext := storageAgent(t, dir)
	for _, ns := range []string{"", "Web", "../x", "a/b", ".hidden", "_engine", strings.Repeat("a", 65)} {
		err := ext.ec.Storage(ns).Put(ctx, "k", 1)
		if !errors.Is(err, harness.ErrInvalidStorageName) || !strings.Contains(err.Error(), "namespace") {
			t.Errorf("namespace %q: Put error %v; want ErrInvalidStorageName naming the namespace", ns, err)
		}
	}
	st := ext.ec.Storage("web")
	for _, key := range []string{"", "a\x00b", "tab\tkey", "\xff", strings.Repeat("k", 151)} {
		if err := st.Put(ctx, key, 1); !errors.Is(err, harness.ErrInvalidStorageName) {
			t.Errorf("key %q: Put error %v; want ErrInvalidStorageName", key, err)
		}
		if _, err := st.Get(ctx, key, new(int)); !errors.Is(err, harness.ErrInvalidStorageName) {
			t.Errorf("key %q: Get error %v; want ErrInvalidStorageName", key, err)
		}
	}
	if err := st.Session("").Put(ctx, "k", 1); !errors.Is(err, harness.ErrInvalidStorageName) || !strings.Contains(err.Error(), "session ID") {
		t.Errorf("empty session: %v", err)
	}
	// Keys with slashes, dots and spaces are ordinary: no path escapes.
	for _, key := range []string{"../../escape", "/abs", "a b", "ünï"} {
		if err := st.Put(ctx, key, key); err != nil {
			t.Errorf("key %q: %v", key, err)
		}
		var got string
		if ok, err := st.Get(ctx, key, &got); !ok || err != nil || got != key {
			t.Errorf("key %q: Get = %q, %v, %v", key, got, ok, err)
		}
	}
	if err := st.Put(ctx, "nan", map[string]any{"f": func() {}}); err == nil || !strings.Contains(err.Error(), "not JSON-compatible") {
		t.Errorf("Put of a function: %v", err)
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Dir(p) != filepath.Join(dir, "storage", "web", "shared") {
			t.Errorf("file %s is outside the namespace's directory", p)
		}
		return nil
	})
}

func TestStorageCorruptFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, ext := storageAgent(t, dir)
	st := ext.ec.Storage("web")
	if err := st.Put(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "storage", "web", "shared", "*.json"))
	if len(files) != 1 {
		t.Fatalf("files: %q", files)
	}
	os.WriteFile(files[0], []byte(`{"trunc`), 0o644)
	os.WriteFile(filepath.Join(filepath.Dir(files[0]), ".tmp-123"), []byte(`1`), 0o644) // a crashed write
	if _, err := st.Get(ctx, "k", new(int)); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("Get of a corrupt file: %v", err)
	}
	keys, err := st.List(ctx, "")
	if err != nil || !slices.Equal(keys, []string{"k"}) {
		t.Errorf("List = %q, %v; the temporary file must not be listed", keys, err)
	}
}

func TestWithStorageBackend(t *testing.T) {
	ctx := context.Background()
	mem := ht.NewMemoryStorage()
	ext := &funcExt{name: "web"}
	newAgent(t, ht.NewScriptedProvider(), harness.WithStateDir(""), harness.WithStorage(mem), harness.WithExtensions(ext))
	if err := ext.ec.Storage("web").Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	raw, ok, err := mem.Get(ctx, harness.StorageScope{Namespace: "web"}, "k")
	if !ok || err != nil || string(raw) != `"v"` {
		t.Errorf("backend holds %s, %v, %v", raw, ok, err)
	}
	mem.Err = errors.New("database down")
	if err := ext.ec.Storage("web").Put(ctx, "k", "v"); err == nil || !strings.Contains(err.Error(), "database down") || !strings.Contains(err.Error(), `"k"`) {
		t.Errorf("backend failure: %v", err)
	}
}

func TestSupportsAndRequire(t *testing.T) {
	ctx := context.Background()
	p := ht.NewScriptedProvider()

	// Using storage on an agent without it, unchecked: the install fails,
	// naming the feature, even though Install returned nil.
	_, err := harness.New(harness.WithProvider(p), harness.WithStateDir(""), harness.WithExtensions(&funcExt{name: "web",
		install: func(ec *harness.ExtensionContext) error {
			_ = ec.Storage("web").Put(ctx, "k", 1) // error ignored
			return nil
		}}))
	var ue *harness.UnsupportedError
	var xe *harness.ExtensionError
	if !errors.As(err, &xe) || xe.Extension != "web" || xe.Op != "install" || !errors.As(err, &ue) || ue.Feature != harness.FeatureStorage ||
		!errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), `"storage"`) {
		t.Fatalf("New = %v; want an install failure of web naming feature storage", err)
	}

	// Checked first: the install succeeds and the extension copes.
	var putErr error
	checked := &funcExt{name: "web", install: func(ec *harness.ExtensionContext) error {
		if !ec.Supports(harness.FeatureStorage) {
			putErr = ec.Storage("web").Put(ctx, "k", 1)
		}
		return nil
	}}
	newAgent(t, p, harness.WithStateDir(""), harness.WithExtensions(checked))
	if !errors.Is(putErr, errors.ErrUnsupported) {
		t.Errorf("Put without storage after Supports: %v; want ErrUnsupported", putErr)
	}

	// Features this engine always has, one it does not know, and durable
	// asks, which need a StepRunner that implements Asker.
	probe := &funcExt{name: "probe"}
	newAgent(t, p, harness.WithExtensions(probe))
	for _, f := range []harness.Feature{harness.FeatureStorage, harness.FeatureDeferredTools, harness.FeatureToolTransforms,
		harness.FeatureInstructions, harness.FeatureCommands, harness.FeatureToolUpdates} {
		if !probe.ec.Supports(f) {
			t.Errorf("Supports(%s) = false", f)
		}
	}
	if probe.ec.Supports("skills") {
		t.Error("Supports(unknown feature) = true")
	}
	if probe.ec.Supports(harness.FeatureDurableAsks) {
		t.Error("durable asks supported without a step runner")
	}
	_, err = harness.New(harness.WithProvider(p), harness.WithExtensions(&funcExt{name: "asker",
		install: func(ec *harness.ExtensionContext) error { ec.Require(harness.FeatureDurableAsks); return nil }}))
	if !errors.As(err, &ue) || ue.Feature != harness.FeatureDurableAsks || !strings.Contains(err.Error(), "Asker") {
		t.Fatalf("Require(durable asks) without a runner: %v", err)
	}
	withRunner := &funcExt{name: "asker", install: func(ec *harness.ExtensionContext) error { return ec.Require(harness.FeatureDurableAsks) }}
	newAgent(t, p, harness.WithStepRunner(ht.NewStepRunner()), harness.WithExtensions(withRunner))
	if !withRunner.ec.Supports(harness.FeatureDurableAsks) {
		t.Error("durable asks not supported with an Asker runner")
	}
}

// Session of a session's store is an error, not a quiet re-scope: every
// method of the store it returns fails with ErrNestedSession, and nothing
// is written to either session.
func TestNestedStorageSessionFails(t *testing.T) {
	ctx := context.Background()
	_, ext := storageAgent(t, t.TempDir())
	st := ext.ec.Storage("web")
	if err := st.Err(); err != nil {
		t.Fatalf("Err of a usable store: %v", err)
	}
	nested := st.Session("a").Session("b")
	err := nested.Err()
	if !errors.Is(err, harness.ErrNestedSession) || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("Err = %v; want ErrNestedSession naming both sessions", err)
	}
	if nested.Scope() != (harness.StorageScope{}) {
		t.Errorf("Scope = %v; want none", nested.Scope())
	}
	var v string
	_, getErr := nested.Get(ctx, "k", &v)
	_, listErr := nested.List(ctx, "")
	for name, err := range map[string]error{"Put": nested.Put(ctx, "k", "v"), "Get": getErr, "Delete": nested.Delete(ctx, "k"),
		"List": listErr, "Session": nested.Session("c").Err()} {
		if !errors.Is(err, harness.ErrNestedSession) {
			t.Errorf("%s: %v; want ErrNestedSession", name, err)
		}
	}
	for _, id := range []string{"a", "b"} {
		if keys, err := st.Session(id).List(ctx, ""); err != nil || len(keys) != 0 {
			t.Errorf("session %s holds %q, %v; want nothing written", id, keys, err)
		}
	}
	if err := st.Session("").Err(); !errors.Is(err, harness.ErrInvalidStorageName) {
		t.Errorf("Err of a bad session ID: %v", err)
	}
}

// TestFileStorageDirectoriesPrivate checks that the file store creates
// its directories, .harnessx included, 0700.
func TestFileStorageDirectoriesPrivate(t *testing.T) {
	state := filepath.Join(t.TempDir(), ".harnessx")
	b := harness.NewFileStorage(filepath.Join(state, "storage"))
	scope := harness.StorageScope{Namespace: "web", Session: "s1"}
	if err := b.Put(context.Background(), scope, "queries/a", json.RawMessage(`"a"`)); err != nil {
		t.Fatal(err)
	}
	n := 0
	filepath.WalkDir(state, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		n++
		if fi, err := d.Info(); err == nil && fi.Mode().Perm() != 0o700 {
			t.Errorf("%s has mode %v, want 0700", p, fi.Mode().Perm())
		}
		return nil
	})
	if n < 2 {
		t.Errorf("%d directories under %s", n, state)
	}
}
