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
	return insertionPrefix(s, budget) == len(s)
}

// insertionPrefix insertion-sorts s until that has taken more than budget moves, and
// returns the length of the prefix of s it left sorted: len(s) when it sorted all of s.
// The rest of s is as it was.
func insertionPrefix(s []slot, budget int) int {
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
			return i + 1
		}
	}
	return len(s)
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

// radixMin is the shortest run of one send time that sortRuns and radixSlots sort by
// radix, and the fewest events that sortBucket sorts as runs; shorter ones go to
// sortSlots.
const radixMin = 256

// sortBucket sorts s, the events of a bucket that becomes current, by key, using tmp
// (grown as needed, and returned) as scratch. A bucket holds hundreds or thousands of
// events only when many share a time (integer-time models: PCS, traffic, airport, logic);
// they then share their receive time, and they were pushed in the order they were sent,
// which is the order of their send times (the sequential dispatcher and a time-warp worker
// handle events in key order). Such a bucket is a sequence of runs of one send time each,
// ascending, and sorting each run sorts it. Most such buckets are nearly sorted (logic's,
// traffic's): an insertion sort with a budget of a move per event sorts them, as sortSlots
// would. Where it overruns the budget, a run of many events sent at one time in no order
// of their senders is to blame (PCS's move-ins, sent one time unit before they are
// received, hundreds a time unit; airport's arrivals): sortRuns then sorts the rest run by
// run, from the run where the insertion sort stopped, instead of a comparison sort of the
// whole bucket (docs/PERFORMANCE.md, "The calendar sorts a bucket run by run").
func sortBucket(s, tmp []slot) []slot {
	if len(s) < radixMin {
		sortSlots(s)
		return tmp
	}
	k := 0
	if nearlySorted(s) {
		if k = insertionPrefix(s, len(s)); k == len(s) {
			return tmp
		}
	}
	// s[:k] is sorted; s[r:k], the events of its last send time, are sorted with the rest.
	r := k
	for r > 0 && s[r-1].st == s[k-1].st && s[r-1].t == s[k-1].t {
		r--
	}
	tmp, ok := sortRuns(s[r:], tmp)
	if !ok {
		sortSlots(s) // what sortRuns sorted is still in place: a correct start
	}
	return tmp
}

// sortRuns sorts s by key when its slots share their receive time and their send times
// do not descend, and reports whether they did, using tmp (grown as needed, and returned)
// as scratch. It sorts each run of radixMin or more events of one send time by radix
// (radixWords) unless it is sorted already, and each stretch of shorter runs between them
// (traffic's, a few events each) with sortSlots, whose insertion sort, on such a stretch,
// moves events within their runs only. When the times do not have that shape it returns
// false, with s a permutation of its input.
func sortRuns(s, tmp []slot) ([]slot, bool) {
	t0 := s[0].t
	short := 0 // the start of the stretch of short runs
	for run := 0; run < len(s); {
		st := s[run].st
		i := run + 1
		for i < len(s) && s[i].st == st && s[i].t == t0 {
			i++
		}
		if i < len(s) && (s[i].st < st || s[i].t != t0) {
			return tmp, false
		}
		if i-run >= radixMin {
			if run > short {
				sortSlots(s[short:run])
			}
			if !sorted(s[run:i]) {
				tmp = radixWords(s[run:i], tmp, wordDiff(s[run:i]))
			}
			short = i
		}
		run = i
	}
	if len(s) > short {
		sortSlots(s[short:])
	}
	return tmp, true
}

// sorted reports whether s is sorted by key.
func sorted(s []slot) bool {
	for i := 1; i < len(s); i++ {
		if sless(&s[i], &s[i-1]) {
			return false
		}
	}
	return true
}

// radixSlots sorts s, the zero-delay events that wait in after, by key, using tmp (grown
// as needed, and returned) as scratch. Such a wave shares its receive and send times (the
// time of the events that sent it), and comes in the order its causes were handled, which
// is no order of its senders: when all of s share their times it goes to radixWords,
// otherwise (or when short) to sortSlots.
func radixSlots(s, tmp []slot) []slot {
	if len(s) < radixMin {
		sortSlots(s)
		return tmp
	}
	t0, st0, ds0 := s[0].t, s[0].st, s[0].ds
	var diff uint64
	for i := range s {
		if s[i].t != t0 || s[i].st != st0 {
			sortSlots(s)
			return tmp
		}
		diff |= s[i].ds ^ ds0
	}
	return radixWords(s, tmp, diff)
}

// wordDiff returns the bits in which the depth-and-sender words of s differ from the
// first one's.
func wordDiff(s []slot) uint64 {
	ds0 := s[0].ds
	var diff uint64
	for i := range s {
		diff |= s[i].ds ^ ds0
	}
	return diff
}

// radixWords sorts s, whose slots share their receive and send times, by key, using tmp
// (grown as needed, and returned) as scratch: by the bits in which the depth-and-sender
// words differ (diff, as wordDiff returns them) with a stable least-significant-digit
// radix sort, a byte per pass, which takes no data-dependent branches, and then with an
// insertion pass that orders what shares a word (events of one sender, already in
// sequence order when sent in order). When the words are all equal or differ in more than
// three bytes' span it uses sortSlots.
func radixWords(s, tmp []slot, diff uint64) []slot {
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
