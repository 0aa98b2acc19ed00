#!/usr/bin/env bash
# Causal-model benchmark: what the graph + replay + attribution ("causal") and the rules with every
# fix replayed ("rules+what-ifs") cost next to loading the trace, as ratios measured in the same
# process (`ttap stats --timing`), on big replicated Kineto traces of growing size (linearity).
#
#   bench/bench_causal.sh                    # 100 and 300 MB
#   BENCH_SIZES="100 300 1000" bench/bench_causal.sh
#
# Environment: BENCH_SIZES (MB), BENCH_BASE (real trace to replicate; default the owlv2 H100
# trace), BENCH_RUNS (default 3; the best run of each size is kept), TTAP (default build/ttap).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SIZES=${BENCH_SIZES:-"100 300"}
BASE=${BENCH_BASE:-$ROOT/../shared/traces/real/tracelens--h100__google_owlv2-large-patch14-ensemble__1016001.json.gz}
RUNS=${BENCH_RUNS:-3}
TTAP=${TTAP:-$ROOT/build/ttap}
OUT=$ROOT/bench/out
mkdir -p "$OUT"
[ -f "$BASE" ] || { echo "bench_causal: base trace $BASE not found (set BENCH_BASE)" >&2; exit 2; }
echo "| size MB | load ms | causal ms | rules+what-ifs ms | causal / load | (causal + what-ifs) / load |"
echo "|---|---|---|---|---|---|"
for s in $SIZES; do
  f="$OUT/big$s.json"
  [ -f "$f" ] || python3 bench/make_big_trace.py --base "$BASE" --target-mb "$s" --out "$f" >/dev/null
  best=""
  for _ in $(seq "$RUNS"); do
    line=$("$TTAP" stats --timing "$f" 2>&1 >/dev/null | tail -1)
    load=$(sed -E 's/.* load ([0-9.]+) ms;.*/\1/' <<<"$line")
    causal=$(sed -E 's/.* causal ([0-9.]+) ms;.*/\1/' <<<"$line")
    rules=$(sed -E 's/.* rules\+what-ifs ([0-9.]+) ms.*/\1/' <<<"$line")
    total=$(python3 -c "print($causal + $rules)")
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $total < ${best##*,} else 1)"; then
      best="$load,$causal,$rules,$total"
    fi
  done
  IFS=, read -r load causal rules total <<<"$best"
  python3 -c "print('| $s | %.0f | %.0f | %.0f | %.2f | %.2f |' % ($load, $causal, $rules, $causal/$load, $total/$load))"
done
