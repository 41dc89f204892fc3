// Package gpuwarp is the whole time warp on a GPU: the simulation loop of a model whose
// events all have a device handler and a device reverse handler runs in graphics memory,
// following Liu and Andelfinger's "Time Warp on the GPU" design. The host uploads the
// initial events and states, launches a fixed sequence of kernels per iteration without
// waiting on them, reads small counters of the device asynchronously, and downloads the
// final states.
//
// An iteration (kernels/loop.cu has the details):
//
//  1. GVT by an atomic minimum over every LP's earliest pending event and every event and
//     anti-message in transit;
//  2. fossil collection below GVT, then each LP handles its earliest pending event when it
//     lies within the optimism bound (GVT + Bound) and before the end; up to Executions
//     such passes, each after the first only while the one before kept the Inactivity
//     share of the LPs busy (the device decides);
//  3. sent events are appended to their receivers' lists with atomics, then each LP sorts
//     what arrived by the kernel's event key and rolls back past a straggler: the model's
//     reverse handler and XORWOW reversal undo each event, and anti-messages go out;
//  4. anti-message rounds: each marks its positive; each LP rolls back past a marked
//     processed event and removes the marked ones.
//
// A model without a reverse handler sets Model.SaveState: each handling then first copies
// its LP's state words into the event's slot, and a rollback copies back the copy of the
// earliest event it undoes (the generator is rewound by its draws as for any model). It
// costs Slots x StateWords words per LP and a copy per handling, compiled in only for
// such models (WTW_SAVE in loop.cu).
//
// The host launches 32 iterations at a time as one CUDA graph (a chunk), each followed by
// wtw_tally, which sums the LPs' counters into a small block that is copied to pinned host
// memory, and an event. It keeps two chunks queued behind the one it waits for, reads the
// counters of each chunk once its event has passed, reports progress and samples from
// them (Options.Progress, Options.Observe), checks for the end, an error or a stall, and
// tunes the bound, the passes and the threshold from GVT's rate (tune.go); new settings
// are uploaded asynchronously before the next chunk it launches. The device never waits
// for the host. Once an iteration finds GVT at the end (or an error), every kernel returns
// at once, so the chunks launched past the end change nothing (pipe.go).
//
// Every LP has a list of Slots event slots allocated once. An event that finds its
// receiver's list full stays in transit; the receiver then rolls back and puts back in
// transit every event later than it, and admits nothing later until it has room, so a run
// never gives a wrong result for want of room: it finishes, or stops with an error naming
// the option to raise.
//
// Results are identical to the sequential dispatcher's: every LP handles the same events
// in the same key order (receive time, send time, depth, sender, sequence), so its final
// state and generator are the same.
//
// On a machine without a GPU the CUDA stand-in (package gpuoffload/standin) runs the same
// kernels on the host, thread after thread, which is how the tests check the loop.
package gpuwarp

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/rng"
)

//go:embed kernels/loop.cu
var loopSource string

// Model is a model's device code: the handler and reverse handler of its events.
type Model struct {
	// Name names the model in messages and in the compiled source's file name.
	Name string
	// Source is CUDA text defining wtw_handle and, unless SaveState, wtw_reverse (see
	// kernels/loop.cu for their signatures). It is compiled after gpuoffload.Header, so it
	// has XORWOW and package rng's portable arithmetic.
	Source string
	// SaveState says the loop saves each LP's state before every handling and restores it
	// on rollback instead of calling wtw_reverse, for models whose handlings cannot be
	// undone from the state and the event alone. It needs Slots x StateWords more words per
	// LP (StateBytes).
	SaveState bool
	// StateWords is the number of 64-bit state words per LP.
	StateWords int
	// OutSlots is the most events one handling sends.
	OutSlots int
	// Words says whether events carry payload words (four per event); without, they are
	// neither stored nor copied.
	Words bool
	// Params are constants the handlers read (params[i]), read-only tables included (a
	// model lays out its tables after its constants and keeps their offsets among them):
	// they are uploaded once and never change.
	Params []uint64

	// several marks a model of several runs merged by RunMany: Params are then their
	// table (kernels/runs.cu), runParams words of each run's own.
	several   bool
	runParams int
}

