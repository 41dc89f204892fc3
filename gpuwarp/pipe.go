//go:build linux

package gpuwarp

import (
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/warpedgo/warped/gpuoffload"
)

// The host's side of the counters: chunks launched ahead, and the counters of each read
// once it has run.
//
// Chunk k is its iterations, then wtw_tally into device block k%2, a copy of that block
// into slot k%queue of pinned host memory, and a record of event k%queue. The host keeps
// queue chunks in flight: it waits for chunk k's event (the chunks after it go on), reads
// its slot, and launches chunk k+queue into the same slot, which no chunk in flight uses.
// New settings are staged in that slot too and uploaded before the chunk's iterations,
// so the host never waits for the stream to drain to change them.

// tally mirrors loop.cu's WtwTally (64 bytes).
type tally struct {
	err, done                                  uint32
	gvt, iterations                            uint64
	processed, rolled, moved, pending, history uint64
}

// slot is one chunk's pinned host memory: the counters copied after it, and the run's
// description staged for an upload before it.
type slot struct {
	tally tally
	run   runArgs
}

var (
	_ [64 - unsafe.Sizeof(tally{})]byte
	_ [unsafe.Sizeof(tally{}) - 64]byte
)

// liveWords is the size of loop.cu's WtwLive in 32-bit words (WtwRun.err points at it).
const liveWords = 6

// chunkSettings are the settings a chunk was launched with, and their generation (each
// change of the settings is a new one).
type chunkSettings struct {
	bound      float64
	passes     int
	inactivity float64
	gen        int
}

// pipe is a run's chunks in flight and their counters.
type pipe struct {
	res    *gpuoffload.Resident
	slots  []slot
	events []*gpuoffload.Event
	dev    [2]uint64 // the device's tally blocks
	sets   []chunkSettings
}

// newPipe allocates the pinned slots, events and device blocks of queue chunks in flight.
func newPipe(res *gpuoffload.Resident, queue int) (*pipe, error) {
	p := &pipe{res: res, sets: make([]chunkSettings, queue)}
	host, err := res.AllocHost(queue * int(unsafe.Sizeof(slot{})))
	if err != nil {
		return nil, err
	}
	p.slots = unsafe.Slice((*slot)(host), queue)
	for range queue {
		e, err := res.NewEvent()
		if err != nil {
			return nil, err
		}
		p.events = append(p.events, e)
	}
	size := int(unsafe.Sizeof(tally{}))
	for i := range p.dev {
		if p.dev[i], err = res.Alloc(size); err != nil {
			return nil, err
		}
		if err := res.Fill32(p.dev[i], 0, size/4); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// stage uploads run, asynchronously, to the device copy at dst before chunk k.
func (p *pipe) stage(k int, run *runArgs, dst uint64) error {
	s := &p.slots[k%len(p.slots)]
	s.run = *run
	return p.res.UploadAsync(dst, unsafe.Pointer(&s.run), int(unsafe.Sizeof(s.run)))
}

// finish queues chunk k's tail after its iterations, launched with set: the tally over
// n LPs of the run described at runDev, its copy to the chunk's slot, and its event.
func (p *pipe) finish(k, n int, runDev uint64, set chunkSettings) error {
	i := k % len(p.slots)
	p.sets[i] = set
	out, next := p.dev[k%2], p.dev[(k+1)%2]
	if err := p.res.Launch("wtw_tally", n, unsafe.Pointer(&runDev), unsafe.Pointer(&out), unsafe.Pointer(&next)); err != nil {
		return err
	}
	s := &p.slots[i]
	if err := p.res.DownloadAsync(unsafe.Pointer(&s.tally), out, int(unsafe.Sizeof(s.tally))); err != nil {
		return err
	}
	return p.res.Record(p.events[i])
}

// wait waits for chunk k to have run and returns its counters and settings.
func (p *pipe) wait(k int) (tally, chunkSettings, error) {
	i := k % len(p.slots)
	if err := p.res.Wait(p.events[i]); err != nil {
		return tally{}, chunkSettings{}, err
	}
	return p.slots[i].tally, p.sets[i], nil
}

// counters are t, read elapsed after the loop's start, with the settings of its chunk.
func (t *tally) counters(elapsed time.Duration, set chunkSettings) Counters {
	return Counters{Elapsed: elapsed, GVT: math.Float64frombits(t.gvt), Iterations: t.iterations,
		Processed: t.processed, RolledBack: t.rolled, Returned: t.moved, Pending: t.pending, History: t.history,
		Bound: set.bound, Executions: set.passes, Inactivity: set.inactivity, Done: t.done != 0 && t.err == 0}
}

// check turns the device's error bits into an error naming what to raise.
func (t *tally) check(o *Options) error {
	switch {
	case t.err&errEvents != 0:
		return fmt.Errorf("gpuwarp: more than %d events in transit; raise --gpu-buffer", o.Buffer)
	case t.err&errAntis != 0:
		return fmt.Errorf("gpuwarp: more than %d anti-messages in transit; raise --gpu-buffer", o.Buffer)
	}
	return nil
}
