package logic

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
)

// GateKind is the kind of a signal's driver.
type GateKind uint8

// The gate kinds. Input is a primary input, driven by the input vectors.
const (
	Input GateKind = iota
	And
	Or
	Nand
	Nor
	Xor
	Xnor
	Not
	Buf
	DFF
)

var kindNames = [...]string{"INPUT", "AND", "OR", "NAND", "NOR", "XOR", "XNOR", "NOT", "BUF", "DFF"}

// String returns the kind's .bench name.
func (k GateKind) String() string { return kindNames[k] }

// MaxFanIn is the most inputs a gate may have.
const MaxFanIn = 64

// pinRef is one fanout: the gate that reads a signal, and at which of its inputs.
type pinRef struct {
	gate uint32
	pin  uint32
}

// Circuit is a gate-level circuit: one signal per primary input and gate, in definition
// order; each is one LP of the model.
type Circuit struct {
	// names are the signal names; nil means "G<index>".
	names []string
	kinds []GateKind
	// fanIn is the number of inputs of each gate.
	fanIn []uint8
	// fanout lists: signal i drives fan[fanOff[i]:fanOff[i+1]].
	fan    []pinRef
	fanOff []uint32
	// inputs and outputs are the primary inputs and outputs, in declaration order.
	inputs, outputs []uint32
	// value and pins are the settled state with every input and flip-flop at 0.
	value []uint8
	pins  []uint64
}

// Len returns the number of signals (LPs).
func (c *Circuit) Len() int { return len(c.kinds) }

// Inputs returns the number of primary inputs.
func (c *Circuit) Inputs() int { return len(c.inputs) }

// Outputs returns the number of primary outputs.
func (c *Circuit) Outputs() int { return len(c.outputs) }

// Gates returns the number of gates (signals that are not primary inputs).
func (c *Circuit) Gates() int { return len(c.kinds) - len(c.inputs) }

// name returns signal i's name.
func (c *Circuit) name(i uint32) string {
	if c.names == nil {
		return fmt.Sprintf("G%d", i)
	}
	return c.names[i]
}

// OutputName returns the name of primary output j.
func (c *Circuit) OutputName(j int) string { return c.name(c.outputs[j]) }

// builder collects a circuit's definitions.
type builder struct {
	c     Circuit
	index map[string]uint32
	args  [][]string // each gate's input names, resolved in finish
	outs  []string
}

// newBuilder returns an empty builder.
func newBuilder() *builder { return &builder{index: map[string]uint32{}} }

// define adds signal name, driven by a gate of kind k reading args (none for an input).
func (b *builder) define(name string, k GateKind, args []string) error {
	if _, dup := b.index[name]; dup {
		return fmt.Errorf("signal %q is defined twice", name)
	}
	if len(args) > MaxFanIn {
		return fmt.Errorf("gate %q has %d inputs; at most %d are supported", name, len(args), MaxFanIn)
	}
	switch {
	case k == Input && len(args) != 0:
		return fmt.Errorf("input %q has inputs", name)
	case (k == Not || k == Buf || k == DFF) && len(args) != 1:
		return fmt.Errorf("%s gate %q must have exactly 1 input, got %d", k, name, len(args))
	case k != Input && len(args) == 0:
		return fmt.Errorf("%s gate %q has no inputs", k, name)
	}
	b.index[name] = uint32(len(b.c.kinds))
	b.c.names = append(b.c.names, name)
	b.c.kinds = append(b.c.kinds, k)
	b.c.fanIn = append(b.c.fanIn, uint8(len(args)))
	b.args = append(b.args, args)
	if k == Input {
		b.c.inputs = append(b.c.inputs, uint32(len(b.c.kinds)-1))
	}
	return nil
}

// finish resolves the names, builds the fanout lists and settles the initial state.
func (b *builder) finish() (*Circuit, error) {
	c := &b.c
	if len(c.inputs) == 0 {
		return nil, fmt.Errorf("the circuit has no INPUT")
	}
	if len(b.outs) == 0 {
		return nil, fmt.Errorf("the circuit has no OUTPUT")
	}
	for _, o := range b.outs {
		i, ok := b.index[o]
		if !ok {
			return nil, fmt.Errorf("OUTPUT(%s) names an undefined signal", o)
		}
		c.outputs = append(c.outputs, i)
	}
	n := len(c.kinds)
	src := make([][]uint32, n)
	deg := make([]uint32, n+1)
	for g, args := range b.args {
		src[g] = make([]uint32, len(args))
		for p, a := range args {
			i, ok := b.index[a]
			if !ok {
				return nil, fmt.Errorf("gate %q reads undefined signal %q", c.names[g], a)
			}
			src[g][p] = i
			deg[i+1]++
		}
	}
	b.args = nil
	return c, c.link(src, deg)
}

