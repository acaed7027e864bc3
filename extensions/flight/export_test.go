package flight

// SetMaxTraces sets how many recent traces x remembers for its span
// snapshot (maxTraces by default). Call it before the first event.
func SetMaxTraces(x *Extension, n int) {
	x.mu.Lock()
	x.traceCap = n
	x.mu.Unlock()
}
