// Package recording holds the on-disk layout of a flight recording, the
// directory <root>/<session ID>/ that the flight recorder writes and that
// flight's export, the flightrec command and traceview read: the
// append-only [Journal] of lines in size-capped segment files
// (seg-00000001.events, …, and seg-00000001.jsonl, … of older
// recordings; [SegmentName], [Segments]), its crash-tolerant reader
// ([Read], [ReadSegment]), recording.json ([Info]) and the names of the
// snapshot files and of the incidents directory.
//
// It is internal: the journal's lines are flight.Event lines (binary, or
// JSON in older recordings), which the callers decode (flight.ParseEvent)
// in the function they give [Read].
package recording
