//go:build unix

package flight_test

import "syscall"

// processUsage returns what the process has used so far, over every
// thread: CPU time (user and system) and system time alone, in
// nanoseconds, and its minor page faults; ok is false where it cannot be
// read.
func processUsage() (u usage, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{}, false
	}
	return usage{cpu: ru.Utime.Nano() + ru.Stime.Nano(), sys: ru.Stime.Nano(), minflt: int64(ru.Minflt)}, true
}
