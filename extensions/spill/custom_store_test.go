package spill

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// memStore is a Store in memory, as a caller might bind shared storage.
// failPut makes every Put fail.
type memStore struct {
	mu      sync.Mutex
	data    map[string][]byte
	failPut bool
}

func (m *memStore) Put(ctx context.Context, id string, r io.Reader) (int64, error) {
	if !ValidID(id) {
		return 0, ErrInvalidID
	}
	if m.failPut {
		return 0, errors.New("disk full")
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.data[id]; ok {
		return 0, ErrExists
	}
	m.data[id] = b
	return int64(len(b)), nil
}

type memFile struct{ *bytes.Reader }

func (memFile) Close() error  { return nil }
func (memFile) Stamp() string { return "" }

func (m *memStore) Open(_ context.Context, id string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.data[id]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return memFile{bytes.NewReader(b)}, nil
}

func (m *memStore) Stat(_ context.Context, id string) (Info, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.data[id]
	if !ok {
		return Info{}, fs.ErrNotExist
	}
	return Info{ID: id, Size: int64(len(b))}, nil
}

func (m *memStore) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.data, id)
	return nil
}

func (m *memStore) List(context.Context) ([]Info, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Info
	for id, b := range m.data {
		out = append(out, Info{ID: id, Size: int64(len(b))})
	}
	return out, nil
}

func (m *memStore) corrupt(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data[id] = append([]byte("X"), m.data[id][1:]...)
}

var _ Store = (*memStore)(nil)

// TestCallerStore binds a store that is not a directory: results spill
// into it, read back, survive Close (caller-owned), round-trip through a
// session into a second agent bound to the same store, and are checked
// against their SHA-256 on every read (the store gives no stamps).
func TestCallerStore(t *testing.T) {
	store := &memStore{data: map[string][]byte{}}
	data := jsonlData(3000)
	p1 := harnesstest.NewScriptedProvider(harnesstest.CallTool("c1", "dump", nil), harnesstest.Reply("ok"))
	ext1 := New(WithStore(store))
	a1 := newAgent(t, ext1, p1, bigTool("dump", data, false))
	if _, err := a1.Run(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	m := ext1.Results()[0]
	if st := ext1.Stats(); st != (Stats{Spilled: 1}) {
		t.Errorf("Stats = %+v, want one result spilled", st)
	}
	if arts, err := ext1.Artifacts(t.Context()); err != nil || len(arts) != 0 {
		t.Errorf("artifacts of a store without files: %v, %v", arts, err)
	}
	saved, err := a1.SaveSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := a1.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Stat(t.Context(), m.ID); err != nil {
		t.Fatalf("caller's store emptied at Close: %v", err)
	}
	ext2 := New(WithStore(store))
	p2 := harnesstest.NewScriptedProvider()
	a2, err := harness.LoadSession(t.Context(), saved, harness.WithProvider(p2), harness.WithExtensions(ext2))
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close(context.Background())
	out, err := read(ext2, map[string]any{"id": m.ID, "op": "count", "where": where("vip", "eq", true)})
	if err != nil || !strings.Contains(out, "count: 300 of 3000 rows") {
		t.Fatalf("read after load: %q, %v", out, err)
	}
	store.corrupt(m.ID)
	if _, err := read(ext2, map[string]any{"id": m.ID, "op": "count"}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of a corrupted result: %v", err)
	}
}

// TestStoreFailureKeepsResult checks that a result that cannot be stored
// reaches the model unchanged: nothing is lost.
func TestStoreFailureKeepsResult(t *testing.T) {
	content := textData(2000) // over the threshold: the store is asked
	ext := New(WithStore(&memStore{data: map[string][]byte{}, failPut: true}))
	p := harnesstest.NewScriptedProvider(harnesstest.CallTool("c1", "dump", nil), harnesstest.Reply("ok"))
	a := newAgent(t, ext, p, bigTool("dump", content, false))
	defer a.Close(context.Background())
	res, err := a.Run(t.Context(), "go")
	if err != nil {
		t.Fatal(err)
	}
	r := toolResults(res.Messages)[0]
	if r.Content != content || r.IsError {
		t.Fatalf("result changed: %d bytes, error=%v", len(r.Content), r.IsError)
	}
	if n := len(ext.Results()); n != 0 {
		t.Errorf("%d results recorded", n)
	}
	if st := ext.Stats(); st != (Stats{StoreFailures: 1, StoreFailedBytes: int64(len(content))}) {
		t.Errorf("Stats = %+v, want one failure of %d bytes", st, len(content))
	}
}
