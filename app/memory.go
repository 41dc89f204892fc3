package app

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"github.com/warpedgo/warped/internal/meminfo"
	"github.com/warpedgo/warped/kernel"
	"golang.org/x/sys/unix"
)

// What a run needs in memory, by the sizes of its model, as measured at peak resident
// size (sequential and time warp alike, before any event is processed: the LPs and the
// initial events): PHOLD with 10^6 LPs 430 MiB, 10^6 initial events 300 MiB; PCS and
// traffic 170-190 bytes per initial event; a random logic circuit 250-320 bytes per
// gate. The estimate leans high: it is to refuse what cannot fit, not to plan.
//
// A time-warp worker costs bytesPerWorker more, once its schedule queue holds an event (a
// slab of the calendar's event records, beside the worker's own state): measured with
// PHOLD's 16384 LPs and --max-sim-time 0.001, 203 and 707 MiB with 1000 and 4000 workers
// against 31 MiB with one, 172 and 169 KiB a worker. A worker without LPs costs about 9
// KiB, and the run keeps no more workers than LPs (fitWorkers).
const (
	bytesPerLP     = 512
	bytesPerEvent  = 320
	bytesPerWorker = 192 << 10
	bytesBase      = 32 << 20
)

// need is what a run needs in memory, about, in bytes: the whole, and its workers' part.
type need struct{ total, workers float64 }

// memoryNeed returns what model m with the flags of fs needs, or a total of 0 when it has
// more LPs than any model takes (it says so itself, more clearly). A model that does not
// say its sizes counts only for its workers.
func memoryNeed(m *Model, fs *pflag.FlagSet) need {
	lps, events := 0.0, 0.0
	if m.Size != nil {
		lps, events = m.Size(func(name string) float64 { return flagNumber(fs, name) })
		if lps > 1<<31 {
			return need{}
		}
	}
	var workers float64
	if f := fs.Lookup("simulation-type"); f != nil && f.Value.String() == kernel.TimeWarp {
		workers = flagNumber(fs, "time-warp-worker-threads")
		if m.Size != nil {
			workers = min(workers, max(lps, 1)) // fitWorkers keeps no more
		}
	}
	w := bytesPerWorker * workers
	return need{total: bytesBase + bytesPerLP*lps + bytesPerEvent*events + w, workers: w}
}

// memoryLimit is the memory a process may have here, and what sets it.
type memoryLimit struct {
	bytes uint64
	what  string // "this machine has", "the address-space limit (ulimit -v) is", ...
}

func (l memoryLimit) String() string { return l.what + " " + formatBytes(float64(l.bytes)) }

// machineMemory returns the least of the machine's memory, the cgroup's limit and the
// address-space limit (bytes 0: none known).
func machineMemory() memoryLimit {
	var l memoryLimit
	take := func(b uint64, what string) {
		if b > 0 && (l.bytes == 0 || b < l.bytes) {
			l = memoryLimit{b, what}
		}
	}
	take(meminfo.Bytes("MemTotal:"), "this machine has")
	if data, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if b, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64); err == nil {
			take(b, "this process's cgroup allows")
		}
	}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_AS, &rl) == nil && rl.Cur != unix.RLIM_INFINITY {
		// What is left of it beside Go's runtime, which reserves address space that the
		// sizes do not count (a small run's peak is 1.4 GiB on Linux/amd64, much of it
		// reserved and never touched, and reused as the heap grows): without it the run
		// would die in the runtime's own "out of memory", a stack dump, where this check
		// said it fits. Measured with PHOLD of 250,000, 500,000 and 1,000,000 LPs (231,
		// 429 and 826 MiB by the sizes): each died so below about 1.5 GiB beside its
		// sizes and ran above it.
		reserve := min(meminfo.Virtual(), runtimeAddressSpace)
		left := uint64(1) // nothing left: every size is over
		if reserve < rl.Cur {
			left = rl.Cur - reserve
		}
		take(left, fmt.Sprintf("the address-space limit (ulimit -v %s) leaves, beside the %s Go's runtime reserves,",
			formatBytes(float64(rl.Cur)), formatBytes(float64(reserve))))
	}
	return l
}

