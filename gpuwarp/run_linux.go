//go:build linux

package gpuwarp

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"
	"unsafe"

	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/rng"
)

// runArgs mirrors loop.cu's WtwRun (264 bytes): device addresses, the constants, then
// the state saving area (0 without Model.SaveState).
type runArgs struct {
	head, proc, tail, stail, cancel, want, limit, state, rng, seq, processed, rolled, last, moved, active uint64
	recv, send, depth, sender, sseq, words, draws, mark, nout, outTo, outAt, outWords                     uint64
	params, err                                                                                           uint64
	lps, threshold                                                                                        uint32
	end, bound                                                                                            float64
	saved                                                                                                 uint64
}

// bufArgs mirrors loop.cu's WtwBuf (72 bytes).
type bufArgs struct {
	count, to, recv, send, depth, sender, seq, words uint64
	cap, _                                           uint32
}

var (
	_ [264 - unsafe.Sizeof(runArgs{})]byte
	_ [unsafe.Sizeof(runArgs{}) - 264]byte
	_ [72 - unsafe.Sizeof(bufArgs{})]byte
	_ [unsafe.Sizeof(bufArgs{}) - 72]byte
)

const (
	infBits    = 0x7ff0000000000000
	checkEvery = 32 // iterations of a chunk, between two reads of the counters
	errEvents  = 1
	errAntis   = 2
)

// device is a run's device memory.
type device struct {
	res  *gpuoffload.Resident
	run  runArgs
	ev   [2]bufArgs
	anti [2]bufArgs
	gvt  uint64    // two words
	gw   [2]uint64 // their addresses, as kernel arguments
	pass [maxPasses]uint32
	// The device copies of run, ev and anti, which the kernels read (their addresses are
	// the kernels' arguments); run's is written again when the tuner changes a setting.
	runDev         uint64
	evDev, antiDev [2]uint64
	graphs         map[int]*gpuoffload.Graph // checkEvery iterations for each pass count
}

// alloc allocates n elements of size bytes and, when src is not nil, uploads them.
func (d *device) alloc(n, size int, src unsafe.Pointer) (uint64, error) {
	p, err := d.res.Alloc(n * size)
	if err != nil {
		return 0, err
	}
	if src != nil {
		err = d.res.Upload(p, src, n*size)
	}
	return p, err
}

// fill allocates n copies of v (4 or 8 bytes), set on the device where v is zero or a
// 32-bit word (no host copy to make and upload).
func fill[T uint32 | uint64 | float64](d *device, n int, v T) (uint64, error) {
	size := int(unsafe.Sizeof(v))
	if v == 0 || size == 4 {
		p, err := d.alloc(n, size, nil)
		if err == nil {
			err = d.res.Fill32(p, *(*uint32)(unsafe.Pointer(&v)), n*size/4)
		}
		return p, err
	}
	s := make([]T, n)
	for i := range s {
		s[i] = v
	}
	return d.alloc(n, size, unsafe.Pointer(&s[0]))
}

