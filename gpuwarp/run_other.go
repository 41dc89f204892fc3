//go:build !linux

package gpuwarp

import (
	"context"
	"errors"
)

// Run fails: the device loop, like gpuoffload's CUDA backend, is built for Linux only.
func Run(ctx context.Context, m *Model, in Input, o Options) (Result, error) {
	return Result{}, errors.New("gpuwarp: the device loop is built for Linux only")
}