// Event is an event in the kernel's key order terms.
type Event struct {
	To     uint32
	Recv   float64
	Send   float64
	Depth  uint32
	Sender uint32
	Seq    uint64
	Words  [4]uint64
}

// Input is the simulation at its start: every LP's state, generator and next send
// sequence number, and the events its Init sent.
type Input struct {
	// State holds Model.StateWords words per LP.
	State []uint64
	// RNG holds each LP's generator.
	RNG []rng.XORWOW
	// Seq holds each LP's next send sequence number.
	Seq []uint64
	// Events are the initial events.
	Events []Event
	// End is the end time: events at End or later are not handled.
	End float64
}

// Options tune the device loop; zero fields take the defaults.
type Options struct {
	// Device is the CUDA device's number (0 is the first).
	Device int
	// Slots is each LP's event list capacity, a power of two (default 32).
	Slots int
	// Bound is the optimism bound: an LP handles an event at most Bound after GVT. 0
	// means tuned at run time (see Tune); +Inf is unbounded.
	Bound float64
	// Executions is the most handling passes an iteration makes, in [1, 16]; 0 means tuned
	// at run time. A pass after the first runs only while the one before it kept at least
	// Inactivity of the LPs busy.
	Executions int
	// Inactivity is the inactivity threshold, a share of the LPs in (0, 1); 0 means tuned.
	Inactivity float64
	// CancelRounds is how many anti-message rounds an iteration makes (default 1; the
	// anti-messages a round leaves wait for the next iteration's).
	CancelRounds int
	// Buffer is the capacity for events in transit (default: enough for every LP to send
	// OutSlots events in each of 8 passes, plus twice the initial events).
	Buffer int
	// StallIterations is how many iterations GVT may stay put before the run stops with
	// ErrStalled (default 65536).
	StallIterations int
	// Profile, if set, receives each kernel's launches and time at the end; the loop then
	// waits for every launch (slower), to time it.
	Profile io.Writer
	// Progress, if set, is called with GVT (at most End) each time the host reads it.
	Progress func(gvt float64)
	// Observe, if set, is called with the device's counters each time the host reads
	// them (after each chunk of iterations), the last time with Counters.Done set, from
	// Run's goroutine.
	Observe func(Counters)
	// queue is how many chunks the host keeps launched and not yet read, the one it
	// waits for included (0: defaultQueue); tests set it (export_test.go).
	queue int
}

// defaultQueue is the chunks a run keeps in flight: the one the host waits for and two
// more, so that the device has work queued while the host reads counters, tunes and
// launches the next chunk.
const defaultQueue = 3

// Counters are the device loop's counters as the host reads them: copied to pinned host
// memory at the end of each chunk of iterations, and read once the chunk has run while
// the chunks after it run (Options.Observe).
type Counters struct {
	// Elapsed is the wall time from the loop's first launch to the host's read.
	Elapsed time.Duration
	// GVT is the chunk's last iteration's GVT (+Inf: nothing left to handle).
	GVT float64
	// Iterations counts the iterations run.
	Iterations uint64
	// Processed, RolledBack and Returned are the run's totals so far (Result's).
	Processed, RolledBack, Returned uint64
	// Pending counts the events in the LPs' lists not handled yet, and History those
	// handled and not yet committed (events in transit are in neither).
	Pending, History uint64
	// Bound, Executions and Inactivity are the settings the chunk ran with.
	Bound      float64
	Executions int
	Inactivity float64
	// Done marks the counters of the run's end (GVT reached End): their totals and
	// iterations are the Result's.
	Done bool
}

// Result is the simulation at its end, and what the device loop did.
type Result struct {
	// State, RNG and Seq are every LP's final state, generator and next sequence number.
	State []uint64
	RNG   []rng.XORWOW
	Seq   []uint64
	// Processed counts handlings, rolled back ones included; RolledBack those undone.
	Processed, RolledBack uint64
	// Returned counts events a full list put back in transit to make room.
	Returned uint64
	// FinalTime is the receive time of the last event handled.
	FinalTime float64
	// LoopSeconds is the wall time of the iterations alone: from the first launch to the
	// host's read of the counters that show the end, without compiling, allocating, copying the
	// initial and final states and the host's Init.
	LoopSeconds float64
	// Iterations is how many iterations the loop ran, the one that found GVT at the end
	// included.
	Iterations int
	// Bound, Executions and Inactivity are the optimism bound, the most passes per
	// iteration and the inactivity threshold at the end (tuned ones where the options left
	// them 0).
	Bound      float64
	Executions int
	Inactivity float64
	// Device names the device.
	Device string

	// perLP are each LP's counters, which RunMany splits by run.
	perLP lpCounters
}

