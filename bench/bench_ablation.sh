#!/usr/bin/env bash
# Ablations of the window scorer (issue 7, like the paper's Table 5): the full model and one
# variant per removed part (no name tokens; no 2D positional encoding; no relation model; max
# instead of mean pooling; no window features; no training augmentation; only the trace-relative
# half of the window features). Each is trained with
# the same budget (ABLATION_EPOCHS, default 4, capped at ABLATION_MINUTES, default 20: about 18
# minutes a variant on 2 cores; 2 epochs left the full model at chance with the clean-bag loss)
# and the shipped model's recipe (--pre-existing windows) on the benchmark of bench/bench_eval.sh
# plus the extra train set of seed 2 (bench/train_model.sh writes it), then scored alone
# ("model", with the score parts training chose on the validation split) on the held-out splits.
# Prints one Markdown row per variant with trace and window AUC-ROC.
set -euo pipefail
cd "$(dirname "$0")/.."
TTAP=${TTAP:-build/ttap}
OUT=${BENCH_OUT:-bench/out}
DS=${BENCH_DATASET:-$OUT/eval600}
MINUTES=${ABLATION_MINUTES:-20}
EPOCHS=${ABLATION_EPOCHS:-4}
EXTRA=${ABLATION_EXTRA:-$OUT/train_s2}
[ -d "$EXTRA/labels" ] || "$TTAP" gen --out "$EXTRA" --seed 2 --split-seed 1 --only-splits train \
  --bases "${BENCH_BASES:-../shared/traces/real}" >/dev/null 2>&1
mkdir -p "$OUT/ablation"
echo "| variant | seen trace AUC | seen window AUC | unseen trace AUC | unseen window AUC | no-rule families trace AUC | zero-shot families trace AUC |"
echo "|---|---|---|---|---|---|---|"
for variant in ${ABLATION_VARIANTS:-full no-names no-pos no-relation max-pool no-features no-augment no-absolute}; do
  model="$OUT/ablation/$variant.pt"
  flag=""
  [ "$variant" = full ] || flag="--ablation $variant"
  # shellcheck disable=SC2086
  "$TTAP" train --data "$DS" --data "$EXTRA" --out "$model" --epochs "$EPOCHS" --minutes "$MINUTES" \
    --seed 1 --threads 2 --pre-existing windows $flag \
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
      f'{cell("no-rule families","trace_auc")} | {cell("zero-shot families","trace_auc")} |')
PY
done
