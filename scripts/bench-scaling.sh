#!/usr/bin/env bash
# Scaling and robustness table of the time-warp engine (issue "Time warp that never waits"),
# kept in docs/PERFORMANCE.md with the machine and its load.
#
# Every case is run once per round, the rounds interleaved, and compared pair by pair
# (same round) against its baseline: the sequential dispatcher under the same conditions,
# or 2 workers, or mpirun -np 2. It prints, per case, the median committed rate and the
# median and quartiles of the per-round ratios.
#
# Usage: scripts/bench-scaling.sh [rounds]      (default 7)
# Environment:
#   WARPED=path      use this binary instead of building ./cmd/warped (with -tags mpi where
#                    mpirun is installed)
#   WORKERS="4 8 16" worker counts compared with 2 workers (16 cores: "1 2 4 8 16")
#   RANKS="4 8"      mpirun rank counts compared with -np 2 (skipped without mpirun)
#   RANKWORKERS="7"  also -np 2 with that many workers a rank, compared with the sequential run
#   MODELS="phold pcs"
#   NOHOG=1          skip the case with a CPU-bound process beside the run
#   LONG=1           add the long TQ-GVT run against the asynchronous one (needs mpirun)
#
# Where a rank count exceeds the CPUs and gcc is installed, it also runs scripts/turnbench.c
# in each round: that many processes taking turns on the cores (a yield every 64 event-sized
# work units, as a contended rank's turn) against as many as CPUs that do not yield, the
# rows "turns/N": what taking turns at the ranks' grain leaves, without the kernel. And
# the rows "cross/N": -np 2 with as large a share of events crossing ranks as N ranks send,
# against -np 2: what the partition's traffic leaves. Their product is what N ranks on
# the cores can reach against -np 2 (docs/PERFORMANCE.md, "The crowded node's ceiling").
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
workers=${WORKERS:-"4 8 16"}
ranks=${RANKS:-"4 8"}
models=${MODELS:-"phold pcs"}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
mpi="" tags=""
if command -v mpirun >/dev/null 2>&1; then
  mpi="mpirun --oversubscribe --allow-run-as-root --bind-to none" # bound to one core, a rank's manager waits for its worker
  if pkg-config --exists ompi-c 2>/dev/null; then tags=mpi; else tags=mpi,mpich; fi
fi
cpus=$(nproc)
turns="" crowded=""
for n in $ranks; do if [ "$n" -gt "$cpus" ]; then crowded="$crowded $n"; fi; done
if [ -n "$crowded" ] && command -v gcc >/dev/null 2>&1 && gcc -O2 -o "$tmp/turnbench" scripts/turnbench.c 2>/dev/null; then
  turns=$tmp/turnbench
fi
bin=${WARPED:-}
if [ -z "$bin" ]; then
  bin=$tmp/warped
  go build -tags "$tags" -o "$bin" ./cmd/warped
fi

echo "== $(date -u +%FT%TZ) $(uname -n), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "== uptime before: $(uptime)"

# Models run with their defaults: PHOLD is ROSS's configuration, PCS 100x100 cells to 200.
# rate CMD...: runs CMD and prints its committed events per second (0 when it failed or
# gave another digest than the sequential run of the same case).
rate() {
  local out
  out=$("$@" --progress=off 2>&1) || { echo 0; return; }
  local dg
  dg=$(echo "$out" | awk '/^digest:/ {print $2}' | tail -1)
  if [ -n "${want:-}" ] && [ "$dg" != "$want" ]; then
    echo "digest mismatch in: $*" >&2
    echo 0
    return
  fi
  echo "$out" | awk '/Committed events\/s:/ {print $3; exit}'
}

# turnrate N YIELD: all N turnbench processes' work units per second (1 MiB each, 12 M units).
turnrate() {
  "$turns" "$1" 12000000 64 1024 "$2" | awk '{ for (i = 1; i < NF; i++) if ($(i+1) == "M") print $i * 1e6 }'
}

# record CASE ROUND VALUE
record() { echo "$1 $2 $3" | tee -a "$tmp/results" >&2; }

hog() { (while :; do :; done) >/dev/null 2>&1 & echo $!; }

