package chart

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/warpedgo/warped/internal/outfile"
)

// Options say how charts are rendered: the formats written, the width (the height is
// 0.62 of it) and the resolution of PNG images.
type Options struct {
	Formats []string  // of Formats(): png, svg, pdf
	Width   vg.Length // the figure's width
	DPI     int       // dots per inch of a PNG
}

// Formats returns the formats a chart can be rendered in.
func Formats() []string { return []string{"png", "svg", "pdf"} }

// DefaultOptions are those of a one-column figure in a two-column paper: 3.5 inches wide,
// 300 dpi, as PNG and SVG.
func DefaultOptions() Options {
	return Options{Formats: []string{"png", "svg"}, Width: 3.5 * vg.Inch, DPI: 300}
}

// Check returns an error naming what is wrong with o.
func (o Options) Check() error {
	for _, f := range o.Formats {
		if !slices.Contains(Formats(), f) {
			return fmt.Errorf("unknown chart format %q: want %s", f, strings.Join(Formats(), ", "))
		}
	}
	if len(o.Formats) == 0 {
		return fmt.Errorf("no chart format: want one or more of %s", strings.Join(Formats(), ", "))
	}
	if !(o.Width >= 1*vg.Inch && o.Width <= 20*vg.Inch) { // so that NaN is out of range too
		return fmt.Errorf("chart width %.3g in is out of range: want 1 to 20 inches", o.Width/vg.Inch)
	}
	if o.DPI < 50 || o.DPI > 1200 {
		return fmt.Errorf("chart resolution %d dpi is out of range: want 50 to 1200", o.DPI)
	}
	return nil
}

// height is the figure's height for width w.
func height(w vg.Length) vg.Length { return w * 0.62 }

// Render renders c in format (png, svg or pdf) at o's size. A legend is drawn to the
// right of the data or below it, never over it.
func (c Chart) Render(format string, o Options) (data []byte, err error) {
	if format == "pdf" {
		// gonum's PDF canvas writes its fonts to TMPDIR and panics (log.Panicf) where it
		// cannot: that is the user's to set, not a stack dump.
		defer func() {
			if r := recover(); r != nil {
				data, err = nil, fmt.Errorf("render chart %s as pdf: %v (its fonts go to TMPDIR: set TMPDIR to a writable directory)", c.Name, r)
			}
		}()
	}
	w, h := o.Width, height(o.Width)
	var (
		canvas vg.CanvasWriterTo
		dc     draw.Canvas
	)
	switch format {
	case "png":
		img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(o.DPI))
		canvas, dc = vgimg.PngCanvas{Canvas: img}, draw.New(img)
	case "svg":
		img := vgsvg.New(w, h)
		canvas, dc = img, draw.New(img)
	case "pdf":
		img := vgpdf.New(w, h)
		img.EmbedFonts(true)
		canvas, dc = img, draw.New(img)
	default:
		return nil, fmt.Errorf("render chart %s: unknown format %q", c.Name, format)
	}
	drawOutside(c.Plot, dc)
	var b bytes.Buffer
	if _, err := canvas.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("render chart %s as %s: %w", c.Name, format, err)
	}
	return b.Bytes(), nil
}

// drawOutside draws p on dc with its title across the whole figure and its legend, if
// any, outside the data: in a column to the right of the plot, or below it where that
// column would take over a third of the width (long entries, such as a study's).
func drawOutside(p *plot.Plot, dc draw.Canvas) {
	area := dc
	if t := p.Title.Text; t != "" { // over the figure, not only over the plot beside a legend
		ts := p.Title.TextStyle
		ts.XAlign, ts.YAlign = draw.XCenter, draw.YTop
		t = wrap(ts, t, 0.96*(dc.Max.X-dc.Min.X)) // a long title in lines, not cut at both ends
		dc.FillText(ts, vg.Point{X: dc.Center().X, Y: dc.Max.Y + ts.FontExtents().Descent}, t)
		area.Max.Y -= ts.Rectangle(t).Size().Y + p.Title.Padding
		p.Title.Text = ""
		defer func() { p.Title.Text = t }()
	}
	// Axis labels longer than their axis go in lines (the y label is drawn along the
	// figure's height).
	for _, a := range []struct {
		label *string
		ts    draw.TextStyle
		room  vg.Length
	}{{&p.X.Label.Text, p.X.Label.TextStyle, 0.9 * (area.Max.X - area.Min.X)}, {&p.Y.Label.Text, p.Y.Label.TextStyle, 0.8 * (area.Max.Y - area.Min.Y)}} {
		if old := *a.label; old != "" {
			*a.label = wrap(a.ts, old, a.room)
			defer func() { *a.label = old }()
		}
	}
	l := p.Legend
	r := l.Rectangle(area)
	w, h := r.Max.X-r.Min.X, r.Max.Y-r.Min.Y
	if w == 0 { // no entries
		p.Draw(area)
		return
	}
	gap := 2 * vg.Millimeter
	plotArea, legendArea := area, area
	if w+2*gap <= (dc.Max.X-dc.Min.X)/3 {
		plotArea.Max.X -= w + 2*gap
		legendArea.Min.X = plotArea.Max.X + gap
		l.Top, l.Left = true, true
	} else {
		plotArea.Min.Y += h + gap
		legendArea.Max.Y = legendArea.Min.Y + h
		legendArea.Min.X += gap
		l.Top, l.Left = false, true
	}
	p.Legend = plot.NewLegend()
	p.Draw(plotArea)
	p.Legend = l
	l.XOffs, l.YOffs = 0, 0
	l.Draw(legendArea)
}

