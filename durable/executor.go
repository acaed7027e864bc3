package durable

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The executor lock: a launched runtime holds, for as long as it runs, a
// lock on its executor ID (with its application name) that the operating
// system or the database releases when the process dies. A second live
// process launched with the same ID is refused ([ErrExecutorInUse])
// instead of recovering, and so running, the first one's runs at the same
// time. A restarted process gets the lock back at once: a killed
// process holds nothing.
//
//   - SQLite: an exclusive flock on a file beside the database,
//     "<database>-executor-<hash>.lock", which holds the holder's PID and
//     executor ID for people to read.
//   - Postgres: a session advisory lock, held by a connection of its own;
//     Postgres releases it when the connection ends (a killed process's
//     connection ends with it; a stopped one keeps it, and so its ID).

// executorLock is a held executor lock.
type executorLock interface {
	release()
}

// lockExecutor takes the executor lock of the runtime's executor ID.
func (rt *Runtime) lockExecutor(ctx context.Context) (executorLock, error) {
	key := sha256.Sum256([]byte("harnessx executor\x00" + rt.cfg.appName + "\x00" + rt.cfg.executorID))
	if path, ok := sqlitePath(rt.dsn); ok {
		return lockExecutorFile(path+"-executor-"+hex.EncodeToString(key[:8])+".lock", rt.cfg.executorID)
	}
	return lockExecutorPostgres(ctx, rt.dsn, int64(binary.BigEndian.Uint64(key[:8])), rt.cfg.executorID)
}

// inUse is the error of a lock held by another live process.
func inUse(id, holder string) error {
	return fmt.Errorf("%w: executor ID %q is held by a live process (%s); give every process on the database its own stable ID with WithExecutorID, or stop the other one first",
		ErrExecutorInUse, id, holder)
}

// pgExecutorLock holds a Postgres session advisory lock on its connection.
type pgExecutorLock struct {
	conn *pgx.Conn
	key  int64
}

func lockExecutorPostgres(ctx context.Context, dsn string, key int64, id string) (executorLock, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cc := cfg.ConnConfig
	cc.RuntimeParams["application_name"] = "harnessx executor " + truncateID(id)
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, err
	}
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&got); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	if !got {
		holder := "another connection to the database"
		var addr, since string
		err := conn.QueryRow(ctx, `SELECT COALESCE(host(a.client_addr), 'local socket'), to_char(a.backend_start, 'YYYY-MM-DD HH24:MI:SS TZ')
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objid = ($1::bigint & 4294967295)::oid AND l.classid = ($1::bigint >> 32)::oid LIMIT 1`, key).Scan(&addr, &since)
		if err == nil {
			holder = "connected from " + addr + " since " + since
		}
		conn.Close(context.Background())
		return nil, inUse(id, holder)
	}
	return &pgExecutorLock{conn: conn, key: key}, nil
}

func (l *pgExecutorLock) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = l.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", l.key)
	l.conn.Close(ctx)
}

// fileExecutorLock holds an flock on its file.
type fileExecutorLock struct{ f *os.File }

func lockExecutorFile(path, id string) (executorLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("executor lock: %w", err)
	}
	if err := tryLock(f); err != nil {
		holder := "another process on this host"
		if b, rerr := os.ReadFile(path); rerr == nil && len(b) > 0 {
			holder = strings.TrimSpace(string(b))
		}
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, inUse(id, holder)
		}
		return nil, fmt.Errorf("executor lock %s: %w", path, err)
	}
	// Who holds it, for the error of the next one (best effort).
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d, executor %q\n", os.Getpid(), truncateID(id))), 0)
	}
	return &fileExecutorLock{f: f}, nil
}

func (l *fileExecutorLock) release() {
	unlock(l.f)
	l.f.Close()
}

// truncateID bounds an executor ID in messages.
func truncateID(id string) string {
	if len(id) > 64 {
		return id[:64] + "…"
	}
	return id
}
