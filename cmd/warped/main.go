// Command warped runs the bundled models on the warped simulation kernel.
//
//	warped phold [flags]     run PHOLD
//	warped pcs [flags]       run the PCS cellular network model
//	warped traffic [flags]   run WARPED2's traffic model
//	warped epidemic [flags]  run WARPED2's epidemic model
//	warped airport [flags]   run the airport model
//	warped logic [flags]     run a gate-level logic circuit
//	warped version           print the module version, commit, Go version and build tags
//	warped devices           list the GPU offload backends and their devices
//	warped study SPEC        run a parameter study (see 'warped study --help')
//	warped plot FILE...      draw a --sample-file or --series-file as charts (see 'warped plot --help')
//	warped help [model]      print usage, or a model's flags
//
// It is package app's command with the bundled models (app.Bundled); a model of one's own
// gets the same command from app.Main (see docs/TUTORIAL.md). Usage and configuration
// errors exit with status 2, failed runs with 1.
package main

import "github.com/warpedgo/warped/app"

func main() {
	app.Main("warped", app.Bundled()...)
}
