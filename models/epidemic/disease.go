package epidemic

import (
	"math"

	"github.com/warpedgo/warped/kernel"
)

// probMultiplier is WARPED2's PROB_MULTIPLIER (DiseaseModel.hpp:8): its draws and
// probabilities are compared as integer percentages.
const probMultiplier = 100

// reactWARPED2 is WARPED2's reaction (DiseaseModel.hpp:36-116) at time now: one draw
// r in [0, 100) for the update (epidemic.cpp:31-33, DiseaseModel.hpp:63); each person's
// dwell times advanced (pttsWARPED2) and the people counted by state; then each person
// uninfected after that is infected when 1 - prod_s (1 - sigma T I_s)^(n_s (now - arrival))
// truncated to an integer, times 100, exceeds r (DiseaseModel.hpp:64-92: the truncation
// makes that 100 exactly when the difference rounds to 1.0 in double precision, since r is
// at most 99). An infected vaccinated person becomes latent when floor(100 ProbULV) > r,
// else stays uninfected when floor(100 (ProbURV + ProbULV)) > r, else becomes incubating;
// an unvaccinated one latent when floor(100 ProbULU) > r, else incubating (the same r:
// DiseaseModel.hpp:94-111). The parameters are WARPED2's floats (epidemic.cpp:109-150),
// so they are rounded to float32 first and the percentages computed in float32. An
// infection leaves the person's state-change time at 0 (pttsWARPED2 sets it, and
// DiseaseModel.hpp:98-110 does not change it).
func (l *Location) reactWARPED2(g *kernel.RNG, now uint32) {
	c := &l.m.Config
	r := uint32(g.Range(0, probMultiplier-1))
	var n [NumDiseaseStates]int
	dwell := [NumDiseaseStates]uint32{Latent: uint32(c.LatentDwell), Incubating: uint32(c.IncubatingDwell),
		Infectious: uint32(c.InfectiousDwell), Asymptomatic: uint32(c.AsymptDwell)}
	for i := range l.people {
		p := &l.people[i]
		pttsWARPED2(p, now, &dwell)
		n[p.State]++
	}
	if n[Uninfected] == 0 || n[Latent]+n[Incubating]+n[Infectious]+n[Asymptomatic] == 0 {
		return // nobody to infect, or every escape probability is 1 and so is its power
	}
	f32 := func(v float64) float64 { return float64(float32(v)) }
	t := f32(c.Transmissibility)
	inf := [...]float64{Latent: f32(c.LatentInfectivity), Incubating: f32(c.IncubatingInfectivity),
		Infectious: f32(c.InfectiousInfectivity), Asymptomatic: f32(c.AsymptInfectivity)}
	ulu, ulv, urvUlv := percent(c.ProbULU), percent(c.ProbULV), percent(c.ProbURV, c.ProbULV)
	for i := range l.people {
		p := &l.people[i]
		if p.State != Uninfected {
			continue
		}
		// The explicit conversions keep every product rounded on its own, as C++ does
		// without fused multiply-adds.
		st := float64(p.Susceptibility * t)
		prod := 1.0
		for s := Latent; s <= Asymptomatic; s++ {
			if n[s] > 0 {
				prod = float64(prod * math.Pow(1-float64(st*inf[s]), float64(n[s])))
			}
		}
		prob := 1 - math.Pow(prod, float64(now-p.Arrival))
		if uint32(prob)*probMultiplier <= r { // prob is in [0, 1]: 100 when it is 1.0, else 0
			continue
		}
		switch {
		case p.Vaccinated && ulv > r, !p.Vaccinated && ulu > r:
			p.State = Latent
		case p.Vaccinated && urvUlv > r:
			continue // WARPED2's vaccinated "recovered" branch sets UNINFECTED
		default:
			p.State = Incubating
		}
		l.stats.Infections++
	}
}

// percent is WARPED2's (unsigned int) ((p + ...) * PROB_MULTIPLIER) for float parameters
// (DiseaseModel.hpp:95-97,106): the sum and product in float32, then truncated. For 0.29 it
// is 29, where double arithmetic gives 28.
func percent(p ...float64) uint32 {
	var sum float32
	for _, v := range p {
		sum += float32(v)
	}
	return uint32(sum * probMultiplier)
}

// pttsWARPED2 is WARPED2's within-host progression (DiseaseModel.hpp:120-154): latent to
// infectious, incubating to asymptomatic, infectious to recovered and asymptomatic to
// uninfected, each when the time since the last change reaches the state's dwell time
// (dwell, indexed by the state left), tested in that order so that one call can take
// several steps; the change time advances by the dwell time, and is 0 for uninfected and
// recovered people.
func pttsWARPED2(p *Person, now uint32, dwell *[NumDiseaseStates]uint32) {
	if p.State == Latent && now-p.Since >= dwell[Latent] {
		p.State, p.Since = Infectious, p.Since+dwell[Latent]
	}
	if p.State == Incubating && now-p.Since >= dwell[Incubating] {
		p.State, p.Since = Asymptomatic, p.Since+dwell[Incubating]
	}
	if p.State == Infectious && now-p.Since >= dwell[Infectious] {
		p.State, p.Since = Recovered, p.Since+dwell[Infectious]
	}
	if p.State == Asymptomatic && now-p.Since >= dwell[Asymptomatic] {
		p.State, p.Since = Uninfected, p.Since+dwell[Asymptomatic]
	}
	if p.State == Uninfected || p.State == Recovered {
		p.Since = 0
	}
}

// updateStochastic is the stochastic variant's update: advance every person's dwell times
// (asymptomatic people recover), count the people by state, then infect each uninfected
// person by a draw of its own with probability 1 - prod_s (1 - T I_s)^n_s, and choose
// latent, recovered or incubating by a second draw.
func (l *Location) updateStochastic(g *kernel.RNG, now uint32) {
	c := &l.m.Config
	var n [NumDiseaseStates]int
	for i := range l.people {
		p := &l.people[i]
		advance := func(from, to Disease, dwell int) {
			if p.State == from && now-p.Since >= uint32(dwell) {
				p.State = to
				p.Since += uint32(dwell)
			}
		}
		advance(Latent, Infectious, c.LatentDwell)
		advance(Incubating, Asymptomatic, c.IncubatingDwell)
		advance(Infectious, Recovered, c.InfectiousDwell)
		advance(Asymptomatic, Recovered, c.AsymptDwell)
		n[p.State]++
	}
	if n[Uninfected] == 0 {
		return
	}
	q := math.Pow(1-c.Transmissibility*c.LatentInfectivity, float64(n[Latent])) *
		math.Pow(1-c.Transmissibility*c.IncubatingInfectivity, float64(n[Incubating])) *
		math.Pow(1-c.Transmissibility*c.InfectiousInfectivity, float64(n[Infectious])) *
		math.Pow(1-c.Transmissibility*c.AsymptInfectivity, float64(n[Asymptomatic]))
	if q >= 1 {
		return // nobody infectious here
	}
	for i := range l.people {
		p := &l.people[i]
		if p.State != Uninfected || g.Uniform() <= q {
			continue
		}
		u := g.Uniform()
		switch {
		case !p.Vaccinated && u <= c.ProbULU, p.Vaccinated && u <= c.ProbULV:
			p.State = Latent
		case p.Vaccinated && u <= c.ProbULV+c.ProbURV:
			p.State = Recovered
		default:
			p.State = Incubating
		}
		p.Since = now
		l.stats.Infections++
	}
}
