// Package progress shows the progress of a long flightrec operation on
// standard error: nothing for an operation that ends within the delay
// (one second by default), then a line with the bytes and events done, of
// how many, and the rate over the time elapsed since the start. On a
// terminal the line is rewritten in place; elsewhere a line is printed
// every few seconds.
package progress
