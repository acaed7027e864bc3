// Package runtrace derives trace and span IDs from harness run IDs, so
// that every execution of a run — a recovery after a crash included —
// lands in one trace, and a later attempt can name an earlier attempt's
// root span. The exporters' ID generator and the tracing extension share
// it; changing a derivation splits the traces of runs recorded before the
// change from those after it.
package runtrace

import (
	"crypto/sha256"
	"strconv"
)

const prefix = "harnessx/run/"

// TraceID returns the trace ID of run runID: the first 16 bytes of
// SHA-256("harnessx/run/" + runID), never all zero.
func TraceID(runID string) [16]byte {
	var buf [256]byte
	b := append(append(buf[:0], prefix...), runID...)
	sum := sha256.Sum256(b)
	var id [16]byte
	copy(id[:], sum[:16])
	if id == [16]byte{} {
		id[15] = 1
	}
	return id
}

// RootSpanID returns the span ID of the root span of one part of one
// attempt of run runID: attempt counts the executions of the run from 1;
// steps is the number of model requests made before the part began (0 for
// Run, the steps before the pause for a Resume), which tells the parts of
// one attempt apart. It is the first 8 bytes of
// SHA-256("harnessx/run/" + runID + "/attempt/<attempt>/steps/<steps>"),
// never all zero.
func RootSpanID(runID string, attempt, steps int) [8]byte {
	var buf [320]byte
	b := append(append(buf[:0], prefix...), runID...)
	b = append(b, "/attempt/"...)
	b = strconv.AppendInt(b, int64(attempt), 10)
	b = append(b, "/steps/"...)
	b = strconv.AppendInt(b, int64(steps), 10)
	sum := sha256.Sum256(b)
	var id [8]byte
	copy(id[:], sum[:8])
	if id == [8]byte{} {
		id[7] = 1
	}
	return id
}
