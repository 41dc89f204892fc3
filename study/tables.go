package study

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/warpedgo/warped/internal/outfile"
)

// Names of the tables in a study's output directory.
const (
	SummaryCSV  = "summary.csv"
	SummaryJSON = "summary.json"
	RunsCSV     = "runs.csv"
	// ProvenanceJSON says where the tables came from (ProvenanceJSONBytes).
	ProvenanceJSON = "provenance.json"
)

// Stat is one result summarised over a point's replications.
type Stat struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	// Std is the sample standard deviation, and CILow and CIHigh the bounds of the 95%
	// confidence interval of the mean (Student's t with N-1 degrees of freedom); all
	// three are NaN with fewer than two replications.
	Std    float64 `json:"-"`
	CILow  float64 `json:"-"`
	CIHigh float64 `json:"-"`
}

// MarshalJSON writes NaN as null.
func (s Stat) MarshalJSON() ([]byte, error) {
	num := func(x float64) any {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return x
	}
	return json.Marshal(struct {
		N      int `json:"n"`
		Mean   any `json:"mean"`
		Std    any `json:"std"`
		CILow  any `json:"ci95_low"`
		CIHigh any `json:"ci95_high"`
		Half   any `json:"ci95_half_width"` // as summary.csv has it
	}{s.N, num(s.Mean), num(s.Std), num(s.CILow), num(s.CIHigh), num((s.CIHigh - s.CILow) / 2)})
}

// Summarize returns the statistics of xs: mean, sample standard deviation and the 95%
// confidence interval of the mean from Student's t distribution.
func Summarize(xs []float64) Stat {
	s := Stat{N: len(xs), Mean: math.NaN(), Std: math.NaN(), CILow: math.NaN(), CIHigh: math.NaN()}
	if len(xs) == 0 {
		return s
	}
	if len(xs) == 1 {
		s.Mean = xs[0]
		return s
	}
	s.Mean, s.Std = stat.MeanStdDev(xs, nil)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(xs) - 1)}.Quantile(0.975)
	h := t * s.Std / math.Sqrt(float64(len(xs)))
	s.CILow, s.CIHigh = s.Mean-h, s.Mean+h
	return s
}

// PointSummary is one point's parameter values and its results' statistics.
type PointSummary struct {
	Params  []string `json:"-"`
	Results []Stat   `json:"-"`
}

// Summary summarises every point's replications, for each of the spec's results, in
// plan order.
func (st *Study) Summary() []PointSummary {
	s := st.Spec
	out := make([]PointSummary, len(s.Points))
	for pi, pt := range s.Points {
		ps := PointSummary{Params: pt}
		for _, key := range s.Results {
			xs := make([]float64, 0, s.Replications)
			for _, r := range st.Runs[pi*s.Replications : (pi+1)*s.Replications] {
				if x := st.Outcomes[r.Index].Value(key); !math.IsNaN(x) {
					xs = append(xs, x) // an unmeasured result is left out (n says how many)
				}
			}
			ps.Results = append(ps.Results, Summarize(xs))
		}
		out[pi] = ps
	}
	return out
}

// fmtFloat formats x exactly (shortest form that reads back the same), NaN as empty.
func fmtFloat(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// SummaryCSVBytes returns the summary table: one row per point and result with the
// point's parameters, n, mean, std, and the 95% confidence interval.
func (st *Study) SummaryCSVBytes() []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	head := append([]string{"point"}, st.Spec.Params...)
	w.Write(append(head, "result", "n", "mean", "std", "ci95_low", "ci95_high", "ci95_half_width"))
	for pi, ps := range st.Summary() {
		for ri, r := range ps.Results {
			row := append([]string{strconv.Itoa(pi)}, ps.Params...)
			w.Write(append(row, st.Spec.Results[ri], strconv.Itoa(r.N), fmtFloat(r.Mean), fmtFloat(r.Std),
				fmtFloat(r.CILow), fmtFloat(r.CIHigh), fmtFloat((r.CIHigh-r.CILow)/2)))
		}
	}
	w.Flush()
	return b.Bytes()
}

