#!/usr/bin/env bash
# Schedule queue table (issue 29, item 1), kept in docs/PERFORMANCE.md with the machine and
# its load: every --time-warp-queue-type on PHOLD, PCS and a logic circuit, with 1 worker,
# 2 workers with a queue each, and 2 workers sharing one queue, beside the sequential
# dispatcher (which keeps the calendar: it is the digests' reference).
#
# Every case is run once per round, the rounds interleaved; every run's digest is checked
# against the sequential one. It prints, per model and case, the median committed rate
# (M events/s) and the range, and each queue's median ratio to the calendar in the same
# round and arrangement.
#
# Usage: scripts/bench-queues.sh [rounds]      (default 3)
# Environment:
#   WARPED=path  use this binary instead of building ./cmd/warped
#   TYPES="calendar heap"  the queue types (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
types=${TYPES:-"calendar heap splay ladder parallel-heap"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=${WARPED:-}
if [ -z "$bin" ]; then
  bin=$tmp/warped
  go build -o "$bin" ./cmd/warped
fi
declare -A models=(
  [phold]="phold --max-sim-time 100"
  [pcs]="pcs"
  [logic]="logic --circuit multiplier-32 --num-vectors 500"
)
arrangements=("1w:--time-warp-worker-threads 1" "2w:--time-warp-worker-threads 2"
  "2w-shared:--time-warp-worker-threads 2 --time-warp-scheduler-count 1")

echo "== $(date -u +%FT%TZ) $(uname -n), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "== uptime before: $(uptime)"

# rate CMD...: runs CMD and prints its committed events per second (0 when it failed or
# gave another digest than the sequential run).
rate() {
  local out dg
  out=$("$@" --gpu off --progress=off 2>&1) || { echo "failed: $*" >&2; echo 0; return; }
  dg=$(echo "$out" | awk '/^digest:/ {print $2}' | tail -1)
  if [ -n "${want:-}" ] && [ "$dg" != "$want" ]; then
    echo "digest mismatch in: $*" >&2
    echo 0
    return
  fi
  echo "$out" | awk '/Committed events\/s:/ {print $3; exit}'
}

for r in $(seq 1 "$rounds"); do
  for m in phold pcs logic; do
    want=""
    want=$("$bin" ${models[$m]} --simulation-type sequential --progress=off 2>/dev/null | awk '/^digest:/ {print $2}')
    echo "$m sequential $r $(rate "$bin" ${models[$m]} --simulation-type sequential)" >>"$tmp/results"
    for a in "${arrangements[@]}"; do
      for q in $types; do
        echo "$m ${a%%:*}/$q $r $(rate "$bin" ${models[$m]} ${a#*:} --time-warp-queue-type "$q")" >>"$tmp/results"
      done
    done
  done
  echo "round $r of $rounds done ($(uptime | sed 's/.*load/load/'))" >&2
done
echo "== uptime after: $(uptime)"

median() {
  sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
echo
echo "| model | case | M events/s, median (range) | of the calendar's (median of rounds) |"
echo "| --- | --- | --- | --- |"
for m in phold pcs logic; do
  for c in sequential $(for a in "${arrangements[@]}"; do for q in $types; do echo "${a%%:*}/$q"; done; done); do
    med=$(awk -v m="$m" -v c="$c" '$1 == m && $2 == c { print $4 / 1e6 }' "$tmp/results" | median)
    lo=$(awk -v m="$m" -v c="$c" '$1 == m && $2 == c { print $4 / 1e6 }' "$tmp/results" | sort -g | head -1)
    hi=$(awk -v m="$m" -v c="$c" '$1 == m && $2 == c { print $4 / 1e6 }' "$tmp/results" | sort -g | tail -1)
    base=${c%%/*}/calendar
    ratio=$(awk -v m="$m" -v c="$c" -v b="$base" '$1 == m && $2 == c { v[$3] = $4 } $1 == m && $2 == b { w[$3] = $4 }
      END { for (r in v) if (w[r] > 0) print v[r] / w[r] }' "$tmp/results" | median)
    [ "$c" = sequential ] && ratio=""
    printf "| %s | %s | %.3f (%.3f – %.3f) | %s |\n" "$m" "$c" "$med" "$lo" "$hi" "${ratio:+$(printf %.2f "$ratio")}"
  done
done
