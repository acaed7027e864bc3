// Command flight shows the flight recorder at work, offline: a scripted
// model calls a tool whose result holds a fake credential and a Bearer
// header, then one whose result is large enough to be spilled, and then
// the model fails. The run's failure exports an incident bundle — with
// the secrets redacted and the spilled result as an artifact — and the
// program prints its path and the flightrec command that reads it.
//
// The recording goes to $HARNESSX_FLIGHT_DIR, or to a new temporary
// directory, which is printed.
package main
