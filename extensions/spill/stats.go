package spill

import "sync/atomic"

// Stats counts what the extension stored and what it could not. All
// counts are since New.
type Stats struct {
	// Spilled counts the results stored (by the middleware and Spill).
	Spilled int64
	// StoreFailures counts large tool results that could not be stored
	// (a directory that cannot be written, an unreachable remote store),
	// and StoreFailedBytes their bytes. The model received each cut to
	// the threshold, with a note naming the cause, instead of an
	// envelope; StoreCutBytes counts the bytes it did not receive.
	StoreFailures, StoreFailedBytes, StoreCutBytes int64
	// PartsStored counts the media parts of tool results stored and sent
	// by URL (WithPartThreshold), and PartBytesStored their bytes.
	PartsStored, PartBytesStored int64
	// PartStoreFailures counts the large media parts that could not be
	// stored or given a URL, which were sent inline instead.
	PartStoreFailures int64
}

type counters struct {
	spilled, failures, failedBytes, cutBytes atomic.Int64
	partsStored, partBytes, partFailures     atomic.Int64
}

// Stats returns the counts so far. It is safe for concurrent use.
func (e *Extension) Stats() Stats {
	return Stats{
		Spilled:          e.stats.spilled.Load(),
		StoreFailures:    e.stats.failures.Load(),
		StoreFailedBytes: e.stats.failedBytes.Load(),
		StoreCutBytes:    e.stats.cutBytes.Load(),

		PartsStored:       e.stats.partsStored.Load(),
		PartBytesStored:   e.stats.partBytes.Load(),
		PartStoreFailures: e.stats.partFailures.Load(),
	}
}
