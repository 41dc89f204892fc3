// Package ring is the growable ring buffer under the time-warp engine's logs (statemgr's
// history log, outputmgr's output log, the kernel's CheckRollbacks digests): items are
// appended at the back and dropped from the front or cut from the back, the ring doubles
// when full and can halve again when a burst has passed (Shrink), so that a long run's
// memory can follow its working size, not its largest burst.
package ring

// Ring holds items oldest first: item i is Buf[(Head+i)&(len(Buf)-1)]. The zero value is
// an empty ring. Not safe for concurrent use.
//
// The fields are exported for the logs on the time-warp engine's per-event path
// (statemgr.History, outputmgr.Log), which index them directly: a method of theirs that
// calls one of Ring's, both inlined, costs an instruction more a call than the Ring method
// alone (the second inline mark finds no instruction of its own to sit on and becomes a
// NOP). Everyone else uses the methods; nobody but a method changes them.
type Ring[T any] struct {
	Buf     []T // the slots, a power of two of them (or none)
	Head, N int // the slot of item 0, and the number of items
}

// Len returns the number of items.
func (r *Ring[T]) Len() int { return r.N }

// At returns item i, oldest first (0 <= i < Len()).
func (r *Ring[T]) At(i int) *T { return &r.Buf[(r.Head+i)&(len(r.Buf)-1)] }

// Push appends a slot and returns it, holding whatever the slot last held: the caller sets
// every field. An empty ring starts with min slots (a power of two); a full one doubles.
func (r *Ring[T]) Push(min int) *T {
	if r.N == len(r.Buf) {
		r.Grow(min)
	}
	r.N++
	return r.At(r.N - 1)
}

// Grow doubles the ring's slots, or gives an empty ring min slots (a power of two).
func (r *Ring[T]) Grow(min int) {
	size := 2 * len(r.Buf)
	if size == 0 {
		size = min
	}
	r.resize(size)
}

// Spare returns the slot the next Push will return when the ring need not grow for it,
// else nil: for prefetching. It changes nothing.
func (r *Ring[T]) Spare() *T {
	if r.N == len(r.Buf) {
		return nil
	}
	return r.At(r.N)
}

// DropFront drops the k oldest items (k <= Len()). Their slots are not cleared: writing
// to them would cost a cache miss each, and they are overwritten when the ring comes round.
func (r *Ring[T]) DropFront(k int) {
	r.Head = (r.Head + k) & (len(r.Buf) - 1)
	r.N -= k
}

// Truncate keeps the n oldest items (n <= Len()); the caller clears what it must of the
// dropped slots before.
func (r *Ring[T]) Truncate(n int) { r.N = n }

// Reset empties the ring, keeping its memory.
func (r *Ring[T]) Reset() { r.Head, r.N = 0, 0 }

// Shrink gives back the memory of a ring that a burst grew far beyond what it holds now:
// larger than 64 slots and less than an eighth full, it halves down to at least min slots
// while a quarter full or less.
func (r *Ring[T]) Shrink(min int) {
	size := len(r.Buf)
	if size <= 64 || r.N >= size/8 {
		return
	}
	for size > min && r.N < size/4 {
		size /= 2
	}
	r.resize(size)
}

// resize moves the items into a new ring of size slots (a power of two, at least Len()).
func (r *Ring[T]) resize(size int) {
	buf := make([]T, size)
	for i := range r.N {
		buf[i] = *r.At(i)
	}
	r.Buf, r.Head = buf, 0
}

// Cap returns the number of slots.
func (r *Ring[T]) Cap() int { return len(r.Buf) }
