package spin

import (
	"testing"
	"time"
)

// TestWaitTurn checks when a wait by spinning counts as long: never on its first turn,
// then only on every check-th turn once the wait has lasted the given time.
func TestWaitTurn(t *testing.T) {
	for _, c := range []struct {
		name  string
		after time.Duration
		want  []int // the turns (1-based, of 3*check) that report a long wait
	}{
		{"lasted at once", 0, []int{check, 2 * check, 3 * check}},
		{"not lasted", time.Hour, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s Wait
			var got []int
			for i := 1; i <= 3*check; i++ {
				if s.Turn(c.after) {
					got = append(got, i)
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("long at turns %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("long at turns %v, want %v", got, c.want)
				}
			}
			if s.Turns != 3*check {
				t.Fatalf("Turns = %d, want %d", s.Turns, 3*check)
			}
		})
	}
}
