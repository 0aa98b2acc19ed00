#!/usr/bin/env bash
# Scores ttap against the real-world corpus's hand-written verdicts (bench/realworld/README.md):
# fetches the traces that are missing (when repository snapshots are at hand), then prints the
# table and the share of verdicts ttap gets right. Usage: bench/realworld.sh [path/to/ttap]
set -euo pipefail
cd "$(dirname "$0")/.."
TTAP=${1:-build/ttap}
bench/realworld/fetch.sh || true
mkdir -p bench/out
python3 bench/realworld/score.py --ttap "$TTAP" --dir bench/realworld --json bench/out/realworld.json
