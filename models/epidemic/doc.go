// Package epidemic is WARPED2's epidemic model (wilseypa/warped2-models, models/epidemic;
// file:line references below are to its epidemic.cpp, epidemic.hpp, DiseaseModel.hpp and
// Person.hpp at commit e6ce937, Graph.hpp at ea12a87, config/createConfig.cpp at 3f49666,
// and the DiffusionNetwork.hpp that takes the location's generator): people live in
// locations (one LP each), travel between them along a network, and catch a disease within
// each location.
//
// A person (Person.hpp) has an id, a susceptibility, a vaccination status, a disease state
// (uninfected, latent, incubating, infectious, asymptomatic or recovered), the time of its
// last state change and the time it arrived where it is. The event kinds are WARPED2's
// (epidemic.hpp:40-45, epidemic.cpp:22-75): DiseaseUpdateTrigger (every RefreshInterval a
// location runs the disease model), DiffusionTrigger (every diffusion interval a location
// sends a random person of its own to a random neighbour) and Diffusion (the person
// arrives).
//
// # Variants
//
// The WARPED2 variant (the default, Config.Variant WARPED2, warped epidemic --variant
// warped2) follows WARPED2's rules:
//
//   - The disease update (DiseaseModel.hpp:36-116, reactWARPED2) draws one number r in
//     [0, 100) for the location (epidemic.cpp:31-33, DiseaseModel.hpp:63), advances every
//     person's dwell times (DiseaseModel.hpp:120-154: latent to infectious, incubating to
//     asymptomatic, infectious to recovered, asymptomatic back to uninfected, line 146;
//     several steps in one update when the times allow; the change time is 0 while
//     uninfected or recovered, and an infection does not set it), counts the people by
//     state, and infects an uninfected person when the integer part of
//     1 - prod_s (1 - sigma T I_s)^(n_s (t - arrival)) times 100 exceeds r
//     (DiseaseModel.hpp:64-92; sigma the person's susceptibility, T the transmissibility,
//     I_s and n_s the infectivity and count of state s, t - arrival the time since the
//     person arrived). The integer part is 1 only when the difference rounds to 1.0, so a
//     person is infected, whatever r, once it has stayed long enough beside infectious
//     people: WARPED2's runs infect most of the population. The same r then picks the new
//     state (DiseaseModel.hpp:94-111): an unvaccinated person latent when
//     floor(100 ProbULU) > r, else incubating; a vaccinated one latent when
//     floor(100 ProbULV) > r, else uninfected (line 101: the branch named for recovery
//     leaves the person uninfected) when floor(100 (ProbULV + ProbURV)) > r, else
//     incubating. So ProbULV + ProbURV may exceed 1 (its generator writes 0.9 and 0.5,
//     createConfig.cpp:27-28).
//   - A departure (epidemic.cpp:39-60) draws a neighbour, then, if anyone is there, a
//     person (the n-th in id order, as WARPED2's map by pid), who arrives after the two
//     locations' travel times to the hub (DiffusionNetwork.hpp:34). Each location has its
//     own travel time to the hub and diffusion interval (epidemic.cpp:185-189).
//   - The network is WARPED2's Watts-Strogatz (Graph.hpp:44-96: k/2 neighbours on the left
//     and k - k/2 on the right of a ring; then for every node i and every node j still
//     joined to i, with probability beta, truncated to 1/10000 (line 58), the edges i-j and
//     i-t are deleted for a random t, lines 90-93: nothing is added) or its Barabasi-Albert
//     (Graph.hpp:99-157, --network barabasi-albert).
//   - Generated populations (Generate) follow createConfig.cpp:92-126: travel times to the
//     hub in [50, 400), diffusion intervals in [200, 500), people numbered from 1, each
//     vaccinated with probability 1/2, in a state drawn uniformly from the six, with
//     susceptibility "0." followed by a number below 100 read as a decimal (so 0.5 from 5,
//     never 0.05). The defaults are createConfig.cpp's parameters (lines 13-44).
//   - ReadConfigFile reads WARPED2's configuration, the comma-separated text
//     createConfig.cpp writes and epidemic.cpp:100-245 reads (warped epidemic
//     --warped2-config FILE), so a WARPED2 study can be rerun from its files.
//
// The Stochastic variant (--variant stochastic) is this package's own reading, kept
// because its runs show a textbook epidemic wave: each uninfected person is infected by a
// draw of its own with probability 1 - prod_s (1 - T I_s)^n_s each update (no truncation,
// no susceptibility, no exponent for the time since arrival); a second draw picks latent,
// recovered (for the vaccinated below ProbULV + ProbURV) or incubating, and an infection
// sets the change time; asymptomatic people recover; a fraction InitialInfected of the
// people start latent and a fraction Vaccinated are vaccinated; every location has the
// same DiffusionInterval and a trip takes TravelTime; its Watts-Strogatz rewiring moves an
// edge to a random free node. Its defaults are its own (Defaults).
//
// # Where the WARPED2 variant still differs from WARPED2
//
//   - Random numbers come from the kernel's generator of each LP (seeded from the run's
//     seed), not from a std::default_random_engine seeded with the location's index in its
//     region (epidemic.hpp:109; locations of different regions with the same index share a
//     seed there), and the network and generated populations from DiffusionSeed, not from a
//     default-seeded engine (Graph.hpp:75,130) and rand() (createConfig.cpp:98-126). Runs
//     agree with WARPED2's in distribution, not draw for draw; a neighbour is drawn by index
//     rather than by its place in WARPED2's name-ordered map (DiffusionNetwork.hpp:15-30),
//     the same uniform choice.
//   - Generated configurations are one location size (Population people) and 1000
//     locations by default, named ten to a region; createConfig.cpp:34-40 writes 25,000
//     regions of 10 locations of 100 people.
//   - Inputs WARPED2 takes silently are refused with an error: probabilities,
//     transmissibility and susceptibilities outside [0, 1], zero intervals or travel times
//     (an endless loop at one instant), a person id used twice (WARPED2's map drops the
//     second person, epidemic.hpp:37), fewer than 2 locations, fewer than 3 with rewiring
//     (WARPED2 then loops forever, Graph.hpp:86-89), and any malformed line of a
//     configuration file (WARPED2 reads with stoul and stof, epidemic.cpp:100-245). Ids are
//     32-bit (unsigned long in Person.hpp).
//   - Floating point: math.Pow may differ from the C library's pow in the last bit, which
//     matters only when an escape probability is within a rounding of the truncation.
//   - WARPED2 writes a heatmap of each location's fraction of infectious or recovered
//     people at the start and the end (epidemic.cpp:275-315); this model keeps counts
//     instead (below). Locations are named Location_<index>, not WARPED2's region and
//     location names (epidemic.cpp:181), which Site.Name keeps. The end time and the order
//     of events at one instant are the kernel's.
//   - ProbUIV and ProbUIU are read and unused, as in WARPED2 (DiseaseModel.hpp stores them
//     and never reads them).
//
// # Observation
//
// A last LP, the observer, collects each location's counts every SampleInterval (a Sample
// event at each location, reported to the observer one time unit later): Results.Series is
// the time series of the counts summed over locations. At each sample every location also
// records its counts as the model's series through the kernel (kernel.Context.Record, one
// series per disease state, named by Disease.String): with kernel.Config.RecordSeries set,
// Result.Series holds them (committed values only), and summed over locations at each time
// they are Results.Series (warped epidemic --series-file, warped plot).
//
// Locations do not implement Reverse: an update changes the disease states of many people
// by rules whose outcome the state after does not record, so the model runs with periodic
// state saving. A location's state is its people (a slice, saved by copying).
package epidemic
