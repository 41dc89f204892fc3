package gpuwarp

// WithQueue returns o keeping k chunks in flight (1: the host waits for each chunk
// before it launches the next, as with no queue at all).
func WithQueue(o Options, k int) Options {
	o.queue = k
	return o
}