// wrap breaks each line of s at its spaces into lines no wider than width in style ts
// where a word allows (a word wider than width has a line of its own).
func wrap(ts draw.TextStyle, s string, width vg.Length) string {
	if ts.Width(s) <= width {
		return s
	}
	var lines []string
	for _, given := range strings.Split(s, "\n") { // lines given stay lines
		line := ""
		for _, word := range strings.Fields(given) {
			switch {
			case line == "":
				line = word
			case ts.Width(line+" "+word) <= width:
				line += " " + word
			default:
				lines, line = append(lines, line), word
			}
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// Style sets p's fonts for a figure a few inches wide: sans serif, 9 pt title, 8 pt labels,
// 7 pt ticks and legend (every chart of the command is styled so, a study's plots too).
func Style(p *plot.Plot) {
	set := func(s *font.Font, size vg.Length) {
		s.Typeface, s.Variant, s.Size = "Liberation", "Sans", size
	}
	set(&p.Title.TextStyle.Font, 9)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		set(&a.Label.TextStyle.Font, 8)
		set(&a.Tick.Label.Font, 7)
	}
	set(&p.Legend.TextStyle.Font, 7)
	p.Legend.ThumbnailWidth = 0.15 * vg.Inch
	p.Legend.Padding = 0.7 * vg.Millimeter // a point's glyph is taller than a 7 pt line
}

// SITicks are plot.DefaultTicks labelled with SI prefixes (12 M, not 12000000).
type SITicks struct{}

// Ticks returns the ticks between min and max: at least three labelled where gonum's
// default labels fewer (0 and 2.5 k alone say little) and its minor ticks are few enough
// to label.
func (SITicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	labelled := 0
	for _, t := range ts {
		if t.Label != "" {
			labelled++
		}
	}
	labelAll := labelled < 3 && len(ts) <= 8
	for i := range ts {
		if ts[i].Label != "" || labelAll {
			ts[i].Label = SI(ts[i].Value)
		}
	}
	return ts
}

// SI formats v with an SI prefix and at most four significant digits: 12 M, 1.5 k, 250.
func SI(v float64) string {
	a := math.Abs(v)
	for _, u := range []struct {
		scale  float64
		prefix string
	}{{1e12, " T"}, {1e9, " G"}, {1e6, " M"}, {1e3, " k"}} {
		if a >= u.scale {
			return strconv.FormatFloat(v/u.scale, 'g', 4, 64) + u.prefix
		}
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// PercentTicks label a share in percent.
type PercentTicks struct{}

// Ticks returns the ticks between min and max, labelled "40 %".
func (PercentTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 4, 64) + " %"
		}
	}
	return ts
}

// WriteFiles writes each chart as NAME.FORMAT in dir (made if missing), one file per
// format of o, and returns the paths written: all of them or none (outfile.WriteAll), so
// that a failure (a full disk, ctx ended: its cause) replaces no chart of an earlier run.
func WriteFiles(ctx context.Context, dir string, charts []Chart, o Options) ([]string, error) {
	files, err := Files(ctx, dir, charts, o)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make chart directory: %w", err)
	}
	return outfile.WriteAll(files)
}

// Files renders charts in each of o's formats, as the files WriteFiles writes in dir
// (NAME.FORMAT), without writing them. It stops with ctx's cause when ctx ends.
func Files(ctx context.Context, dir string, charts []Chart, o Options) ([]outfile.Named, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	var files []outfile.Named
	for _, c := range charts {
		for _, f := range o.Formats {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			data, err := c.Render(f, o)
			if err != nil {
				return nil, err
			}
			files = append(files, outfile.Named{Path: filepath.Join(dir, c.Name+"."+f), Data: data})
		}
	}
	return files, nil
}
