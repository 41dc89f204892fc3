package logic

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/internal/modeltest"
	"github.com/warpedgo/warped/rng"
)

func parse(t *testing.T, text string) *Circuit {
	t.Helper()
	c, err := ParseBench(strings.NewReader(text), "test.bench")
	require.NoError(t, err)
	return c
}

// settled runs circuit c with the given vectors until nothing is pending and returns the
// results.
func settled(t *testing.T, c *Circuit, vectors ...string) Results {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Vectors = strings.Join(vectors, ",")
	lps, err := NewCircuit(c, cfg)
	require.NoError(t, err)
	s, err := dispatch.New(kernel.Config{MaxSimTime: kernel.Infinity, Seed: 1}, lps)
	require.NoError(t, err)
	_, err = s.Run(context.Background())
	require.NoError(t, err)
	return Summarize(lps)
}

// operands returns the vector of a two-operand circuit with n-bit inputs A and B.
func operands(n int, a, b uint64) string {
	v := make([]byte, 2*n)
	for i := range n {
		v[i] = byte('0' + a>>i&1)
		v[n+i] = byte('0' + b>>i&1)
	}
	return string(v)
}

func TestFullAdderTruthTable(t *testing.T) {
	c := parse(t, FullAdderBench)
	require.Equal(t, 3, c.Inputs())
	require.Equal(t, 2, c.Outputs())
	for x := range uint64(8) {
		v := string([]byte{byte('0' + x&1), byte('0' + x>>1&1), byte('0' + x>>2&1)})
		r := settled(t, c, v)
		require.Equal(t, x&1+x>>1&1+x>>2&1, r.Value, "inputs %s", v)
	}
}

// TestAdderAdds: the ripple-carry adder's final outputs are the sum of the last vector's
// operands, after a sequence of vectors, for random operands.
func TestAdderAdds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{1, 4, 16} {
		c := parse(t, AdderBench(n))
		require.Equal(t, n+1, c.Outputs())
		for range 6 {
			mask := uint64(1)<<n - 1
			a, b := r.Uint64()&mask, r.Uint64()&mask
			res := settled(t, c, operands(n, r.Uint64()&mask, r.Uint64()&mask), operands(n, a, b))
			require.Equal(t, a+b, res.Value, "%d-bit %d + %d", n, a, b)
		}
	}
}

func TestMultiplierMultiplies(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for _, n := range []int{2, 3, 8} {
		c := parse(t, MultiplierBench(n))
		require.Equal(t, 2*n, c.Outputs())
		mask := uint64(1)<<n - 1
		for _, ab := range [][2]uint64{{0, 0}, {mask, mask}, {r.Uint64() & mask, r.Uint64() & mask},
			{r.Uint64() & mask, r.Uint64() & mask}} {
			res := settled(t, c, operands(n, mask, 1), operands(n, ab[0], ab[1]))
			require.Equal(t, ab[0]*ab[1], res.Value, "%d-bit %d * %d", n, ab[0], ab[1])
		}
	}
}

// TestFlipFlopToggles: a flip-flop fed its own negation divides the clock by two.
func TestFlipFlopToggles(t *testing.T) {
	c := parse(t, "INPUT(EN)\nOUTPUT(Q)\nQ = DFF(D)\nD = XOR(Q, EN)\n")
	cfg := DefaultConfig()
	cfg.Vectors = "1"
	lps, err := NewCircuit(c, cfg)
	require.NoError(t, err)
	s, err := dispatch.New(kernel.Config{MaxSimTime: 10*50 + 25, Seed: 1}, lps)
	require.NoError(t, err)
	_, err = s.Run(context.Background())
	require.NoError(t, err)
	res := Summarize(lps)
	require.Equal(t, []uint64{10}, res.OutputTransitions, "one change per clock edge")
	require.EqualValues(t, 0, res.Value, "ten toggles from 0")
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"INPUT(A)\nOUTPUT(B)\nB = FOO(A)\n", "test.bench line 3: unknown gate kind \"FOO\""},
		{"INPUT(A)\nOUTPUT(B)\nB = AND(A, C)\n", "gate \"B\" reads undefined signal \"C\""},
		{"INPUT(A)\nINPUT(A)\nOUTPUT(A)\n", "line 2: signal \"A\" is defined twice"},
		{"INPUT(A)\nOUTPUT(B)\n", "OUTPUT(B) names an undefined signal"},
		{"INPUT(A)\nOUTPUT(B)\nB = NOT(A, A)\n", "NOT gate \"B\" must have exactly 1 input, got 2"},
		{"INPUT(A)\nOUTPUT(B)\nB = AND(A, C)\nC = OR(A, B)\n", "combinational loop"},
		{"INPUT(A)\nOUTPUT(A)\nwhat\n", "line 3: want INPUT(x)"},
		{"OUTPUT(B)\nB = AND()\n", "has no inputs"},
		{"INPUT(A)\n", "no OUTPUT"},
		{"INPUT(A)\nOUTPUT(B)\nB = AND(A," + strings.Repeat("A,", 64) + "A)\n", "at most 64"},
	} {
		_, err := ParseBench(strings.NewReader(tc.text), "test.bench")
		require.ErrorContains(t, err, tc.want, "%q", tc.text)
	}
	c := parse(t, "# c17-like\nINPUT(1)\nINPUT(2)\n\nOUTPUT(4)  # out\n3 = nand(1, 2)\n4 = BUFF(3)\n")
	require.Equal(t, 2, c.Gates())
	require.EqualValues(t, 1, c.value[3], "settled: NAND of zeros is 1")
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.GateDelay = 0 }, "--gate-delay must be at least 1"},
		{func(c *Config) { c.VectorPeriod = 0 }, "--vector-period must be at least 1"},
		{func(c *Config) { c.Circuit = "" }, "give --circuit"},
		{func(c *Config) { c.Circuit = "adder-x" }, "the size must be a number"},
		{func(c *Config) { c.Circuit = "multiplier-1" }, "the size must be a number in [2, 4096]"},
		{func(c *Config) { c.Circuit = "/no/such.bench" }, "--circuit: open /no/such.bench"},
		{func(c *Config) { c.Vectors = "0101" }, "vector 0 (\"0101\") must be 16 bits"},
		{func(c *Config) { c.RandomGates = -1 }, "--random-gates must be at least 0"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		_, err := New(c)
		require.ErrorContains(t, err, tc.want)
	}
	path := filepath.Join(t.TempDir(), "fa.bench")
	require.NoError(t, os.WriteFile(path, []byte(FullAdderBench), 0o644))
	c := DefaultConfig()
	c.Circuit = path
	lps, err := New(c)
	require.NoError(t, err)
	require.Len(t, lps, 8)
	require.Equal(t, "COUT", OutputName(lps, 1))
}