func ptr[T any](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

// Run runs the simulation in on device o.Device with model m's device code and returns
// every LP's final state. Cancelling ctx stops it with ctx's error.
func Run(ctx context.Context, m *Model, in Input, o Options) (Result, error) {
	n := len(in.RNG)
	o = o.withDefaults(m, n, &in)
	if err := validate(m, &in, &o); err != nil {
		return Result{}, err
	}
	var phases []phase // with Options.Profile: the host's steps and their times
	mark := func(name string, since time.Time) { phases = append(phases, phase{name, time.Since(since)}) }
	t := time.Now()
	res, err := gpuoffload.OpenResident(o.Device)
	if err != nil {
		return Result{}, fmt.Errorf("gpuwarp: the device loop needs a CUDA device (--simulation-type time-warp or "+
			"sequential run without one): %w", err)
	}
	defer res.Close()
	mark("open the device", t)
	d := &device{res: res}
	t = time.Now()
	if err := res.Compile(m.Name+"-gpuwarp.cu", source(m, &o), kernelNames...); err != nil {
		return Result{}, fmt.Errorf("gpuwarp: model %s: %w", m.Name, err)
	}
	mark("compile (or load from the cache)", t)
	t = time.Now()
	if err := d.setup(m, &in, &o); err != nil {
		return Result{}, fmt.Errorf("gpuwarp: model %s on %s: %w", m.Name, res.Name(), err)
	}
	mark("allocate, set and upload", t)
	t = time.Now()
	out, err := d.loop(ctx, m, &in, &o)
	if err != nil {
		return Result{}, err
	}
	mark("loop and download", t)
	if o.Profile != nil {
		for _, p := range phases {
			fmt.Fprintf(o.Profile, "host: %-34s %8.1f ms\n", p.name, float64(p.d.Microseconds())/1000)
		}
	}
	out.Device = res.Name()
	return out, nil
}

// phase is a host step of Run and its time (Options.Profile).
type phase struct {
	name string
	d    time.Duration
}

// setup allocates the device memory once and uploads the initial states and events.
func (d *device) setup(m *Model, in *Input, o *Options) error {
	n, c := len(in.RNG), o.Slots
	slots := n * c
	r := &d.run
	var err error
	u32 := func(k int) uint64 {
		if err != nil {
			return 0
		}
		var p uint64
		p, err = fill(d, k, uint32(0))
		return p
	}
	u64 := func(k int, v uint64) uint64 {
		if err != nil {
			return 0
		}
		var p uint64
		p, err = fill(d, k, v)
		return p
	}
	f64 := func(k int) uint64 {
		if err != nil {
			return 0
		}
		var p uint64
		p, err = fill(d, k, float64(0))
		return p
	}
	up := func(k, size int, src unsafe.Pointer) uint64 {
		if err != nil {
			return 0
		}
		var p uint64
		p, err = d.alloc(k, size, src)
		return p
	}
	// The initial events, sorted into their receivers' lists by the first iteration: they
	// start in transit.
	r.head, r.proc, r.tail, r.stail, r.cancel = u32(n), u32(n), u32(n), u32(n), u32(n)
	r.want, r.limit = u64(n, infBits), u64(n, infBits)
	state := in.State
	if m.StateWords == 0 {
		state = make([]uint64, n)
	}
	r.state = up(len(state), 8, ptr(state))
	g := make([]uint32, 6*n)
	for i, x := range in.RNG {
		g[6*i], g[6*i+1], g[6*i+2], g[6*i+3], g[6*i+4], g[6*i+5] = x.D, x.V[0], x.V[1], x.V[2], x.V[3], x.V[4]
	}
	r.rng = up(len(g), 4, ptr(g))
	r.seq = up(n, 8, ptr(in.Seq))
	r.processed, r.rolled, r.last, r.moved, r.active = u64(n, 0), u64(n, 0), f64(n), u64(n, 0), u32(maxPasses)
	r.recv, r.send, r.depth, r.sender, r.sseq = f64(slots), f64(slots), u32(slots), u32(slots), u64(slots, 0)
	if m.Words {
		r.words = u64(4*slots, 0)
	}
	r.draws, r.mark, r.nout = u32(slots), u32(slots), u32(slots)
	r.outTo, r.outAt = u32(slots*m.OutSlots), f64(slots*m.OutSlots)
	if m.Words {
		r.outWords = u64(4*slots*m.OutSlots, 0)
	}
	params := m.Params // uploaded as they are (they may hold large tables)
	if len(params) == 0 {
		params = []uint64{0} // never empty
	}
	r.params = up(len(params), 8, ptr(params))
	r.err = u32(liveWords) // loop.cu's WtwLive: the error bits first
	r.lps, r.end, r.bound = uint32(n), in.End, o.Bound
	d.gvt = u64(2, infBits)
	if err != nil {
		return err
	}
	if m.SaveState {
		if r.saved, err = d.alloc(slots*max(m.StateWords, 1), 8, nil); err != nil {
			return fmt.Errorf("state saving (%d LPs x %d slots x %d state words): %w; lower --gpu-slots",
				n, c, m.StateWords, err)
		}
	}
	capacity := o.Buffer
	if len(in.Events) > capacity {
		return fmt.Errorf("%d initial events do not fit in --gpu-buffer %d; raise it", len(in.Events), capacity)
	}
	for i := range d.ev {
		d.ev[i], err = d.buffer(capacity, m.Words)
		if err != nil {
			return err
		}
		d.anti[i], err = d.buffer(capacity, m.Words)
		if err != nil {
			return err
		}
	}
	if err := d.upload(in.Events, &d.ev[0], m.Words); err != nil {
		return err
	}
	for i := range d.ev {
		if d.evDev[i], err = d.alloc(1, int(unsafe.Sizeof(d.ev[i])), unsafe.Pointer(&d.ev[i])); err != nil {
			return err
		}
		if d.antiDev[i], err = d.alloc(1, int(unsafe.Sizeof(d.anti[i])), unsafe.Pointer(&d.anti[i])); err != nil {
			return err
		}
	}
	d.runDev, err = d.alloc(1, int(unsafe.Sizeof(d.run)), unsafe.Pointer(&d.run))
	return err
}

// buffer allocates a buffer of capacity entries.
func (d *device) buffer(capacity int, words bool) (bufArgs, error) {
	b := bufArgs{cap: uint32(capacity)}
	var err error
	for _, f := range []struct {
		p    *uint64
		size int
	}{{&b.count, 4}, {&b.to, 4}, {&b.recv, 8}, {&b.send, 8}, {&b.depth, 4}, {&b.sender, 4}, {&b.seq, 8}} {
		k := capacity
		if f.p == &b.count {
			k = 1
		}
		if *f.p, err = d.alloc(k, f.size, nil); err == nil {
			err = d.res.Fill32(*f.p, 0, k*f.size/4)
		}
		if err != nil {
			return b, err
		}
	}
	if words {
		b.words, err = d.alloc(4*capacity, 8, nil)
	}
	return b, err
}

// upload writes the initial events into b.
func (d *device) upload(evs []Event, b *bufArgs, words bool) error {
	k := len(evs)
	if k == 0 {
		return nil
	}
	to, depth, sender := make([]uint32, k), make([]uint32, k), make([]uint32, k)
	recv, send, seq := make([]float64, k), make([]float64, k), make([]uint64, k)
	var w []uint64
	if words {
		w = make([]uint64, 4*k)
	}
	for i, e := range evs {
		to[i], recv[i], send[i], depth[i], sender[i], seq[i] = e.To, e.Recv, e.Send, e.Depth, e.Sender, e.Seq
		if words {
			copy(w[4*i:], e.Words[:])
		}
	}
	count := uint32(k)
	for _, c := range []struct {
		p    uint64
		src  unsafe.Pointer
		size int
	}{{b.count, unsafe.Pointer(&count), 4}, {b.to, ptr(to), 4 * k}, {b.recv, ptr(recv), 8 * k},
		{b.send, ptr(send), 8 * k}, {b.depth, ptr(depth), 4 * k}, {b.sender, ptr(sender), 4 * k},
		{b.seq, ptr(seq), 8 * k}, {b.words, ptr(w), 8 * len(w)}} {
		if err := d.res.Upload(c.p, c.src, c.size); err != nil {
			return err
		}
	}
	return nil
}

// program returns the launches of one iteration that reads events in transit from
// buffer ev (the other is the carry), anti-messages from buffer anti, and computes GVT
// into word w (the other, next, is reset for the iteration after). Iterations alternate
// between two programs: ev and w flip each iteration, and anti flips CancelRounds times.
func (d *device) program(n, transit, passes int, o *Options, ev, anti, w int) []gpuoffload.Call {
	// Every argument is a device address (of the run's and the buffers' descriptions, and
	// of the GVT words) or a constant, so a captured graph replays them unchanged.
	run, gw, next := unsafe.Pointer(&d.runDev), unsafe.Pointer(&d.gw[w]), unsafe.Pointer(&d.gw[1-w])
	evs, carry := unsafe.Pointer(&d.evDev[ev]), unsafe.Pointer(&d.evDev[1-ev])
	calls := []gpuoffload.Call{
		{Kernel: "wtw_gvt", Threads: max(n, 1024), Args: []unsafe.Pointer{run, evs, unsafe.Pointer(&d.antiDev[anti]), gw}},
		{Kernel: "wtw_step", Threads: n, Args: []unsafe.Pointer{run, evs, gw, next}},
	}
	for k := 1; k < passes; k++ {
		d.pass[k] = uint32(k)
		calls = append(calls, gpuoffload.Call{Kernel: "wtw_execute", Threads: n,
			Args: []unsafe.Pointer{run, evs, gw, unsafe.Pointer(&d.pass[k])}})
	}
	calls = append(calls,
		gpuoffload.Call{Kernel: "wtw_deliver", Threads: transit, Args: []unsafe.Pointer{run, evs, carry}},
		gpuoffload.Call{Kernel: "wtw_sort", Threads: n, Args: []unsafe.Pointer{run, evs, carry, unsafe.Pointer(&d.antiDev[anti])}})
	for range o.CancelRounds {
		a, b := unsafe.Pointer(&d.antiDev[anti]), unsafe.Pointer(&d.antiDev[1-anti])
		calls = append(calls,
			gpuoffload.Call{Kernel: "wtw_cancel", Threads: transit, Args: []unsafe.Pointer{run, a, b}},
			gpuoffload.Call{Kernel: "wtw_annul", Threads: n, Args: []unsafe.Pointer{run, a, b}})
		anti = 1 - anti
	}
	return calls
}

// loop runs iterations until GVT reaches the end, then downloads the results. It keeps
// o.queue chunks in flight and reads the counters of each as it finishes (pipe.go).
func (d *device) loop(ctx context.Context, m *Model, in *Input, o *Options) (Result, error) {
	n := len(in.RNG)
	// Threads for the kernels that walk the buffers in transit (a grid-stride loop): a
	// grid's worth of a large GPU, fewer for few LPs.
	transit := min(o.Buffer, max(min(n, 1<<18), 1<<14))
	d.gw = [2]uint64{d.gvt, d.gvt + 8}
	flip := o.CancelRounds % 2 // whether the anti-message buffers swap roles each iteration
	tune := newTuner(o, in)
	p, err := newPipe(d.res, o.queue)
	if err != nil {
		return Result{}, err
	}
	// A chunk is checkEvery iterations (even: the two programs alternate), launched as one
	// graph where the driver has graphs, else call by call.
	var chunk []gpuoffload.Call
	var graph *gpuoffload.Graph
	var set chunkSettings
	d.graphs = map[int]*gpuoffload.Graph{}
	build := func() error {
		bound, passes, th := tune.settings()
		set = chunkSettings{bound: bound, passes: passes, inactivity: th, gen: set.gen + 1}
		d.run.bound, d.run.threshold = bound, uint32(math.Ceil(th*float64(n)))
		p0, p1 := d.program(n, transit, passes, o, 0, 0, 0), d.program(n, transit, passes, o, 1, flip, 1)
		chunk = chunk[:0]
		for range checkEvery / 2 {
			chunk = append(append(chunk, p0...), p1...)
		}
		if !d.res.Graphs() {
			return nil
		}
		if graph = d.graphs[passes]; graph == nil {
			var err error
			if graph, err = d.res.Capture(chunk); err != nil {
				return err
			}
			d.graphs[passes] = graph
		}
		return nil
	}
	if err := build(); err != nil {
		return Result{}, err
	}
	if err := d.res.Upload(d.runDev, unsafe.Pointer(&d.run), int(unsafe.Sizeof(d.run))); err != nil {
		return Result{}, err
	}
	var prof *profile
	if o.Profile != nil {
		prof = &profile{}
		defer prof.write(o.Profile)
	}
	staged := false // the settings changed: upload them before the next chunk
	launch := func(k int) error {
		if staged {
			if err := p.stage(k, &d.run, d.runDev); err != nil {
				return err
			}
			staged = false
		}
		var err error
		switch {
		case prof != nil:
			err = prof.run(d.res, chunk)
		case graph != nil:
			err = d.res.Replay(graph)
		default:
			err = d.res.LaunchAll(chunk)
		}
		if err != nil {
			return err
		}
		return p.finish(k, n, d.runDev, set)
	}
	start := time.Now()
	for k := range o.queue {
		if err := launch(k); err != nil {
			return Result{}, err
		}
	}
	lastGVT, stuck := -1.0, 0
	var last tally
	for k := 0; ; k++ {
		t, ran, err := p.wait(k)
		if err != nil {
			return Result{}, err
		}
		if err := t.check(o); err != nil {
			return Result{}, err
		}
		c := t.counters(time.Since(start), ran)
		if o.Progress != nil {
			o.Progress(min(c.GVT, in.End))
		}
		if o.Observe != nil {
			o.Observe(c)
		}
		if c.Done {
			last = t
			break
		}
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		if c.GVT == lastGVT {
			if stuck += checkEvery; stuck >= o.StallIterations {
				return Result{}, fmt.Errorf("%w at %v for %d iterations: an LP's list of %d slots is full of events it cannot commit yet; raise --gpu-slots",
					ErrStalled, c.GVT, stuck, o.Slots)
			}
		} else {
			lastGVT, stuck = c.GVT, 0
		}
		// The tuner judges settings by the chunks that ran with them: those launched
		// before a change ran with the old ones.
		if ran.gen == set.gen && tune.next(c.GVT) {
			if err := build(); err != nil {
				return Result{}, err
			}
			staged = true
			tune.resume()
		}
		if err := launch(k + o.queue); err != nil {
			return Result{}, err
		}
	}
	loop := time.Since(start)
	if err := d.res.Launch("wtw_finish", n, unsafe.Pointer(&d.runDev)); err != nil {
		return Result{}, err
	}
	out, err := d.results(m, n, int(last.iterations))
	out.Bound, out.Executions, out.Inactivity = set.bound, set.passes, set.inactivity
	out.LoopSeconds = loop.Seconds()
	return out, err
}

// results downloads the final states and the counters.
func (d *device) results(m *Model, n, iterations int) (Result, error) {
	out := Result{State: make([]uint64, n*m.StateWords), RNG: make([]rng.XORWOW, n), Seq: make([]uint64, n),
		Iterations: iterations}
	g := make([]uint32, 6*n)
	processed, rolled, last, moved := make([]uint64, n), make([]uint64, n), make([]float64, n), make([]uint64, n)
	for _, c := range []struct {
		dst  unsafe.Pointer
		src  uint64
		size int
	}{{ptr(out.State), d.run.state, 8 * len(out.State)}, {ptr(g), d.run.rng, 4 * len(g)},
		{ptr(out.Seq), d.run.seq, 8 * n}, {ptr(processed), d.run.processed, 8 * n},
		{ptr(rolled), d.run.rolled, 8 * n}, {ptr(last), d.run.last, 8 * n}, {ptr(moved), d.run.moved, 8 * n}} {
		if err := d.res.Download(c.dst, c.src, c.size); err != nil {
			return Result{}, err
		}
	}
	for i := range out.RNG {
		out.RNG[i] = rng.XORWOW{D: g[6*i], V: [5]uint32{g[6*i+1], g[6*i+2], g[6*i+3], g[6*i+4], g[6*i+5]}}
		out.Processed += processed[i]
		out.RolledBack += rolled[i]
		out.FinalTime = max(out.FinalTime, last[i])
		out.Returned += moved[i]
	}
	out.perLP = lpCounters{processed: processed, rolled: rolled, moved: moved, last: last}
	return out, nil
}

// profile times each kernel of the loop, waiting for each launch (Options.Profile).
type profile struct {
	names []string
	calls map[string]int
	total map[string]time.Duration
}

// run launches calls one at a time, waiting for each, and adds up their times.
func (p *profile) run(res *gpuoffload.Resident, calls []gpuoffload.Call) error {
	if p.calls == nil {
		p.calls, p.total = map[string]int{}, map[string]time.Duration{}
	}
	for _, c := range calls {
		t := time.Now()
		if err := res.LaunchAll([]gpuoffload.Call{c}); err != nil {
			return err
		}
		if err := res.Sync(); err != nil {
			return err
		}
		if p.calls[c.Kernel] == 0 {
			p.names = append(p.names, c.Kernel)
		}
		p.calls[c.Kernel]++
		p.total[c.Kernel] += time.Since(t)
	}
	return nil
}

// write prints the kernels' launches, total time and time per launch.
func (p *profile) write(w io.Writer) {
	fmt.Fprintf(w, "%-12s %8s %10s %10s\n", "kernel", "launches", "total ms", "us/launch")
	for _, k := range p.names {
		fmt.Fprintf(w, "%-12s %8d %10.1f %10.1f\n", k, p.calls[k], float64(p.total[k].Microseconds())/1000,
			float64(p.total[k].Microseconds())/float64(p.calls[k]))
	}
}
