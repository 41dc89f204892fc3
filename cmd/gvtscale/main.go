// Command gvtscale measures, in a model, how the GVT methods between processes scale with
// the number of ranks: GVT values agreed per second, GVT lag and GVT control messages per
// value for Mattern's token (asynchronous), the all-gather (synchronous) and TQ-GVT (tq,
// with the kernel's tree of masters above 16 ranks, and tq-flat without it).
//
// The model is a discrete-event simulation of every rank's manager and of the network,
// with a latency per message and a manager time to put each message out and take it in
// (so that a master's reports queue up); it drives the kernel's own GVT cores (gvt.Mattern,
// gvt.TQ, gvt.TQMaster) with aggregated event traffic between random ranks. It runs 2 to
// 1,024 ranks in a few seconds in one process, with results that do not depend on the
// host's load. It prints a Markdown table and, with -plot, writes a PNG.
//
// Usage:
//
//	gvtscale [-ranks 2,4,...,1024] [-latency 5] [-handle 1] [-send 0.5] [-period 2000]
//	         [-local 20] [-horizon 500000] [-plot docs/gvt-scale.png]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gvtscale:", err)
		os.Exit(2)
	}
}

func run(args []string, out io.Writer) error {
	p := DefaultParams()
	fs := flag.NewFlagSet("gvtscale", flag.ContinueOnError)
	ranks := fs.String("ranks", "2,4,8,16,32,64,128,256,512,1024", "comma-separated rank counts")
	fs.Float64Var(&p.Latency, "latency", p.Latency, "network latency per message (µs)")
	fs.Float64Var(&p.Handle, "handle", p.Handle, "manager time to take one message in (µs)")
	fs.Float64Var(&p.Send, "send", p.Send, "manager time to put one message out (µs)")
	fs.Float64Var(&p.Period, "period", p.Period, "GVT period and TQ-GVT quantum (µs)")
	fs.Float64Var(&p.Local, "local", p.Local, "duration of a local GVT round (µs)")
	fs.Float64Var(&p.Horizon, "horizon", p.Horizon, "modelled wall time of each run (µs)")
	fs.Uint64Var(&p.Seed, "seed", p.Seed, "seed of the traffic and drift")
	plotPath := fs.String("plot", "", "write a PNG plot of the results to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; see -h", fs.Arg(0))
	}
	var counts []int
	for _, f := range strings.Split(*ranks, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			return fmt.Errorf("-ranks: %q is not a rank count of at least 2", f)
		}
		counts = append(counts, n)
	}
	fmt.Fprintf(out, "latency %g µs, handle %g µs, send %g µs, period %g µs, local round %g µs, %g s modelled per run\n\n",
		p.Latency, p.Handle, p.Send, p.Period, p.Local, p.Horizon/1e6)
	fmt.Fprintln(out, "| ranks | method | GVT values/s | mean lag (ms) | max lag (ms) | messages per value | rank 0 busy |")
	fmt.Fprintln(out, "|---:|---|---:|---:|---:|---:|---:|")
	var all []Result
	for _, n := range counts {
		for _, method := range methods {
			q := p
			q.Ranks = n
			r, err := Run(method, q)
			if err != nil {
				return err
			}
			all = append(all, r)
			fmt.Fprintf(out, "| %d | %s | %.0f | %.2f | %.2f | %.0f | %.1f%% |\n", n, method, r.RoundsPerSec,
				r.LagMean/1e3, r.LagMax/1e3, r.MsgsPerRound, 100*r.MasterBusy)
		}
	}
	if *plotPath != "" {
		return writePlot(*plotPath, all)
	}
	return nil
}
