#!/usr/bin/env bash
# The MPI transport's tests under a real launcher: builds the comm test binary with
# -tags mpi and runs TestMPI under mpirun with 2 and 4 ranks; then builds warped with
# -tags mpi and checks that PHOLD and PCS runs across 2 and 4 processes (with TQ-GVT too,
# and PHOLD across 8 with every GVT method, and with safe events across processes), and traffic,
# epidemic, airport, logic and kademlia runs across 2 and 3, give the sequential digest, and that
# ranks configured differently fail naming the setting.
# Skips (exit 0) when MPI is not installed.
# Usage: scripts/mpi-test.sh            (from anywhere inside the repository)
# Picks Open MPI (pkg-config ompi-c), else MPICH (pkg-config mpich, tags mpi,mpich).
# MPI_TAGS (for example "mpi,mpich") and MPIRUN (for example mpiexec.hydra) override the
# choice, to test MPICH on a machine that also has Open MPI.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() {
  echo "MPI not installed: skipping MPI tests; .ci/run installs OpenMPI ($1)"
  exit 0
}

mpirun=${MPIRUN:-mpirun}
command -v "$mpirun" >/dev/null 2>&1 || skip "no $mpirun"
tags=${MPI_TAGS:-}
if [[ -n "$tags" ]]; then
  :
elif pkg-config --exists ompi-c 2>/dev/null; then
  tags="mpi"
elif pkg-config --exists mpich 2>/dev/null; then
  tags="mpi,mpich"
else
  skip "no MPI headers: neither pkg-config ompi-c nor mpich"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== go vet -tags $tags ./comm/"
go vet -tags "$tags" ./comm/

echo "== go test -c -tags $tags ./comm/"
go test -c -tags "$tags" -o "$tmp/comm.test" ./comm/

# Open MPI refuses to run as root without these; harmless elsewhere.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
extra=()
if "$mpirun" --version 2>&1 | grep -q "Open MPI"; then
  extra=(--oversubscribe)
fi

echo "== single rank, no launcher"
(cd "$tmp" && timeout -k 10 120 ./comm.test -test.run 'TestMPI' -test.count=1 -test.timeout 100s)

for np in 2 4; do
  echo "== mpirun -np $np comm.test -test.run TestMPI"
  # timeout: a hung job fails the run instead of blocking CI; each rank also gives up
  # after 20 s of waiting and aborts the job.
  (cd "$tmp" && timeout -k 10 180 "$mpirun" "${extra[@]}" -np "$np" ./comm.test \
    -test.run 'TestMPI' -test.v -test.count=1 -test.timeout 150s)
done

echo "== go build -tags $tags ./cmd/warped"
go build -tags "$tags" -o "$tmp/warped" ./cmd/warped

# digest prints the digest line of a run's output.
digest() { grep '^digest:' | awk '{print $2}'; }

# A model's own command in a module of its own (examples/queues, on package app): under
# mpirun it commits the sequential digest too.
echo "== go build -tags $tags examples/queues"
(cd examples/queues && go build -tags "$tags" -o "$tmp/queues" .) || exit 1
want=$("$tmp/queues" cqn --simulation-type sequential --stations 32 --max-sim-time 200 | digest)
got=$(cd "$tmp" && timeout -k 10 300 "$mpirun" "${extra[@]}" -np 2 ./queues cqn --stations 32 --max-sim-time 200 \
  --time-warp-worker-threads 1 | digest)
if [[ -z "$want" || "$want" != "$got" ]]; then
  echo "FAIL: queues cqn -np 2: digest $got, sequential $want"
  exit 1
fi
echo "ok: queues cqn -np 2 (digest ${got:0:16})"

