package harness

import "runtime"

// goroutineID returns the ID of the calling goroutine, read from the
// first line of its stack trace ("goroutine 18 [running]:"), or 0 when
// that line cannot be read. It costs a stack trace: only the slow path of
// lockReg, taken while the registration lock is held, calls it.
func goroutineID() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) <= len(prefix) || string(b[:len(prefix)]) != prefix {
		return 0
	}
	var id int64
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + int64(c-'0')
	}
	return id
}
