// Package ring is the growable ring buffer under the per-LP history queues (statemgr's saved
// states, outputmgr's sent events): items are appended at the back and dropped from the
// front or cut from the back, the ring doubles when full and halves again when a burst has
// passed, so a long run's memory follows its working size, not its largest burst.
package ring

// Ring holds items oldest first: item i is buf[(head+i)&(len(buf)-1)]. The zero value is
// an empty ring. Not safe for concurrent use.
type Ring[T any] struct {
	buf     []T
	head, n int
}

// Len returns the number of items.
func (r *Ring[T]) Len() int { return r.n }

// At returns item i, oldest first (0 <= i < Len()).
func (r *Ring[T]) At(i int) *T { return &r.buf[(r.head+i)&(len(r.buf)-1)] }

// Push appends a slot and returns it, holding whatever the slot last held: the caller sets
// every field. An empty ring starts with min slots (a power of two); a full one doubles.
func (r *Ring[T]) Push(min int) *T {
	if r.n == len(r.buf) {
		size := 2 * len(r.buf)
		if size == 0 {
			size = min
		}
		r.resize(size)
	}
	r.n++
	return r.At(r.n - 1)
}

// Spare returns the slot the next Push will return when the ring need not grow for it,
// else nil: for prefetching. It changes nothing.
func (r *Ring[T]) Spare() *T {
	if r.n == len(r.buf) {
		return nil
	}
	return r.At(r.n)
}

// DropFront drops the k oldest items (k <= Len()). Their slots are not cleared: writing
// to them would cost a cache miss each, and they are overwritten when the ring comes round.
func (r *Ring[T]) DropFront(k int) {
	r.head = (r.head + k) & (len(r.buf) - 1)
	r.n -= k
}

// Truncate keeps the n oldest items (n <= Len()); the caller clears what it must of the
// dropped slots before.
func (r *Ring[T]) Truncate(n int) { r.n = n }

// Reset empties the ring, keeping its memory.
func (r *Ring[T]) Reset() { r.head, r.n = 0, 0 }

// Shrink gives back the memory of a ring that a burst grew far beyond what it holds now:
// larger than 64 slots and less than an eighth full, it halves down to at least min slots
// while a quarter full or less.
func (r *Ring[T]) Shrink(min int) {
	size := len(r.buf)
	if size <= 64 || r.n >= size/8 {
		return
	}
	for size > min && r.n < size/4 {
		size /= 2
	}
	r.resize(size)
}

// resize moves the items into a new ring of size slots (a power of two, at least Len()).
func (r *Ring[T]) resize(size int) {
	buf := make([]T, size)
	for i := range r.n {
		buf[i] = *r.At(i)
	}
	r.buf, r.head = buf, 0
}

// Cap returns the number of slots.
func (r *Ring[T]) Cap() int { return len(r.buf) }
