//go:build unix

package flight

import (
	"errors"
	"os"
	"syscall"
)

// lockRecording takes an exclusive advisory lock (flock) on the recording
// directory dir and returns the open directory that holds it; closing it,
// or the death of the process, releases the lock.
func lockRecording(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// recordingInUse reports whether a recorder, of this process or another,
// holds the lock of the recording directory dir.
func recordingInUse(dir string) bool {
	f, err := lockRecording(dir)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	f.Close()
	return false
}
