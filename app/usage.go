package app

import (
	"fmt"
	"strings"
)

// usage is the program's help text.
func (c *Command) usage() string {
	var b strings.Builder
	n := c.name
	fmt.Fprintf(&b, "%s: models on the warped Time Warp parallel discrete-event simulation kernel\n\n", n)
	fmt.Fprintf(&b, "Usage:\n  %[1]s <model> [flags]   run a model\n  %[1]s help <name>       a model's flags, or a command's usage\n"+
		"  %[1]s devices           list the GPU offload backends and their devices\n"+
		"  %[1]s study SPEC        run a parameter study (%[1]s study --help)\n"+
		"  %[1]s plot FILE...      draw a --sample-file or --series-file as charts, or compare --stats-file runs (%[1]s plot --help)\n"+
		"  %[1]s version           print the module version, commit, Go version and build tags\n\nModels:\n", n)
	for _, m := range c.models {
		fmt.Fprintf(&b, "  %-8s %s\n", m.Name, m.Summary)
	}
	if len(c.models) > 0 {
		fmt.Fprintf(&b, "\nExample: %s %s --max-sim-time 100\n", n, c.models[0].Name)
	}
	return b.String()
}

// modelUsage lists model m's flags with their defaults, by group.
func (c *Command) modelUsage(m *Model) string {
	var o options
	fs, _ := newFlagSet(m, &o)
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s %s [flags]\n\n%s.\n\n", c.name, m.Name, m.Summary)
	if m.Notes != "" {
		fmt.Fprintf(&b, "%s\n", m.Notes)
	}
	b.WriteString("Flags (--flag value or --flag=value; a boolean alone means true):\n")
	writeFlagHelp(&b, fs) // flags.go
	if rs := (catalog{c}).results(m.Name); len(rs) > 0 {
		// What a study's results and a stats file's "results" name (the kernel's own
		// statistics, efficiency and the like, come beside them).
		b.WriteString("\nResults (keys of --stats-file's results and of a study's results):\n")
		for _, r := range rs {
			fmt.Fprintf(&b, "  %-28s %s\n", r.Key, r.Label)
		}
	} else if m.DynamicResults {
		b.WriteString("\nResults: their keys depend on the flags; a run's totals list them.\n")
	}
	if m.Against != "" {
		fmt.Fprintf(&b, "\n%s", m.Against)
	}
	return b.String()
}
