#!/usr/bin/env bash
# Regenerates cmd/warped/default.pgo, the CPU profile that `go build ./cmd/warped` (and
# `go run`, `go install`) use for profile-guided optimization (see docs/DECISIONS.md,
# "Profile-guided optimization"): the kernel's benchmarks of the sequential dispatcher and
# of time warp with 1 and 2 workers on PHOLD and PCS, and of PHOLD across 2 loopback ranks
# (the cross-process driver and codec), the runs the profile should speed up.
# Run it after changes to the hot paths, on a quiet machine, and commit the profile.
# Usage: scripts/pgo.sh            (from anywhere inside the repository; about a minute)
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -run XXX -bench 'Sequential|TimeWarpPHOLD$|TimeWarpPCS$|TimeWarpPHOLDRanks' -benchtime 3x \
  -cpuprofile "$tmp/cpu.prof" -o "$tmp/dispatch.test" ./kernel/dispatch/ >/dev/null
cp "$tmp/cpu.prof" cmd/warped/default.pgo
echo "cmd/warped/default.pgo: $(wc -c <cmd/warped/default.pgo) bytes"
