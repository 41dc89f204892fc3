package app

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReport writes a run's --report and checks what the page holds: the engine's charts
// (time split included) and the model's series (the epidemic's six disease states).
func TestReport(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.html")
	code, stdout, errOut := warped("epidemic", "--variant", "stochastic", "--num-locations", "16", "--population", "20", "--max-sim-time", "1000",
		"--gpu", "off", "--time-warp-worker-threads", "2", "--report", path)
	require.Equal(t, 0, code, errOut)
	page, err := os.ReadFile(path)
	require.NoError(t, err)
	html := string(page)
	for _, want := range []string{digestOf(t, stdout), "<td>--num-locations</td><td>16</td>", "<th>Events committed</th>",
		"Time split per worker", "Series of the epidemic model", ">infectious<"} {
		require.True(t, strings.Contains(html, want), "the page lacks %q", want)
	}
	t.Run("provenance at the top", func(t *testing.T) {
		for _, want := range []string{"<th>Command line</th><td>warped epidemic --variant stochastic --num-locations 16",
			"<th>Date (UTC)</th>", "<th>Version</th>", "<th>Commit</th>", "<th>Host</th>", "<th>CPUs</th>",
			"<th>Dispatcher</th><td>time-warp, 2 workers</td>"} {
			require.Contains(t, html, want)
		}
		require.Less(t, strings.Index(html, "Command line"), strings.Index(html, `<h2 id="configuration">`))
	})
	t.Run("given flags first and marked", func(t *testing.T) {
		rows := regexp.MustCompile(`<tr( class="set")?><td>--([a-z0-9-]+)</td>`).FindAllStringSubmatch(html, -1)
		var set []string
		for i, r := range rows {
			if r[1] != "" {
				require.Equal(t, len(set), i, "--%s is set but follows a default", r[2])
				set = append(set, r[2])
			}
		}
		require.ElementsMatch(t, []string{"variant", "num-locations", "population", "max-sim-time", "gpu", "time-warp-worker-threads"}, set)
		require.Contains(t, html, `<tr class="set"><td>--num-locations</td><td>16</td><td>given (default `)
		require.Contains(t, html, `<tr class="resolved"><td>--transmissibility</td>`, "the stochastic variant's own default, marked")
		require.Less(t, strings.Index(html, `class="resolved"`), strings.Index(html, `<tr><td>--`), "the model's values before the defaults")
		for _, r := range rows {
			require.NotContains(t, []string{"config", "dump-config", "report"}, r[2], "how the run was invoked is in its command line")
		}
	})
	const charts = 8 + 1
	require.Equal(t, charts, strings.Count(html, "<svg"), "one chart each: rate, efficiency, GVT, rollbacks, memory, pending, threads, time split; the series")
	t.Run("totals and results as tables", func(t *testing.T) {
		require.NotContains(t, html, "<pre", "no copy of the terminal")
		require.Regexp(t, `<tr><th>Efficiency</th><td class="num">[0-9.]+%</td></tr>`, html)
		require.Regexp(t, `<tr><th>Peak infected</th><td>peak_infected</td><td class="num">[0-9]+</td></tr>`, html)
		require.Less(t, strings.Index(html, `id="totals"`), strings.Index(html, `id="results"`))
	})
	t.Run("defaults folded", func(t *testing.T) {
		folded := html[strings.Index(html, `<details id="defaults">`):strings.Index(html, "</details>")]
		require.Contains(t, folded, "<td>--time-warp-queue-type</td>")
		require.NotContains(t, folded, "--num-locations", "a given flag is not folded away")
	})
	t.Run("figures with captions and a table of contents", func(t *testing.T) {
		figures := regexp.MustCompile(`<figure id="(chart-[a-z-]+)"><svg[\s\S]*?</svg><figcaption><b>Figure (\d+)\.</b> ([^<]+)</figcaption></figure>`).FindAllStringSubmatch(html, -1)
		require.Len(t, figures, charts, "every chart a figure with a caption")
		nav := html[strings.Index(html, `<nav id="contents">`):strings.Index(html, "</nav>")]
		for i, f := range figures {
			require.Equal(t, strconv.Itoa(i+1), f[2])
			require.Greater(t, len(f[3]), 40, "a caption that says what to read: %s", f[1])
			require.Contains(t, nav, `<a href="#`+f[1]+`">Figure `+f[2]+": ")
		}
		for _, id := range []string{"configuration", "totals", "results", "charts"} {
			require.Contains(t, nav, `href="#`+id+`"`)
			require.Contains(t, html, `id="`+id+`"`)
		}
	})
	require.False(t, strings.Contains(html, "<script"), "the page needs no script")
	require.False(t, regexp.MustCompile(`(src|href)="[^#]`).MatchString(html), "the page loads nothing: links only within it")

	// In a real browser: the page loads, without errors, and draws its charts.
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no chromium on PATH (apt-get install -y chromium): the browser check is skipped")
	}
	headless := func(args ...string) (string, string) {
		// A guard against a browser that never exits (headless chromium can hang), far
		// beyond what a load takes even on a busy machine (seconds).
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, browser, append([]string{"--headless", "--no-sandbox", "--disable-gpu",
			"--disable-dev-shm-usage", "--user-data-dir=" + filepath.Join(dir, "profile"),
			"--enable-logging=stderr", "--v=0"}, args...)...)
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		require.NoError(t, cmd.Run(), stderr.String())
		return out.String(), stderr.String()
	}
	dom, logs := headless("--dump-dom", "file://"+path)
	require.Equal(t, charts, strings.Count(dom, "<svg"))
	require.True(t, strings.Contains(dom, digestOf(t, stdout)), "the browser's page lacks the digest")
	// Console errors and failed loads; chromium's own complaints about D-Bus are not the page's.
	bad := regexp.MustCompile(`(?i)uncaught|failed to load resource|not allowed to load|CONSOLE.*error`)
	require.False(t, bad.MatchString(logs), "browser errors:\n%s", logs)
	shot := filepath.Join(dir, "r.png")
	headless("--window-size=1000,7000", "--screenshot="+shot, "file://"+path) // the whole page: the flags and 13 charts
	data, err := os.ReadFile(shot)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	// The charts' lines are coloured; text and grids are grey: a coloured pixel means a
	// chart was drawn.
	colored := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if max(r, g, bl)-min(r, g, bl) > 0x4000 {
				colored++
			}
		}
	}
	require.Greater(t, colored, 100, "the screenshot shows no chart")
}

// TestReportBadPath fails before the run.
func TestReportBadPath(t *testing.T) {
	code, _, errOut := warped("phold", "--max-sim-time", "5", "--gpu", "off", "--report", filepath.Join(t.TempDir(), "no", "r.html"))
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "cannot write --report")
}

// TestReportSequentialSeries: a sequential run's report has no engine charts, but has the
// model's series.
func TestReportSequentialSeries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.html")
	code, _, errOut := warped("epidemic", "--variant", "stochastic", "--num-locations", "8", "--population", "20", "--max-sim-time", "500",
		"--simulation-type", "sequential", "--report", path)
	require.Equal(t, 0, code, errOut)
	page, err := os.ReadFile(path)
	require.NoError(t, err)
	html := string(page)
	require.Contains(t, html, "No engine charts: engine samples are taken in time-warp and gpu runs only.")
	require.Equal(t, 1, strings.Count(html, "<svg"), "the disease states in one chart")
	require.Contains(t, html, ">recovered<")
}
