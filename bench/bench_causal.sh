#!/usr/bin/env bash
# Causal-model benchmark: what the causal model (graph, unchanged replay, attribution and every
# finding's fix replayed: "causal") costs next to loading the trace, and the rule detectors beside
# it, as ratios measured in the same process (`ttap stats --timing`), on big replicated Kineto
# traces of growing size (linearity).
#
#   bench/bench_causal.sh                    # 100 and 300 MB
#   BENCH_SIZES="100 300 1000" bench/bench_causal.sh
#
# Environment: BENCH_SIZES (MB), BENCH_BASE (real trace to replicate; default the owlv2 H100
# trace), BENCH_PREFIX (name of the replicated files, bench/out/<prefix><MB>.json; default "big";
# give each base its own), BENCH_RUNS (default 3; the best run of each size is kept), TTAP
# (default build/ttap). A base with many findings (e.g. the kineto ResNet-50 trace, 9) replays
# more what-ifs than owlv2 (2).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SIZES=${BENCH_SIZES:-"100 300"}
BASE=${BENCH_BASE:-$ROOT/../shared/traces/real/tracelens--h100__google_owlv2-large-patch14-ensemble__1016001.json.gz}
RUNS=${BENCH_RUNS:-3}
PREFIX=${BENCH_PREFIX:-big}
TTAP=${TTAP:-$ROOT/build/ttap}
OUT=$ROOT/bench/out
mkdir -p "$OUT"
[ -f "$BASE" ] || { echo "bench_causal: base trace $BASE not found (set BENCH_BASE)" >&2; exit 2; }
echo "| size MB | load ms | rule detectors ms | causal ms | causal / load | ms per MB (causal) |"
echo "|---|---|---|---|---|---|"
for s in $SIZES; do
  f="$OUT/$PREFIX$s.json"
  [ -f "$f" ] || python3 bench/make_big_trace.py --base "$BASE" --target-mb "$s" --out "$f" >/dev/null
  best=""
  for _ in $(seq "$RUNS"); do
    line=$("$TTAP" stats --timing "$f" 2>&1 >/dev/null | tail -1)
    load=$(sed -E 's/.* load ([0-9.]+) ms;.*/\1/' <<<"$line")
    rules=$(sed -E 's/.* rule detectors ([0-9.]+) ms;.*/\1/' <<<"$line")
    causal=$(sed -E 's/.* causal ([0-9.]+) ms.*/\1/' <<<"$line")
    ratio=$(python3 -c "print($causal / $load)")
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $ratio < ${best##*,} else 1)"; then
      best="$load,$rules,$causal,$ratio"
    fi
  done
  IFS=, read -r load rules causal ratio <<<"$best"
  python3 -c "print('| $s | %.0f | %.0f | %.0f | %.2f | %.2f |' % ($load, $rules, $causal, $ratio, $causal / $s))"
done
