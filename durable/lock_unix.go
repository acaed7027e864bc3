//go:build unix

package durable

import (
	"errors"
	"os"
	"syscall"
)

// errLocked: another open file holds the lock.
var errLocked = errors.New("locked")

// tryLock takes an exclusive flock on f without waiting; closing f, or
// the death of the process, releases it.
func tryLock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}

func unlock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
