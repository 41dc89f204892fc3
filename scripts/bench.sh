#!/usr/bin/env bash
# Benchmarks recorded in docs/PERFORMANCE.md. Run on a quiet machine; compare ratios
# within one run. Usage: scripts/bench.sh [count]   (default 5 repetitions, report medians)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-5}
echo "== machine"; nproc; grep -m1 'model name' /proc/cpuinfo || true; go version
echo "== sequential dispatcher: PHOLD 16384 LPs end 500 and PCS 100x100 end 200"
go test -run XXX -bench 'Sequential' -benchtime 1x -count "$count" ./kernel/dispatch/
echo "== schedule queues and locks"
go test -run XXX -bench . -benchmem ./ltsf/
echo "== generator"
go test -run XXX -bench . -benchmem ./rng/
