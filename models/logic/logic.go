// Package logic is gate-level logic simulation, as in the parallel-heap work on many-core
// Time Warp: every primary input and every gate of a circuit is an LP (AND, OR, NAND, NOR,
// XOR, XNOR, NOT, BUF with any fan-in up to 64, and clocked D flip-flops), and a change of
// a gate's output reaches the gates it drives after the gate delay.
//
// Circuits come in the ISCAS .bench format (ParseBench; --circuit FILE), from the circuits
// this package ships (full-adder, adder-N: an N-bit ripple-carry adder, multiplier-N: an
// N x N-bit array multiplier; see FullAdderBench, AdderBench, MultiplierBench), or from a
// generator of random circuits of any size (Random; --random-gates N). Before the run every
// signal is settled with all inputs and flip-flops at 0.
//
// Events: Signal (an input pin of a gate changes, and the gate schedules an Evaluate at the
// same time, which sorts after every Signal of that time), Evaluate (the gate re-evaluates,
// and when its output changes, it counts a transition and sends Signal to every gate it
// drives, GateDelay later; simultaneous input changes thus cause one evaluation, not a
// glitch per input, which would multiply level by level) and Tick (a primary input takes its next input vector, every VectorPeriod from
// time 0; a flip-flop copies its D input to its output, every ClockPeriod). Input vectors
// are given (Vectors: bit strings, one character per primary input in declaration order)
// or random (NumVectors vectors of random bits drawn by each input's generator).
//
// The results are the transitions of every signal and of each primary output, and the
// final output vector (Results.Value: output j is bit j), which the tests check against
// arithmetic: the adder adds, the multiplier multiplies.
//
// Gates implement kernel.Reverser: a Signal toggles an input pin (a gate sends only
// changes, so in committed order the pin held the other value; a toggle, unlike setting
// the value, is undone exactly even when a straggler has not arrived yet), and Reverse
// toggles it back; an Evaluate that changed the value draws once from the generator (the
// draw is otherwise unused), so that Reverse knows by kernel.Context.DrawsMade whether to
// flip the value back; a Tick carries the value its LP had when the Tick was scheduled,
// which is the value before it (only Ticks change inputs and flip-flops). Gates declare
// their delay as lookahead.
package logic

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/warpedgo/warped/internal/infile"
	"github.com/warpedgo/warped/kernel"
)

// Config holds the parameters.
type Config struct {
	// Circuit is a built-in circuit (full-adder, adder-N, multiplier-N) or the path of a
	// .bench file; ignored when RandomGates is set.
	Circuit string `json:"circuit"`
	// RandomGates, when positive, generates a random circuit of that many gates from
	// CircuitSeed instead.
	RandomGates int    `json:"random-gates"`
	CircuitSeed uint64 `json:"circuit-seed"`
	// GateDelay is every gate's delay.
	GateDelay int `json:"gate-delay"`
	// VectorPeriod is the time between input vectors, and ClockPeriod between flip-flop
	// clock edges.
	VectorPeriod int `json:"vector-period"`
	ClockPeriod  int `json:"clock-period"`
	// Vectors are the input vectors: comma-separated bit strings, one character per
	// primary input in declaration order. Empty: NumVectors random vectors.
	Vectors    string `json:"vectors"`
	NumVectors int    `json:"num-vectors"`
}

// DefaultConfig returns an 8-bit adder driven by 20 random vectors, 100 time units apart,
// with unit gate delays and a clock period of 50.
func DefaultConfig() Config {
	return Config{Circuit: "adder-8", CircuitSeed: 1, GateDelay: 1, VectorPeriod: 100,
		ClockPeriod: 50, NumVectors: 20}
}

// Validate reports the first bad parameter (the circuit is checked when it is loaded).
func (c Config) Validate() error {
	if err := c.validateTimes(); err != nil {
		return err
	}
	if c.RandomGates == 0 && c.Circuit == "" {
		return fmt.Errorf("logic: give --circuit (a .bench file or full-adder, adder-N, multiplier-N) or --random-gates")
	}
	return nil
}

// validateTimes reports the first bad parameter other than the circuit.
func (c Config) validateTimes() error {
	for _, p := range []struct {
		name   string
		v, min int
	}{
		{"random-gates", c.RandomGates, 0}, {"gate-delay", c.GateDelay, 1},
		{"vector-period", c.VectorPeriod, 1}, {"clock-period", c.ClockPeriod, 1}, {"num-vectors", c.NumVectors, 0},
	} {
		if p.v < p.min {
			return fmt.Errorf("logic: --%s must be at least %d, got %d", p.name, p.min, p.v)
		}
	}
	return nil
}

