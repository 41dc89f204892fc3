package dist

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSendLogMinAfter checks the send log's least time beyond a count against a scan of
// every time sent, over random times and rising counts, through its compactions.
func TestSendLogMinAfter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var l sendLog
	var all []Time
	k := uint64(0)
	for i := range 20000 {
		tm := Time(i)/100 + r.Float64()*3
		l.push(tm)
		all = append(all, tm)
		if r.IntN(4) == 0 {
			k = min(uint64(len(all)), k+uint64(r.IntN(8)))
		}
		want := math.Inf(1)
		for _, x := range all[k:] {
			want = min(want, x)
		}
		if got := l.minAfter(k); got != want {
			t.Fatalf("after %d sends, beyond %d: got %v, want %v", len(all), k, got, want)
		}
	}
	if len(l.t) > 4096 {
		t.Fatalf("the log keeps %d entries", len(l.t))
	}
}
