package spill

import "sync/atomic"

// Stats counts what the extension stored and what it could not. All
// counts are since New.
type Stats struct {
	// Spilled counts the results stored (by the middleware and Spill).
	Spilled int64
	// StoreFailures counts large tool results that passed through
	// unchanged because the store failed (a directory that cannot be
	// written, an unreachable remote store), and StoreFailedBytes their
	// bytes: results the model received in full instead of an envelope.
	StoreFailures, StoreFailedBytes int64
}

type counters struct {
	spilled, failures, failedBytes atomic.Int64
}

// Stats returns the counts so far. It is safe for concurrent use.
func (e *Extension) Stats() Stats {
	return Stats{
		Spilled:          e.stats.spilled.Load(),
		StoreFailures:    e.stats.failures.Load(),
		StoreFailedBytes: e.stats.failedBytes.Load(),
	}
}
