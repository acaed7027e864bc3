package harnesstest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/harnessx/harnessx/harness"
)

// MemoryStorage is a [harness.StorageBackend] in memory, for tests that
// need storage but no files: harness.WithStorage(harnesstest.NewMemoryStorage()).
// It is safe for concurrent use; its zero value is not usable.
type MemoryStorage struct {
	mu     sync.Mutex
	values map[harness.StorageScope]map[string]json.RawMessage
	// Err, when set, is returned by every method: a failing backend.
	Err error
}

var _ harness.StorageBackend = (*MemoryStorage)(nil)

// NewMemoryStorage returns an empty MemoryStorage.
func NewMemoryStorage() *MemoryStorage {
	return &MemoryStorage{values: map[harness.StorageScope]map[string]json.RawMessage{}}
}

// Get returns a copy of the value of key.
func (m *MemoryStorage) Get(ctx context.Context, s harness.StorageScope, key string) (json.RawMessage, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fail(ctx); err != nil {
		return nil, false, err
	}
	v, ok := m.values[s][key]
	return slices.Clone(v), ok, nil
}

// Put stores a copy of value.
func (m *MemoryStorage) Put(ctx context.Context, s harness.StorageScope, key string, value json.RawMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fail(ctx); err != nil {
		return err
	}
	if m.values[s] == nil {
		m.values[s] = map[string]json.RawMessage{}
	}
	m.values[s][key] = slices.Clone(value)
	return nil
}

// Delete removes key.
func (m *MemoryStorage) Delete(ctx context.Context, s harness.StorageScope, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fail(ctx); err != nil {
		return err
	}
	delete(m.values[s], key)
	return nil
}

