//go:build !unix

package flight_test

func processUsage() (u usage, ok bool) { return usage{}, false }
