// Package recordings scans flight recording directories for flightrec:
// the recordings (one per agent session), their runs and their incident
// bundles.
package recordings
