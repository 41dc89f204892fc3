package gpuwarp

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/warpedgo/warped/gpuoffload"
)

//go:embed kernels/runs.cu
var runsCU string

// runsSource is the text between the model's source and the loop: runs.cu with its
// constants, for one run or, for a model merged by RunMany, several.
func runsSource(m *Model) string {
	several, words := 0, len(m.Params)
	if m.several {
		several, words = 1, m.runParams
	}
	return "\n#define WTW_RUNS " + strconv.Itoa(several) +
		"\n#define WTW_PARAMS " + strconv.Itoa(words) + "u" +
		"\n#line 1 \"runs.cu\"\n" + runsCU
}

// RunMany runs several simulations of one device code in one device loop, as disjoint
// sets of LPs: run r's LPs follow run r-1's, its initial events are renumbered with them,
// and its handlers see its own parameters, LP numbers and LP count (kernels/runs.cu). A
// run's events never leave its set and its LPs handle the same events in the same key
// order as alone, so each Result's states, generators and counters are those Run gives
// for that run alone; LoopSeconds, Iterations, the tuned settings and Device are the
// shared loop's. This is the multi-level parallelism of a parameter study: one iteration
// advances every run, and the device and its set-up are opened and paid once.
//
// The models must share their device code (Name, Source, SaveState, StateWords, OutSlots,
// Words and the number of Params; the values of Params may differ) and the inputs their End. The
// options apply to the loop as a whole: Slots, when 0, is sized from every run's initial
// events, Buffer from the total of the LPs.
func RunMany(ctx context.Context, ms []*Model, ins []Input, o Options) ([]Result, error) {
	m, err := mergeable(ms, ins, o)
	if err != nil {
		return nil, err
	}
	if len(ins) == 1 {
		out, err := Run(ctx, m, ins[0], o)
		if err != nil {
			return nil, err
		}
		return []Result{out}, nil
	}
	merged, in := merge(ms, ins)
	out, err := Run(ctx, merged, in, o)
	if errors.Is(err, gpuoffload.ErrOutOfMemory) {
		return nil, fmt.Errorf("%w; %d runs of %d LPs in all share this loop: fewer runs a loop may fit (a study's --group-runs)",
			err, len(ins), len(in.RNG))
	}
	if err != nil {
		return nil, err
	}
	return split(m, ins, &out), nil
}

// mergeable returns the models' shared device code, or says which run differs or is
// wrong.
func mergeable(ms []*Model, ins []Input, o Options) (*Model, error) {
	switch {
	case len(ms) == 0:
		return nil, errors.New("gpuwarp: no runs to run")
	case len(ms) != len(ins):
		return nil, fmt.Errorf("gpuwarp: %d models for %d inputs; give one of each per run", len(ms), len(ins))
	}
	m := ms[0]
	for r := range ms {
		mr, in := ms[r], &ins[r]
		if mr == nil || m == nil || mr.Source == "" {
			return nil, fmt.Errorf("gpuwarp: run %d has no device model", r)
		}
		if mr.Name != m.Name || mr.Source != m.Source || mr.SaveState != m.SaveState || mr.StateWords != m.StateWords ||
			mr.OutSlots != m.OutSlots || mr.Words != m.Words || len(mr.Params) != len(m.Params) || mr.several || m.several {
			return nil, fmt.Errorf("gpuwarp: run %d's device model (%s) differs from run 0's (%s) in its code or parameter count; one loop runs one device code",
				r, mr.Name, m.Name)
		}
		if in.End != ins[0].End {
			return nil, fmt.Errorf("gpuwarp: run %d ends at %v and run 0 at %v; the runs of one loop share the end time", r, in.End, ins[0].End)
		}
		// Each run on its own terms: an event out of its run's LPs would land in another.
		ro := o.withDefaults(mr, len(in.RNG), in)
		if err := validate(mr, in, &ro); err != nil {
			return nil, fmt.Errorf("run %d: %w", r, err)
		}
	}
	return m, nil
}

// merge returns the model and input of the runs as one loop's: the LPs, states and
// events concatenated, the events renumbered, and the runs' table as the parameters.
func merge(ms []*Model, ins []Input) (*Model, Input) {
	m := ms[0]
	n, events := 0, 0
	for i := range ins {
		n += len(ins[i].RNG)
		events += len(ins[i].Events)
	}
	words := len(m.Params)
	// The run of each LP, two to a word (the device reads them as 32-bit words, and both
	// the host and the GPU are little-endian), then each run's record.
	params := make([]uint64, (n+1)/2, (n+1)/2+len(ins)*(words+2))
	in := Input{State: make([]uint64, 0, n*m.StateWords), Seq: make([]uint64, 0, n), Events: make([]Event, 0, events),
		End: ins[0].End}
	first := 0
	for r := range ins {
		x := &ins[r]
		k := len(x.RNG)
		for lp := first; lp < first+k; lp++ {
			params[lp/2] |= uint64(r) << (32 * (lp % 2))
		}
		params = append(append(params, uint64(first), uint64(k)), ms[r].Params...)
		in.State = append(in.State, x.State...)
		in.RNG = append(in.RNG, x.RNG...)
		in.Seq = append(in.Seq, x.Seq...)
		for _, e := range x.Events {
			e.To += uint32(first)
			e.Sender += uint32(first)
			in.Events = append(in.Events, e)
		}
		first += k
	}
	merged := *m
	merged.Params, merged.several, merged.runParams = params, true, words
	return &merged, in
}

// split returns each run's part of out, the result of the runs' merged loop.
func split(m *Model, ins []Input, out *Result) []Result {
	res := make([]Result, len(ins))
	first := 0
	for r := range ins {
		k := len(ins[r].RNG)
		x := Result{
			State: slices.Clone(out.State[first*m.StateWords : (first+k)*m.StateWords]),
			RNG:   slices.Clone(out.RNG[first : first+k]),
			Seq:   slices.Clone(out.Seq[first : first+k]),
			// The loop's, which every run shared.
			LoopSeconds: out.LoopSeconds, Iterations: out.Iterations, Bound: out.Bound, Executions: out.Executions,
			Inactivity: out.Inactivity, Device: out.Device,
		}
		c := &out.perLP
		for lp := first; lp < first+k; lp++ {
			x.Processed += c.processed[lp]
			x.RolledBack += c.rolled[lp]
			x.Returned += c.moved[lp]
			x.FinalTime = max(x.FinalTime, c.last[lp])
		}
		res[r] = x
		first += k
	}
	return res
}
