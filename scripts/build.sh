#!/usr/bin/env bash
# Configures and builds TorchTraceAP (Release, Ninja, ccache when present, warnings as errors)
# into build/. One configuration for everyone: scripts/demo.sh builds only what it runs, and
# scripts/test.sh then builds the rest of the same tree instead of compiling everything again.
# Usage: scripts/build.sh [CMAKE_OPTION...] [-- TARGET...]   (no targets: all of them)
set -euo pipefail
cd "$(dirname "$0")/.."
options=()
targets=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then
    shift
    targets=("$@")
    break
  fi
  options+=("$1")
  shift
done
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTTAP_WERROR=ON "${options[@]}" >/dev/null
if [ ${#targets[@]} -gt 0 ]; then
  cmake --build build -j "$(nproc)" --target "${targets[@]}"
else
  cmake --build build -j "$(nproc)"
fi
