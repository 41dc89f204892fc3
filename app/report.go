package app

import (
	"bytes"
	"fmt"
	"html/template"
	"sync"

	"github.com/spf13/pflag"
	"github.com/warpedgo/warped/internal/outfile"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/sample"
	"github.com/warpedgo/warped/sample/chart"
)

// reportRows is the most engine samples a --report keeps; later rows are left out of its
// charts (and counted).
const reportRows = 1 << 16

// reportCollector keeps a run's engine samples in memory for --report.
type reportCollector struct {
	mu      sync.Mutex
	rows    []sample.Row
	dropped int
}

// add keeps s (the manager's goroutine calls it; it never waits for more than the lock).
func (c *reportCollector) add(s kernel.Sample) {
	c.mu.Lock()
	if len(c.rows) < reportRows {
		c.rows = append(c.rows, sample.FromKernel(s))
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

// attachReport has a time-warp run keep its samples for --report, beside the
// --sample-file's writer if there is one.
func (inv *invocation) attachReport(cfg *kernel.Config) {
	if !inv.reportHere() || inv.o.simType != kernel.TimeWarp {
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

// reportPage is what the report's template shows.
type reportPage struct {
	Model, Digest string
	Flags         [][2]string
	Summary       string
	Charts        []template.HTML
	Note          string
}

// reportTemplate is the page: self-contained (no script, styles inline, charts as inline SVG).
var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>warped {{.Model}} run report</title>
<style>
body { font-family: sans-serif; margin: 2em; max-width: 70em; }
table { border-collapse: collapse; }
td { border: 1px solid #ccc; padding: 0.2em 0.6em; font-family: monospace; }
pre { background: #f6f6f6; padding: 1em; }
.chart { margin: 1em 0; }
</style>
</head>
<body>
<h1>warped {{.Model}}</h1>
<p>digest <code id="digest">{{.Digest}}</code></p>
<h2>Configuration</h2>
<table id="config">
{{range .Flags}}<tr><td>--{{index . 0}}</td><td>{{index . 1}}</td></tr>
{{end}}</table>
<h2>Totals and results</h2>
<pre id="summary">{{.Summary}}</pre>
<h2>Charts</h2>
{{if .Note}}<p>{{.Note}}</p>{{end}}
{{range .Charts}}<div class="chart">{{.}}</div>
{{end}}
</body>
</html>
`))

// writeReport writes the --report page of the finished run: its flags, the totals and
// results as printed, the charts of its engine samples (time split included) and of the
// model's series.
func (inv *invocation) writeReport(res kernel.Result, results []Result) error {
	if !inv.reportHere() {
		return nil
	}
	var summary bytes.Buffer
	offload := ""
	if inv.be != nil {
		offload = inv.be.Name()
	}
	printResults(&summary, inv.m, inv.o.simType, offload, res, results)
	page := reportPage{Model: inv.m.Name, Digest: res.Digest, Summary: summary.String()}
	inv.fs.VisitAll(func(f *pflag.Flag) {
		page.Flags = append(page.Flags, [2]string{f.Name, f.Value.String()})
	})
	var charts []chart.Chart
	switch c := inv.collector; {
	case c == nil:
		page.Note = "No engine charts: engine samples are taken in time-warp runs only."
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
		sc, err := chart.Series(res.Series)
		if err != nil {
			return runFailure(fmt.Errorf("--report: %w", err))
		}
		charts = append(charts, sc...)
	}
	for _, ch := range charts {
		svg, err := ch.Render("svg", chart.DefaultOptions())
		if err != nil {
			return runFailure(fmt.Errorf("--report: %w", err))
		}
		// The SVG is gonum/plot's own output, not user input: inline it as markup,
		// without its XML declaration.
		if i := bytes.Index(svg, []byte("<svg")); i > 0 {
			svg = svg[i:]
		}
		page.Charts = append(page.Charts, template.HTML(svg)) // #nosec G203: generated markup
	}
	var b bytes.Buffer
	if err := reportTemplate.Execute(&b, page); err != nil {
		return runFailure(fmt.Errorf("--report: %w", err))
	}
	if err := outfile.WriteFile(inv.o.report, b.Bytes()); err != nil {
		return runFailure(outputError("report", err))
	}
	return nil
}