// Load returns the configured circuit.
func (c Config) Load() (*Circuit, error) {
	if c.RandomGates > 0 {
		circ, err := Random(c.RandomGates, c.CircuitSeed)
		if err != nil {
			return nil, fmt.Errorf("logic: %w", err)
		}
		return circ, nil
	}
	kind, n, err := c.shipped()
	if err != nil {
		return nil, err
	}
	text := ""
	switch kind {
	case "full-adder":
		text = FullAdderBench
	case "adder":
		text = AdderBench(n)
	case "multiplier":
		text = MultiplierBench(n)
	}
	if text != "" {
		circ, err := ParseBench(strings.NewReader(text), c.Circuit)
		if err != nil {
			return nil, fmt.Errorf("logic: %w", err)
		}
		return circ, nil
	}
	f, err := c.openBench()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	circ, err := ParseBench(f, c.Circuit)
	if err != nil {
		return nil, fmt.Errorf("logic: %w", err)
	}
	return circ, nil
}

// openBench opens the .bench file that c.Circuit names (one that is not a shipped
// circuit's name), with the error Load and Signals give where it cannot be read.
func (c Config) openBench() (*os.File, error) {
	f, err := infile.Open(c.Circuit) // a FIFO without a writer: not waited for
	if err == nil {
		// It is read twice (its size, then its gates): a file, not a device or a pipe,
		// which /dev/zero would be read forever as.
		if st, serr := f.Stat(); serr == nil && !st.Mode().IsRegular() {
			f.Close()
			err = fmt.Errorf("%s is not a regular file", c.Circuit)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("logic: --circuit: %w (want a .bench file, full-adder, adder-N or multiplier-N)", err)
	}
	return f, nil
}

// shipped returns the kind of shipped circuit that c.Circuit names (full-adder, adder or
// multiplier) and its size N, or "" for a file.
func (c Config) shipped() (kind string, n int, err error) {
	if c.Circuit == "full-adder" {
		return c.Circuit, 0, nil
	}
	for _, k := range []struct {
		kind string
		min  int
	}{{"adder", 1}, {"multiplier", 2}} {
		s, ok := strings.CutPrefix(c.Circuit, k.kind+"-")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < k.min || n > 4096 {
			return "", 0, fmt.Errorf("logic: --circuit %s: the size must be a number in [%d, 4096]", c.Circuit, k.min)
		}
		return k.kind, n, nil
	}
	return "", 0, nil
}

// Signals returns the number of signals (LPs) of the configured circuit without building
// it, so that a caller can refuse a circuit too large for its memory before building it:
// exact for the shipped and random circuits, and for a .bench file the number of its lines,
// which is at least its signals (each takes a line of its own). The error is the one Load
// would return for a bad size or a file that cannot be read.
func (c Config) Signals() (int, error) {
	if c.RandomGates > 0 {
		if c.RandomGates > 1<<30 {
			_, err := Random(c.RandomGates, c.CircuitSeed) // the range error, before any allocation
			return 0, fmt.Errorf("logic: %w", err)
		}
		depth := min(RandomDepth, c.RandomGates)
		return (c.RandomGates + depth - 1) / depth * (depth + 1), nil // see Random
	}
	kind, n, err := c.shipped()
	switch {
	case err != nil:
		return 0, err
	case kind == "full-adder":
		return 8, nil // 3 inputs, 5 gates
	case kind == "adder":
		// 2n inputs; a half adder (2 gates) for bit 0, a full adder (5) for each other
		// bit, and n+1 output buffers.
		return 8*n - 2, nil
	case kind == "multiplier":
		// 2n inputs, n^2 partial products (AND), 2n output buffers, and the adders of
		// rows 1 to n-1 (MultiplierBench): row 1 a half adder (2 gates) at each end and
		// n-2 full adders (5) between, each later row a half adder and n-1 full adders.
		return 2*n + n*n + 2*n + (4 + 5*(n-2)) + (n-2)*(2+5*(n-1)), nil // 6n^2 - 4n
	}
	f, err := c.openBench()
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lines, buf := 1, make([]byte, 64<<10)
	for {
		k, err := f.Read(buf)
		lines += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return lines, nil
		}
		if err != nil {
			return 0, fmt.Errorf("logic: --circuit: %w", err)
		}
	}
}

// Kind is the kind of a logic event, in the low byte of Words[0].
type Kind uint64

