#!/usr/bin/env bash
# The GPU machine's measurements, prepared to run in one call of at most BUDGET seconds
# (default 420): the device loop's correctness on the GPU (gpuwarp's digest tests), PHOLD
# with --simulation-type gpu at the configurations of Liu and Andelfinger's paper (up to
# 2^20 LPs, event densities 1 and 8) and ROSS's, against time warp on every core; PCS and
# Kademlia (on the loop's state saving) likewise; the loop with the host waiting for each
# chunk against chunks queued ahead, and with --sample-file; studies of many small PHOLD
# runs on the CPU against all their runs in one device loop; and issue 25's 16-core
# scaling table, with per-worker samples of PHOLD at 8 and 16 workers (where the time goes,
# should 16 be slower than 8) left in $OUT. SCALING=0 leaves out the scaling table, CPU=0 the CPU runs, STUDY=1 runs
# the studies alone. Everything is printed and written to $OUT/device.txt.
#
# Build here, then run there (see docs/PERFORMANCE.md, "The whole time warp on the GPU"):
#   go build -tags mpi -o .device/warped ./cmd/warped
#   CGO_ENABLED=0 go test -c -o .device/gpuwarp.test ./gpuwarp
#   CGO_ENABLED=0 go test -c -o .device/pcs.test ./models/pcs
#   CGO_ENABLED=0 go test -c -o .device/kademlia.test ./models/kademlia
#   (on the GPU machine) scripts/device-gpu.sh
set -u
cd "$(dirname "$0")/.."
B=${B:-.device}
W=$B/warped
OUT=${OUT:-/tmp/device-out}
mkdir -p "$OUT"
deadline=$(($(date +%s) + ${BUDGET:-420}))
exec > >(tee -a "$OUT/device.txt") 2>&1

left() { echo $((deadline - $(date +%s))); }
# run LABEL T ARGS...: one PHOLD run of at most T seconds (less when the budget is short),
# summarized on one line: committed events, rate, efficiency, wall time, digest.
run() {
  local label=$1 t=$2 l out
  shift 2
  l=$(left)
  if [ "$l" -lt 15 ]; then echo "$label: skipped, budget spent"; return; fi
  [ "$t" -gt $((l - 10)) ] && t=$((l - 10))
  out=$(timeout "$t" "$W" "$@" --progress=off 2>&1)
  local rc=$?
  echo "$out" | awk -v l="$label" -v rc=$rc '
    /Events committed:/ {c=$3} /Committed events\/s:/ {r=$3} /Efficiency:/ {e=$2} /Wall time:/ {w=$3}
    /^digest:/ {d=substr($2,1,12)} /failed|error|Error/ {err=$0}
    /Iterations:/ {it=" it=" $2} /Optimism bound:/ {b=" bound=" $3} /Passes per iteration:/ {sub(",", "", $6); p=" passes=" $6 " inact=" $11}
    /Events returned for room:/ {ret=" returned=" $NF} /Device loop:/ {lr=" loop=" $3 "s looprate=" $5}
    /Safe events/ {sf=" safe=" $NF}
    END {printf "%-34s rc=%d committed=%s rate=%s eff=%s wall=%ss digest=%s%s%s%s%s%s%s %s\n", l, rc, c, r, e, w, d, it, b, p, ret, lr, sf, err}'
}

# cpu LABEL T ARGS...: run, unless CPU=0 (a rerun of the GPU figures alone).
cpu() { [ "${CPU:-1}" = 1 ] && run "$@"; }

echo "== $(date -u +%FT%TZ) $(uname -n), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
echo "== uptime: $(uptime)"

if [ "${STUDY:-0}" != 1 ]; then
echo "== 1. gpuwarp's digest tests on the GPU"
timeout 120 "$B/gpuwarp.test" -test.run 'PHOLD|Fold|RunMany' -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)|committed|Error|expected|actual' | head -40
[ -x "$B/pcs.test" ] && timeout 120 "$B/pcs.test" -test.run 'Device' -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)|Error|expected|actual' | head -30
[ -x "$B/kademlia.test" ] && timeout 120 "$B/kademlia.test" -test.run 'Device' -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)|Error|expected|actual' | head -30
echo "-- counters read asynchronously: the host waiting for each chunk (queue=1) against two chunks queued ahead (queue=3)"
timeout 90 "$B/gpuwarp.test" -test.run '^$' -test.bench Queue -test.benchtime 3x 2>&1 | grep -E '^Benchmark|FAIL|Error|panic'

