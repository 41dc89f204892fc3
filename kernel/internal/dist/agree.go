package dist

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/kernel/internal/core"
)

// Agree compares the configuration of every rank and adds up the initial events (made,
// this rank's count). Every rank gets the same answer, so all stop on a mismatch.
func (m *Driver) Agree(made int) (int, error) {
	b, err := comm.EncodeAgreement(&comm.Agreement{Made: int64(made), Settings: m.settings()})
	if err != nil {
		return 0, err
	}
	all, err := m.tr.AllGather(b)
	if err != nil {
		return 0, fmt.Errorf("compare configurations across processes: %w", err)
	}
	total := 0
	var base [][2]string // rank 0's settings: every rank compares every rank with them
	for r, theirs := range all {
		var a comm.Agreement
		if err := comm.DecodeAgreement(theirs, &a); err != nil {
			return 0, fmt.Errorf("rank %d sent a malformed configuration: %w", r, err)
		}
		total += int(a.Made)
		if r == 0 {
			base = a.Settings
			continue
		}
		if key, a, b, ok := firstDifference(base, a.Settings); ok {
			return 0, &core.MismatchError{Key: key, Mine: a, Theirs: b, Rank: 0, Other: r}
		}
	}
	return total, nil
}

// settings are the (name, value) pairs every rank must share, sorted by name (the model
// first).
func (m *Driver) settings() [][2]string {
	s := m.sim
	tw := m.cfg
	kv := map[string]string{
		"max-sim-time":                          strconv.FormatFloat(s.Cfg.MaxSimTime, 'g', -1, 64),
		"seed":                                  strconv.FormatUint(s.Cfg.Seed, 10),
		"number of LPs":                         strconv.Itoa(len(s.LPs)),
		"ranks":                                 strconv.Itoa(m.size),
		"partitioning":                          fmt.Sprintf("%T", s.Cfg.Partition),
		"time-warp-gvt-calculation-method":      tw.GVTMethod,
		"time-warp-cancellation":                tw.Cancellation,
		"time-warp-state-saving-type":           tw.StateSaving,
		"time-warp-optimism-window":             strconv.FormatFloat(tw.OptimismWindow, 'g', -1, 64),
		"time-warp-check-rollbacks":             strconv.FormatBool(tw.CheckRollbacks),
		"time-warp-communication-max-aggregate": strconv.Itoa(tw.MaxAggregate),
		"time-warp-gvt-calculation-period (ms)": strconv.FormatFloat(float64(tw.GVTPeriod)/1e6, 'g', -1, 64),
	}
	for k, v := range s.Cfg.Agree {
		kv[k] = v
	}
	out := make([][2]string, 0, len(kv))
	for k, v := range kv {
		out = append(out, [2]string{k, v})
	}
	// By name, but the model first: ranks that run different models differ in their
	// flags too, and the model is the difference to report.
	first := func(k string) bool { return k == "model" }
	sort.Slice(out, func(i, j int) bool {
		if a, b := first(out[i][0]), first(out[j][0]); a != b {
			return a
		}
		return out[i][0] < out[j][0]
	})
	return out
}

// firstDifference finds the first name whose value differs between mine and theirs
// (both sorted by name), or that only one side has.
func firstDifference(mine, theirs [][2]string) (key, a, b string, ok bool) {
	other := make(map[string]string, len(theirs))
	for _, kv := range theirs {
		other[kv[0]] = kv[1]
	}
	for _, kv := range mine {
		v, has := other[kv[0]]
		if !has {
			return kv[0], kv[1], "<unset>", true
		}
		if v != kv[1] {
			return kv[0], kv[1], v, true
		}
		delete(other, kv[0])
	}
	for k, v := range other {
		return k, "<unset>", v, true
	}
	return "", "", "", false
}
