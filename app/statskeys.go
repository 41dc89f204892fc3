package app

import (
	"encoding/json"
	"sort"

	"github.com/warpedgo/warped/kernel"
)

// statsNumbers returns the numeric statistics of a run by their stats-file keys, as a
// study summarises them (a spec may list any of them under results), with rollbacks, the
// primary and secondary rollbacks together.
func statsNumbers(s kernel.Stats) map[string]float64 {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // Stats is numbers and strings: it always marshals
	}
	var kv map[string]any
	if err := json.Unmarshal(b, &kv); err != nil {
		panic(err)
	}
	out := make(map[string]float64, len(kv)+1)
	for k, v := range kv {
		if x, ok := v.(float64); ok {
			out[k] = x
		}
	}
	out[rollbacksKey] = float64(s.PrimaryRollbacks + s.SecondaryRollbacks)
	return out
}

// rollbacksKey is the stats-file key of the primary and secondary rollbacks together.
const rollbacksKey = "rollbacks"

// statsKeys are the keys of statsNumbers, sorted.
func statsKeys() []string {
	kv := statsNumbers(kernel.Stats{})
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
