package study

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Ranks are the processes that share a study; comm.Transport is one. AllGather is
// called only from the goroutine that called Execute.
type Ranks interface {
	Rank() int
	Size() int
	// AllGather is a blocking collective: every rank contributes b and receives every
	// rank's contribution in rank order.
	AllGather(b []byte) ([][]byte, error)
}

// startMsg is what a rank says before the runs: its error, and (rank 0) the finished
// runs of the journals.
type startMsg struct {
	Err      string             `json:"err,omitempty"`
	Settings bool               `json:"settings,omitempty"`
	Done     map[string]Outcome `json:"done,omitempty"`
}

// endMsg is what a rank says after its runs: its error, whether it was interrupted, and
// the outcomes of the runs it did.
type endMsg struct {
	Err         string    `json:"err,omitempty"`
	Interrupted bool      `json:"interrupted,omitempty"`
	Runs        []int     `json:"runs"`
	Outcomes    []Outcome `json:"outcomes"`
}

// agreeStart gathers every rank's start: it returns rank 0's finished runs, or the
// first rank's error (a SettingsError stays one).
func agreeStart(rk Ranks, done map[string]Outcome, err error) (map[string]Outcome, error) {
	var m startMsg
	if err != nil {
		var se *SettingsError
		m.Err, m.Settings = err.Error(), errors.As(err, &se)
	} else if rk.Rank() == 0 {
		m.Done = done
	}
	all, gerr := gather(rk, m)
	if gerr != nil {
		return nil, gerr
	}
	for r, b := range all {
		var x startMsg
		if err := json.Unmarshal(b, &x); err != nil {
			return nil, fmt.Errorf("study across processes: rank %d: %w", r, err)
		}
		if x.Err != "" {
			if r == rk.Rank() {
				return nil, err
			}
			if x.Settings {
				return nil, &SettingsError{fmt.Sprintf("rank %d: %s", r, x.Err)}
			}
			return nil, fmt.Errorf("rank %d: %s", r, x.Err)
		}
		if r == 0 {
			done = x.Done
		}
	}
	if done == nil {
		done = map[string]Outcome{}
	}
	return done, nil
}

// agreeEnd gathers every rank's outcomes into st and returns the first error of any
// rank (an interrupt if any rank was interrupted and none failed).
func agreeEnd(rk Ranks, st *Study, mine []Run, err error) error {
	m := endMsg{Runs: []int{}, Outcomes: []Outcome{}}
	switch {
	case errors.Is(err, ErrInterrupted):
		m.Interrupted = true
	case err != nil:
		m.Err = err.Error()
	}
	for _, r := range mine {
		if st.Outcomes[r.Index].Results != nil {
			m.Runs, m.Outcomes = append(m.Runs, r.Index), append(m.Outcomes, st.Outcomes[r.Index])
		}
	}
	all, gerr := gather(rk, m)
	if gerr != nil {
		return gerr
	}
	interrupted := false
	for r, b := range all {
		var x endMsg
		if err := json.Unmarshal(b, &x); err != nil {
			return fmt.Errorf("study across processes: rank %d: %w", r, err)
		}
		if x.Err != "" {
			if r == rk.Rank() {
				return err
			}
			return fmt.Errorf("rank %d: %s", r, x.Err)
		}
		interrupted = interrupted || x.Interrupted
		for i, idx := range x.Runs {
			if idx < 0 || idx >= len(st.Outcomes) || i >= len(x.Outcomes) {
				return fmt.Errorf("study across processes: rank %d sent run %d of %d", r, idx, len(st.Outcomes))
			}
			st.Outcomes[idx] = x.Outcomes[i]
		}
	}
	if interrupted {
		return fmt.Errorf("%w: resume it with --resume", ErrInterrupted)
	}
	return nil
}

func gather(rk Ranks, m any) ([][]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("study across processes: %w", err)
	}
	all, err := rk.AllGather(b)
	if err != nil {
		return nil, fmt.Errorf("study across processes: %w", err)
	}
	return all, nil
}
