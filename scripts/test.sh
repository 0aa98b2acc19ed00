#!/usr/bin/env bash
# Builds and runs every test: set-up, the formatting check, Release build with -Werror (and the
# layering check), the Catch2 suites through CTest, then the
# loader fuzzer for a bounded time (TTAP_FUZZ_SECONDS, default 60; 0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
# Formatting is checked, not hoped for: every C/C++ source as .clang-format wants it.
unformatted=$(find analysis mapping models server tests bench \( -name node_modules -o -path bench/out \) -prune -o \
  \( -name '*.cpp' -o -name '*.h' -o -name '*.c' \) -print | sort |
  xargs clang-format --dry-run --Werror 2>&1 | grep -o '^[^:]*:[0-9]*:[0-9]*: error' | cut -d: -f1 | sort -u || true)
if [ -n "$unformatted" ]; then
  echo "test: not formatted (clang-format -i these): $unformatted" >&2
  exit 1
fi
# Warnings are errors (scripts/build.sh's one configuration, which scripts/demo.sh shares: what
# the demo built is not compiled again); the layering check runs with every build.
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"

FUZZ_SECONDS=${TTAP_FUZZ_SECONDS:-60}
if [ "$FUZZ_SECONDS" -gt 0 ] && [ -f tests/fuzz/loader_fuzzer.cpp ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTTAP_FUZZ=ON -DTTAP_BUILD_MODELS=OFF >/dev/null
  cmake --build build-fuzz --target ttap_loader_fuzzer -j "$(nproc)"
  mkdir -p build-fuzz/corpus
  ./build-fuzz/tests/ttap_loader_fuzzer -max_total_time="$FUZZ_SECONDS" -max_len=65536 \
    -print_final_stats=1 build-fuzz/corpus tests/fuzz/corpus 2>&1 | tail -n 5
  echo "fuzz: loader ran ${FUZZ_SECONDS}s without a crash"
fi