// SummaryJSONBytes returns the summary as JSON: the model, the fixed flags, and per
// point its parameters and each result's statistics.
func (st *Study) SummaryJSONBytes() ([]byte, error) {
	type point struct {
		Params  map[string]string `json:"params"`
		Results map[string]Stat   `json:"results"`
	}
	flags := map[string]string{}
	for _, f := range st.Spec.Flags {
		flags[f.Name] = f.Value
	}
	doc := struct {
		Model        string            `json:"model"`
		Flags        map[string]string `json:"flags"`
		Params       []string          `json:"parameters"`
		Replications int               `json:"replications"`
		Seed         uint64            `json:"seed"`
		Points       []point           `json:"points"`
	}{Model: st.Spec.Model, Flags: flags, Params: st.Spec.Params, Replications: st.Spec.Replications, Seed: st.Spec.Seed}
	if doc.Params == nil {
		doc.Params = []string{}
	}
	for _, ps := range st.Summary() {
		p := point{Params: map[string]string{}, Results: map[string]Stat{}}
		for i, name := range st.Spec.Params {
			p.Params[name] = ps.Params[i]
		}
		for ri, r := range ps.Results {
			p.Results[st.Spec.Results[ri]] = r
		}
		doc.Points = append(doc.Points, p)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	return append(b, '\n'), err
}

// ProvenanceJSONBytes returns where the tables came from: the caller's Provenance (the
// build, the machine, the command line) and the execution of this process's runs (runs at
// once, simulation type, workers). Apart from the tables, which a resumed study writes as
// an uninterrupted one would.
func (st *Study) ProvenanceJSONBytes() ([]byte, error) {
	type execution struct {
		SimulationType string `json:"simulation_type"`
		Jobs           int    `json:"jobs"`              // runs at once
		Workers        int    `json:"workers,omitempty"` // each time-warp run's, where the study chose them
		Resumed        int    `json:"resumed"`           // runs found finished in the journal
	}
	doc := struct {
		Provenance any       `json:"provenance,omitempty"`
		Execution  execution `json:"execution"`
	}{st.Provenance, execution{SimulationType: st.Plan.SimulationType, Jobs: st.Plan.Jobs, Workers: st.Plan.Workers,
		Resumed: st.Resumed}}
	b, err := json.MarshalIndent(doc, "", "  ")
	return append(b, '\n'), err
}

// RunsCSVBytes returns one row per run in plan order: its point's parameters, seed,
// results, digest, and then its committed events and wall time unless the results have
// them already (each column name once: a model's result "events" is not the kernel's
// events_committed).
func (st *Study) RunsCSVBytes() []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	head := append([]string{"run", "point"}, st.Spec.Params...)
	head = append(head, "seed")
	head = append(head, st.Spec.Results...)
	head = append(head, "digest")
	events := !slices.Contains(st.Spec.Results, EventsCommitted)
	wall := !slices.Contains(st.Spec.Results, WallSeconds)
	if events {
		head = append(head, EventsCommitted)
	}
	if wall {
		head = append(head, WallSeconds)
	}
	w.Write(head)
	for _, r := range st.Runs {
		out := st.Outcomes[r.Index]
		row := append([]string{strconv.Itoa(r.Index), strconv.Itoa(r.Point)}, st.Spec.Points[r.Point]...)
		row = append(row, strconv.FormatUint(r.Seed, 10))
		for _, k := range st.Spec.Results {
			row = append(row, fmtFloat(out.Value(k)))
		}
		row = append(row, out.Digest)
		if events {
			row = append(row, strconv.FormatUint(out.Events, 10))
		}
		if wall {
			row = append(row, fmtFloat(out.WallSeconds))
		}
		w.Write(row)
	}
	w.Flush()
	return b.Bytes()
}

// WriteTables writes the summary (CSV and JSON), the runs' table and the plots into dir,
// all of them or none (outfile.WriteAll: a full disk replaces no table of an earlier
// write); it returns the paths written.
func (st *Study) WriteTables(dir string) ([]string, error) {
	js, err := st.SummaryJSONBytes()
	if err != nil {
		return nil, fmt.Errorf("summary JSON: %w", err)
	}
	pj, err := st.ProvenanceJSONBytes()
	if err != nil {
		return nil, fmt.Errorf("provenance JSON: %w", err)
	}
	files := []outfile.Named{{Path: filepath.Join(dir, SummaryCSV), Data: st.SummaryCSVBytes()},
		{Path: filepath.Join(dir, SummaryJSON), Data: js}, {Path: filepath.Join(dir, RunsCSV), Data: st.RunsCSVBytes()},
		{Path: filepath.Join(dir, ProvenanceJSON), Data: pj}}
	plots, err := st.plotFiles(dir)
	if err != nil {
		return nil, err
	}
	return outfile.WriteAll(append(files, plots...))
}
