package durable

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessx/harnessx/harness"
)

func TestOpenRefusesTextFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.db")
	want := []byte("these are my notes, not a database\n")
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openRuntime(dir, false); !errors.Is(err, ErrNotDatabase) {
		t.Fatalf("Open: %v, want ErrNotDatabase", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Fatalf("the file changed: %q", got)
	}
}

func TestOpenRefusesCorruptDatabase(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.db")
	data := append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{0xA5}, 8192)...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openRuntime(dir, false); !errors.Is(err, ErrNotDatabase) {
		t.Fatalf("Open: %v, want ErrNotDatabase", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Fatal("the file changed")
	}
}

func TestOpenRefusesForeignDatabase(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers VALUES (1, 'Ada')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := openRuntime(dir, false); !errors.Is(err, ErrForeignDatabase) {
		t.Fatalf("Open: %v, want ErrForeignDatabase", err)
	}
	db, err = sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("tables: %d %v, want only customers", n, err)
	}
	var name string
	if err := db.QueryRow(`SELECT name FROM customers WHERE id = 1`).Scan(&name); err != nil || name != "Ada" {
		t.Fatalf("row: %q %v", name, err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	dir := t.TempDir()
	rt, err := openRuntime(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close(context.Background())
	db, err := sql.Open("sqlite", filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow(`SELECT version FROM dbos_migrations`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != knownSchemaVersion {
		t.Fatalf("a new database is at schema version %d; knownSchemaVersion is %d: update it", v, knownSchemaVersion)
	}
	if _, err := db.Exec(`UPDATE dbos_migrations SET version = ?`, knownSchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	if _, err := openRuntime(dir, false); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open: %v, want ErrSchemaTooNew", err)
	}
}

func TestUnknownAndFinishedRuns(t *testing.T) {
	dir := t.TempDir()
	rt := openFixture(t, dir, true)
	ctx := ctxT(t)
	if _, err := rt.Wait(ctx, "nope"); !errors.Is(err, ErrUnknownRun) {
		t.Fatalf("Wait: %v", err)
	}
	if _, err := rt.Run(ctx, "safe", "go", WithRunID("done")); err != nil {
		t.Fatal(err)
	}
	if err := rt.Reply(ctx, "done", "done/tool/1/c1/ask/1", harness.Answer{Text: "x"}); !errors.Is(err, ErrUnknownAsk) {
		t.Fatalf("Reply to a finished run: %v", err)
	}
	if _, err := rt.Resume(ctx, "done", harness.Approve("c1")); !errors.Is(err, ErrNotPaused) {
		t.Fatalf("Resume a finished run: %v", err)
	}
	if _, err := rt.Run(ctx, "safe", "go", WithRunID("bad\x01id")); !errors.Is(err, harness.ErrInvalidRunID) {
		t.Fatalf("bad run ID: %v", err)
	}
	// Nothing lost: the finished run still reads back.
	res, err := rt.Wait(ctx, "done")
	if err != nil || res.Status != harness.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
}

// TestCallsHonourTheirContext: every database call of Pending, Wait,
// Resume, Reply and a session's Run ends with the caller's context, not
// only the waits between them.
func TestCallsHonourTheirContext(t *testing.T) {
	rt := openFixture(t, t.TempDir(), true)
	if _, err := rt.Run(ctxT(t), "safe", "go", WithRunID("done")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	gone := errors.New("the caller went away")
	cancel(gone)
	calls := map[string]func() error{
		"Pending": func() error { _, err := rt.Pending(ctx); return err },
		"Wait":    func() error { _, err := rt.Wait(ctx, "done"); return err },
		"Resume":  func() error { _, err := rt.Resume(ctx, "done"); return err },
		"Reply":   func() error { return rt.Reply(ctx, "done", "done/tool/1/c1/ask/1", harness.Answer{Text: "x"}) },
		"Run":     func() error { _, err := rt.Run(ctx, "safe", "go", WithSession("s")); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, gone) && !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v", name, err)
		}
	}
	// The runtime itself goes on.
	if res, err := rt.Wait(ctxT(t), "done"); err != nil || res.Status != harness.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestNotLaunched(t *testing.T) {
	rt := openFixture(t, t.TempDir(), false)
	if _, err := rt.Run(ctxT(t), "safe", "go"); !errors.Is(err, ErrNotLaunched) {
		t.Fatalf("Run: %v", err)
	}
	rt.Close(context.Background())
	if err := rt.Launch(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Launch after Close: %v", err)
	}
}
