//go:build !unix

package durable

import (
	"errors"
	"os"
)

// errLocked: another open file holds the lock.
var errLocked = errors.New("locked")

// tryLock cannot lock here: executor IDs are not checked on SQLite on this
// system (Postgres's advisory lock still checks them).
func tryLock(*os.File) error { return nil }

func unlock(*os.File) {}