// runtimeAddressSpace is the most address space that machineMemory sets aside for Go's
// runtime under an address-space limit (ulimit -v): what it reserves beside the heap.
const runtimeAddressSpace = 3 << 29 // 1.5 GiB

// formatBytes writes b in MiB, GiB or TiB.
func formatBytes(b float64) string {
	unit, x := "MiB", b/(1<<20)
	switch {
	case b >= 1<<40:
		unit, x = "TiB", b/(1<<40)
	case b >= 1<<30:
		unit, x = "GiB", b/(1<<30)
	}
	if x >= 100 {
		return fmt.Sprintf("%.0f %s", x, unit)
	}
	return fmt.Sprintf("%.3g %s", x, unit)
}

// sizeFlags names the flags of m that set its sizes, as they were given, for messages; a
// number at 0 adds nothing to the need and is left out (the logic model's --random-gates 0
// beside its --circuit).
func sizeFlags(m *Model, fs *pflag.FlagSet) string {
	var parts []string
	for _, name := range m.SizeFlags {
		if f := fs.Lookup(name); f != nil && (f.Value.String() != "0" || f.Value.Type() == "string") {
			parts = append(parts, "--"+name+" "+f.Value.String())
		}
	}
	return strings.Join(parts, " ")
}

// checkMemory refuses, before the model is built, a configuration that needs more memory
// than the process may have.
func checkMemory(m *Model, fs *pflag.FlagSet) error {
	return checkMemoryAgainst(m, fs, machineMemory())
}

// maxMemoryIs is memoryLimit.what for a limit that --max-memory sets.
const maxMemoryIs = "--max-memory is"

// runLimit is the memory a run may have: the machine's (machineMemory), or a smaller
// --max-memory given on the command line, which the run would otherwise reach while its
// model is being built, before the memory watcher starts.
func runLimit(mm *maxMemory) memoryLimit {
	l := machineMemory()
	if mm.set && mm.bytes > 0 && (l.bytes == 0 || mm.bytes < l.bytes) {
		l = memoryLimit{mm.bytes, maxMemoryIs}
	}
	return l
}

// checkMemoryAgainst is checkMemory with the limit given. The time-warp workers are named
// where fewer of them would help: where the run would fit with one, or where they take a
// tenth of the need or more.
func checkMemoryAgainst(m *Model, fs *pflag.FlagSet, limit memoryLimit) error {
	n := memoryNeed(m, fs)
	over := n.total
	if limit.what == maxMemoryIs {
		// Against --max-memory, the sizes alone: the memory watcher stops a run that passes
		// it, so this refuses only what passes it while the model is built, before the
		// watcher starts, and not a small run for the runtime's own share (bytesBase).
		over -= bytesBase
	}
	if n.total == 0 || limit.bytes == 0 || over <= float64(limit.bytes) {
		return nil
	}
	flags, what := sizeFlags(m, fs), "give smaller sizes"
	workers := "--time-warp-worker-threads " + fs.Lookup("time-warp-worker-threads").Value.String()
	switch {
	case n.workers == 0:
	case n.total-n.workers+bytesPerWorker <= float64(limit.bytes):
		flags, what = strings.TrimSpace(flags+" "+workers), "give fewer workers"
	case n.workers >= n.total/10:
		flags, what = strings.TrimSpace(flags+" "+workers), "give smaller sizes or fewer workers"
	}
	need := formatBytes(n.total)
	if limit.what == maxMemoryIs {
		what += ", or a higher --max-memory"
		need = formatBytes(over) + " for its sizes" // the figure compared, the runtime's own share apart
	}
	return usageFailure("%s needs about %s; %s: %s", flags, need, limit, what)
}

// maxMemory is --max-memory: a size in bytes, with an optional unit (KiB, MiB, GiB, TiB,
// or K, M, G, T, all powers of 1024), or "auto"; 0 means no limit.
type maxMemory struct {
	set   bool
	bytes uint64
}

func (m *maxMemory) String() string {
	if !m.set {
		return "auto"
	}
	return strconv.FormatUint(m.bytes, 10)
}

