package durable

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harnessx/harnessx/harness"
)

// TestOpenCreatesAMissingPostgresDatabase: Open creates the database when
// the role may, and says which database and what to do when it may not.
func TestOpenCreatesAMissingPostgresDatabase(t *testing.T) {
	dsn := postgresDSN(t)
	ctx := ctxT(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	name, role := "hx_missing_"+suffix, "hx_nocreate_"+suffix
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+"_2 WITH (FORCE)")
		_, _ = admin.Exec(ctx, "DROP ROLE IF EXISTS "+role)
	})
	dir := t.TempDir()
	target := withDatabase(t, dsn, name)
	if err := os.WriteFile(filepath.Join(dir, "dsn"), []byte(target), 0o600); err != nil {
		t.Fatal(err)
	}
	rt := openFixture(t, dir, true)
	if res, err := rt.Run(ctx, "safe", "go", WithRunID("c1")); err != nil || res.Status != harness.StatusCompleted {
		t.Fatalf("run on the created database: %+v %v", res, err)
	}

	// A role that may not create databases.
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN PASSWORD 'pw' NOCREATEDB"); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(withDatabase(t, dsn, name+"_2"))
	if err != nil {
		t.Skip("the DSN is not a URL")
	}
	u.User = url.UserPassword(role, "pw")
	_, err = Open(ctx, u.String(), WithLogger(quietLogger()))
	if err == nil || !strings.Contains(err.Error(), `"`+name+`_2"`) || !strings.Contains(err.Error(), "may not create it") || strings.Contains(err.Error(), "pw@") {
		t.Fatalf("Open by a role without CREATEDB: %v", err)
	}
}

// TestOpenContextBoundsOpenOnly: cancelling the context given to Open,
// after it returned, ends nothing of the runtime.
func TestOpenContextBoundsOpenOnly(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		ctx, cancel := context.WithCancel(context.Background())
		rt, err := Open(ctx, fixtureDSN(dir), WithLogger(quietLogger()), WithPollInterval(20*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close(context.Background())
		cancel()
		if err := rt.Register("safe", factory(dir, "safe")); err != nil {
			t.Fatal(err)
		}
		if err := rt.Launch(ctxT(t)); err != nil {
			t.Fatalf("Launch after Open's context ended: %v", err)
		}
		if _, err := rt.Pending(ctxT(t)); err != nil {
			t.Fatalf("Pending after Open's context ended: %v", err)
		}
		if res, err := rt.Run(ctxT(t), "safe", "go"); err != nil || res.Status != harness.StatusCompleted {
			t.Fatalf("Run after Open's context ended: %+v %v", res, err)
		}
		// An Open whose context has ended returns at once.
		dead, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := Open(dead, fixtureDSN(dir), WithLogger(quietLogger())); !errors.Is(err, context.Canceled) {
			t.Fatalf("Open with an ended context: %v", err)
		}
	})
}

// TestDBOSEnvironmentOverridesRefused: DBOS__APPVERSION and DBOS__VMID
// would silently replace WithAppVersion and WithExecutorID; Open refuses
// them, naming the variable, unless they agree.
func TestDBOSEnvironmentOverridesRefused(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DBOS__VMID", "vm-7")
	if _, err := openRuntime(dir, false); err == nil || !strings.Contains(err.Error(), "DBOS__VMID") || !strings.Contains(err.Error(), "WithExecutorID") {
		t.Fatalf("Open with DBOS__VMID set: %v", err)
	}
	rt, err := openRuntime(dir, false, WithExecutorID("vm-7"))
	if err != nil {
		t.Fatalf("Open with DBOS__VMID equal to the executor ID: %v", err)
	}
	rt.Close(context.Background())
	t.Setenv("DBOS__VMID", "")
	t.Setenv("DBOS__APPVERSION", "abc")
	if _, err := openRuntime(dir, false); err == nil || !strings.Contains(err.Error(), "DBOS__APPVERSION") {
		t.Fatalf("Open with DBOS__APPVERSION set: %v", err)
	}
}

// TestOpenRefusesADamagedPage: a database whose header is intact but one
// of whose pages is damaged is refused, and left as it was.
func TestOpenRefusesADamagedPage(t *testing.T) {
	dir := t.TempDir()
	rt := openFixture(t, dir, true)
	for _, id := range []string{"a", "b", "c"} {
		if _, err := rt.Run(ctxT(t), "par", "go", WithRunID(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "runs.db")
	// Fold the WAL into the file, so that the damage is not hidden by it.
	db, err := openLeaseDB(ctxT(t), fixtureDSN(dir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.db.ExecContext(ctxT(t), "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	db.close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	if len(data) < 6*page {
		t.Fatalf("the database has only %d bytes", len(data))
	}
	for i := 3 * page; i < 4*page; i++ {
		data[i] = 0x5A
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = openRuntime(dir, false)
	if !errors.Is(err, ErrNotDatabase) || !strings.Contains(err.Error(), "integrity check") {
		t.Fatalf("Open of a damaged database: %v", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Fatal("the damaged file changed")
	}
}