# Determinism across real processes: the digest of every time-warp run under mpirun must
# equal the sequential digest. Small sizes: -np 4 is oversubscribed on 2 cores.
check() { # model np workers method flags...
  local model=$1 np=$2 workers=$3 method=$4
  shift 4
  local want got
  want=$("$tmp/warped" "$model" --simulation-type sequential "$@" | digest)
  got=$(cd "$tmp" && timeout -k 10 300 "$mpirun" "${extra[@]}" -np "$np" ./warped "$model" \
    --time-warp-worker-threads "$workers" --time-warp-gvt-calculation-method "$method" "$@" | digest)
  if [[ -z "$want" || "$want" != "$got" ]]; then
    echo "FAIL: $model -np $np workers=$workers $method $*: digest $got, sequential $want"
    exit 1
  fi
  echo "ok: $model -np $np workers=$workers $method $* (digest ${got:0:16})"
}
for np in 2 4; do
  for workers in 1 2; do
    check phold "$np" "$workers" asynchronous --lps 512 --max-sim-time 40
    check pcs "$np" "$workers" asynchronous --num-cells-x 16 --num-cells-y 16 --max-sim-time 100
  done
  check phold "$np" 1 synchronous --lps 512 --max-sim-time 40 --time-warp-state-saving-type reverse
  check pcs "$np" 1 synchronous --num-cells-x 16 --num-cells-y 16 --max-sim-time 100 --time-warp-cancellation lazy
  # Every option on the default arrangement (one calendar queue per worker): lazy
  # cancellation, the rollback check and batched offload on the CPU backend.
  check phold "$np" 2 asynchronous --lps 512 --max-sim-time 40 --time-warp-cancellation lazy \
    --time-warp-check-rollbacks --gpu cpu
  check pcs "$np" 2 asynchronous --num-cells-x 16 --num-cells-y 16 --max-sim-time 100 \
    --time-warp-state-saving-type periodic --time-warp-cancellation lazy --time-warp-check-rollbacks
  # Workers sharing one schedule queue (kernel/internal/timewarp/group.go), with the same options.
  check phold "$np" 2 asynchronous --lps 512 --max-sim-time 40 --time-warp-scheduler-count 1 \
    --time-warp-cancellation lazy --time-warp-check-rollbacks --gpu cpu
  check pcs "$np" 2 asynchronous --num-cells-x 16 --num-cells-y 16 --max-sim-time 100 --time-warp-scheduler-count 1 \
    --time-warp-state-saving-type periodic --time-warp-cancellation lazy --time-warp-check-rollbacks
done

# Safe events across processes (issue 18; on by default with reverse computation, one
# worker per process and a lookahead): PHOLD with a lookahead that makes most events safe,
# with every GVT method, lazy cancellation and the rollback check, and the run without.
# safe() prints how many events each run committed safe (unlogged); it asks for them
# explicitly, since on a node with fewer CPUs than ranks (-np 4 on 2) they are off by default.
safe() { # np flags...
  local np=$1
  shift
  local want out got
  want=$("$tmp/warped" phold --simulation-type sequential --lps 4096 --lookahead 0.9 --max-sim-time 40 | digest)
  out=$(cd "$tmp" && timeout -k 10 300 "$mpirun" "${extra[@]}" -np "$np" ./warped phold --time-warp-worker-threads 1 \
    --lps 4096 --lookahead 0.9 --max-sim-time 40 --time-warp-remote-safe "$@")
  got=$(digest <<<"$out")
  if [[ -z "$want" || "$want" != "$got" ]]; then
    echo "FAIL: remote safe phold -np $np $*: digest $got, sequential $want"
    exit 1
  fi
  echo "ok: remote safe phold -np $np $* (digest ${got:0:16}; $(grep -E 'Safe events' <<<"$out" | tr -s ' '))"
}
for np in 2 4; do
  safe "$np"
  safe "$np" --time-warp-gvt-calculation-method tq --time-warp-cancellation lazy --time-warp-check-rollbacks
  safe "$np" --time-warp-gvt-calculation-method synchronous --time-warp-check-rollbacks
  safe "$np" --time-warp-remote-safe=false
done

