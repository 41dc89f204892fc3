package rng

import (
	"math"
	"testing"
)

var (
	sinkU32 uint32
	sinkU64 uint64
	sinkF64 float64
)

func BenchmarkNext(b *testing.B) {
	b.ReportAllocs()
	g := New(1, 2)
	var s uint32
	for b.Loop() {
		s += g.Next()
	}
	sinkU32 = s
}

func BenchmarkReverse(b *testing.B) {
	b.ReportAllocs()
	g := New(1, 2)
	for b.Loop() {
		g.Reverse()
	}
	sinkU32 = g.V[0]
}

func BenchmarkAdvance1000(b *testing.B) {
	b.ReportAllocs()
	g := New(1, 2)
	for b.Loop() {
		g.Advance(1000)
	}
	sinkU32 = g.V[0]
}

func BenchmarkRewind1000(b *testing.B) {
	b.ReportAllocs()
	g := New(1, 2)
	for b.Loop() {
		g.Rewind(1000)
	}
	sinkU32 = g.V[0]
}

func BenchmarkUniform(b *testing.B) {
	b.ReportAllocs()
	g := New(1, 2)
	s := 0.0
	for b.Loop() {
		s += g.Uniform()
	}
	sinkF64 = s
}

func BenchmarkRange(b *testing.B) {
	b.ReportAllocs()
	g := New(1, 2)
	var s uint64
	for b.Loop() {
		s += g.Range(3, 1000)
	}
	sinkU64 = s
}

func BenchmarkExponential(b *testing.B) {
	b.ReportAllocs()
	g := New(1, 2)
	s := 0.0
	for b.Loop() {
		s += g.Exponential(2.5)
	}
	sinkF64 = s
}

// BenchmarkPoisson uses mean 4, so about 5 draws and 5 Logs per call.
func BenchmarkPoisson(b *testing.B) {
	b.ReportAllocs()
	g := New(1, 2)
	var s uint64
	for b.Loop() {
		s += g.Poisson(4)
	}
	sinkU64 = s
}

func BenchmarkLog(b *testing.B) {
	b.ReportAllocs()
	x, s := 0.7, 0.0
	for b.Loop() {
		s += Log(x)
		x += 0x1p-20
	}
	sinkF64 = s
}

func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	var i uint64
	for b.Loop() {
		g := New(42, i)
		sinkU32 += g.D
		i++
	}
}

// BenchmarkMathLog is the standard library's (assembly on amd64) log, for
// comparison with BenchmarkLog.
func BenchmarkMathLog(b *testing.B) {
	x, s := 0.7, 0.0
	for b.Loop() {
		s += math.Log(x)
		x += 0x1p-20
	}
	sinkF64 = s
}

// BenchmarkPoissonPTRS draws with mean 200 from a prebuilt sampler (PCS's call interval).
func BenchmarkPoissonPTRS(b *testing.B) {
	g := New(1, 2)
	p := NewPoisson(200)
	var s uint64
	for b.Loop() {
		s += p.Draw(&g)
	}
	sinkU64 = s
}
