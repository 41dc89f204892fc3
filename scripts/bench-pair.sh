#!/usr/bin/env bash
# Paired rounds of two builds of warped against the sequential dispatcher, without and with
# a CPU-bound process beside the run (issue "Time warp that never waits", item 5).
#
# In each round, for PHOLD and PCS with their defaults (time warp with the default workers),
# it runs OLD's sequential dispatcher, then OLD, then NEW, first on their own and then with
# `sh -c 'while :; do :; done'` running beside them, and prints per case the median rates and
# the medians (and ranges) of OLD's and NEW's per-round ratios to the sequential rate.
#
# Usage: scripts/bench-pair.sh OLD NEW [rounds]      (binaries of ./cmd/warped; default 7)
set -euo pipefail
old=$1 new=$2 rounds=${3:-7}
tmp=$(mktemp -d)
hog=""
trap '[ -n "$hog" ] && kill "$hog" 2>/dev/null; rm -rf "$tmp"' EXIT
rate() { "$@" --progress=off --gpu off 2>/dev/null | awk '/Committed events\/s:/ {print $3}'; }
echo "== $(date -u +%FT%TZ) $(uname -n), $(nproc) CPUs; uptime before: $(uptime)"
for r in $(seq 1 "$rounds"); do
  for withhog in 0 1; do
    if [ "$withhog" = 1 ]; then
      sh -c 'while :; do :; done' &
      hog=$!
    fi
    for m in phold pcs; do
      echo "$withhog $m $(rate "$old" "$m" --simulation-type sequential) $(rate "$old" "$m") $(rate "$new" "$m")" >>"$tmp/r"
    done
    if [ -n "$hog" ]; then
      kill "$hog" 2>/dev/null || true
      wait "$hog" 2>/dev/null || true
      hog=""
    fi
  done
done
echo "== uptime after: $(uptime)"
python3 - "$tmp/r" <<'PY'
import collections, statistics as st, sys
g = collections.defaultdict(list)
for line in open(sys.argv[1]):
    hog, m, s, o, n = line.split()
    s, o, n = float(s), float(o), float(n)
    if s > 0:
        g[(m, hog == "1")].append((s, o, n, o / s, n / s))
print("| case | sequential M/s | old M/s | new M/s | old / seq | new / seq |")
print("| --- | --- | --- | --- | --- | --- |")
for (m, hog), v in sorted(g.items()):
    med = lambda i: st.median(x[i] for x in v)
    rng = lambda i: "%.2f (%.2f – %.2f)" % (med(i), min(x[i] for x in v), max(x[i] for x in v))
    print("| %s%s | %.2f | %.2f | %.2f | %s | %s |" % (m, " + CPU hog" if hog else "", med(0) / 1e6, med(1) / 1e6, med(2) / 1e6, rng(3), rng(4)))
PY