// List returns the sorted keys of s that begin with prefix.
func (m *MemoryStorage) List(ctx context.Context, s harness.StorageScope, prefix string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fail(ctx); err != nil {
		return nil, err
	}
	keys := []string{}
	for k := range m.values[s] {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

func (m *MemoryStorage) fail(ctx context.Context) error {
	if m.Err != nil {
		return m.Err
	}
	return ctx.Err()
}

// RunStorageTests is the conformance suite of a [harness.StorageBackend],
// in the way testing/slogtest checks a slog.Handler: every backend (the
// file store, a durable runtime's database) should pass it. newBackend
// returns a fresh, empty backend; open, when not nil, returns a second
// backend over the same data (a reopened file store or database), to
// check that values outlive the backend value.
func RunStorageTests(t *testing.T, newBackend func(t *testing.T) harness.StorageBackend, open func(t *testing.T, b harness.StorageBackend) harness.StorageBackend) {
	ctx := context.Background()
	shared := harness.StorageScope{Namespace: "ns"}
	sess := harness.StorageScope{Namespace: "ns", Session: "s-1"}
	other := harness.StorageScope{Namespace: "other"}

	t.Run("RoundTrip", func(t *testing.T) {
		b := newBackend(t)
		values := map[string]string{
			"a":          `{"n":1,"s":"x","l":[true,null,2.5]}`,
			"pages/1":    `"text with \"quotes\" and ünïcödé"`,
			"pages/2":    `42`,
			"Case":       `null`,
			"case":       `[]`,
			"with space": `{}`,
		}
		for k, v := range values {
			if err := b.Put(ctx, shared, k, json.RawMessage(v)); err != nil {
				t.Fatalf("Put(%q): %v", k, err)
			}
		}
		for k, v := range values {
			got, ok, err := b.Get(ctx, shared, k)
			if err != nil || !ok {
				t.Fatalf("Get(%q) = %v, %v", k, ok, err)
			}
			if !jsonEqual(got, json.RawMessage(v)) {
				t.Errorf("Get(%q) = %s, want %s", k, got, v)
			}
		}
		if _, ok, err := b.Get(ctx, shared, "missing"); ok || err != nil {
			t.Errorf("Get(missing) = %v, %v; want not found, nil", ok, err)
		}
	})

	t.Run("Overwrite", func(t *testing.T) {
		b := newBackend(t)
		must(t, b.Put(ctx, shared, "k", json.RawMessage(`"old"`)))
		must(t, b.Put(ctx, shared, "k", json.RawMessage(`"new"`)))
		got, _, err := b.Get(ctx, shared, "k")
		if err != nil || string(got) != `"new"` {
			t.Errorf("after overwrite Get = %s, %v; want \"new\"", got, err)
		}
		keys, err := b.List(ctx, shared, "")
		if err != nil || !slices.Equal(keys, []string{"k"}) {
			t.Errorf("List = %q, %v; want [k]", keys, err)
		}
	})

	t.Run("DeleteAndList", func(t *testing.T) {
		b := newBackend(t)
		for _, k := range []string{"p/b", "p/a", "q", "p/c"} {
			must(t, b.Put(ctx, shared, k, json.RawMessage(`1`)))
		}
		must(t, b.Delete(ctx, shared, "p/c"))
		must(t, b.Delete(ctx, shared, "never-there"))
		if _, ok, _ := b.Get(ctx, shared, "p/c"); ok {
			t.Error("deleted key still found")
		}
		keys, err := b.List(ctx, shared, "p/")
		if err != nil || !slices.Equal(keys, []string{"p/a", "p/b"}) {
			t.Errorf("List(p/) = %q, %v; want [p/a p/b]", keys, err)
		}
		keys, err = b.List(ctx, shared, "")
		if err != nil || !slices.Equal(keys, []string{"p/a", "p/b", "q"}) {
			t.Errorf("List() = %q, %v; want [p/a p/b q]", keys, err)
		}
		keys, err = b.List(ctx, other, "")
		if err != nil || len(keys) != 0 {
			t.Errorf("List of an empty scope = %q, %v; want none", keys, err)
		}
	})

	t.Run("ScopesApart", func(t *testing.T) {
		b := newBackend(t)
		must(t, b.Put(ctx, shared, "k", json.RawMessage(`"shared"`)))
		must(t, b.Put(ctx, sess, "k", json.RawMessage(`"session"`)))
		must(t, b.Put(ctx, other, "k", json.RawMessage(`"other"`)))
		for s, want := range map[harness.StorageScope]string{shared: `"shared"`, sess: `"session"`, other: `"other"`} {
			got, _, err := b.Get(ctx, s, "k")
			if err != nil || string(got) != want {
				t.Errorf("Get(%v, k) = %s, %v; want %s", s, got, err, want)
			}
		}
		must(t, b.Delete(ctx, sess, "k"))
		if _, ok, _ := b.Get(ctx, shared, "k"); !ok {
			t.Error("deleting a session key deleted the shared one")
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		b := newBackend(t)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i := range 8 {
			wg.Go(func() {
				for j := range 8 {
					k := fmt.Sprintf("k%d", j)
					if err := b.Put(ctx, shared, k, json.RawMessage(fmt.Sprintf(`{"writer":%d}`, i))); err != nil {
						errs <- err
					}
					if v, ok, err := b.Get(ctx, shared, k); err != nil || (ok && !json.Valid(v)) {
						errs <- fmt.Errorf("Get(%s) = %q, %v: a torn value", k, v, err)
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		keys, err := b.List(ctx, shared, "")
		if err != nil || len(keys) != 8 {
			t.Errorf("List after concurrent writes = %q, %v; want 8 keys", keys, err)
		}
	})

	t.Run("CancelledContext", func(t *testing.T) {
		b := newBackend(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := b.Put(cctx, shared, "k", json.RawMessage(`1`)); err == nil {
			t.Error("Put with a cancelled context succeeded")
		}
	})

	if open != nil {
		t.Run("Reopen", func(t *testing.T) {
			b := newBackend(t)
			must(t, b.Put(ctx, sess, "kept", json.RawMessage(`{"v":1}`)))
			b2 := open(t, b)
			got, ok, err := b2.Get(ctx, sess, "kept")
			if err != nil || !ok || !jsonEqual(got, json.RawMessage(`{"v":1}`)) {
				t.Errorf("after reopening Get = %s, %v, %v; want {\"v\":1}", got, ok, err)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
