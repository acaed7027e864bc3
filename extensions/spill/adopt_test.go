package spill

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdoptFromLastingStore: a process that spilled into a WithDir store
// stops without saving its session (a crash, then a durable runtime's
// re-execution, which replays the recorded envelope without spilling
// again). The next process's extension on the same directory reads the
// result by id, queries it as the type it is, and still catches
// tampering; the temporary default store adopts nothing.
func TestAdoptFromLastingStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spill")
	first := New(WithDir(dir))
	r := spillString(t, first, "orders", csvData(3000))
	if err := first.Teardown(t.Context()); err != nil { // the index is gone with it
		t.Fatal(err)
	}

	second := newExt(t, WithDir(dir))
	out, err := read(second, map[string]any{"id": r.ID, "op": "slice", "offset": 0, "limit": 2})
	if err != nil || !strings.Contains(out, "order_id") {
		t.Fatalf("slice of an adopted result: %q, %v", out, err)
	}
	out, err = read(second, map[string]any{"id": r.ID, "op": "rows", "where": []map[string]any{{"column": "country", "op": "eq", "value": "PT"}}, "limit": 1})
	if err != nil || !strings.Contains(out, "PT") {
		t.Fatalf("query of an adopted result (its type detected again): %q, %v", out, err)
	}
	meta := second.Results()
	if len(meta) != 1 || meta[0].ID != r.ID || meta[0].SHA256 != r.SHA256 || meta[0].Size != r.Size || meta[0].Lines != r.Lines || meta[0].Type != r.Type {
		t.Fatalf("adopted metadata %+v, spilled %+v", meta, r.Meta)
	}

	// Tampering after adoption is caught as for any result.
	f, err := os.OpenFile(filepath.Join(dir, r.ID), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("X"), 10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var ce *CorruptError
	if _, err := read(second, map[string]any{"id": r.ID, "op": "slice", "limit": 1}); !errors.As(err, &ce) {
		t.Fatalf("read after tampering: %v, want a CorruptError", err)
	}

	// An id the store does not hold is still unknown.
	if _, err := read(second, map[string]any{"id": "res_0123456789abcdef01234567", "op": "slice"}); !errors.Is(err, ErrUnknownID) {
		t.Fatalf("unknown id: %v", err)
	}

	// The temporary default store adopts nothing: its results belong to
	// the process that made them.
	tmp := newExt(t)
	other := spillString(t, tmp, "orders", csvData(10))
	fresh := newExt(t)
	spillString(t, fresh, "orders", csvData(10))
	if _, err := read(fresh, map[string]any{"id": other.ID, "op": "slice"}); !errors.Is(err, ErrUnknownID) {
		t.Fatalf("a temporary store's result read by another extension: %v", err)
	}
}
