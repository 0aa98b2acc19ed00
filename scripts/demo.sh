#!/usr/bin/env bash
# The main job on the bundled example: set up, build, then analyse the ResNet-50 trace
# (per-step breakdown, then the anti-pattern findings on the lines of the training loop beside
# it, examples/resnet50_num_workers_0/train.py).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Only what runs below: the binary and, when libtorch is there, the window scorer's module
# (scripts/test.sh builds the rest of the same tree).
targets=(ttap)
if cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTTAP_WERROR=ON >/dev/null &&
  grep -q 'ttap_models' build/build.ninja; then
  targets+=(ttap_models)
fi
scripts/build.sh -- "${targets[@]}"
./build/ttap stats examples/resnet50_num_workers_0/worker0.pt.trace.json.gz
echo
# Findings make `ttap scan` exit 1 (as CI wants); here they are the expected result.
./build/ttap scan examples/resnet50_num_workers_0/worker0.pt.trace.json.gz \
  --workspace examples/resnet50_num_workers_0 --model models/ttap-window-scorer.pt || [ $? -eq 1 ]
