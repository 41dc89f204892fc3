package study

import (
	"fmt"
	"strconv"
)

// WorkersFlag is the kernel's flag of a time-warp run's workers. A spec may set it, as a
// flag or a parameter (a study of how a run scales): its runs are then time-warp runs with
// the workers it gives, and the study runs as many at once as the cores hold.
const WorkersFlag = "time-warp-worker-threads"

// specWorkers returns the most workers the spec's flags or parameters give a run (0: it
// sets none, and the study chooses). The values were checked against the flag when the
// spec was parsed.
func (s *Spec) specWorkers() int {
	most := 0
	for _, f := range s.Flags {
		if f.Name == WorkersFlag {
			n, _ := strconv.Atoi(f.Value)
			most = max(most, n)
		}
	}
	for i, p := range s.Params {
		if p == WorkersFlag {
			for _, pt := range s.Points {
				n, _ := strconv.Atoi(pt[i])
				most = max(most, n)
			}
		}
	}
	return most
}

// checkSpecWorkers refuses an execution that contradicts the workers a spec gives its runs:
// workers set twice, or runs that are not time-warp runs (which have no workers).
func checkSpecWorkers(s *Spec, ex Execution, types []string) error {
	if s.specWorkers() == 0 {
		return nil
	}
	tw := types[1]
	switch {
	case ex.Workers > 0:
		return &SettingsError{fmt.Sprintf("the spec sets --%s of its runs, and execution.workers (or --workers) sets them "+
			"too: keep one", WorkersFlag)}
	case ex.SimulationType != "auto" && ex.SimulationType != tw:
		return &SettingsError{fmt.Sprintf("the spec sets --%s, which only %s runs have, but its runs are %s: "+
			"drop it, or set simulation-type %s", WorkersFlag, tw, ex.SimulationType, tw)}
	}
	return nil
}
