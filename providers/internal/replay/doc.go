// Package replay is a loopback HTTP server for the providers' tests and
// examples: it answers requests with recorded responses, in order, and keeps
// every request it received so that tests can compare request bodies with
// golden files.
package replay
