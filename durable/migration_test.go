package durable

import (
	"errors"
	"testing"
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
		{"failed to run migrations: ERROR: permission denied for database (SQLSTATE 42501)", false},
		{"ERROR: tuple concurrently updated (SQLSTATE XX000)", false}, // not a migration
	}
	for _, tt := range tests {
		if got := migrationRace(errors.New(tt.msg)); got != tt.want {
			t.Errorf("migrationRace(%q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
}
