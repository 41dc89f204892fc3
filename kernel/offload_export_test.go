package kernel

import "time"

// SetTuneWindow sets the batch-size tuner's measurement window and returns a function
// that restores the previous one.
func SetTuneWindow(d time.Duration) (restore func()) {
	old := tuneWindow
	tuneWindow = d
	return func() { tuneWindow = old }
}

// TuneTrace runs the batch-size tuner of a worker with BatchSize fixed and OffloadAuto
// auto for the given number of measurement windows, rate giving the event rate measured
// at a batch size (0: batching off), and returns the size it chose for each window.
func TuneTrace(fixed int, auto bool, windows int, rate func(size int) float64) []int {
	t := newTuner(fixed, auto)
	sizes := make([]int, windows)
	for i := range sizes {
		sizes[i] = t.size()
		t.decide(rate(sizes[i]))
	}
	return sizes
}