// TestSignalsCountsWithoutBuilding: Signals, which the command's size check reads before
// building, is each shipped and random circuit's LP count exactly, a .bench file's lines
// (at least its signals), and Load's error for a bad size or file.
func TestSignalsCountsWithoutBuilding(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fa.bench")
	require.NoError(t, os.WriteFile(path, []byte(FullAdderBench), 0o644))
	for _, tc := range []struct {
		name   string
		mod    func(*Config)
		exact  bool
		signal int // for a file: its lines
	}{
		{"full adder", func(c *Config) { c.Circuit = "full-adder" }, true, 0},
		{"1-bit adder", func(c *Config) { c.Circuit = "adder-1" }, true, 0},
		{"8-bit adder", func(c *Config) { c.Circuit = "adder-8" }, true, 0},
		{"100-bit adder", func(c *Config) { c.Circuit = "adder-100" }, true, 0},
		{"2-bit multiplier", func(c *Config) { c.Circuit = "multiplier-2" }, true, 0},
		{"3-bit multiplier", func(c *Config) { c.Circuit = "multiplier-3" }, true, 0},
		{"17-bit multiplier", func(c *Config) { c.Circuit = "multiplier-17" }, true, 0},
		{"64-bit multiplier", func(c *Config) { c.Circuit = "multiplier-64" }, true, 0},
		{"random, one gate", func(c *Config) { c.RandomGates = 1 }, true, 0},
		{"random, fewer gates than levels", func(c *Config) { c.RandomGates = 31 }, true, 0},
		{"random, a part level", func(c *Config) { c.RandomGates = 5000 }, true, 0},
		{"bench file", func(c *Config) { c.Circuit = path }, false, strings.Count(FullAdderBench, "\n") + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mod(&c)
			got, err := c.Signals()
			require.NoError(t, err)
			circ, err := c.Load()
			require.NoError(t, err)
			if tc.exact {
				require.Equal(t, circ.Len(), got)
				return
			}
			require.Equal(t, tc.signal, got)
			require.GreaterOrEqual(t, got, circ.Len())
		})
	}
	c := DefaultConfig()
	c.Circuit = "multiplier-4096"
	n, err := c.Signals()
	require.NoError(t, err)
	require.Equal(t, 6*4096*4096-4*4096, n, "the largest multiplier, uncounted by building it")
	for _, tc := range []struct{ circuit, want string }{
		{"multiplier-4097", "the size must be a number in [2, 4096]"},
		{"adder-0", "the size must be a number in [1, 4096]"},
		{"adder-x", "the size must be a number"},
		{"/no/such.bench", "--circuit: open /no/such.bench"},
	} {
		c.Circuit = tc.circuit
		_, err := c.Signals()
		require.ErrorContains(t, err, tc.want, tc.circuit)
	}
	c.RandomGates = 1<<30 + 1
	_, err = c.Signals()
	require.ErrorContains(t, err, "--random-gates must be in [1, 1073741824]")
}

