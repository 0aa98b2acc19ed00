#!/usr/bin/env bash
# The full benchmark (issue 6): `ttap gen` writes the default 600-trace dataset (simulated CV
# loops plus jittered and injected copies of the real traces in ../shared/traces/real), then
# `ttap eval` scores every method on the held-out splits, once without and once with the traces
# whose real base already had anti-patterns. Prints the generation time and size (goals: under
# 10 minutes and 2 GB) and the eval tables; writes them under $BENCH_OUT/eval600.
set -euo pipefail
cd "$(dirname "$0")/.."
TTAP=${TTAP:-build/ttap}
OUT=${BENCH_OUT:-bench/out}
SEED=${BENCH_SEED:-1}
BASES=${BENCH_BASES:-../shared/traces/real}
DS="$OUT/eval600"
rm -rf "$DS"
mkdir -p "$OUT"
/usr/bin/time -f "gen: %e s wall, %M KB peak RSS" "$TTAP" gen --out "$DS" --seed "$SEED" \
  --bases "$BASES" 2> >(grep -v ' skipped: ' >&2)
echo "dataset on disk: $(du -sh "$DS" | cut -f1)"
/usr/bin/time -f "eval: %e s wall, %M KB peak RSS" "$TTAP" eval "$DS" --out "$DS/eval"
"$TTAP" eval "$DS" --with-pre-existing --out "$DS/eval_with_pre_existing" >/dev/null
echo "with pre-existing traces included:"
grep -A7 '^## overall' "$DS/eval_with_pre_existing/eval.md"
