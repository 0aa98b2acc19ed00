#!/usr/bin/env bash
# Window-scorer cost (issue 7). 1) Scoring latency of one 100-window trace through the C ABI
# (bench/score, built with libtorch alone), on CPU here and on CUDA when this libtorch has it.
# 2) What `--model` adds to `ttap scan` of a ~100 MB trace: the same scan with and without the
# model in the same run (ratio against the rules-only baseline). Goal: well under a second.
set -euo pipefail
cd "$(dirname "$0")/.."
TTAP=${TTAP:-build/ttap}
OUT=${BENCH_OUT:-bench/out}
MODEL=${BENCH_MODEL:-models/ttap-window-scorer.pt}
BASE=${BENCH_SCORE_BASE:-../shared/traces/real/tracelens--mi300__ddp_resnet18_no_pool__train_resnet18.json.gz}
mkdir -p "$OUT"
# Configured once; rebuilt every run, so that it never times an older models/window_model.cpp.
[ -f build-score/build.ninja ] ||
  cmake -S bench/score -B build-score -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build-score >/dev/null
for threads in 1 2; do build-score/ttap_score_bench "$MODEL" cpu "$threads"; done
build-score/ttap_score_bench "$MODEL" cuda 2>/dev/null || echo "cuda: not available in this libtorch/machine"
TRACE="$OUT/ddp100.json"
[ -f "$TRACE" ] || python3 bench/make_big_trace.py --base "$BASE" --target-mb 100 --out "$TRACE" >/dev/null
echo "| run | scan (rules) s | scan --model s | added s |"
echo "|---|---:|---:|---:|"
for run in 1 2 3; do
  /usr/bin/time -f %e -o "$OUT/t_rules" "$TTAP" scan "$TRACE" --format json >/dev/null 2>&1 || true
  /usr/bin/time -f %e -o "$OUT/t_model" "$TTAP" scan "$TRACE" --format json --model "$MODEL" \
    >/dev/null 2>&1 || true
  a=$(tail -1 "$OUT/t_rules"); b=$(tail -1 "$OUT/t_model")
  awk -v r="$run" -v a="$a" -v b="$b" 'BEGIN { printf "| %s | %s | %s | %.2f |\n", r, a, b, b - a }'
done