for r in $(seq 1 "$rounds"); do
  for m in $models; do
    want=""
    want=$("$bin" "$m" --simulation-type sequential --progress=off 2>/dev/null | awk '/^digest:/ {print $2}')
    # Idle machine: sequential, 2 workers, more workers.
    record "$m/sequential" "$r" "$(rate "$bin" "$m" --simulation-type sequential)"
    record "$m/2w" "$r" "$(rate "$bin" "$m" --time-warp-worker-threads 2)"
    for w in $workers; do
      record "$m/${w}w" "$r" "$(rate "$bin" "$m" --time-warp-worker-threads "$w")"
    done
    # One CPU-bound process beside the run, started and stopped around each run.
    if [ -z "${NOHOG:-}" ]; then
      h=$(hog); record "$m/sequential+hog" "$r" "$(rate "$bin" "$m" --simulation-type sequential)"; kill "$h"
      h=$(hog); record "$m/2w+hog" "$r" "$(rate "$bin" "$m" --time-warp-worker-threads 2)"; kill "$h"
    fi
  done
  # Fewer LPs per worker: PHOLD 2048 LPs, remote 0.5, end 2000.
  small="phold --lps 2048 --remote 0.5 --max-sim-time 2000"
  want=$("$bin" $small --simulation-type sequential --progress=off 2>/dev/null | awk '/^digest:/ {print $2}')
  record "small/sequential" "$r" "$(rate "$bin" $small --simulation-type sequential)"
  record "small/2w" "$r" "$(rate "$bin" $small --time-warp-worker-threads 2)"
  if [ -n "$mpi" ]; then
    record "small/np2" "$r" "$(rate $mpi -np 2 "$bin" $small --time-warp-worker-threads 1)"
    for n in $ranks; do
      record "small/np$n" "$r" "$(rate $mpi -np "$n" "$bin" $small --time-warp-worker-threads 1)"
    done
    if [ -n "$turns" ]; then
      record "turns/cpus" "$r" "$(turnrate "$cpus" 0)"
      for n in $crowded; do record "turns/$n" "$r" "$(turnrate "$n" 1)"; done
    fi
    # What the partition's traffic alone costs n ranks: -np 2 with the remote share that
    # sends as large a share of the events across ranks as n ranks do with remote 0.5
    # ((n-1)/n: half the remote events leave a rank at -np 2, (n-1)/n of them at -np n).
    for n in $crowded; do
      cross="phold --lps 2048 --remote $(awk -v n="$n" 'BEGIN { print (n - 1) / n }') --max-sim-time 2000"
      want=$("$bin" $cross --simulation-type sequential --progress=off 2>/dev/null | awk '/^digest:/ {print $2}')
      record "cross/$n" "$r" "$(rate $mpi -np 2 "$bin" $cross --time-warp-worker-threads 1)"
    done
    for w in ${RANKWORKERS:-}; do
      record "small/np2x$w" "$r" "$(rate $mpi -np 2 "$bin" $small --time-warp-worker-threads "$w")"
    done
    if [ -n "${LONG:-}" ]; then
      record "small/np2-async" "$r" "$(rate $mpi -np 2 "$bin" $small --time-warp-worker-threads 1)"
      record "small/np2-tq" "$r" "$(rate $mpi -np 2 "$bin" $small --time-warp-worker-threads 1 --time-warp-gvt-calculation-method tq)"
    fi
  fi
  echo "round $r of $rounds done ($(uptime | sed 's/.*load/load/'))" >&2
done

echo "== uptime after: $(uptime)"
# median: the median of the numbers on standard input, one a line.
median() {
  sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# quartiles: the first and third quartiles of the numbers on standard input, one a line
# (nearest rank), as "Q1 – Q3".
quartiles() {
  sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit; a = int((NR + 3) / 4); b = NR + 1 - a; printf "%.2f – %.2f", v[a], v[b] }'
}
# table CASE BASELINE: median rate of CASE, and the median and quartiles of its per-round
# ratio to BASELINE (the quartiles show how far the machine's noise moves the ratio).
table() {
  local n rate ratios ratio spread
  n=$(awk -v c="$1" '$1 == c' "$tmp/results" | wc -l)
  [ "$n" -gt 0 ] || return 0
  rate=$(awk -v c="$1" '$1 == c { print $3 / 1e6 }' "$tmp/results" | median)
  ratios=$(awk -v c="$1" -v b="$2" '$1 == c { v[$2] = $3 } $1 == b { base[$2] = $3 }
    END { for (r in v) if (base[r] > 0) print v[r] / base[r] }' "$tmp/results")
  ratio=$(echo "$ratios" | median)
  spread=$(echo "$ratios" | quartiles)
  printf "| %s | %s | %d | %.3f | %.3f | %s |\n" "$1" "$2" "$n" "$rate" "${ratio:-0}" "$spread"
}
echo
echo "| case | against | rounds | M events/s (median) | ratio (median of pairs) | ratio (quartiles) |"
echo "| --- | --- | --- | --- | --- | --- |"
for m in $models; do
  table "$m/2w" "$m/sequential"
  for w in $workers; do table "$m/${w}w" "$m/2w"; done
  table "$m/2w+hog" "$m/sequential+hog"
done
table "small/2w" "small/sequential"
table "small/np2" "small/sequential"
for n in $ranks; do table "small/np$n" "small/np2"; done
for n in $ranks; do table "turns/$n" "turns/cpus"; done
for n in $ranks; do table "cross/$n" "small/np2"; done
for w in ${RANKWORKERS:-}; do table "small/np2x$w" "small/sequential"; done
table "small/np2-tq" "small/np2-async"
