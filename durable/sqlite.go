package durable

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// knownSchemaVersion is the last DBOS system-database migration this
// build knows on SQLite (DBOS Transact Go v1.8.0). A test checks it
// against a new database.
const knownSchemaVersion = 125

// sqlitePath returns the file of a "sqlite:" DSN; ok is false for other
// DSNs and for an in-memory database.
func sqlitePath(dsn string) (path string, ok bool) {
	rest, ok := strings.CutPrefix(dsn, "sqlite:")
	if !ok {
		return "", false
	}
	if strings.HasPrefix(rest, "//") {
		rest = rest[2:]
	}
	rest, _ = strings.CutPrefix(rest, "file:")
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest = rest[:i]
	}
	if rest == "" || rest == ":memory:" {
		return "", false
	}
	return rest, true
}

// checkSQLite refuses, before DBOS writes anything, a file that is not a
// SQLite database, one that belongs to another application, and one whose
// DBOS schema is newer than this build's. A missing or empty file is fine.
func checkSQLite(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("durable: open %s: %w", path, context.Cause(ctx))
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("durable: open %s: %w", path, err)
	}
	head := make([]byte, 16)
	n, err := io.ReadFull(f, head)
	f.Close()
	if n == 0 {
		return nil
	}
	if err != nil || !bytes.Equal(head, []byte("SQLite format 3\x00")) {
		return fmt.Errorf("%w: %s", ErrNotDatabase, path)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return fmt.Errorf("durable: open %s: %w", path, err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNotDatabase, path, err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fmt.Errorf("%w: %s: %v", ErrNotDatabase, path, err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return fmt.Errorf("%w: %s: %v", ErrNotDatabase, path, err)
	}
	rows.Close()
	if len(tables) == 0 {
		return nil
	}
	// A damaged page past the header reads as a database until a query
	// reaches it: check every page before DBOS writes into it.
	var verdict string
	if err := db.QueryRowContext(ctx, `PRAGMA quick_check(1)`).Scan(&verdict); err != nil {
		return fmt.Errorf("%w: %s: it failed its integrity check: %v", ErrNotDatabase, path, err)
	}
	if verdict != "ok" {
		return fmt.Errorf("%w: %s: it failed its integrity check (%s); restore it from a backup, or move it away to start anew", ErrNotDatabase, path, verdict)
	}
	hasMigrations := false
	for _, t := range tables {
		if t == "dbos_migrations" {
			hasMigrations = true
		}
	}
	if !hasMigrations {
		return fmt.Errorf("%w: %s holds tables %q and none of the runtime's", ErrForeignDatabase, path, tables)
	}
	var v int64
	if err := db.QueryRowContext(ctx, `SELECT version FROM dbos_migrations LIMIT 1`).Scan(&v); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %s: %v", ErrNotDatabase, path, err)
	}
	if v > knownSchemaVersion {
		return fmt.Errorf("%w: %s is at schema version %d, this build knows up to %d", ErrSchemaTooNew, path, v, knownSchemaVersion)
	}
	return nil
}