echo "== 2. PHOLD, ROSS's configuration (16384 LPs, remote 0.25, mean 1, lookahead 0.1)"
cpu "sequential, end 200" 60 phold --simulation-type sequential --max-sim-time 200
cpu "time-warp 16 workers, end 1000" 60 phold --simulation-type time-warp --gpu off --max-sim-time 1000
run "gpu tuned, end 200 (seq digest)" 60 phold --simulation-type gpu --max-sim-time 200
run "gpu tuned, end 1000" 60 phold --simulation-type gpu --max-sim-time 1000
run "gpu bound 1, end 1000" 60 phold --simulation-type gpu --max-sim-time 1000 --gpu-bound 1
run "gpu bound 4 exec 2, end 1000" 60 phold --simulation-type gpu --max-sim-time 1000 --gpu-bound 4 --gpu-executions 2
run "gpu tuned, end 1000, --sample-file" 60 phold --simulation-type gpu --max-sim-time 1000 --sample-file "$OUT/gpu-samples.csv"
[ -f "$OUT/gpu-samples.csv" ] && echo "  sample rows: $(($(wc -l <"$OUT/gpu-samples.csv") - 1)), last: $(tail -1 "$OUT/gpu-samples.csv" | cut -d, -f1-7,22-23)"

echo "== 3. PHOLD, the paper's sizes"
run "2^20 LPs d1 gpu tuned, end 100" 60 phold --lps 1048576 --simulation-type gpu --max-sim-time 100
run "2^20 LPs d1 gpu b0.5 x4 i0.01, end 100" 60 phold --lps 1048576 --simulation-type gpu --max-sim-time 100 --gpu-bound 0.5 --gpu-executions 4 --gpu-inactivity 0.01
run "2^20 LPs d1 gpu bound 0.25, end 100" 60 phold --lps 1048576 --simulation-type gpu --max-sim-time 100 --gpu-bound 0.25
cpu "2^20 LPs d1 time-warp 16w, end 10" 60 phold --lps 1048576 --simulation-type time-warp --gpu off --max-sim-time 10
run "2^20 LPs d8 gpu tuned, end 20" 60 phold --lps 1048576 --start-events 8 --simulation-type gpu --max-sim-time 20
cpu "2^20 LPs d8 time-warp 16w, end 2" 60 phold --lps 1048576 --start-events 8 --simulation-type time-warp --gpu off --max-sim-time 2
run "2^16 LPs d1 gpu tuned, end 300" 60 phold --lps 65536 --simulation-type gpu --max-sim-time 300
echo "-- same digest at scale: 2^18 LPs d4, end 10"
cpu "2^18 d4 time-warp 16w" 60 phold --lps 262144 --start-events 4 --simulation-type time-warp --gpu off --max-sim-time 10
run "2^18 d4 gpu" 60 phold --lps 262144 --start-events 4 --simulation-type gpu --max-sim-time 10
run "2^18 d4 gpu slots 16 (overflows)" 30 phold --lps 262144 --start-events 4 --simulation-type gpu --gpu-slots 16 --max-sim-time 10
cpu "pcs sequential" 60 pcs --simulation-type sequential
cpu "pcs time-warp 16w" 60 pcs --simulation-type time-warp --gpu off
run "pcs gpu" 60 pcs --simulation-type gpu
run "pcs gpu slots 32" 60 pcs --simulation-type gpu --gpu-slots 32
run "pcs 200x200 gpu, end 400" 60 pcs --num-cells-x 200 --num-cells-y 200 --max-sim-time 400 --simulation-type gpu
cpu "pcs 200x200 time-warp 16w, end 400" 60 pcs --num-cells-x 200 --num-cells-y 200 --max-sim-time 400 --simulation-type time-warp --gpu off
echo "-- Kademlia (k 20, alpha 3): device loop on state saving against time warp on every core"
cpu "kademlia sequential" 60 kademlia --simulation-type sequential
run "kademlia gpu (seq digest)" 60 kademlia --simulation-type gpu
cpu "kademlia time-warp 16w" 60 kademlia --simulation-type time-warp --gpu off
run "kademlia 2^16 nodes gpu, end 4000" 60 kademlia --nodes 65536 --max-sim-time 4000 --simulation-type gpu
cpu "kademlia 2^16 nodes time-warp 16w, end 4000" 60 kademlia --nodes 65536 --max-sim-time 4000 --simulation-type time-warp --gpu off
run "kademlia 2^20 nodes gpu, end 1000" 90 kademlia --nodes 1048576 --max-sim-time 1000 --simulation-type gpu
run "2^20 LPs d1 gpu tuned, end 1000" 60 phold --lps 1048576 --simulation-type gpu --max-sim-time 1000
echo "-- each kernel's time (--gpu-profile waits for every launch)"
for cfg in "--max-sim-time 200" "--lps 1048576 --max-sim-time 20"; do
  [ "$(left)" -gt 40 ] && timeout 30 "$W" phold --simulation-type gpu $cfg --gpu-profile --progress=off 2>&1 | grep -E '^(kernel|wtw_|host:)|Device loop|Wall time' | sed "s/^/  [$cfg] /"