# TQ-GVT (issue 18) across 2 and 4 processes, then every GVT method across 8 (oversubscribed).
for np in 2 4; do
  check phold "$np" 1 tq --lps 512 --max-sim-time 40
  check pcs "$np" 2 tq --num-cells-x 16 --num-cells-y 16 --max-sim-time 100
done
for method in asynchronous synchronous tq; do
  check phold 8 1 "$method" --lps 256 --max-sim-time 20
done

# The models of issue 15 (traffic, epidemic, airport, logic) across 2 and 3 processes:
# reverse computation where the model has it (the default), periodic for the epidemic.
for np in 2 3; do
  check traffic "$np" 2 asynchronous --num-intersections-x 8 --num-intersections-y 6 --number-of-cars 5 \
    --mean-interval 20 --max-distance 6 --max-sim-time 600
  check epidemic "$np" 1 asynchronous --num-locations 40 --population 30 --max-sim-time 1500
  check airport "$np" 2 synchronous --num-airports-x 8 --num-airports-y 6 --num-planes 10 --max-sim-time 800
  # WARPED2's end rule and airport (issue 31): the ranks agree on the inclusive end.
  check airport "$np" 2 asynchronous --variant warped2 --num-airports-x 8 --num-airports-y 6 --num-planes 10 \
    --max-sim-time 800 --max-sim-time-inclusive
  check pcs "$np" 1 asynchronous --num-cells-x 16 --num-cells-y 16 --max-sim-time 100 --max-sim-time-inclusive
  check logic "$np" 1 asynchronous --circuit multiplier-6 --num-vectors 6
  check logic "$np" 2 asynchronous --random-gates 3000 --num-vectors 4 --max-sim-time 400
  # Kademlia (issue 30, item 5): requests and replies between any two nodes, periodic.
  check kademlia "$np" 2 asynchronous --nodes 300 --bucket-size 4 --alpha 2 --max-sim-time 800
done

echo "== a parameter study shared by the ranks gives the tables of one process"
spec="$PWD/examples/study/pcs-quick.yaml"
(cd "$tmp" && ./warped study "$spec" --out one --progress=off >/dev/null)
(cd "$tmp" && timeout -k 10 300 "$mpirun" "${extra[@]}" -np 2 ./warped study "$spec" --out two --progress=off >/dev/null)
if ! cmp -s "$tmp/one/summary.csv" "$tmp/two/summary.csv"; then
  echo "FAIL: study under mpirun -np 2: summary.csv differs from one process's"
  diff "$tmp/one/summary.csv" "$tmp/two/summary.csv" | head -5
  exit 1
fi
echo "ok: study under mpirun -np 2 (summary.csv identical)"

echo "== --dump-config under mpirun prints one configuration, a --config file"
cfgs=$(cd "$tmp" && timeout -k 10 120 "$mpirun" "${extra[@]}" -np 2 ./warped phold --lps 64 --dump-config)
if [[ $(grep -c '^{' <<<"$cfgs") -ne 1 ]]; then
  echo "FAIL: -np 2 --dump-config printed $(grep -c '^{' <<<"$cfgs") configurations"
  exit 1
fi
printf '%s\n' "$cfgs" >"$tmp/one.json"
"$tmp/warped" phold --config "$tmp/one.json" --max-sim-time 5 >/dev/null
echo "ok: one configuration, read back by --config"

echo "== a mistyped flag under mpirun is reported once, by rank 0, with the usage status"
set +e
out=$(cd "$tmp" && timeout -k 10 120 "$mpirun" "${extra[@]}" -np 3 ./warped phold --lpz 64 2>&1)
set -e
if [[ $(grep -c 'unknown flag --lpz' <<<"$out") -ne 1 ]] || ! grep -q '^warped phold: unknown flag --lpz' <<<"$out"; then
  echo "FAIL: -np 3 with a mistyped flag printed, not one line from rank 0:"
  printf '%s\n' "$out"
  exit 1
fi
echo "ok: one line"