// lpCounters are the device's counters of each LP.
type lpCounters struct {
	processed, rolled, moved []uint64
	last                     []float64
}

// Committed is the number of events committed: handled and not rolled back.
func (r *Result) Committed() uint64 { return r.Processed - r.RolledBack }

// maxPasses is the most execution passes an iteration makes (loop.cu's WTW_MAX_PASSES).
const maxPasses = 16

// ErrStalled is returned when GVT stops advancing: every LP's list is full of events at
// one time, so no event can be committed to make room. More Slots fix it.
var ErrStalled = errors.New("gpuwarp: GVT stopped advancing")

// withDefaults fills o's zero fields for n LPs and events initial events of m.
func (o Options) withDefaults(m *Model, n int, in *Input) Options {
	events := len(in.Events)
	if o.Slots == 0 {
		o.Slots = defaultSlots(n, in)
	}
	if o.CancelRounds == 0 {
		o.CancelRounds = 1
	}
	if o.queue <= 0 {
		o.queue = defaultQueue
	}
	if o.StallIterations == 0 {
		o.StallIterations = 1 << 16
	}
	if o.Buffer == 0 {
		o.Buffer = n*m.OutSlots*max(o.Executions, 8) + 2*events + 1024
	}
	return o
}

// defaultSlots sizes the lists from the initial events: twice the most one LP starts
// with (room for as many processed and not yet committed), rounded up to a power of two,
// at least 32 and at most 4096. A PCS cell starts with its portables' events (50), which
// 32 slots could not hold without putting events back in transit all the time.
func defaultSlots(n int, in *Input) int {
	per := make([]int32, n)
	most := 0
	for _, e := range in.Events {
		if int(e.To) < n { // validate reports the others
			per[e.To]++
			most = max(most, int(per[e.To]))
		}
	}
	s := 32
	for s < 2*most && s < 4096 {
		s *= 2
	}
	return s
}

// CheckOptions reports the first option out of its range, naming its command-line flag;
// zero fields (the defaults) are in range. Run checks them too; a command checks them
// first, to refuse bad flags before it builds the model.
func CheckOptions(o Options) error {
	switch {
	case o.Slots != 0 && (o.Slots < 4 || o.Slots&(o.Slots-1) != 0 || o.Slots > 1<<16):
		return fmt.Errorf("--gpu-slots must be a power of two in [4, 65536] (0: sized from the initial events), got %d", o.Slots)
	case !(o.Bound >= 0):
		return fmt.Errorf("--gpu-bound must be >= 0 (0: tuned; inf: unbounded), got %v", o.Bound)
	case o.Executions < 0 || o.Executions > maxPasses:
		return fmt.Errorf("--gpu-executions must be in [0, %d] (0: tuned), got %d", maxPasses, o.Executions)
	case !(o.Inactivity >= 0 && o.Inactivity < 1):
		return fmt.Errorf("--gpu-inactivity must be a share of the LPs in [0, 1) (0: tuned), got %v", o.Inactivity)
	case o.CancelRounds < 0 || o.CancelRounds > 64:
		return fmt.Errorf("anti-message rounds must be in [0, 64] (0: 1), got %d", o.CancelRounds)
	case o.Buffer < 0 || o.Buffer >= math.MaxUint32/2:
		return fmt.Errorf("--gpu-buffer must be in [0, %d] (0: sized from the LPs), got %d", math.MaxUint32/2-1, o.Buffer)
	case o.Device < 0:
		return fmt.Errorf("--gpu-device must be >= 0, got %d", o.Device)
	}
	return nil
}

