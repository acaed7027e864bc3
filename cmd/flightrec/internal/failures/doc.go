// Package failures counts the distinct failures of flight recorder
// events for flightrec: one failing model request shows in the journal
// as a failed model_response, an error event and a failed run_end, and
// is one failure, not three.
package failures
