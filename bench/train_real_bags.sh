#!/usr/bin/env bash
# Issue 35, item 3: does training on real traces as weakly labelled bags (trace-level truth only,
# bench/realworld/bags.py) make the window scorer worth shipping? Trains the shipped recipe
# (bench/train_model.sh: the simulated benchmark plus three more train sets) with the real-world
# corpus's fold A and our recordings added as bags, then judges it beside the shipped file on
# data it never saw: the recorded zero-shot families and the corpus's fold B (other repositories).
# Run bench/bench_eval.sh first (and bench/realworld/fetch.sh for the corpus traces).
# MODEL_OUT (default bench/out/window-scorer-bags.pt) gets the weights; the tables go to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
TTAP=${TTAP:-build/ttap}
OUT=${BENCH_OUT:-bench/out}
BASES=${BENCH_BASES:-../shared/traces/real}
MODEL=${MODEL_OUT:-$OUT/window-scorer-bags.pt}
MINUTES=${TRAIN_MINUTES:-28}
DS="$OUT/eval600"
[ -d "$DS/labels" ] || { echo "run bench/bench_eval.sh first ($DS missing)" >&2; exit 2; }
data=(--data "$DS")
for seed in 2 3 4; do
  extra="$OUT/train_s$seed"
  [ -d "$extra/labels" ] || "$TTAP" gen --out "$extra" --seed "$seed" --split-seed 1 \
    --only-splits train --bases "$BASES" 2> >(grep -v ' skipped: ' >&2) >/dev/null
  data+=(--data "$extra")
done
rm -rf "$OUT/realbags_A"
python3 bench/realworld/bags.py --out "$OUT/realbags_A" --fold A
# The 39 bags are few beside the ~930 simulated traces: each is given BAG_WEIGHT (default 3) turns
# per epoch (the dataset named that many times).
for _ in $(seq "${BAG_WEIGHT:-3}"); do data+=(--data "$OUT/realbags_A"); done
/usr/bin/time -f "train: %e s wall, %M KB peak RSS" "$TTAP" train "${data[@]}" --out "$MODEL" \
  --epochs 4 --seed 1 --threads 2 --minutes "$MINUTES" --pre-existing windows
for m in models/ttap-window-scorer.pt "$MODEL"; do
  echo "### $m"
  python3 bench/record/zeroshot_auc.py --ttap "$TTAP" --model "$m" --corpus-fold B
done
