#!/usr/bin/env bash
# Ablations of the window scorer (issue 7, like the paper's Table 5): the full model and one
# variant per removed part (no name tokens; no 2D positional encoding; no relation model; max
# instead of mean pooling), each trained with the same budget (ABLATION_MINUTES, default 8) on
# the benchmark written by bench/bench_eval.sh, then scored alone ("model") on the held-out
# splits. Prints one Markdown row per variant with trace and window AUC-ROC.
set -euo pipefail
cd "$(dirname "$0")/.."
TTAP=${TTAP:-build/ttap}
OUT=${BENCH_OUT:-bench/out}
DS=${BENCH_DATASET:-$OUT/eval600}
MINUTES=${ABLATION_MINUTES:-8}
mkdir -p "$OUT/ablation"
echo "| variant | seen trace AUC | seen window AUC | unseen trace AUC | unseen window AUC | no-rule families trace AUC |"
echo "|---|---|---|---|---|---|"
for variant in full no-names no-pos no-relation max-pool; do
  model="$OUT/ablation/$variant.pt"
  flag=""
  [ "$variant" = full ] || flag="--ablation $variant"
  # shellcheck disable=SC2086
  "$TTAP" train --data "$DS" --out "$model" --epochs 40 --minutes "$MINUTES" --seed 1 $flag \
    > "$OUT/ablation/$variant.train.log" 2>&1
  "$TTAP" eval "$DS" --methods model --model "$model" --bootstrap 200 \
    --out "$OUT/ablation/$variant" > /dev/null 2>&1
  python3 - "$variant" "$OUT/ablation/$variant/eval.json" <<'PY'
import json, sys
variant, path = sys.argv[1], sys.argv[2]
r = json.load(open(path))
def cell(section, key):
    for s in r["sections"]:
        if s["name"] == section:
            for m in s["methods"]:
                v = m[key]["estimate"]
                if v is None: return "n/a"
                return f'{v:.3f} [{m[key]["low"]:.3f}, {m[key]["high"]:.3f}]'
    return "n/a"
print(f'| {variant} | {cell("seen","trace_auc")} | {cell("seen","window_auc")} | '
      f'{cell("unseen","trace_auc")} | {cell("unseen","window_auc")} | '
      f'{cell("no-rule families","trace_auc")} |')
PY
done
