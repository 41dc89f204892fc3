package eventset

import "math/bits"

// sortSlots sorts s by key. When a sample of adjacent pairs shows few descents it uses an
// insertion sort, linear on nearly sorted input, with a budget of moves. Otherwise, or past
// the budget, it uses an introsort (quicksort with median-of-three pivots, insertion sort
// for short runs, heapsort past a depth limit). Both are specialised to slots so that the
// key comparison inlines. Keys are distinct (they are total-order keys of distinct
// events).
func sortSlots(s []slot) {
	if nearlySorted(s) && insertionWithin(s, 8*len(s)) {
		return
	}
	quickSlots(s, 2*bits.Len(uint(len(s))))
}

// nearlySorted reports whether at most a quarter of the first 64 adjacent pairs of s
// descend.
func nearlySorted(s []slot) bool {
	n := min(len(s), 65)
	d := 0
	for i := 1; i < n; i++ {
		if sless(&s[i], &s[i-1]) {
			d++
		}
	}
	return 4*d <= n-1
}

// insertionWithin insertion-sorts s unless that takes more than budget moves; it reports
// whether s is sorted. On false, s is a permutation of its input, partly sorted.
func insertionWithin(s []slot, budget int) bool {
	for i := 1; i < len(s); i++ {
		if !sless(&s[i], &s[i-1]) {
			continue
		}
		x := s[i]
		j := i
		for j > 0 && sless(&x, &s[j-1]) {
			s[j] = s[j-1]
			j--
			budget--
		}
		s[j] = x
		if budget < 0 {
			return false
		}
	}
	return true
}

func slotLess(s []slot, i, j int) bool { return sless(&s[i], &s[j]) }

func quickSlots(s []slot, depth int) {
	for len(s) > 16 {
		if depth == 0 {
			heapSlots(s)
			return
		}
		depth--
		// Median of three to s[0], then partition around it.
		m := len(s) / 2
		last := len(s) - 1
		if slotLess(s, m, 0) {
			s[m], s[0] = s[0], s[m]
		}
		if slotLess(s, last, 0) {
			s[last], s[0] = s[0], s[last]
		}
		if slotLess(s, last, m) {
			s[last], s[m] = s[m], s[last]
		}
		s[0], s[m] = s[m], s[0] // pivot (the median) to the front
		p := &s[0]
		i, j := 1, last
		for {
			for i <= j && sless(&s[i], p) {
				i++
			}
			for i <= j && sless(p, &s[j]) {
				j--
			}
			if i >= j {
				break
			}
			s[i], s[j] = s[j], s[i]
			i++
			j--
		}
		s[0], s[j] = s[j], s[0]
		// Recurse into the smaller side, loop on the larger.
		if j < len(s)-j {
			quickSlots(s[:j], depth)
			s = s[j+1:]
		} else {
			quickSlots(s[j+1:], depth)
			s = s[:j]
		}
	}
	for i := 1; i < len(s); i++ {
		x := s[i]
		j := i
		for j > 0 && sless(&x, &s[j-1]) {
			s[j] = s[j-1]
			j--
		}
		s[j] = x
	}
}

func heapSlots(s []slot) {
	n := len(s)
	for i := n/2 - 1; i >= 0; i-- {
		siftSlots(s, i, n)
	}
	for end := n - 1; end > 0; end-- {
		s[0], s[end] = s[end], s[0]
		siftSlots(s, 0, end)
	}
}

func siftSlots(s []slot, i, n int) {
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && slotLess(s, c, c+1) {
			c++
		}
		if !slotLess(s, i, c) {
			return
		}
		s[i], s[c] = s[c], s[i]
		i = c
	}
}

