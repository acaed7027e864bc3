//go:build !unix

package flight

import (
	"errors"
	"os"
)

// lockRecording is not supported here: recordings are not locked.
func lockRecording(string) (*os.File, error) {
	return nil, errors.New("recording locks are not supported on this system")
}

// recordingInUse cannot tell without locks: every recording counts as in
// use, so none is evicted.
func recordingInUse(string) bool { return true }
