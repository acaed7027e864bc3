package failures

import "github.com/harnessx/harnessx/extensions/flight"

// Counter counts distinct failures as events are added in journal order.
// The zero value is ready to use; it is not safe for concurrent use.
//
// Within a run, a failure event whose error text was already counted is
// the same failure reported again (the error event and the failed
// run_end that follow a failed model request), and a failed or cancelled
// run_end counts only when nothing before it in the run failed. Each
// failed tool result, hook and extension failure counts once.
type Counter struct {
	runs map[string]*run
}

type run struct {
	errors   map[string]bool
	failures int
}

// Add records e and reports whether it is a new failure.
func (c *Counter) Add(e *flight.Event) bool {
	if !e.IsFailure() {
		return false
	}
	if c.runs == nil {
		c.runs = map[string]*run{}
	}
	r := c.runs[e.RunID]
	if r == nil {
		r = &run{errors: map[string]bool{}}
		c.runs[e.RunID] = r
	}
	isNew := true
	switch {
	case e.Kind == flight.KindRunEnd && r.failures > 0:
		isNew = false
	case e.Kind == flight.KindToolResult || e.Kind == flight.KindHookFailed || e.Kind == flight.KindExtensionError:
	case e.Error != "" && r.errors[e.Error]:
		isNew = false
	}
	if e.Error != "" {
		r.errors[e.Error] = true
	}
	if isNew {
		r.failures++
	}
	return isNew
}

// Run returns the failures counted for run id.
func (c *Counter) Run(id string) int {
	if r := c.runs[id]; r != nil {
		return r.failures
	}
	return 0
}

// Total returns the failures counted in all runs.
func (c *Counter) Total() int {
	n := 0
	for _, r := range c.runs {
		n += r.failures
	}
	return n
}
