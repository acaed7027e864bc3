package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// TestStorageConformance runs harness's storage conformance suite on the
// runtime's database, on SQLite and on Postgres. Each backend of the
// suite is the database's under a namespace prefix of its own (empty when
// made); the reopened one is a new runtime's on the same database.
func TestStorageConformance(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		open := func(t *testing.T) harness.StorageBackend {
			rt, err := Open(ctxT(t), fixtureDSN(dir), WithLogger(quietLogger()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rt.Close(context.Background()) })
			return rt.Storage()
		}
		n := 0
		harnesstest.RunStorageTests(t, func(t *testing.T) harness.StorageBackend {
			n++
			return prefixed{open(t), fmt.Sprintf("t%d.", n)}
		}, func(t *testing.T, b harness.StorageBackend) harness.StorageBackend {
			return prefixed{open(t), b.(prefixed).p}
		})
		if n == 0 {
			t.Fatal("the suite made no backend")
		}
	})
}

// prefixed is a backend whose namespaces are prefixed by p.
type prefixed struct {
	b harness.StorageBackend
	p string
}

func (s prefixed) scope(sc harness.StorageScope) harness.StorageScope {
	sc.Namespace = s.p + sc.Namespace
	return sc
}

func (s prefixed) Get(ctx context.Context, sc harness.StorageScope, key string) (json.RawMessage, bool, error) {
	return s.b.Get(ctx, s.scope(sc), key)
}

func (s prefixed) Put(ctx context.Context, sc harness.StorageScope, key string, v json.RawMessage) error {
	return s.b.Put(ctx, s.scope(sc), key, v)
}

func (s prefixed) Delete(ctx context.Context, sc harness.StorageScope, key string) error {
	return s.b.Delete(ctx, s.scope(sc), key)
}

func (s prefixed) List(ctx context.Context, sc harness.StorageScope, prefix string) ([]string, error) {
	return s.b.List(ctx, s.scope(sc), prefix)
}

// TestRunsUseTheDatabaseStorage: an agent the runtime builds stores its
// extension's values in the runtime's database, where another runtime on
// the database reads them.
func TestRunsUseTheDatabaseStorage(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		rt := openFixture(t, dir, false)
		err := rt.Register("storer", func(ctx context.Context) ([]harness.Option, error) {
			p := harness.ProviderFunc(func(ctx context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
				return reply("stored"), nil
			})
			return []harness.Option{harness.WithProvider(p), harness.WithModel("fake-1"), harness.WithStateDir(t.TempDir()),
				harness.WithExtensions(storer{})}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Launch(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Run(ctxT(t), "storer", "go", WithRunID("s1")); err != nil {
			t.Fatal(err)
		}
		other := openFixture(t, dir, false, WithExecutorID("other"))
		v, found, err := other.Storage().Get(ctxT(t), harness.StorageScope{Namespace: "storer"}, "last")
		if err != nil || !found || string(v) != `"hello from a run"` {
			t.Fatalf("Get = %s, %v, %v", v, found, err)
		}
	})
}

// storer is an extension that stores a value when a run starts.
type storer struct{}

func (storer) Name() string { return "storer" }

func (storer) Install(ec *harness.ExtensionContext) error {
	st := ec.Storage("storer")
	_, err := ec.OnHook(harness.EventRunStart, func(ctx context.Context, _ *harness.Event) error {
		return st.Put(ctx, "last", "hello from a run")
	})
	return err
}

// TestRuntimeTablesCreatedConcurrently: several processes opening a new
// database at once each create the runtime's tables; on Postgres the
// losers of that race fail on the catalog's unique index and must retry
// rather than fail their Launch (as two workers did in CI).
func TestRuntimeTablesCreatedConcurrently(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		const n = 6
		errs := make(chan error, n)
		for range n {
			go func() {
				db, err := openLeaseDB(ctxT(t), fixtureDSN(dir))
				if err == nil {
					db.close()
				}
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	})
}
