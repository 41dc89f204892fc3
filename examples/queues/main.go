// Command queues is a model's own command, built on package app in a module of its own: it
// gets everything the warped command has (run, help, --config, --stats-file, --report,
// study, plot, mpirun with -tags mpi).
//
//	go run . cqn --max-sim-time 500 --simulation-type time-warp
//	go run . study cqn-study.yaml
package main

import (
	"example.com/queues/cqn"
	"github.com/warpedgo/warped/app"
)

func main() {
	app.Main("queues", cqn.Command())
}