done

fi

echo "== 4. studies of many small PHOLD runs: the CPU against one device loop for all runs (the paper's 25x)"
# study MODE SPEC ARGS...: one study, timed, with its plan and its device line.
study() {
  local mode=$1 spec=$2 l s rc
  shift 2
  l=$(left)
  if [ "$l" -lt 40 ]; then echo "study $mode: skipped, budget spent"; return; fi
  rm -rf "/tmp/study-$mode"
  s=$(date +%s%N)
  timeout $((l > 130 ? 90 : l - 40)) "$W" study "$spec" --out "/tmp/study-$mode" --progress off "$@" >"/tmp/study-$mode.log" 2>&1
  rc=$?
  echo "study $mode: rc=$rc wall=$(( ($(date +%s%N) - s) / 1000000 )) ms; $(grep -m1 'runs to do' "/tmp/study-$mode.log")"
  grep -m1 '^device:' "/tmp/study-$mode.log"
  [ $rc = 0 ] || tail -2 "/tmp/study-$mode.log"
}
# same A B: whether studies A and B gave every run the same digest (runs.csv, by run).
same() {
  local a b
  [ -f "/tmp/study-$1/runs.csv" ] || { echo "  no $1 study to compare with"; return; }
  a=$(awk -F, 'NR==1 {for (i=1;i<=NF;i++) if ($i=="digest") d=i; next} {print $1, $d}' "/tmp/study-$1/runs.csv" 2>/dev/null | md5sum)
  b=$(awk -F, 'NR==1 {for (i=1;i<=NF;i++) if ($i=="digest") d=i; next} {print $1, $d}' "/tmp/study-$2/runs.csv" 2>/dev/null | md5sum)
  [ "$a" = "$b" ] && echo "  digests of $1 and $2: the same, run by run" || echo "  digests of $1 and $2: DIFFER"
}
# cpustudy MODE SPEC ARGS...: study, unless CPU=0.
cpustudy() { [ "${CPU:-1}" = 1 ] && study "$@"; }
# $SPEC (examples/study/bench-phold.yaml: 256 runs of 1,024 LPs, 2^18 LPs in all, end 100),
# the same with 4,096 LPs a run (2^20 in all: one loop at the default bound), and to end
# 1000 (the device's fixed costs spread over 10x the events).
SPEC=${SPEC:-examples/study/bench-phold.yaml}
sed 's/^  lps: 1024$/  lps: 4096/' "$SPEC" >/tmp/bench-phold-4k.yaml
sed 's/^  max-sim-time: 100$/  max-sim-time: 1000/' "$SPEC" >/tmp/bench-phold-long.yaml
sed 's/^flags:$/flags:\n  gpu: "on"/' "$SPEC" >/tmp/bench-phold-gpu.yaml
cpustudy cpu "$SPEC"
study loop "$SPEC" --simulation-type gpu
same cpu loop
# One CPU core, for a paper that compares with one (its CPU baseline is not recorded here).
GOMAXPROCS=1 cpustudy cpu-1core "$SPEC" --jobs 1
study loop-64 "$SPEC" --simulation-type gpu --group-runs 64
cpustudy cpu-4k /tmp/bench-phold-4k.yaml
study loop-4k /tmp/bench-phold-4k.yaml --simulation-type gpu
same cpu-4k loop-4k
cpustudy cpu-long /tmp/bench-phold-long.yaml
study loop-long /tmp/bench-phold-long.yaml --simulation-type gpu
same cpu-long loop-long
# The batches of time-warp runs merged on the GPU (measured before: 5.94 s), on request.
[ "${MERGED:-0}" = 1 ] && study merged-gpu /tmp/bench-phold-gpu.yaml --merge-batches

