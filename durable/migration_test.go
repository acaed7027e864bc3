package durable

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestMigrationRace: the errors two processes get when they migrate one
// new Postgres database at once are retried; other errors are not.
func TestMigrationRace(t *testing.T) {
	tests := []struct {
		msg  string
		want bool
	}{
		{"failed to run migrations: failed to drop invalid index dbos.idx_workflow_status_started_at: ERROR: tuple concurrently updated (SQLSTATE XX000)", true},
		{"failed to run migrations: ERROR: duplicate key value violates unique constraint (SQLSTATE 23505)", true},
		{"failed to run migrations: ERROR: deadlock detected (SQLSTATE 40P01)", true},
		{`failed to run migrations: failed to execute migration 17: ERROR: column "queue_name" of relation "workflow_schedules" already exists (SQLSTATE 42701)`, true},
		{"failed to run migrations: ERROR: permission denied for database (SQLSTATE 42501)", false},
		{"ERROR: tuple concurrently updated (SQLSTATE XX000)", false}, // not a migration
	}
	for _, tt := range tests {
		if got := migrationRace(errors.New(tt.msg)); got != tt.want {
			t.Errorf("migrationRace(%q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
}

// TestOpenTakesTheMigrationLock: Open migrates a Postgres database under
// an advisory lock, so that processes opening one new database at once
// migrate it one after the other; while another session holds the lock,
// Open waits, as long as its context allows.
func TestOpenTakesTheMigrationLock(t *testing.T) {
	dsn := freshPostgres(t)
	conn, err := pgx.Connect(ctxT(t), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctxT(t), "SELECT pg_advisory_lock($1)", migrateLockKey); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if rt, err := Open(short, dsn, WithLogger(quietLogger())); err == nil || !strings.Contains(err.Error(), "migration lock") {
		if rt != nil {
			rt.Close(context.Background())
		}
		t.Fatalf("Open while another session holds the lock: %v", err)
	}
	if _, err := conn.Exec(ctxT(t), "SELECT pg_advisory_unlock($1)", migrateLockKey); err != nil {
		t.Fatal(err)
	}

	// Four processes' worth of runtimes open the new database at once.
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			rt, err := Open(ctxT(t), dsn, WithLogger(quietLogger()))
			if err == nil {
				err = rt.Close(context.Background())
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
