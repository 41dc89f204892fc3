package app

// The models' standing against WARPED2's sources, printed by 'warped help <model>'. Each
// lists what remains different, with the file and line of WARPED2's behaviour; the model
// packages' docs say the same at more length. Every WARPED2 run handles the events at its
// end time too (wilseypa/warped2, src/SequentialEventDispatcher.cpp:38 and :55): give
// --max-sim-time-inclusive to match it.

const pcsWARPED2 = `  The default is WARPED2's PCS (models/pcs/pcs_sim.cpp): its parameters and defaults, its
  three draws per portable and min_ts (ties go to the move), every delay a Poisson draw
  plus TS_OFFSET 1 (line 15), the move-out adding TS_OFFSET to the completion, next-call
  and move times (its later revision; the one with TS_OFFSET and initializeObject sends
  the move-in at the move time, lines 157-169), and a move of one hop in a uniformly
  random direction (random_move and compute_move, every stored revision; --max-hops N > 1
  moves 1 to N hops instead). Still different:
  - the end time: use --max-sim-time-inclusive (WARPED2 handles timestamps <= the end);
  - random numbers: WARPED2 seeds each cell's std::default_random_engine with the cell's
    index (pcs_sim.hpp); here each cell's generator comes from --seed and the cell, so the
    streams differ while the distributions agree.
`

const trafficWARPED2 = `  WARPED2's traffic model (models/traffic): its parameters and defaults, MAX_CARS_ON_ROAD 5,
  each intersection's cars drawn from its own generator (traffic.hpp at 059e660a:128),
  one initial heading per intersection shared by its cars (traffic.cpp at 18a8a0e:20-22)
  and destinations in [-99, 100] on each axis (lines 24-25). Still different:
  - the end time: use --max-sim-time-inclusive (WARPED2 handles timestamps <= the end);
  - random numbers: generators from --seed and the intersection, not the index alone;
  - delays: each step takes 1 + floor(e) (ceil(e) but on a set of probability 0); 18a8a0e
    truncates without an offset, so a step can take 0 there (traffic.cpp:30);
  - lanes and full roads: WARPED2 picks among twelve lanes and, when every useful road is
    full, sends a car on by where it came from without updating its distance to go
    (DIRECTION_SELECT); here a car goes straight on when that helps, else along x, then
    y, waits a delay per full road (Full roads found) and queues on the first useful one,
    so every trip ends; the shared initial heading is one of four, not of twelve lanes;
  - the results add the average travel time and the cars left in lanes and on roads.
`

const airportWARPED2 = `  --variant warped2 is WARPED2's airport (models/airport, the revision with initializeLP):
  no runways, Departure and Arrival only, each plane's first departure at
  ceil(exponential(ground time)) (airport.cpp:19-22), DEPARTURE and ARRIVAL as its
  receiveEvent (lines 41-49, 51-59), num_planes grounded at the start (airport.hpp). The
  default, --variant runways, adds Fujimoto's runway contention. Still different in
  --variant warped2:
  - the end time: use --max-sim-time-inclusive (WARPED2 handles timestamps <= the end);
  - random numbers: WARPED2 seeds each airport's generator with its index (airport.hpp);
    here each airport's generator comes from --seed and the airport;
  - a delay is at least 1 (WARPED2's ceiling is 0 for a draw of 0, or a mean of 0);
  - the results add landings, holds and delays (0 without runways).
`
