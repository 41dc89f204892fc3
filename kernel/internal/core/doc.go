// Package core is what the dispatchers (kernel/internal/sequential,
// kernel/internal/timewarp, kernel/internal/dist) share beneath package kernel's API: the
// per-LP records and the simulation they belong to (Sim: its checks, its digest, its
// recorded series), a Context's frame (FrameOf, Enter, NewContext), model panics
// (RecoverModel), prefetching and peak memory. It names the kernel's types and constants
// by aliases (model.go), so that the dispatchers name everything they use through core.
package core
