#!/usr/bin/env bash
# Source-mapping cost: `ttap scan --timing` on a ~100 MB trace whose python frames resolve into a
# workspace (the TraceLens ROCm DDP ResNet-18 trace, replicated; a workspace holding its
# train_single_gpu.py), reporting mapping time against the load and rule times of the same run.
# Goal: mapping all findings adds under 50 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
TTAP=${TTAP:-build/ttap}
OUT=${BENCH_OUT:-bench/out}
BASE=${BENCH_MAPPING_BASE:-../shared/traces/real/tracelens--mi300__ddp_resnet18_no_pool__train_resnet18.json.gz}
mkdir -p "$OUT/mapping_ws"
TRACE="$OUT/ddp100.json"
[ -f "$TRACE" ] || python3 bench/make_big_trace.py --base "$BASE" --target-mb 100 --out "$TRACE" >/dev/null
python3 - "$OUT/mapping_ws/train_single_gpu.py" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(1, 121):
        f.write(f"value_{i} = compute({i})\n")
PY
echo "| run | load ms | rules ms | mapping ms | findings |"
echo "|---|---:|---:|---:|---:|"
for run in 1 2 3; do
  line=$("$TTAP" scan --timing --min-severity hint --workspace "$OUT/mapping_ws" "$TRACE" 2>&1 >/dev/null | grep ': load ' || true)
  python3 - "$run" "$line" <<'PY'
import re, sys
run, line = sys.argv[1], sys.argv[2]
m = re.search(r"load ([\d.]+) ms; rules ([\d.]+) ms; mapping ([\d.]+) ms \((\d+) findings\)", line)
print(f"| {run} | {m[1]} | {m[2]} | {m[3]} | {m[4]} |")
PY
done
echo
echo "goal: mapping < 50 ms per scan (the mapping column)"