// The event kinds.
const (
	Signal Kind = iota
	Tick
	Evaluate
)

// State is one signal's state.
type State struct {
	// Pins holds the gate's input values, pin p in bit p.
	Pins uint64
	// Value is the signal's value, 0 or 1.
	Value uint64
	// Transitions counts the changes of the value.
	Transitions uint64
}

// model is what the gates of one model share.
type model struct {
	Config
	c *Circuit
	// vectors[j] are the bits of given vector j, by input position; nil: random.
	vectors [][]byte
	// numVectors is the number of vectors applied.
	numVectors uint64
	// inputPos maps a primary input's LP id to its position.
	inputPos map[uint32]uint32
}

// Gate is one signal's LP: a primary input or a gate.
type Gate struct {
	kernel.Plain[State]
	m     *model
	index uint32
}

var (
	_ kernel.Reverser  = (*Gate)(nil)
	_ kernel.Lookahead = (*Gate)(nil)
)

// New loads the configured circuit and returns its LPs, one per signal in definition order.
func New(cfg Config) ([]kernel.LogicalProcess, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := cfg.Load()
	if err != nil {
		return nil, err
	}
	return NewCircuit(c, cfg)
}

// NewCircuit returns the LPs of circuit c with the parameters of cfg (cfg's circuit
// fields are ignored).
func NewCircuit(c *Circuit, cfg Config) ([]kernel.LogicalProcess, error) {
	if err := cfg.validateTimes(); err != nil {
		return nil, err
	}
	m := &model{Config: cfg, c: c, numVectors: uint64(cfg.NumVectors), inputPos: map[uint32]uint32{}}
	for p, i := range c.inputs {
		m.inputPos[i] = uint32(p)
	}
	if cfg.Vectors != "" {
		for j, v := range strings.Split(cfg.Vectors, ",") {
			v = strings.TrimSpace(v)
			if len(v) != len(c.inputs) || strings.Trim(v, "01") != "" {
				return nil, fmt.Errorf("logic: --vectors: vector %d (%q) must be %d bits (0 or 1), one per primary input", j, v, len(c.inputs))
			}
			m.vectors = append(m.vectors, []byte(v))
		}
		m.numVectors = uint64(len(m.vectors))
	}
	if m.numVectors == 0 && !slices.Contains(c.kinds, DFF) {
		return nil, fmt.Errorf("logic: --num-vectors 0 and a circuit without flip-flops: nothing would happen; give --num-vectors 1 or more")
	}
	gates := make([]Gate, c.Len())
	lps := make([]kernel.LogicalProcess, c.Len())
	for i := range gates {
		gates[i] = Gate{m: m, index: uint32(i)}
		gates[i].S = State{Pins: c.pins[i], Value: uint64(c.value[i])}
		lps[i] = &gates[i]
	}
	return lps, nil
}

// Name returns the signal's name.
func (g *Gate) Name() string { return g.m.c.name(g.index) }

// Lookahead returns the gate delay: every Signal comes that much after its cause.
func (g *Gate) Lookahead() kernel.Time { return kernel.Time(g.m.GateDelay) }

// Init schedules the first vector of a primary input and the first clock edge of a
// flip-flop.
func (g *Gate) Init(ctx *kernel.Context) {
	switch g.m.c.kinds[g.index] {
	case Input:
		if g.m.numVectors > 0 {
			ctx.SendWords(ctx.Self(), 0, kernel.Words{uint64(Tick), g.S.Value, 0})
		}
	case DFF:
		ctx.SendWords(ctx.Self(), kernel.Time(g.m.ClockPeriod), kernel.Words{uint64(Tick), g.S.Value})
	}
}

// Handle processes a Signal or a Tick; the body is step.
func (g *Gate) Handle(ctx *kernel.Context, ev *kernel.Event) {
	m := g.m
	changed, next, ok := m.step(&g.S, g.index, ev.Words, ctx.RNG())
	if ok {
		at := ctx.Now()
		switch {
		case Kind(next[0]) == Evaluate:
		case m.c.kinds[g.index] == DFF:
			at += kernel.Time(m.ClockPeriod)
		default:
			at += kernel.Time(m.VectorPeriod)
		}
		ctx.SendWords(ctx.Self(), at, next)
	}
	if !changed {
		return
	}
	at, v := ctx.Now()+kernel.Time(m.GateDelay), g.S.Value
	for _, f := range m.c.fan[m.c.fanOff[g.index]:m.c.fanOff[g.index+1]] {
		ctx.SendWords(kernel.LPID(f.gate), at, kernel.Words{uint64(Signal) | uint64(f.pin)<<8, v})
	}
}