// link builds the fanout lists from each gate's sources (deg[i+1] is signal i's fanout
// count) and settles the initial values.
func (c *Circuit) link(src [][]uint32, deg []uint32) error {
	n := len(c.kinds)
	c.fanOff = make([]uint32, n+1)
	for i := 1; i <= n; i++ {
		c.fanOff[i] = c.fanOff[i-1] + deg[i]
	}
	c.fan = make([]pinRef, c.fanOff[n])
	fill := append([]uint32(nil), c.fanOff[:n]...)
	for g := range n {
		for p, s := range src[g] {
			c.fan[fill[s]] = pinRef{gate: uint32(g), pin: uint32(p)}
			fill[s]++
		}
	}
	return c.settle(src)
}

// settle computes every signal's value with all primary inputs and flip-flops at 0, in
// topological order of the combinational gates; a loop without a flip-flop is an error.
func (c *Circuit) settle(src [][]uint32) error {
	n := len(c.kinds)
	c.value = make([]uint8, n)
	c.pins = make([]uint64, n)
	waiting := make([]uint32, n) // combinational inputs not yet known
	var ready []uint32
	for g := range n {
		if c.kinds[g] == Input || c.kinds[g] == DFF {
			ready = append(ready, uint32(g))
			continue
		}
		waiting[g] = uint32(len(src[g]))
	}
	done := 0
	for len(ready) > 0 {
		s := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		done++
		if k := c.kinds[s]; k != Input && k != DFF {
			c.value[s] = eval(k, c.pins[s], c.fanIn[s])
		}
		for _, f := range c.fan[c.fanOff[s]:c.fanOff[s+1]] {
			if c.value[s] == 1 {
				c.pins[f.gate] |= 1 << f.pin
			}
			if k := c.kinds[f.gate]; k != Input && k != DFF {
				if waiting[f.gate]--; waiting[f.gate] == 0 {
					ready = append(ready, f.gate)
				}
			}
		}
	}
	if done != n {
		for g := range n {
			if waiting[g] > 0 {
				return fmt.Errorf("the circuit has a combinational loop through gate %q; break it with a DFF", c.name(uint32(g)))
			}
		}
	}
	return nil
}

// eval returns the output of a gate of kind k whose inputs are the low n bits of pins.
func eval(k GateKind, pins uint64, n uint8) uint8 {
	full := uint64(1)<<n - 1
	if n == 64 {
		full = ^uint64(0)
	}
	var v bool
	switch k {
	case And:
		v = pins == full
	case Nand:
		v = pins != full
	case Or:
		v = pins != 0
	case Nor:
		v = pins == 0
	case Xor:
		v = popOdd(pins)
	case Xnor:
		v = !popOdd(pins)
	case Not:
		v = pins&1 == 0
	case Buf, DFF:
		v = pins&1 == 1
	}
	if v {
		return 1
	}
	return 0
}

// popOdd reports whether x has an odd number of one bits.
func popOdd(x uint64) bool {
	x ^= x >> 32
	x ^= x >> 16
	x ^= x >> 8
	x ^= x >> 4
	x ^= x >> 2
	x ^= x >> 1
	return x&1 == 1
}

