package rng_test

import (
	"fmt"

	"github.com/warpedgo/warped/rng"
)

// Each LP seeds its own generator from the global seed and its id. The state
// is a plain value, so saving it is a copy; rolling back by reverse
// computation calls Reverse once per draw, and Draws counts them.
func ExampleNew() {
	g := rng.New(42, 7) // global seed 42, LP 7
	saved := g          // state saving: a plain copy

	fmt.Println(g.Next())
	fmt.Println(g.Range(1, 6))
	fmt.Printf("%.6f\n", g.Exponential(10))
	k := g.Poisson(3) // takes k+1 draws
	fmt.Println(k)

	n := rng.Draws(saved, g)
	fmt.Println("draws:", n, "=", 3+k+1)

	g.Rewind(uint64(n)) // reverse computation: undo all the draws
	fmt.Println(g == saved)
	// Output:
	// 690122956
	// 5
	// 2.248660
	// 2
	// draws: 6 = 6
	// true
}

// FromSeed64 is what curand_init(seed, 0, 0, &state) computes, and Next is
// curand(state), so a CUDA kernel can reproduce the stream.
func ExampleFromSeed64() {
	g := rng.FromSeed64(0)
	for i := 0; i < 3; i++ {
		fmt.Printf("%#08x\n", g.Next())
	}
	// Output:
	// 0xbd7f03b6
	// 0x703e556d
	// 0x845af0c5
}
