package app

import (
	"context"
	"io"
)

// testCommand returns the warped command as cmd/warped makes it.
func testCommand() *Command { return New("warped", Bundled()...) }

// run runs the warped command with args.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return testCommand().Run(ctx, args, stdout, stderr)
}

// findModel returns the bundled model called name, or nil.
func findModel(name string) *Model { return testCommand().find(name) }