// step is Handle on signal index's state s and generator r: it handles the event with
// words w and reports whether the signal's value changed (then Handle sends it to the
// fanout) and the event to schedule at the LP itself, if any (ok): the next Tick, or an
// Evaluate now after a Signal.
func (m *model) step(s *State, index uint32, w kernel.Words, r *kernel.RNG) (changed bool, next kernel.Words, ok bool) {
	kind := m.c.kinds[index]
	var v uint64
	switch Kind(w[0] & 0xff) {
	case Signal:
		// Toggle the pin: in committed order it holds the other value than w[1] (a gate
		// sends only changes), so this sets it to w[1]; optimistically, a straggler may
		// not have arrived yet, and a toggle keeps Reverse exact all the same.
		s.Pins ^= 1 << (w[0] >> 8)
		if kind == DFF {
			return false, next, false // a flip-flop changes on its clock
		}
		// Evaluate after every Signal of this time: an event sent now sorts after those
		// sent earlier, so the gate sees all its simultaneous input changes at once.
		return false, kernel.Words{uint64(Evaluate)}, true
	case Evaluate:
		v = uint64(eval(kind, s.Pins, m.c.fanIn[index]))
		if v != s.Value {
			r.Next() // marks the change for Reverse (see unstep)
		}
	case Tick:
		if kind == DFF {
			v = s.Pins & 1
			next, ok = kernel.Words{uint64(Tick), v}, true
			break
		}
		j := w[2]
		if m.vectors != nil {
			v = uint64(m.vectors[j][m.inputPos[index]] - '0')
		} else {
			v = r.Range(0, 1)
		}
		if j+1 < m.numVectors {
			next, ok = kernel.Words{uint64(Tick), v, j + 1}, true
		}
	default:
		panic(fmt.Sprintf("logic: unknown event kind %d", w[0]&0xff))
	}
	if v == s.Value {
		return false, next, ok
	}
	s.Value = v
	s.Transitions++
	return true, next, ok
}

// Reverse undoes Handle (kernel.Reverser); the body is unstep.
func (g *Gate) Reverse(ctx *kernel.Context, ev *kernel.Event) {
	g.m.unstep(&g.S, ev.Words, ctx.DrawsMade())
}

// unstep undoes step on a signal's state s for the event with words w, given the number
// of draws step made: an Evaluate that changed the value draws once.
func (m *model) unstep(s *State, w kernel.Words, made uint32) {
	var v uint64
	switch Kind(w[0] & 0xff) {
	case Signal:
		s.Pins ^= 1 << (w[0] >> 8)
		return
	case Evaluate:
		if made == 0 {
			return
		}
		v = s.Value ^ 1
	case Tick:
		v = w[1]
	default:
		panic(fmt.Sprintf("logic: unknown event kind %d", w[0]&0xff))
	}
	if v != s.Value {
		s.Value = v
		s.Transitions--
	}
}

// Results are the model's results.
type Results struct {
	// Gates, Inputs and Outputs describe the circuit.
	Gates, Inputs, Outputs int
	// Transitions counts the value changes of every signal.
	Transitions uint64
	// OutputTransitions are the transitions of each primary output, in declaration order.
	OutputTransitions []uint64
	// OutputValues are the final values of the primary outputs.
	OutputValues []uint8
	// Value is the final output vector as a number: output j is bit j (outputs past the
	// 64th are left out).
	Value uint64
	// Ones counts the outputs that end at 1.
	Ones uint64
}

// Summarize collects the results after a run.
func Summarize(lps []kernel.LogicalProcess) Results {
	if len(lps) == 0 {
		return Results{}
	}
	c := lps[0].(*Gate).m.c
	r := Results{Gates: c.Gates(), Inputs: c.Inputs(), Outputs: c.Outputs()}
	for _, l := range lps {
		r.Transitions += l.(*Gate).S.Transitions
	}
	for j, o := range c.outputs {
		s := &lps[o].(*Gate).S
		r.OutputTransitions = append(r.OutputTransitions, s.Transitions)
		r.OutputValues = append(r.OutputValues, uint8(s.Value))
		r.Ones += s.Value
		if j < 64 {
			r.Value |= s.Value << j
		}
	}
	return r
}

// OutputName returns the name of primary output j of the model whose LPs are lps.
func OutputName(lps []kernel.LogicalProcess, j int) string {
	return lps[0].(*Gate).m.c.OutputName(j)
}
