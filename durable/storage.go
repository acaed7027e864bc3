package durable

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/harnessx/harnessx/harness"
)

// Storage returns the runtime's [harness.StorageBackend]: extension
// storage ([harness.ExtensionContext.Storage]) in a table of the runtime's
// database, "harnessx.storage" on Postgres and "harnessx_storage" on
// SQLite, so that stored values live with the runs and every worker on
// the database sees them. The runtime installs it on the agents it builds
// (a factory's own [harness.WithStorage] wins); an agent built outside
// the runtime may use it too. Each write is one statement, atomic. Writes
// are not steps: a re-executed run writes again, as its hooks fire again,
// so extensions should write idempotently.
func (rt *Runtime) Storage() harness.StorageBackend { return dbStorage{rt} }

// dbStorage is the runtime's harness.StorageBackend.
type dbStorage struct{ rt *Runtime }

var _ harness.StorageBackend = dbStorage{}

func (s dbStorage) db(ctx context.Context) (*leaseDB, error) {
	db, err := s.rt.auxDB(ctx)
	if err != nil {
		return nil, fmt.Errorf("durable: storage: %w", err)
	}
	return db, nil
}

func (s dbStorage) Get(ctx context.Context, scope harness.StorageScope, key string) (json.RawMessage, bool, error) {
	db, err := s.db(ctx)
	if err != nil {
		return nil, false, err
	}
	var v string
	err = db.db.QueryRowContext(ctx, db.q(`SELECT value FROM {KV} WHERE namespace = $1 AND session = $2 AND key = $3`),
		scope.Namespace, scope.Session, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("durable: storage: get %s %q: %w", scope, key, err)
	}
	plain, err := db.seal.openValue("storage", v, storageBind(scope, key))
	if err != nil {
		return nil, false, fmt.Errorf("durable: storage: get %s %q: %w", scope, key, err)
	}
	return json.RawMessage(plain), true, nil
}

func (s dbStorage) Put(ctx context.Context, scope harness.StorageScope, key string, value json.RawMessage) error {
	db, err := s.db(ctx)
	if err != nil {
		return err
	}
	_, err = db.db.ExecContext(ctx, db.q(`INSERT INTO {KV} (namespace, session, key, value) VALUES ($1, $2, $3, $4)
ON CONFLICT (namespace, session, key) DO UPDATE SET value = excluded.value`), scope.Namespace, scope.Session, key, db.seal.sealValue("storage", value, storageBind(scope, key)))
	if err != nil {
		return fmt.Errorf("durable: storage: put %s %q: %w", scope, key, err)
	}
	return nil
}

func (s dbStorage) Delete(ctx context.Context, scope harness.StorageScope, key string) error {
	db, err := s.db(ctx)
	if err != nil {
		return err
	}
	if _, err := db.db.ExecContext(ctx, db.q(`DELETE FROM {KV} WHERE namespace = $1 AND session = $2 AND key = $3`),
		scope.Namespace, scope.Session, key); err != nil {
		return fmt.Errorf("durable: storage: delete %s %q: %w", scope, key, err)
	}
	return nil
}

// List compares the prefix in characters (substr counts characters on
// both databases) and sorts in Go, by bytes, whatever the collation.
func (s dbStorage) List(ctx context.Context, scope harness.StorageScope, prefix string) ([]string, error) {
	db, err := s.db(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := db.db.QueryContext(ctx, db.q(`SELECT key FROM {KV} WHERE namespace = $1 AND session = $2 AND substr(key, 1, $3) = $4`),
		scope.Namespace, scope.Session, utf8.RuneCountInString(prefix), prefix)
	if err != nil {
		return nil, fmt.Errorf("durable: storage: list %s %q: %w", scope, prefix, err)
	}
	defer rows.Close()
	keys := []string{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("durable: storage: list %s %q: %w", scope, prefix, err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("durable: storage: list %s %q: %w", scope, prefix, err)
	}
	slices.Sort(keys)
	return keys, nil
}