// upSlots restores the min-heap order of h after h[i] was added.
func upSlots(h []slot, i int) {
	x := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !sless(&x, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}

// popSlots removes the least slot of the min-heap *h.
func popSlots(h *[]slot) {
	a := *h
	last := len(a) - 1
	x := a[last]
	a = a[:last]
	*h = a
	if last == 0 {
		return
	}
	downSlots(a, 0, x)
}

// downSlots puts x at hole i of the min-heap a and sifts it down.
func downSlots(a []slot, i int, x slot) {
	last := len(a)
	for {
		c := 2*i + 1
		if c >= last {
			break
		}
		if c+1 < last && sless(&a[c+1], &a[c]) {
			c++
		}
		if !sless(&a[c], &x) {
			break
		}
		a[i] = a[c]
		i = c
	}
	a[i] = x
}

// removeSlot removes slot i of the min-heap *h, moving its last slot into the hole.
func removeSlot(h *[]slot, i int) {
	a := *h
	last := len(a) - 1
	x := a[last]
	a = a[:last]
	*h = a
	if i == last {
		return
	}
	a[i] = x
	if i > 0 && sless(&x, &a[(i-1)/2]) {
		upSlots(a, i)
		return
	}
	downSlots(a, i, x)
}

// radixMin is the shortest run that sortBucket and sortWords sort by radix; shorter ones
// go to sortSlots.
const radixMin = 256

// sortBucket sorts s, the events of a bucket, by key, using tmp (grown as needed, and
// returned) as scratch. A bucket holds hundreds or thousands of events only when many
// share a time (integer-time models: PCS, traffic, airport, logic); they then share their
// receive time, and they were pushed in the order they were sent, which is the order of
// their send times (the sequential dispatcher and a time-warp worker handle events in
// key order). Such a bucket is a sequence of runs of one send time each, ascending, and
// sorting each run by the rest of the key (sortWords) sorts the bucket: the comparison
// sorts, over the whole bucket, paid for the send times' order that the input already
// has, and in PCS, whose move-ins are sent one time unit before they are received in
// hundreds per time, for an insertion sort that overran its budget on the run of
// move-ins too (docs/PERFORMANCE.md, "The calendar sorts a bucket run by run"). Any other
// bucket (receive times that differ, send times out of order: a rollback's re-sends, or
// a tuning's gathering of the far list) goes to sortSlots whole.
func sortBucket(s, tmp []slot) []slot {
	if len(s) < radixMin || !ascendingSends(s) {
		sortSlots(s)
		return tmp
	}
	for len(s) > 0 {
		st, n := s[0].st, 1
		for n < len(s) && s[n].st == st {
			n++
		}
		tmp = sortWords(s[:n], tmp)
		s = s[n:]
	}
	return tmp
}

// ascendingSends reports whether the slots of s share their receive time and their send
// times do not descend.
func ascendingSends(s []slot) bool {
	t0, st := s[0].t, s[0].st
	for i := range s {
		if s[i].t != t0 || s[i].st < st {
			return false
		}
		st = s[i].st
	}
	return true
}

// sortWords sorts s, whose slots share their receive and send times, by key, using tmp
// (grown as needed, and returned) as scratch. The order is that of the depth and sender
// word, then the sequence number. A short run goes to sortSlots. A long one that a sample
// shows nearly sorted (logic's gate outputs, traffic's cars) gets an insertion sort with a
// budget of a move per event; past the budget (a few long descents: PCS's move-ins, the
// concatenation of ascending runs), or when the sample shows disorder (airport's arrivals,
// the zero-delay events of after), it gets a radix sort of the word (radixWords).
func sortWords(s, tmp []slot) []slot {
	if len(s) < radixMin {
		sortSlots(s)
		return tmp
	}
	if nearlySorted(s) && insertionWithin(s, len(s)) {
		return tmp
	}
	return radixWords(s, tmp)
}

// radixWords sorts s, whose slots share their receive and send times, by key, using tmp
// (grown as needed, and returned) as scratch: by the bits in which the depth-and-sender
// words differ with a stable least-significant-digit radix sort, a byte per pass, which
// takes no data-dependent branches, and then with an insertion pass that orders what
// shares a word (events of one sender, already in sequence order when sent in order).
// When the words are all equal or differ in more than three bytes' span it uses sortSlots.
func radixWords(s, tmp []slot) []slot {
	ds0 := s[0].ds
	var diff uint64
	for i := range s {
		diff |= s[i].ds ^ ds0
	}
	lo, hi := bits.TrailingZeros64(diff), bits.Len64(diff)
	if diff == 0 || hi-lo > 24 {
		sortSlots(s)
		return tmp
	}
	if cap(tmp) < len(s) {
		tmp = make([]slot, len(s))
	}
	src, dst := s, tmp[:len(s)]
	var count [256]int
	for shift := lo; shift < hi; shift += 8 {
		clear(count[:])
		for i := range src {
			count[byte(src[i].ds>>shift)]++
		}
		sum := 0
		for d, n := range count {
			count[d] = sum
			sum += n
		}
		for i := range src {
			d := byte(src[i].ds >> shift)
			dst[count[d]] = src[i]
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &s[0] {
		copy(s, src)
	}
	if !insertionWithin(s, 8*len(s)) {
		quickSlots(s, 2*bits.Len(uint(len(s))))
	}
	return tmp
}