func (m *maxMemory) Type() string { return "size" }

func (m *maxMemory) Set(s string) error {
	if strings.EqualFold(s, "auto") {
		*m = maxMemory{}
		return nil
	}
	b, err := parseBytes(s)
	if err != nil {
		return err
	}
	*m = maxMemory{set: true, bytes: b}
	return nil
}

// parseBytes parses a size such as 1.5GiB, 512M or 1073741824.
func parseBytes(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"TIB", 40}, {"GIB", 30}, {"MIB", 20}, {"KIB", 10}, {"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}, {"B", 0}} {
		if strings.HasSuffix(strings.ToUpper(t), u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), float64(uint64(1)<<u.shift)
			break
		}
	}
	x, err := strconv.ParseFloat(t, 64)
	if err != nil || !(x >= 0) || math.IsInf(x, 0) || x*mult >= 1<<63 {
		return 0, fmt.Errorf("want a size such as 4GiB, 512MiB or 0 (no limit), got %q", s)
	}
	if x > 0 && x*mult < 1 {
		// 0.5 without its unit is half a byte, which would round to 0: no limit at all.
		return 0, fmt.Errorf("want a size such as 4GiB, 512MiB or 0 (no limit), got %q: a fraction needs its unit (0.5GiB)", s)
	}
	return uint64(x * mult), nil
}

// limit returns the memory limit of the run in bytes (0: none): --max-memory, else
// GOMEMLIMIT when set, else nine tenths of what the process may have.
func (m *maxMemory) limit() uint64 {
	if m.set {
		return m.bytes
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
			return uint64(l)
		}
	}
	return machineMemory().bytes / 10 * 9
}

// memoryExceeded is the cause of a run that the memory watcher stopped.
type memoryExceeded struct{ used, limit uint64 }

func (e *memoryExceeded) Error() string {
	return fmt.Sprintf("stopped: the run's memory reached %s, over its limit of %s (--max-memory); give smaller sizes, a shorter --time-warp-optimism-window, or a higher --max-memory",
		formatBytes(float64(e.used)), formatBytes(float64(e.limit)))
}

// watchMemory returns a context that ends, with a *memoryExceeded cause, once the
// process's memory exceeds limit bytes, and a function that stops watching. Before that,
// pressure is set while the memory is above pressureAt of the limit (and cleared below
// pressureOff of it), so that a time-warp run narrows its optimism first
// (kernel.Config.MemoryPressure); the garbage collector is told the limit too, so that it
// works harder before the watcher stops the run. A limit of 0 watches nothing.
func watchMemory(ctx context.Context, limit uint64, pressure *atomic.Bool) (context.Context, func()) {
	if limit == 0 {
		return ctx, func() {}
	}
	old := debug.SetMemoryLimit(int64(min(limit, math.MaxInt64)))
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			metrics.Read(samples)
			used := samples[0].Value.Uint64() - samples[1].Value.Uint64()
			pressure.Store(underPressure(used, limit, pressure.Load()))
			if used > limit {
				cancel(&memoryExceeded{used: used, limit: limit})
				return
			}
		}
	}()
	return ctx, func() {
		close(done)
		cancel(nil)
		debug.SetMemoryLimit(old)
	}
}

// The memory watcher's pressure band: set above pressureAt of the limit, cleared below
// pressureOff of it (a band, so that the engine's windows do not flap at one level).
const (
	pressureAt  = 0.8
	pressureOff = 0.7
)

// underPressure reports whether memory use used, against limit, is pressure, given
// whether it was at the last look.
func underPressure(used, limit uint64, was bool) bool {
	share := float64(used) / float64(limit)
	if was {
		return share >= pressureOff
	}
	return share > pressureAt
}

// stopCause returns why ctx ended when a signal, the memory watcher or an output that
// could not be written (outputFailed) ended it, else nil.
func stopCause(ctx context.Context) error {
	cause := context.Cause(ctx)
	var i *interruption
	var m *memoryExceeded
	var o *outputFailed
	if errors.As(cause, &i) || errors.As(cause, &m) || errors.As(cause, &o) {
		return cause
	}
	return nil
}