// ParseBench reads a circuit in the ISCAS .bench format: INPUT(name), OUTPUT(name) and
// name = KIND(a, b, ...) lines, with KIND one of AND, OR, NAND, NOR, XOR, XNOR, NOT, BUF
// (or BUFF) and DFF; # starts a comment. Errors name the source and the line.
func ParseBench(r io.Reader, source string) (*Circuit, error) {
	b := newBuilder()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	fail := func(format string, a ...any) error {
		msg := fmt.Sprintf(format, a...)
		if len(msg) > 160 { // a binary file's "line" would fill the screen
			msg = msg[:160] + "... (is it a .bench file?)"
		}
		return fmt.Errorf("%s line %d: %s", source, line, msg)
	}
	for sc.Scan() {
		line++
		s := sc.Text()
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		name, rhs, isGate := strings.Cut(s, "=")
		if !isGate {
			rhs = s
		}
		open, close := strings.IndexByte(rhs, '('), strings.LastIndexByte(rhs, ')')
		if open < 0 || close < open || strings.TrimSpace(rhs[close+1:]) != "" {
			return nil, fail("want INPUT(x), OUTPUT(x) or x = KIND(a, b, ...), got %q", s)
		}
		kw := strings.ToUpper(strings.TrimSpace(rhs[:open]))
		var args []string
		if a := strings.TrimSpace(rhs[open+1 : close]); a != "" {
			for _, f := range strings.Split(a, ",") {
				f = strings.TrimSpace(f)
				if f == "" {
					return nil, fail("empty signal name in %q", s)
				}
				args = append(args, f)
			}
		}
		if !isGate {
			if len(args) != 1 {
				return nil, fail("%s takes one signal name, got %q", kw, s)
			}
			switch kw {
			case "INPUT":
				if err := b.define(args[0], Input, nil); err != nil {
					return nil, fail("%v", err)
				}
			case "OUTPUT":
				b.outs = append(b.outs, args[0])
			default:
				return nil, fail("unknown declaration %q (want INPUT or OUTPUT)", kw)
			}
			continue
		}
		k, ok := kindOf(kw)
		if !ok {
			return nil, fail("unknown gate kind %q (want AND, OR, NAND, NOR, XOR, XNOR, NOT, BUF or DFF)", kw)
		}
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, fail("gate without a name in %q", s)
		}
		if err := b.define(name, k, args); err != nil {
			return nil, fail("%v", err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	c, err := b.finish()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return c, nil
}

// kindOf returns the gate kind of a .bench keyword (upper case).
func kindOf(kw string) (GateKind, bool) {
	if kw == "BUFF" {
		return Buf, true
	}
	for k, n := range kindNames {
		if n == kw && GateKind(k) != Input {
			return GateKind(k), true
		}
	}
	return 0, false
}

// FullAdderBench is a one-bit full adder: inputs A, B, CIN; outputs S, COUT.
const FullAdderBench = `# full adder
INPUT(A)
INPUT(B)
INPUT(CIN)
OUTPUT(S)
OUTPUT(COUT)
X1 = XOR(A, B)
S = XOR(X1, CIN)
C1 = AND(A, B)
C2 = AND(X1, CIN)
COUT = OR(C1, C2)
`

// benchWriter writes .bench text with fresh internal names.
type benchWriter struct {
	strings.Builder
	n int
}

// gate writes a gate of the given kind with a fresh name and returns the name.
func (w *benchWriter) gate(kind string, args ...string) string {
	w.n++
	name := fmt.Sprintf("N%d", w.n)
	w.named(name, kind, args...)
	return name
}

// named writes a gate called name.
func (w *benchWriter) named(name, kind string, args ...string) {
	fmt.Fprintf(w, "%s = %s(%s)\n", name, kind, strings.Join(args, ", "))
}

// add returns the sum and carry of x, y and, if not empty, carry.
func (w *benchWriter) add(x, y, carry string) (sum, cout string) {
	if carry == "" {
		return w.gate("XOR", x, y), w.gate("AND", x, y)
	}
	t := w.gate("XOR", x, y)
	sum = w.gate("XOR", t, carry)
	cout = w.gate("OR", w.gate("AND", x, y), w.gate("AND", t, carry))
	return sum, cout
}

// AdderBench returns an n-bit ripple-carry adder: inputs A0..A(n-1), B0..B(n-1); outputs
// S0..Sn (Sn the carry out), so that the outputs, S0 the least significant bit, are A + B.
func AdderBench(n int) string {
	var w benchWriter
	fmt.Fprintf(&w, "# %d-bit ripple-carry adder\n", n)
	for _, p := range []string{"A", "B"} {
		for i := range n {
			fmt.Fprintf(&w, "INPUT(%s%d)\n", p, i)
		}
	}
	for i := range n + 1 {
		fmt.Fprintf(&w, "OUTPUT(S%d)\n", i)
	}
	carry := ""
	for i := range n {
		s, c := w.add(fmt.Sprint("A", i), fmt.Sprint("B", i), carry)
		w.named(fmt.Sprint("S", i), "BUF", s)
		carry = c
	}
	w.named(fmt.Sprint("S", n), "BUF", carry)
	return w.String()
}

// MultiplierBench returns an n-bit by n-bit array multiplier (n >= 2): inputs A0..A(n-1),
// B0..B(n-1); outputs P0..P(2n-1), the product, P0 the least significant bit.
func MultiplierBench(n int) string {
	var w benchWriter
	fmt.Fprintf(&w, "# %d x %d-bit array multiplier\n", n, n)
	for _, p := range []string{"A", "B"} {
		for i := range n {
			fmt.Fprintf(&w, "INPUT(%s%d)\n", p, i)
		}
	}
	for i := range 2 * n {
		fmt.Fprintf(&w, "OUTPUT(P%d)\n", i)
	}
	acc := make([]string, 2*n)
	for i := range n {
		acc[i] = w.gate("AND", fmt.Sprint("A", i), "B0")
	}
	for j := 1; j < n; j++ {
		carry := ""
		for i := range n {
			x := w.gate("AND", fmt.Sprint("A", i), fmt.Sprint("B", j))
			y := acc[i+j]
			switch {
			case y == "" && carry == "":
				acc[i+j] = x
			case y == "":
				acc[i+j], carry = w.add(x, carry, "")
			case carry == "":
				acc[i+j], carry = w.add(x, y, "")
			default:
				acc[i+j], carry = w.add(x, y, carry)
			}
		}
		acc[n+j] = carry
	}
	for i := range 2 * n {
		w.named(fmt.Sprint("P", i), "BUF", acc[i])
	}
	return w.String()
}

// RandomDepth is the number of gate levels of a random circuit.
const RandomDepth = 32

// Random returns a random combinational circuit of about the given number of gates (AND,
// OR, NAND, NOR, XOR, XNOR with 2 to 4 inputs, NOT and BUF), drawn from seed. The gates
// stand in RandomDepth levels of equal width W (the number of gates is rounded up to a
// multiple of the depth; circuits of fewer gates have one gate per level), and the W
// primary inputs form level 0. The gate at position p of level l reads signals of level
// l-1 at positions within 8 of p, so that every path from the inputs to a gate has the same
// length (no glitches beyond those of simultaneous changes) and neighbouring positions are
// connected. Signals are numbered position by position (index p*(RandomDepth+1) + l), so
// that contiguous blocks of LPs are a good partition. The gates of the last level, and any
// signal that drives nothing, are the primary outputs. Names are G<index>.
func Random(gates int, seed uint64) (*Circuit, error) {
	if gates < 1 || gates > 1<<30 {
		return nil, fmt.Errorf("--random-gates must be in [1, %d], got %d", 1<<30, gates)
	}
	r := rand.New(rand.NewPCG(seed, 0xc1c))
	depth := min(RandomDepth, gates)
	width := (gates + depth - 1) / depth
	levels := depth + 1
	n := width * levels
	id := func(p, l int) uint32 { return uint32(p*levels + l) }
	c := &Circuit{kinds: make([]GateKind, n), fanIn: make([]uint8, n)}
	src := make([][]uint32, n)
	deg := make([]uint32, n+1)
	all := make([]uint32, 0, 4*width*depth)
	for p := range width {
		c.inputs = append(c.inputs, id(p, 0))
	}
	multi := [...]GateKind{And, Or, Nand, Nor, Xor, Xnor}
	for p := range width {
		for l := 1; l < levels; l++ {
			g := id(p, l)
			k, fan := Not, 1
			switch x := r.IntN(10); {
			case x == 0:
				k = Buf
			case x == 1:
				k = Not
			default:
				k, fan = multi[r.IntN(len(multi))], 2+r.IntN(3)
			}
			lo, hi := max(0, p-8), min(width-1, p+8)
			start := len(all)
			for range fan {
				s := id(lo+r.IntN(hi-lo+1), l-1)
				all = append(all, s)
				deg[s+1]++
			}
			src[g] = all[start:len(all):len(all)]
			c.kinds[g], c.fanIn[g] = k, uint8(fan)
		}
	}
	for p := range width {
		for l := range levels {
			if s := id(p, l); l == depth || deg[s+1] == 0 {
				c.outputs = append(c.outputs, s)
			}
		}
	}
	return c, c.link(src, deg)
}