if [ "${STUDY:-0}" != 1 ]; then
if [ -n "${OLD:-}" ]; then
  echo "== 5a. across processes, the small PHOLD, \$OLD against this build, interleaved"
  small="phold --lps 2048 --remote 0.5 --max-sim-time 2000 --time-warp-worker-threads 1"
  for round in 1 2; do
    for np in 2 4 8; do
      for b in "$OLD" "$W"; do
        [ "$(left)" -gt 30 ] || continue
        r=$(timeout -k 5 25 mpirun --oversubscribe --allow-run-as-root --bind-to none -np $np "$b" $small --progress=off 2>&1 | awk '/Committed events\/s:/ {print $3}')
        echo "np$np $(basename "$b") round $round: ${r:-timeout} events/s"
      done
    done
  done
fi

echo "== 5. issue 25's scaling table on 16 cores"
l=$(left)
if [ "${SCALING:-1}" = 1 ] && [ "$l" -gt 60 ]; then
  WARPED=$W WORKERS="1 2 4 8 16" RANKS="4 8" RANKWORKERS="7" LONG=1 timeout $((l - 25)) scripts/bench-scaling.sh 3
fi
echo "== 5b. where 8 and 16 workers' time goes (PHOLD, ROSS's configuration): per-worker samples in \$OUT"
for w in 8 16; do
  [ "$(left)" -gt 15 ] || break
  run "phold ${w}w, samples" 10 phold --simulation-type time-warp --gpu off --time-warp-worker-threads "$w" \
    --sample-file "$OUT/phold-${w}w-samples.csv" --sample-mode real-time --sample-period 50
  # Summed over every row (each covers one interval of one worker): processing, idle, GVT
  # and hand-over seconds, events processed and rolled back, and the share processed safe
  # (unlogged; docs/PERFORMANCE.md, "A lead for many workers").
  [ -f "$OUT/phold-${w}w-samples.csv" ] && awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { p += $(c["processing_seconds"]); d += $(c["idle_seconds"]); g += $(c["gvt_seconds"]); m += $(c["comm_seconds"])
      r += $(c["rolled_back"]); n += $(c["processed"]); sf += $(c["safe_events"]); k[$(c["worker"])] = 1 }
    END { printf "  %d workers: processing %.2f s, idle %.2f s, gvt %.2f s, comm %.2f s; processed %d, rolled back %d, safe %.1f%%\n",
      length(k), p, d, g, m, n, r, (n > 0 ? 100 * sf / n : 0) }' "$OUT/phold-${w}w-samples.csv"
done
# The safe share against the GVT period at 16 workers: a logged event costs about 210
# instructions more than a safe one (docs/PERFORMANCE.md, "What a logged event costs"), and
# on the 2 cores a period of 0.5 ms raised 4 workers' share from 87% to 96%. Does a fresher
# bound pay for its rounds on 16 cores?
for p in 2 1 0.5; do
  run "phold 16w, gvt period $p ms" 20 phold --simulation-type time-warp --gpu off --time-warp-worker-threads 16 \
    --max-sim-time 1000 --time-warp-gvt-calculation-period "$p"
done
fi
echo "== uptime: $(uptime)"
