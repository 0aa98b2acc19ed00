#!/usr/bin/env bash
# `ttap stats` time against the number of steps (issue 24 item 7): synthetic traces of 10k and
# 100k ProfilerStep# steps (one op, one launch, one kernel each), best of BENCH_RUNS, and the
# ratio 100k / 10k (linear is 10x; the goal is within 11x).
set -euo pipefail
cd "$(dirname "$0")/.."
TTAP=${TTAP:-build/ttap}
OUT=${BENCH_OUT:-bench/out}
RUNS=${BENCH_RUNS:-3}
mkdir -p "$OUT"
for n in 10000 100000; do
  f="$OUT/steps_$n.json"
  [ -f "$f" ] || python3 - "$n" "$f" <<'PY'
import json, sys
n, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as out:
    out.write('{"traceEvents": [\n')
    t = 1000
    for i in range(n):
        sep = "" if i == 0 else ",\n"
        out.write(sep + json.dumps({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}",
                                    "pid": 1, "tid": 1, "ts": t, "dur": 100}))
        out.write(",\n" + json.dumps({"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1,
                                      "tid": 1, "ts": t + 10, "dur": 20}))
        out.write(",\n" + json.dumps({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                                      "pid": 1, "tid": 1, "ts": t + 12, "dur": 5,
                                      "args": {"correlation": i + 1}}))
        out.write(",\n" + json.dumps({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                                      "ts": t + 20, "dur": 30,
                                      "args": {"correlation": i + 1, "stream": 7, "device": 0}}))
        t += 100
    out.write("\n]}\n")
PY
done
best() {
  local b=""
  for _ in $(seq "$RUNS"); do
    local s e
    s=$(date +%s.%N); "$TTAP" stats "$1" >/dev/null; e=$(date +%s.%N)
    b=$(python3 -c "a=$e-$s; b='$b'; print(a if b=='' or a<float(b) else b)")
  done
  echo "$b"
}
t10=$(best "$OUT/steps_10000.json")
t100=$(best "$OUT/steps_100000.json")
python3 -c "print(f'ttap stats: 10k steps {$t10:.3f} s, 100k steps {$t100:.3f} s, ratio {$t100/$t10:.1f}x (linear 10x, goal <= 11x)')"
