//go:build !unix

package mcp_test

import "time"

// cpuTime is not measured here: -1.
func cpuTime() time.Duration { return -1 }
