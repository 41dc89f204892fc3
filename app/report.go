package app

import (
	"bytes"
	"fmt"
	"html/template"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/sample"
	"github.com/warpedgo/warped/sample/chart"
)

// reportRows is the most engine samples a --report keeps; later rows are left out of its
// charts (and counted).
const reportRows = 1 << 16

// reportCollector keeps a run's engine samples in memory for --report.
type reportCollector struct {
	meter   sample.Meter
	mu      sync.Mutex
	rows    []sample.Row
	dropped int
}

// add keeps s (the manager's goroutine calls it; it never waits for more than the lock).
func (c *reportCollector) add(s kernel.Sample) {
	c.mu.Lock()
	if len(c.rows) < reportRows {
		c.rows = append(c.rows, sample.FromKernel(s, c.meter.Resident(s.Elapsed)))
	} else {
		c.dropped++
	}
	c.mu.Unlock()
}

// reportHere reports whether this process writes the --report: rank 0 of a run across
// processes (with its own samples), or the only process.
func (inv *invocation) reportHere() bool {
	return inv.o.report != "" && (inv.tr == nil || inv.tr.Rank() == 0)
}

// attachReport has a time-warp or gpu run keep its samples for --report, beside the
// --sample-file's writer if there is one.
func (inv *invocation) attachReport(cfg *kernel.Config) {
	if !inv.reportHere() || !sampled(inv.o.simType) {
		return
	}
	c := &reportCollector{}
	inv.collector = c
	if next := cfg.Sample; next != nil {
		cfg.Sample = func(s kernel.Sample) {
			c.add(s)
			next(s)
		}
	} else {
		cfg.Sample = c.add
		cfg.SampleMode = inv.o.sample.mode
	}
}

// seriesTitle is the title of m's series chart.
func seriesTitle(m *Model) string { return "Series of the " + m.Name + " model" }

// reportPage is what the report's template shows.
type reportPage struct {
	Model, Digest string
	Provenance    [][2]string // label, value
	Flags         []reportFlag
	Defaults      []reportFlag // the flags at their defaults, folded away
	Totals        [][2]string  // label, value
	Results       []reportResult
	Charts        []reportChart
	Note          string
}

// reportResult is one row of the report's results table.
type reportResult struct{ Label, Key, Value string }

// reportChart is one figure of the report: its anchor, number, title, caption and SVG.
type reportChart struct {
	ID, Title, Caption string
	Number             int
	SVG                template.HTML
}

// reportFlag is one row of the report's configuration. Set: the command line or --config
// gave it; Resolved: the model chose another value than the
// flag's default for this run (the epidemic's stochastic variant has defaults of its own).
type reportFlag struct {
	Name, Value, Default string
	Set, Resolved        bool
}

// reportOmits are the flags that say how this invocation was made, not what ran: they are
// on the command line at the top of the page.
var reportOmits = map[string]bool{"config": true, "dump-config": true, "report": true}

// reportFlags lists fs's flags for the report: those given (by the command line or
// --config) first, even where the value given is the default, then those the model resolved to other
// values, then the defaults, each group in the flag set's order.
func reportFlags(fs *pflag.FlagSet, given map[string]bool) []reportFlag {
	var set, resolved, def []reportFlag
	fs.VisitAll(func(f *pflag.Flag) {
		if reportOmits[f.Name] {
			return
		}
		r := reportFlag{Name: f.Name, Value: f.Value.String(), Default: f.DefValue}
		switch {
		case given[f.Name]:
			r.Set = true
			set = append(set, r)
		case r.Value == r.Default:
			def = append(def, r)
		default:
			r.Resolved = true
			resolved = append(resolved, r)
		}
	})
	return append(append(set, resolved...), def...)
}

// provenanceRows are p as the report's labelled rows.
func provenanceRows(p provenance) [][2]string {
	commit, tags := commitLabel(p.Commit, p.Modified), tagsLabel(p.BuildTags)
	dispatcher := p.Dispatcher
	if p.Workers > 0 {
		dispatcher += fmt.Sprintf(", %d workers", p.Workers)
	}
	if p.Ranks > 1 {
		dispatcher += fmt.Sprintf(", %d processes", p.Ranks)
	}
	if p.Offload != "" {
		dispatcher += ", offload on " + p.Offload
	}
	return [][2]string{{"Command line", p.CommandLine}, {"Date (UTC)", p.Time},
		{"Version", p.Module + " " + p.Version}, {"Commit", commit},
		{"Go", p.GoVersion + ", build tags: " + tags}, {"Host", fmt.Sprintf("%s (%s/%s)", p.Host, p.OS, p.Arch)},
		{"CPUs", fmt.Sprintf("%d (GOMAXPROCS %d)", p.CPUs, p.GOMAXPROCS)}, {"Dispatcher", dispatcher}}
}

