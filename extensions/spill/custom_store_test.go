package spill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// memStore is a Store in memory, as a caller might bind shared storage.
// failPut makes every Put fail, with failErr if set.
type memStore struct {
	mu      sync.Mutex
	data    map[string][]byte
	failPut bool
	failErr error
}

func (m *memStore) Put(ctx context.Context, id string, r io.Reader) (int64, error) {
	if !ValidID(id) {
		return 0, ErrInvalidID
	}
	if m.failPut {
		if m.failErr != nil {
			return 0, m.failErr
		}
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

// TestStoreFailureCutsResult checks that a result that cannot be stored
// does not reach the model whole: it is cut to the threshold with a note
// that names the cause, without the secrets the cause held, and the loss
// is counted.
func TestStoreFailureCutsResult(t *testing.T) {
	const threshold = 4000
	for _, tc := range []struct {
		name    string
		content string
	}{
		{"text", textData(2000)},
		{"multibyte", strings.Repeat("ünïcødé → 日本語 ", 2000)},
		{"huge", strings.Repeat("x", 8<<20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			content := tc.content
			cause := errors.New("put https://spill:hunter2@store.internal/b/res: connection refused")
			ext := New(WithThreshold(threshold), WithStore(&memStore{data: map[string][]byte{}, failPut: true, failErr: cause}))
			p := harnesstest.NewScriptedProvider(harnesstest.CallTool("c1", "dump", nil), harnesstest.Reply("ok"))
			a := newAgent(t, ext, p, bigTool("dump", content, false))
			defer a.Close(context.Background())
			res, err := a.Run(t.Context(), "go")
			if err != nil {
				t.Fatal(err)
			}
			r := toolResults(res.Messages)[0]
			got := r.Content
			if len(got) > threshold {
				t.Errorf("the model got %d bytes, over the threshold %d", len(got), threshold)
			}
			i := strings.LastIndex(got, "\n[spill: ")
			if i < 0 {
				t.Fatalf("no note in %q", got[max(0, len(got)-300):])
			}
			head, note := got[:i], got[i+1:]
			want := fmt.Sprintf("[spill: result cut at %d of %d bytes: the store failed: put https://spill:[REDACTED:url-password]@store.internal/b/res: connection refused]", len(head), len(content))
			if note != want {
				t.Errorf("note\n got %q\nwant %q", note, want)
			}
			if !strings.HasPrefix(content, head) || !utf8.ValidString(head) || len(head) < threshold-len(note)-4 {
				t.Errorf("head of %d bytes is not the result's head cut near the threshold, at a rune boundary", len(head))
			}
			if strings.Contains(got, "hunter2") {
				t.Error("the cause's password reached the model")
			}
			if n := len(ext.Results()); n != 0 {
				t.Errorf("%d results recorded", n)
			}
			want2 := Stats{StoreFailures: 1, StoreFailedBytes: int64(len(content)), StoreCutBytes: int64(len(content) - len(head))}
			if st := ext.Stats(); st != want2 {
				t.Errorf("Stats = %+v, want %+v", st, want2)
			}
		})
	}
}

// TestStoreDownCutsResult checks the default store when its directory
// cannot be made: the result is cut, not passed whole.
func TestStoreDownCutsResult(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(parent, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	content := textData(3000)
	ext := New(WithTempParent(parent)) // a file: no directory can be made in it
	p := harnesstest.NewScriptedProvider(harnesstest.CallTool("c1", "dump", nil), harnesstest.Reply("ok"))
	a := newAgent(t, ext, p, bigTool("dump", content, false))
	defer a.Close(context.Background())
	res, err := a.Run(t.Context(), "go")
	if err != nil {
		t.Fatal(err)
	}
	got := toolResults(res.Messages)[0].Content
	if len(got) > DefaultThreshold || !strings.Contains(got, "[spill: result cut at ") ||
		!strings.Contains(got, fmt.Sprintf(" of %d bytes: the store failed: spill: creating the store directory: ", len(content))) {
		t.Fatalf("result of %d bytes, ending %q", len(got), got[max(0, len(got)-200):])
	}
	if st := ext.Stats(); st.StoreFailures != 1 || st.StoreFailedBytes != int64(len(content)) || st.StoreCutBytes <= 0 {
		t.Errorf("Stats = %+v", st)
	}
}
