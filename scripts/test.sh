#!/usr/bin/env bash
# The full test suite: formatting, vet, every package's tests (plain and under the race
# detector), short fuzzing, the fault-injection suite and the MPI runs. Every stage runs
# even when an earlier one failed; the failures are listed at the end, and the script
# fails then.
# MPI runs need OpenMPI (or MPICH) installed; without it they are skipped, saying so.
# Usage: scripts/test.sh            (from anywhere inside the repository)
set -uo pipefail
cd "$(dirname "$0")/.."

failed=()
# stage NAME CMD...: runs CMD as one stage, noting its failure.
stage() {
  local name=$1
  shift
  echo "== $name"
  if ! "$@"; then
    echo "FAILED: $name" >&2
    failed+=("$name")
  fi
}

gofmt_check() {
  local unformatted
  unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
  if [ -n "$unformatted" ]; then
    echo "gofmt would change: $unformatted" >&2
    return 1
  fi
}
stage "gofmt" gofmt_check
stage "go vet" go vet ./...
# The build for a system other than Linux (macOS), where the CUDA and host-C++ backends are
# stubs: type-checked, so that it does not break unnoticed.
stage "go vet for macOS" env GOOS=darwin go vet ./...

# Plain runs first: some checks (peak memory, speed-sensitive ones) are meaningless under
# the race detector and skip there. The timeouts only catch a hang: no test has a
# deadline of its own that a slow, honest run can exceed.
stage "go test" go test -count=1 -timeout 60m ./...
stage "go test -race" go test -race -count=1 -timeout 60m ./...

# A few seconds each on top of the seed corpora that 'go test' already ran. The budget is
# a count of executions, not a duration: Go 1.26's fuzz coordinator can report a spurious
# "context deadline exceeded" failure when a -fuzztime duration expires while a worker is
# busy (golang/go#75804, fixed in Go 1.27), which a loaded CI machine hits. Counts are sized
# to about 5 s each on a 2-core machine; a target not listed gets the default. Minimizing an
# input that found new coverage runs for 60 s by default, during which nothing else is
# fuzzed (FuzzQueues stalled 57 s of its 65 on it once): bounded by a count too.
fuzz_count() {
  case "$1" in
    FuzzReverse) echo 250000x ;; # cheap: one generator step per input
    FuzzDecode) echo 50000x ;;
    *) echo 2000x ;; # queue and calendar targets run a whole operation sequence per input
  esac
}
for f in $(grep -rlE --include='*_test.go' '^func Fuzz' .); do
  for fn in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$f" | cut -c6-); do
    stage "fuzz $fn" go test -run XXX -fuzz "^${fn}\$" -fuzztime "$(fuzz_count "$fn")" -fuzzminimizetime 200x "./$(dirname "${f#./}")"
  done
done

stage "fault injection (scripts/faults.sh)" scripts/faults.sh
stage "MPI transport under mpirun (scripts/mpi-test.sh)" scripts/mpi-test.sh

if [ ${#failed[@]} -gt 0 ]; then
  echo "== ${#failed[@]} stage(s) failed:" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "== all tests passed"
