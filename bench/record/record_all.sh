#!/usr/bin/env bash
# Records the real-trace set on a GPU machine (see record_cv_traces.py): every variant of
# resnet50, then the others for efficientnet_b0 and a timm ViT, until DEADLINE_S, one process per
# run. Writes DIR/traces/*.pt.trace.json and DIR/labels.tsv (file, model, variant, code, line of
# record_cv_traces.py). Usage: record_all.sh DIR [DEADLINE_S]
# Status: written for the GPU machine a task may be lent (PyTorch 2.11, torchvision, timm); not
# yet run, because no GPU was lent to the task that wrote it. Nothing in CI or the tests uses it.
set -uo pipefail
cd "$(dirname "$0")"
DIR=${1:?usage: record_all.sh DIR [DEADLINE_S]}
DEADLINE=${2:-400}
mkdir -p "$DIR/traces"
START=$(date +%s)
ALL="clean dataloader_stall host_sync pageable_copy small_h2d zero_grad_loop unfused_optimizer launch_bound fp32_no_tf32 layout_conversion empty_cache device_ping_pong recompute_forward"
NOCONV="clean dataloader_stall host_sync pageable_copy small_h2d zero_grad_loop unfused_optimizer launch_bound fp32_no_tf32 empty_cache device_ping_pong recompute_forward"
printf 'file\tmodel\tvariant\tcode\tline\n' >"$DIR/labels.tsv"
record() {
  local model=$1 variant=$2
  if [ $(($(date +%s) - START)) -ge "$DEADLINE" ]; then return; fi
  local before
  before=$(ls "$DIR/traces" | wc -l)
  timeout 90 python3 record_cv_traces.py --model "$model" --variant "$variant" --out "$DIR/traces" \
    2>>"$DIR/record.log" || { echo "FAILED $model $variant" >>"$DIR/record.log"; return; }
  local file
  file=$(ls -t "$DIR/traces" | head -1)
  [ "$(ls "$DIR/traces" | wc -l)" -gt "$before" ] || return
  local code line
  code=$(python3 -c "import record_cv_traces as r; print(r.VARIANTS['$variant'])")
  line=""
  [ -n "$code" ] && line=$(grep -n "ttap-label: $code\$" record_cv_traces.py | head -1 | cut -d: -f1)
  printf '%s\t%s\t%s\t%s\t%s\n' "$file" "$model" "$variant" "$code" "$line" >>"$DIR/labels.tsv"
}
for v in $ALL; do record resnet50 "$v"; done
for v in $ALL; do record efficientnet_b0 "$v"; done
for v in $NOCONV; do record timm:vit_small_patch16_224 "$v"; done
echo "recorded $(($(wc -l <"$DIR/labels.tsv") - 1)) traces in $(($(date +%s) - START)) s" >>"$DIR/record.log"
