package ring

import (
	"math/rand/v2"
	"testing"
)

// TestRingAgainstSlice runs random pushes, front drops, truncations and shrinks against a
// plain slice and checks the contents and the capacity bounds after every step.
func TestRingAgainstSlice(t *testing.T) {
	for seed := range uint64(20) {
		rnd := rand.New(rand.NewPCG(seed, 2))
		var r Ring[int]
		var ref []int
		next := 0
		for step := range 5000 {
			switch op := rnd.IntN(10); {
			case op < 6: // bursts of pushes now and then
				n := 1
				if rnd.IntN(50) == 0 {
					n = rnd.IntN(300)
				}
				for range n {
					spare := r.Spare()
					slot := r.Push(8)
					if spare != nil && spare != slot {
						t.Fatalf("seed %d step %d: Spare is not the slot Push returns", seed, step)
					}
					*slot = next
					ref = append(ref, next)
					next++
				}
			case op < 8:
				k := rnd.IntN(len(ref) + 1)
				r.DropFront(k)
				ref = ref[k:]
				r.Shrink(8)
			case op < 9:
				k := rnd.IntN(len(ref) + 1)
				r.Truncate(k)
				ref = ref[:k]
			default:
				if rnd.IntN(20) == 0 {
					r.Reset()
					ref = ref[:0]
				}
			}
			if r.Len() != len(ref) {
				t.Fatalf("seed %d step %d: Len %d, want %d", seed, step, r.Len(), len(ref))
			}
			for i, v := range ref {
				if got := *r.At(i); got != v {
					t.Fatalf("seed %d step %d: item %d is %d, want %d", seed, step, i, got, v)
				}
			}
			if c := r.Cap(); c&(c-1) != 0 || c < r.Len() {
				t.Fatalf("seed %d step %d: capacity %d for %d items", seed, step, c, r.Len())
			}
		}
	}
}

// TestShrinkGivesBackMemory checks that a burst's memory is given back once it has passed,
// and that a small ring is left alone.
func TestShrinkGivesBackMemory(t *testing.T) {
	var r Ring[int]
	for i := range 1000 {
		*r.Push(16) = i
	}
	if r.Cap() != 1024 {
		t.Fatalf("capacity %d after 1000 pushes, want 1024", r.Cap())
	}
	r.DropFront(995)
	r.Shrink(16)
	if r.Cap() != 16 {
		t.Fatalf("capacity %d for 5 items after shrinking, want 16", r.Cap())
	}
	for i := range 5 {
		if *r.At(i) != 995+i {
			t.Fatalf("item %d is %d after shrinking, want %d", i, *r.At(i), 995+i)
		}
	}
	var s Ring[int]
	for i := range 40 {
		*s.Push(8) = i
	}
	s.DropFront(39)
	s.Shrink(8)
	if s.Cap() != 64 {
		t.Fatalf("a 64-slot ring was shrunk to %d", s.Cap())
	}
}

func TestPushAllocatesNothingInSteadyState(t *testing.T) {
	var r Ring[[4]uint64]
	for range 100 {
		r.Push(16)
	}
	r.DropFront(100)
	if a := testing.AllocsPerRun(1000, func() {
		r.Push(16)
		r.DropFront(1)
	}); a != 0 {
		t.Fatalf("%v allocations per push and drop", a)
	}
}