// TestRandomCircuit: the generator's circuits are consistent (every gate's value is its
// function of its pins, before and after a run), acyclic and reproducible.
func TestRandomCircuit(t *testing.T) {
	c, err := Random(5000, 3)
	require.NoError(t, err)
	require.Equal(t, 157*RandomDepth, c.Gates(), "rounded up to full levels")
	require.Equal(t, 157, c.Inputs())
	c2, _ := Random(5000, 3)
	require.Equal(t, c.fan, c2.fan)
	cfg := DefaultConfig()
	cfg.RandomGates, cfg.NumVectors = 5000, 5
	lps, err := New(cfg)
	require.NoError(t, err)
	s, err := dispatch.New(kernel.Config{MaxSimTime: kernel.Infinity, Seed: 4}, lps)
	require.NoError(t, err)
	_, err = s.Run(context.Background())
	require.NoError(t, err)
	res := Summarize(lps)
	require.Greater(t, res.Transitions, uint64(1000))
	c = lps[0].(*Gate).m.c
	for i, l := range lps {
		g := l.(*Gate)
		if k := c.kinds[i]; k != Input {
			require.EqualValues(t, eval(k, g.S.Pins, c.fanIn[i]), g.S.Value, "gate %d settled", i)
		}
	}
}

// TestReverseUndoesStep: on random states, for Signals to every kind of gate, Evaluates
// that change the value and that do not, and Ticks of inputs (given and random vectors) and
// flip-flops, unstep given the draws step made restores the state step found.
func TestReverseUndoesStep(t *testing.T) {
	c := parse(t, "INPUT(A)\nINPUT(B)\nINPUT(C)\nOUTPUT(Z)\n"+
		"G1 = AND(A, B, C)\nG2 = OR(A, B)\nG3 = NAND(A, B, C)\nG4 = NOR(A, C)\nG5 = XOR(A, B, C)\n"+
		"G6 = XNOR(A, B)\nG7 = NOT(A)\nG8 = BUF(B)\nZ = DFF(G5)\n")
	for _, vectors := range []string{"", "010,111"} {
		cfg := DefaultConfig()
		cfg.Vectors, cfg.NumVectors = vectors, 3
		lps, err := NewCircuit(c, cfg)
		require.NoError(t, err)
		m := lps[0].(*Gate).m
		r := rand.New(rand.NewPCG(5, 6))
		changed := map[Kind]int{}
		for range 5000 {
			i := uint32(r.IntN(c.Len()))
			k := c.kinds[i]
			s0 := State{Pins: r.Uint64() & (1<<c.fanIn[i] - 1), Value: r.Uint64N(2), Transitions: r.Uint64N(100) + 10}
			var w kernel.Words
			switch {
			case k == Input || (k == DFF && r.IntN(2) == 0):
				w = kernel.Words{uint64(Tick), s0.Value, r.Uint64N(2)}
			case k != DFF && r.IntN(2) == 0:
				w = kernel.Words{uint64(Evaluate)}
			default:
				pin := uint64(r.IntN(int(c.fanIn[i])))
				w = kernel.Words{uint64(Signal) | pin<<8, s0.Pins>>pin&1 ^ 1}
			}
			s := s0
			g0 := kernel.RNG{D: r.Uint32(), V: [5]uint32{r.Uint32() | 1, r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32()}}
			g := g0
			if ch, _, _ := m.step(&s, i, w, &g); ch {
				changed[Kind(w[0]&0xff)]++
			}
			m.unstep(&s, w, rng.Draws(g0, g))
			require.Equal(t, s0, s, "signal %s, event %v", c.name(i), w)
		}
		require.Positive(t, changed[Evaluate])
		require.Positive(t, changed[Tick])
	}
}

func TestDeterminismMatrix(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		end  kernel.Time
	}{
		{"multiplier", func(c *Config) { c.Circuit = "multiplier-6"; c.GateDelay = 2 }, 1500},
		{"random", func(c *Config) { c.RandomGates = 600; c.NumVectors = 6 }, 600},
		{"flip-flops", func(c *Config) {
			c.Circuit = filepath.Join(t.TempDir(), "ff.bench")
			require.NoError(t, os.WriteFile(c.Circuit, []byte("INPUT(A)\nINPUT(B)\nOUTPUT(Q2)\n"+
				"Q1 = DFF(D1)\nD1 = XOR(Q1, A)\nQ2 = DFF(D2)\nD2 = AND(Q1, B, Q2N)\nQ2N = NOT(Q2)\n"), 0o644))
			c.ClockPeriod = 7
		}, 900},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.cfg(&cfg)
			want := modeltest.Matrix(t, modeltest.Model{
				Build: func() []kernel.LogicalProcess {
					lps, err := New(cfg)
					require.NoError(t, err)
					return lps
				},
				End: tc.end, Seed: 6, Reversible: true, Short: raceEnabled,
			})
			require.Greater(t, want.EventsCommitted, uint64(100))
		})
	}
}

// BenchmarkRun runs a random circuit of 62,500 gates over 20 random vectors (the default end
// time), sequentially and under time warp with 1 and 2 workers (see modeltest.Bench).
func BenchmarkRun(b *testing.B) {
	c := DefaultConfig()
	c.RandomGates = 62500
	modeltest.Bench(b, modeltest.Model{
		Build: func() []kernel.LogicalProcess {
			lps, err := New(c)
			require.NoError(b, err)
			return lps
		},
		End: 2100, Seed: 1,
	})
}
