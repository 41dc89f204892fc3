//go:build race

package ptxcheck

// raceEnabled is set under the race detector, where the checks skip: NVRTC's compile is
// native code that the detector does not see, and the plain run compiles the same text.
const raceEnabled = true
