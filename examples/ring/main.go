// Command ring is the README's example model: a token passed around a ring of LPs.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
)

type state struct {
	Tokens uint64  // tokens received
	Last   float64 // time of the last one
}

type ringLP struct {
	kernel.Plain[state] // Snapshot, Restore and the digest, for a plain struct
	id, n               kernel.LPID
}

func (lp *ringLP) Name() string { return fmt.Sprintf("ring%d", lp.id) }

func (lp *ringLP) Init(ctx *kernel.Context) {
	if lp.id == 0 {
		ctx.Send(1, 1, nil) // the first token, to LP 1 at time 1
	}
}

func (lp *ringLP) Handle(ctx *kernel.Context, ev *kernel.Event) {
	lp.S.Tokens++
	lp.S.Last = ctx.Now()
	ctx.Send((lp.id+1)%lp.n, ctx.Now()+1, nil)
}

func main() {
	const n = 3
	lps := make([]kernel.LogicalProcess, n)
	for i := range lps {
		lps[i] = &ringLP{id: kernel.LPID(i), n: n}
	}
	sim, err := dispatch.New(kernel.Config{MaxSimTime: 10, Seed: 1}, lps)
	if err != nil {
		log.Fatal(err)
	}
	res, err := sim.Run(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	for _, lp := range lps {
		r := lp.(*ringLP)
		fmt.Printf("%s: %d tokens, last at %v\n", r.Name(), r.S.Tokens, r.S.Last)
	}
	fmt.Println("events:", res.EventsCommitted)
}