echo "== mpirun with different settings per rank must fail, naming the setting"
set +e
out=$(cd "$tmp" && timeout -k 10 120 "$mpirun" "${extra[@]}" -np 1 ./warped phold --lps 64 --max-sim-time 5 --seed 1 : \
  -np 1 ./warped phold --lps 64 --max-sim-time 5 --seed 2 2>&1)
code=$?
set -e
if [[ $code -eq 0 ]] || ! grep -q 'configuration differs between ranks: --seed' <<<"$out"; then
  echo "FAIL: mismatched ranks: exit $code, output: $out"
  exit 1
fi
echo "ok: mismatch reported (exit $code)"

echo "== a rank's failure ends every rank, naming the rank (issue 26 rows 2-4)"
# Each job is bounded by timeout: exit 124 (137: killed after ignoring SIGTERM) is a hang,
# and fails the test.
# fails_with WANT CMD...: CMD must exit non-zero, within the timeout, printing WANT.
fails_with() {
  local want=$1 out code
  shift
  set +e
  out=$(cd "$tmp" && timeout -k 10 60 "$@" 2>&1)
  code=$?
  set -e
  if [[ $code -eq 0 || $code -eq 124 || $code -eq 137 ]] || ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL: $*: exit $code (124, 137: hung), want a failure saying '$want'; output: $out"
    exit 1
  fi
  echo "ok: exit $code, '$want'"
}
run=(phold --lps 64 --max-sim-time 5 --gpu off)
fails_with "cannot write --stats-file /nonexistent/x" "$mpirun" "${extra[@]}" -np 2 ./warped "${run[@]}" --stats-file /nonexistent/x
fails_with "cannot write --report /nonexistent/r.html" "$mpirun" "${extra[@]}" -np 1 ./warped "${run[@]}" --report /nonexistent/r.html : \
  -np 1 ./warped "${run[@]}"
fails_with "rank 1: a run across 2 processes needs simulation type time-warp" "$mpirun" "${extra[@]}" -np 1 ./warped "${run[@]}" : \
  -np 1 ./warped "${run[@]}" --simulation-type sequential
fails_with "configuration differs between ranks: --lps" "$mpirun" "${extra[@]}" -np 1 ./warped "${run[@]}" : \
  -np 1 ./warped "${run[@]}" --lps 32
# A failed job leaves no temporary file of its ranks' --trace (MPI_Abort runs no deferred
# cleanup); a trace on one rank alone is that rank's output, not a setting to share.
d=$(mktemp -d "$tmp/trace.XXXX")
fails_with "configuration differs between ranks: --lps" "$mpirun" "${extra[@]}" -np 1 ./warped "${run[@]}" \
  --trace "$d/tr.csv" : -np 1 ./warped "${run[@]}" --trace "$d/tr.csv" --lps 32
if [[ -n "$(ls -A "$d")" ]]; then
  echo "FAIL: a failed job left files of its --trace: $(ls -A "$d")"
  exit 1
fi
(cd "$tmp" && timeout -k 10 120 "$mpirun" "${extra[@]}" -np 1 ./warped "${run[@]}" --trace "$d/one.csv" : \
  -np 1 ./warped "${run[@]}" >/dev/null)
