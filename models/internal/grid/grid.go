// Package grid holds what the grid-shaped models share: moves on a torus of X by Y cells
// (cell (x, y) is LP x + y*X) and a partitioner that cuts the torus into rectangular tiles.
package grid

import "github.com/warpedgo/warped/partition"

// MaxDelay is the longest delay (an interval, a duration, a mean) a grid model's flag may
// give: 2^53, the last integer a time (a float64) holds exactly; beyond it the models'
// integer arithmetic overflowed and their sends looked like sends into the past.
const MaxDelay = 1 << 53

// Direction is a move on the torus.
type Direction uint8

// The four directions: north is +y, east is +x.
const (
	North Direction = iota
	South
	East
	West
)

// String returns the direction's name.
func (d Direction) String() string {
	return [...]string{"north", "south", "east", "west"}[d&3]
}

// Move returns the index of the cell next to cell index in direction d on an x by y torus.
func Move(index uint32, d Direction, x, y uint32) uint32 {
	cx, cy := index%x, index/x
	switch d {
	case North:
		cy = (cy + 1) % y
	case South:
		cy = (cy + y - 1) % y
	case East:
		cx = (cx + 1) % x
	default:
		cx = (cx + x - 1) % x
	}
	return cx + cy*x
}

// Tiles is a partitioner of an X by Y grid into rectangular tiles of neighbouring cells, one
// per part, so that most moves stay inside a part. With parts = a*b (a the largest factor
// not above the square root), the grid has b tiles along its longer side and a along the
// other; when that does not fit, or the number of LPs is not X*Y, contiguous blocks.
type Tiles struct{ X, Y int }

// Partition implements partition.Partitioner.
func (t Tiles) Partition(n, parts int) []int {
	if n != t.X*t.Y {
		return partition.Blocks{}.Partition(n, parts)
	}
	a := 1
	for f := 1; f*f <= parts; f++ {
		if parts%f == 0 {
			a = f
		}
	}
	b := parts / a // b >= a
	if t.X >= t.Y {
		a, b = b, a // more tile columns on the wider side
	}
	if a > t.X || b > t.Y {
		return partition.Blocks{}.Partition(n, parts)
	}
	out := make([]int, n)
	for y := range t.Y {
		for x := range t.X {
			out[x+y*t.X] = (x*a)/t.X + a*((y*b)/t.Y)
		}
	}
	return out
}
