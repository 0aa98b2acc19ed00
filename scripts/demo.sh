#!/usr/bin/env bash
# The main job on the bundled example: set up, build, then analyse the ResNet-50 trace.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
./build/ttap stats examples/resnet50_num_workers_0/worker0.pt.trace.json.gz