echo "ok: no temporary trace file after a failed job; a trace on one rank alone ($(ls "$d"))"
# A signal to one rank of three, twice each: the others must not wait for it.
# ranks_of MARK: the pids of the ranks whose command line holds MARK (not mpirun's).
ranks_of() {
  local pid
  for pid in $(pgrep -f -- "$1" || true); do
    if [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == warped ]]; then echo "$pid"; fi
  done | sort -n | tr '\n' ' '
}
for sig in INT TERM INT TERM; do
  log="$tmp/signal.log"
  mark="--seed $$$RANDOM" # tells this job's ranks from any other process
  (
    cd "$tmp"
    code=0
    timeout -k 10 60 "$mpirun" "${extra[@]}" -np 3 ./warped phold --lps 96 --max-sim-time 1e9 --gpu off \
      --time-warp-worker-threads 1 $mark >"$log" 2>&1 || code=$?
    echo "exit $code" >>"$log"
  ) &
  job=$!
  ranks=""
  for _ in $(seq 100); do # wait for the three ranks to start (up to 20 s)
    ranks=$(ranks_of "$mark")
    if [[ $(wc -w <<<"$ranks") -ge 3 ]]; then break; fi
    sleep 0.2
  done
  sleep 1 # into the run
  kill -"$sig" "$(awk '{print $2}' <<<"$ranks")"
  # Every rank must be gone within 30 s of the signal; that is the property under test.
  # alive: the ranks still running (not zombies) when that time ran out.
  alive=""
  for _ in $(seq 300); do
    alive=""
    for pid in $ranks; do
      st=$(ps -o stat= -p "$pid" 2>/dev/null || true)
      if [[ -n "$st" && "$st" != Z* ]]; then alive="$alive $pid"; fi
    done
    if [[ -z "$alive" ]]; then break; fi
    sleep 0.1
  done
  # Open MPI 4.1's mpirun has been seen to hang (or crash) in its own teardown after
  # MPI_Abort, every rank already gone: that is not a hang of ours, so mpirun gets 15 s
  # more and is then killed (exit 137 below).
  for _ in $(seq 150); do
    if ! kill -0 "$job" 2>/dev/null; then break; fi
    sleep 0.1
  done
  if kill -0 "$job" 2>/dev/null; then pkill -KILL -f -- "mpirun.*$mark" || true; fi
  wait "$job" || true
  if [[ -n "$alive" ]] || ! grep -q "interrupted by SIG$sig" "$log" || grep -qE "^exit 0$" "$log"; then
    echo "FAIL: SIG$sig to one rank of 3 (ranks still running 30 s later:${alive:- none}): $(cat "$log")"
    exit 1
  fi
  note=""
  if grep -qE "^exit (124|137)$" "$log"; then note=", every rank gone, mpirun ended in its teardown"; fi
  echo "ok: SIG$sig to one rank of 3 ends the job ($(grep -E '^exit' "$log")$note)"
done

# mpirun signalled twice, as timeout -s INT signals it (mpirun, then its process group):
# Open MPI 4.1's mpirun exits at once on the second, without stopping its ranks, which
# Open MPI's library ends a second later. Each rank must see its launcher gone, stop as on
# a signal and settle its outputs in that second: no temporary file (app.watchLauncher).
echo "== mpirun signalled twice: its ranks leave no temporary file"
d=$(mktemp -d "$tmp/twice.XXXX")
mark="--seed $$$RANDOM"
(cd "$d" && exec "$mpirun" "${extra[@]}" -np 2 "$tmp/warped" phold --lps 96 --max-sim-time 1e9 --gpu off \
  --time-warp-worker-threads 1 --sample-file run.csv $mark >/dev/null 2>&1) &
job=$!
for _ in $(seq 100); do # wait for both ranks' sample files, into the run (up to 20 s)
  if [[ $(ls -A "$d" | wc -l) -ge 2 ]]; then break; fi
  sleep 0.2
done
kill -INT "$job"
sleep 0.1 # apart, as timeout's two signals may arrive
kill -INT "$job" 2>/dev/null || true
wait "$job" || true
for _ in $(seq 100); do # the ranks end within a second or two of mpirun (up to 10 s)
  if [[ -z "$(ranks_of "$mark")" ]]; then break; fi
  sleep 0.1
done
left=$(ls -A "$d" | grep '\.tmp' || true)
if [[ -n "$(ranks_of "$mark")" || -n "$left" ]]; then
  echo "FAIL: mpirun signalled twice: ranks still running [$(ranks_of "$mark")], temporary files left [$left]"
  exit 1
fi
echo "ok: mpirun signalled twice: its ranks ended and left no temporary file ($(ls -A "$d" | tr '\n' ' '))"

echo "== MPI tests passed"
