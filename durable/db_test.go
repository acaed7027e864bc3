package durable

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// envPostgres names a Postgres server the tests may create databases on
// (.ci/postgres.sh prints one). Without it the Postgres cases skip, except
// in CI (CI=true), where they fail.
const envPostgres = "HARNESSX_POSTGRES_DSN"

// backends are the databases the recovery tests run on.
var backends = []string{"sqlite", "postgres"}

// postgresDSN returns the server's DSN, or skips (fails in CI).
func postgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(envPostgres)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set in CI: .ci/run starts Postgres with .ci/postgres.sh", envPostgres)
		}
		t.Skipf("%s is not set (.ci/postgres.sh starts a server and prints it)", envPostgres)
	}
	return dsn
}

// withDatabase returns dsn naming database db instead.
func withDatabase(t testing.TB, dsn, db string) string {
	t.Helper()
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("%s: not a URL", envPostgres)
		}
		u.Path = "/" + db
		return u.String()
	}
	return dsn + " dbname=" + db // key=value: the last one counts
}

// freshPostgres creates a database of its own for the test on the server
// of HARNESSX_POSTGRES_DSN, dropped at cleanup, and returns its DSN. DBOS
// creates its schema in it.
func freshPostgres(t testing.TB) string {
	t.Helper()
	dsn := postgresDSN(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "hx_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", envPostgres, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return withDatabase(t, dsn, name)
}

// useBackend prepares dir for backend: the fixture (and the children it
// starts) use the DSN written to dir/dsn, or dir/runs.db without one.
func useBackend(t testing.TB, dir, backend string) {
	t.Helper()
	if backend != "postgres" {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "dsn"), []byte(freshPostgres(t)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fixtureDSN is the database of the fixture in dir.
func fixtureDSN(dir string) string {
	if data, err := os.ReadFile(filepath.Join(dir, "dsn")); err == nil {
		return strings.TrimSpace(string(data))
	}
	return "sqlite:" + filepath.Join(dir, "runs.db")
}

// eachBackend runs f in a fresh directory on SQLite and on Postgres.
func eachBackend(t *testing.T, f func(t *testing.T, dir string)) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			dir := t.TempDir()
			useBackend(t, dir, b)
			f(t, dir)
		})
	}
}
