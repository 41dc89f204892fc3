#!/usr/bin/env bash
# Builds the CUDA stand-in (package gpuoffload/standin: a host-side stand-in for the CUDA
# driver API and NVRTC, for running the CUDA backend without a GPU) and prints the path of
# its library. Use it as the driver with
#   WARPED_CUDA_LIBRARY=$(scripts/cuda-standin.sh) warped devices
# Usage: scripts/cuda-standin.sh [DIR]   (default DIR: $TMPDIR/warped-cuda-standin-lib-$UID)
# The C++ compiler is $CXX, else c++. The flags are standin.CompileFlags' (keep them equal).
set -euo pipefail
src="$(cd "$(dirname "$0")/../gpuoffload/standin/csrc" && pwd)"
dir="${1:-${TMPDIR:-/tmp}/warped-cuda-standin-lib-$(id -u)}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
cxx="${CXX:-c++}"
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "cuda-standin.sh: no C++ compiler ($cxx); install g++ or set CXX" >&2
  exit 1
fi
cp "$src/cuda_standin.cpp" "$src/host_prelude.h" "$src/standin_launch.h" "$dir/"
"$cxx" -std=c++14 -O2 -fPIC -shared -o "$dir/libwarped-cuda-standin.so" "$dir/cuda_standin.cpp" -ldl -lpthread
echo "$dir/libwarped-cuda-standin.so"