// validate reports the first thing wrong with m, in and o (defaults filled).
func validate(m *Model, in *Input, o *Options) error {
	n := len(in.RNG)
	switch {
	case m == nil || m.Source == "":
		return errors.New("gpuwarp: the model has no device source")
	case m.StateWords < 0 || m.OutSlots < 1 || m.OutSlots > 64:
		return fmt.Errorf("gpuwarp: model %s: StateWords must be >= 0 and OutSlots in [1, 64], got %d and %d",
			m.Name, m.StateWords, m.OutSlots)
	case n == 0 || n >= math.MaxUint32:
		return fmt.Errorf("gpuwarp: need between 1 and %d LPs, got %d", uint32(math.MaxUint32-1), n)
	case len(in.State) != n*m.StateWords || len(in.Seq) != n:
		return fmt.Errorf("gpuwarp: %d LPs need %d state words and %d sequence numbers, got %d and %d",
			n, n*m.StateWords, n, len(in.State), len(in.Seq))
	case !(in.End > 0):
		return fmt.Errorf("gpuwarp: the end time must be positive, got %v", in.End)
	case o.Buffer < m.OutSlots:
		return fmt.Errorf("gpuwarp: --gpu-buffer must be at least model %s's %d events of one handling, got %d", m.Name, m.OutSlots, o.Buffer)
	}
	if err := CheckOptions(*o); err != nil {
		return fmt.Errorf("gpuwarp: %w", err)
	}
	for i := range in.Events {
		e := &in.Events[i]
		if int(e.To) >= n || int(e.Sender) >= n {
			return fmt.Errorf("gpuwarp: initial event %d goes from LP %d to LP %d, but there are %d LPs", i, e.Sender, e.To, n)
		}
		if !(e.Recv >= 0) || math.IsInf(e.Recv, 0) {
			return fmt.Errorf("gpuwarp: initial event %d has receive time %v; want a finite time >= 0", i, e.Recv)
		}
	}
	return nil
}

// StateBytes is the device memory that state saving takes for lps LPs with lists of
// slots slots (0 unless m.SaveState): a copy of an LP's state per slot.
func (m *Model) StateBytes(lps, slots int) int64 {
	if !m.SaveState {
		return 0
	}
	return int64(lps) * int64(slots) * int64(max(m.StateWords, 1)) * 8
}

// kernelNames are the kernels of kernels/loop.cu, in launch order.
var kernelNames = []string{"wtw_gvt", "wtw_step", "wtw_execute", "wtw_deliver", "wtw_sort", "wtw_cancel", "wtw_annul", "wtw_finish", "wtw_tally"}

// Source returns what a run of model m with options o compiles (with several set, a loop
// of several runs of m, as RunMany's): the CUDA text, its name, and the kernels it must
// define. Of o only Slots counts (0: 32, the least a run sizes). With it a machine without
// a GPU can compile a model's device code as a GPU run does (gpuoffload.CompilePTX),
// which the CUDA stand-in, building the same text as host C++, cannot stand for.
func Source(m *Model, o Options, several bool) (name, src string, kernels []string) {
	if o.Slots == 0 {
		o.Slots = 32
	}
	mm := *m
	if several {
		mm.several, mm.runParams = true, len(m.Params)
	}
	return m.Name + "-gpuwarp.cu", source(&mm, &o), slices.Clone(kernelNames)
}

// source is the complete CUDA text compiled for m with o: the header, the run's constants,
// the model's handlers and the loop.
func source(m *Model, o *Options) string {
	words, save := 0, 0
	if m.Words {
		words = 1
	}
	if m.SaveState {
		save = 1
	}
	return gpuoffload.Header() +
		"\n#define WTW_STATE " + strconv.Itoa(max(m.StateWords, 1)) +
		"\n#define WTW_OUT " + strconv.Itoa(m.OutSlots) +
		"\n#define WTW_WORDS " + strconv.Itoa(words) +
		"\n#define WTW_SAVE " + strconv.Itoa(save) +
		"\n#define WTW_CAP " + strconv.Itoa(o.Slots) + "u" +
		"\n#line 1 \"" + m.Name + ".cu\"\n" + m.Source + runsSource(m) +
		"\n#line 1 \"loop.cu\"\n" + loopSource + "\n"
}
