package durable

import (
	"strings"
	"testing"
)

// TestInMemoryDatabaseRefused: a SQLite DSN without a file is refused at
// Open with a clear error (DBOS's connections would each see a memory
// database of their own, and its first run would fail on a missing table).
func TestInMemoryDatabaseRefused(t *testing.T) {
	for _, dsn := range []string{"sqlite::memory:", "sqlite:", "sqlite:file::memory:?cache=shared"} {
		rt, err := Open(ctxT(t), dsn, WithLogger(quietLogger()))
		if err == nil {
			rt.Close(ctxT(t))
			t.Errorf("Open(%q) = nil error", dsn)
			continue
		}
		if !strings.Contains(err.Error(), "in-memory SQLite database does not work") {
			t.Errorf("Open(%q): %v", dsn, err)
		}
	}
}