// reportTemplate is the page: self-contained (no script, styles inline, charts as inline
// SVG, links only within the page).
var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>warped {{.Model}} run report</title>
<style>
body { font-family: sans-serif; margin: 2em; max-width: 80em; }
table { border-collapse: collapse; margin-bottom: 1em; }
td, th { border: 1px solid #ccc; padding: 0.2em 0.6em; font-family: monospace; text-align: left; }
th { font-family: sans-serif; font-weight: normal; background: #f6f6f6; }
td.num { text-align: right; }
tr.set td { font-weight: bold; background: #fff6d6; }
tr.resolved td { font-style: italic; }
nav ol ol { columns: 2; list-style: none; padding-left: 1.5em; }
.tables { display: flex; flex-wrap: wrap; gap: 0 3em; align-items: flex-start; }
details summary { cursor: pointer; margin-bottom: 0.5em; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(26em, 1fr)); gap: 1.5em; }
figure { margin: 0; }
figure svg { width: 100%; height: auto; }
figcaption { font-size: 0.9em; color: #333; }
</style>
</head>
<body>
<h1 id="top">warped {{.Model}}</h1>
<table id="provenance">
{{range .Provenance}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{end}}<tr><th>Digest</th><td><code id="digest">{{.Digest}}</code></td></tr>
</table>
<nav id="contents"><h2>Contents</h2>
<ol>
<li><a href="#configuration">Configuration</a></li>
<li><a href="#totals">Totals</a></li>
{{if .Results}}<li><a href="#results">Results</a></li>
{{end}}<li><a href="#charts">Charts</a><ol>
{{range .Charts}}<li><a href="#{{.ID}}">Figure {{.Number}}: {{.Title}}</a></li>
{{end}}</ol></li>
</ol></nav>
<h2 id="configuration">Configuration</h2>
<p>The flags given (command line or --config) come first, in bold; then those the model chose for this run, in italics. The other flags are at their defaults, folded below.</p>
<table id="config">
<tr><th>flag</th><th>value</th><th>source</th></tr>
{{range .Flags}}<tr{{if .Set}} class="set"{{else if .Resolved}} class="resolved"{{end}}><td>--{{.Name}}</td><td>{{.Value}}</td><td>{{if .Set}}given (default {{if .Default}}{{.Default}}{{else}}none{{end}}){{else}}the model's for this run (flag default {{.Default}}){{end}}</td></tr>
{{end}}</table>
<details id="defaults"><summary>The other {{len .Defaults}} flags, at their defaults</summary>
<table>
{{range .Defaults}}<tr><td>--{{.Name}}</td><td>{{.Value}}</td><td>default</td></tr>
{{end}}</table>
</details>
<div class="tables">
<section><h2 id="totals">Totals</h2>
<table id="totals-table">
{{range .Totals}}<tr><th>{{index . 0}}</th><td class="num">{{index . 1}}</td></tr>
{{end}}</table></section>
{{if .Results}}<section><h2 id="results">Results</h2>
<table id="results-table">
<tr><th>result</th><th>stats-file key</th><th>value</th></tr>
{{range .Results}}<tr><th>{{.Label}}</th><td>{{.Key}}</td><td class="num">{{.Value}}</td></tr>
{{end}}</table></section>
{{end}}</div>
<h2 id="charts">Charts</h2>
{{if .Note}}<p>{{.Note}}</p>{{end}}
<div class="charts">
{{range .Charts}}<figure id="{{.ID}}">{{.SVG}}<figcaption><b>Figure {{.Number}}.</b> {{.Caption}}</figcaption></figure>
{{end}}</div>
</body>
</html>
`))

// writeReport writes the --report page of the finished run: its provenance, a table of
// contents, its flags (the defaults folded away), the totals and results as tables, the
// charts, each a numbered figure with a caption, of its engine samples (time split included) and of the
// model's series.
func (inv *invocation) writeReport(res kernel.Result, results []Result) error {
	if !inv.reportHere() {
		return nil
	}
	offload := ""
	if inv.be != nil {
		offload = inv.be.Name()
	}
	page := reportPage{Model: inv.m.Name, Digest: res.Digest, Totals: totals(inv.o.simType, offload, res)}
	for _, r := range results {
		page.Results = append(page.Results, reportResult{Label: r.Label, Key: r.Key, Value: r.text()})
	}
	for _, f := range reportFlags(inv.fs, inv.given) {
		if f.Set || f.Resolved {
			page.Flags = append(page.Flags, f)
		} else {
			page.Defaults = append(page.Defaults, f)
		}
	}
	page.Provenance = provenanceRows(inv.provenance(time.Now()))
	var charts []chart.Chart
	switch c := inv.collector; {
	case c == nil:
		page.Note = "No engine charts: engine samples are taken in time-warp and gpu runs only."
	default:
		c.mu.Lock()
		rows, dropped := c.rows, c.dropped
		c.mu.Unlock()
		if dropped > 0 {
			page.Note = fmt.Sprintf("The charts show the first %d sample rows of %d.", len(rows), len(rows)+dropped)
		}
		var err error
		if charts, err = chart.Make(rows); err != nil {
			return runFailure(fmt.Errorf("--report: %w", err))
		}
	}
	if len(res.Series) > 0 {
		// The model's own series (Context.Record): this rank's LPs' across processes.
		sc, err := chart.Series(res.Series, seriesTitle(inv.m), inv.m.Labels)
		if err != nil {
			return runFailure(fmt.Errorf("--report: %w", err))
		}
		charts = append(charts, sc...)
	}
	for i, ch := range charts {
		title := ch.Plot.Title.Text
		svg, err := ch.Render("svg", chart.DefaultOptions())
		if err != nil {
			return runFailure(fmt.Errorf("--report: %w", err))
		}
		// The SVG is gonum/plot's own output, not user input: inline it as markup,
		// without its XML declaration.
		if i := bytes.Index(svg, []byte("<svg")); i > 0 {
			svg = svg[i:]
		}
		page.Charts = append(page.Charts, reportChart{ID: "chart-" + ch.Name, Number: i + 1, Title: title,
			Caption: ch.Caption, SVG: template.HTML(bytes.TrimSpace(svg))}) // #nosec G203: generated markup
	}
	var b bytes.Buffer
	if err := reportTemplate.Execute(&b, page); err != nil {
		return runFailure(fmt.Errorf("--report: %w", err))
	}
	if err := inv.files().WriteFile(inv.o.report, b.Bytes()); err != nil {
		return runFailure(outputError("report", err))
	}
	return nil
}
