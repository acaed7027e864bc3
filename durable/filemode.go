package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// createPrivate creates the SQLite file at path, empty, with mode 0600,
// and the directories missing above it with mode 0700, before DBOS opens
// it: SQLite gives the -wal and -shm files the mode of the database file,
// and DBOS would create the directory 0750 and SQLite the file 0644. A
// file or directory that exists keeps its mode.
func createPrivate(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("durable: create the database's directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("durable: create the database file: %w", err)
	}
	// The umask may have taken bits away, never added any: 0600 holds.
	return f.Close()
}
