package main

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/harnessx/harnessx/internal/traceview"
)

// checkGiven fails when a path given with --traces or --dir does not
// exist: a mistyped path is named, instead of runs from the other source
// or "no runs".
func checkGiven(cmd string, flags *flag.FlagSet) error {
	var missing []string
	flags.Visit(func(f *flag.Flag) {
		what := map[string]string{"traces": "file", "dir": "directory"}[f.Name]
		if what == "" {
			return
		}
		if _, err := os.Stat(f.Value.String()); errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, "--"+f.Name+" "+f.Value.String()+": the "+what+" does not exist")
		}
	})
	if len(missing) > 0 {
		return failf("%s: %s", cmd, strings.Join(missing, "; "))
	}
	return nil
}

// noRuns is the error for sources without a run; it says which of them
// do not exist.
func noRuns(cmd string, src traceview.Sources) error {
	var parts []string
	for _, p := range append(append([]string{}, src.TraceFiles...), src.FlightDirs...) {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			p += " (does not exist)"
		}
		parts = append(parts, p)
	}
	return failf("%s: no runs in %s", cmd, strings.Join(parts, " and "))
}

// listenError explains a failed listen of ui: a taken port names the way
// to another one.
func listenError(addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return failf("ui: %s is taken (another flightrec ui?): pick another port with --addr, as in --addr 127.0.0.1:7319, or --addr 127.0.0.1:0 for any free one", addr)
	}
	return failf("ui: cannot listen on %s: %v", addr, err)
}
