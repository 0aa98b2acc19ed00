#!/usr/bin/env bash
# Load benchmark: ttap stats vs Python json.load on big replicated Kineto traces.
#
#   bench/bench_load.sh                       # 100 MB and 1 GB
#   BENCH_SIZES="100" bench/bench_load.sh     # quick: 100 MB only
#
# For every size S (MB) it makes bench/out/bigS.json and bigS.json.gz (once; reused while the
# base and copy count match), then measures, as whole processes, wall time and peak RSS of
#   python3 json.load, ttap stats --threads 1, ttap stats (all cores), ttap stats on the .gz,
#   and gzip -dc of the .gz (the zlib streaming-decompression baseline),
# each BENCH_RUNS times (best wall time and highest peak RSS are kept), checks that ttap reports
# the steps/elements the generator wrote, and prints a Markdown table (also written to
# bench/out/load_results.md). See bench/README.md for the goals.
#
# Environment:
#   BENCH_SIZES   sizes in MB, smallest first (default "100 1000"). The copy count for size S is
#                 S/100 times the copy count the 100 MB target needs, so 1000 MB holds exactly
#                 10x the events of 100 MB.
#   BENCH_BASE    real trace to replicate (default: the owlv2 H100 trace, see README)
#   BENCH_RUNS    runs per configuration (default 3)
#   BENCH_OUT     output folder (default bench/out)
#   BENCH_JSONLOAD=0  skip the Python json.load runs (slow and ~8x the file size in RAM)
#   TTAP          ttap binary (default build/ttap; built with `ninja -C build ttap` if missing)
#   PYTHON        python interpreter (default python3)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

SIZES=${BENCH_SIZES:-"100 1000"}
BASE=${BENCH_BASE:-/work/shared/traces/real/tracelens--h100__google_owlv2-large-patch14-ensemble__1016001.json.gz}
RUNS=${BENCH_RUNS:-3}
OUT=${BENCH_OUT:-$ROOT/bench/out}
TTAP=${TTAP:-$ROOT/build/ttap}
PYTHON=${PYTHON:-python3}
JSONLOAD=${BENCH_JSONLOAD:-1}
GEN="$ROOT/bench/make_big_trace.py"
TIME=/usr/bin/time

[ -x "$TIME" ] || { echo "bench_load: $TIME (GNU time) is required (apt-get install time)" >&2; exit 2; }
[ -f "$BASE" ] || { echo "bench_load: base trace $BASE not found (set BENCH_BASE)" >&2; exit 2; }
if [ ! -x "$TTAP" ]; then
  echo "bench_load: $TTAP missing; building it (ninja -C build ttap)" >&2
  ninja -C "$ROOT/build" ttap
fi
mkdir -p "$OUT"
RES="$OUT/load_runs.tsv"      # one line per run: size config run wall_s time_e rss_kb rc
LOG="$OUT/load_runs.log"      # stderr of the measured commands
: > "$RES"
: > "$LOG"

now() { date +%s.%N; }

# ---------------------------------------------------------------- traces
base_copies=$("$PYTHON" "$GEN" --base "$BASE" --target-mb 100 --plan)
echo "bench_load: base $(basename "$BASE"): $base_copies copies per 100 MB" >&2

meta_get() {  # meta_get FILE.meta.json KEY
  "$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' "$1" "$2"
}

for S in $SIZES; do
  f="$OUT/big$S.json"
  copies=$("$PYTHON" -c 'import sys; print(max(1, round(int(sys.argv[1]) * int(sys.argv[2]) / 100)))' "$base_copies" "$S")
  fresh=0
  if [ -f "$f" ] && [ -f "$f.meta.json" ] \
     && [ "$(meta_get "$f.meta.json" copies)" = "$copies" ] \
     && [ "$(meta_get "$f.meta.json" base)" = "$(readlink -f "$BASE")" ]; then
    echo "bench_load: reusing $f" >&2
  else
    echo "bench_load: making $f ($copies copies)" >&2
    rm -f "$f.gz"
    "$PYTHON" "$GEN" --base "$BASE" --copies "$copies" --out "$f"
    fresh=1
  fi
  if [ ! -f "$f.gz" ] || [ "$fresh" = 1 ]; then
    echo "bench_load: compressing $f.gz (gzip -6)" >&2
    gzip -6 -c "$f" > "$f.gz.tmp" && mv "$f.gz.tmp" "$f.gz"
  fi
done

# ---------------------------------------------------------------- measurements
measure() {  # measure SIZE CONFIG RUN cmd...   (stdout discarded, stderr to the log)
  local size=$1 config=$2 run=$3; shift 3
  local tf t0 t1 rc=0
  tf=$(mktemp)
  echo "== $size $config run $run: $*" >> "$LOG"
  t0=$(now)
  "$TIME" -f "%e %M" -o "$tf" "$@" > /dev/null 2>> "$LOG" || rc=$?
  t1=$(now)
  # GNU time writes "Command exited with non-zero status N" before the format line on failure.
  read -r e m < <(tail -n 1 "$tf")
  rm -f "$tf"
  printf '%s\t%s\t%s\t%.3f\t%s\t%s\t%s\n' "$size" "$config" "$run" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" "$e" "$m" "$rc" >> "$RES"
  [ "$rc" = 0 ] || echo "bench_load: $config on $size MB exited with $rc (see $LOG)" >&2
}

PYZLIB='import zlib,sys
d = zlib.decompressobj(31); f = open(sys.argv[1], "rb")
for b in iter(lambda: f.read(1 << 20), b""): d.decompress(b)'
LOADAVG=""
for S in $SIZES; do
  f="$OUT/big$S.json"
  cat "$f" "$f.gz" > /dev/null          # same page-cache state for every configuration
  LOADAVG="$LOADAVG $S:$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' '/')"
  for run in $(seq 1 "$RUNS"); do
    echo "bench_load: $S MB, run $run/$RUNS" >&2
    if [ "$JSONLOAD" != 0 ]; then
      measure "$S" jsonload "$run" "$PYTHON" -c 'import json,sys; json.load(open(sys.argv[1]))' "$f"
    fi
    measure "$S" ttap1 "$run" "$TTAP" stats --threads 1 "$f"
    measure "$S" ttap "$run" "$TTAP" stats "$f"
    measure "$S" ttapgz "$run" "$TTAP" stats "$f.gz"
    measure "$S" zlib "$run" sh -c 'gzip -dc "$1" > /dev/null' sh "$f.gz"
    # GNU gzip has its own inflate (slower than zlib's): also time zlib itself, through Python,
    # and Python's start-up alone so it can be subtracted.
    measure "$S" pyzlib "$run" "$PYTHON" -c "$PYZLIB" "$f.gz"
    measure "$S" pystart "$run" "$PYTHON" -c 'import zlib'
  done
  # What ttap reports, for the scaling checks (plain and .gz must agree).
  "$TTAP" stats --json "$f" > "$f.stats.json" 2>> "$LOG" || echo "bench_load: ttap stats --json $f failed" >&2
  "$TTAP" stats --json "$f.gz" > "$f.gz.stats.json" 2>> "$LOG" || echo "bench_load: ttap stats --json $f.gz failed" >&2
done
"$TTAP" stats --json "$BASE" > "$OUT/base.stats.json" 2>> "$LOG" || echo "bench_load: ttap stats --json on the base failed" >&2

# ---------------------------------------------------------------- report
"$PYTHON" - "$OUT" "$RES" "$BASE" "$SIZES" "$RUNS" "$LOADAVG" "$(nproc)" <<'PY'
import json, os, sys
out, res, base, sizes, runs, loadavg, ncpu = sys.argv[1:8]
sizes = [s for s in sizes.split()]
rows = [l.rstrip("\n").split("\t") for l in open(res) if l.strip()]
best = {}   # (size, config) -> dict
for size, config, run, wall, e, m, rc in rows:
    d = best.setdefault((size, config), {"wall": None, "rss": 0, "rc": set(), "walls": []})
    d["walls"].append(float(wall))
    d["wall"] = min(d["walls"])
    try:
        d["rss"] = max(d["rss"], int(m))
    except ValueError:
        pass
    d["rc"].add(int(rc))

def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None

NAMES = {"jsonload": "python3 json.load", "ttap1": "ttap stats --threads 1",
         "ttap": f"ttap stats (all {ncpu} cores)", "ttapgz": "ttap stats FILE.json.gz",
         "zlib": "gzip -dc FILE.json.gz > /dev/null",
         "pyzlib": "python3 zlib.decompressobj, 1 MB reads, of FILE.json.gz",
         "pystart": "python3 -c 'import zlib' (start-up only)"}
L = []
L.append("# ttap load benchmark")
L.append("")
L.append(f"Base trace: `{os.path.basename(base)}`; {runs} runs per configuration, best wall "
         f"time, highest peak RSS; {ncpu} cores; load average (1/5/15 min) before each size:"
         f"{loadavg}.")
notes = []
info = {}
bst = load(os.path.join(out, "base.stats.json"))
base_events = bst["ranks"][0]["events"] if bst else None
for s in sizes:
    f = os.path.join(out, f"big{s}.json")
    meta = load(f + ".meta.json") or {}
    size = os.path.getsize(f)
    gz = os.path.getsize(f + ".gz")
    info[s] = (size, meta)
    L.append("")
    L.append(f"## {s} MB: `big{s}.json` {size/1e6:.1f} MB ({gz/1e6:.1f} MB gzipped), "
             f"{meta.get('copies')} cop{'y' if meta.get('copies') == 1 else 'ies'}, {meta.get('elements')} trace elements, "
             f"{meta.get('steps')} steps, {meta.get('bytes_per_element')} bytes/element")
    L.append("")
    L.append("| command | best wall s | all runs s | peak RSS MB | RSS / JSON size | exit |")
    L.append("|---|---:|---|---:|---:|---|")
    for c in ["jsonload", "ttap1", "ttap", "ttapgz", "zlib", "pyzlib", "pystart"]:
        d = best.get((s, c))
        if not d:
            continue
        rc = ",".join(str(x) for x in sorted(d["rc"]))
        L.append(f"| {NAMES[c]} | {d['wall']:.3f} | {' '.join(f'{w:.2f}' for w in d['walls'])} | "
                 f"{d['rss']/1024:.0f} | {d['rss']*1024/size:.3f} | {rc} |")
        if d["rc"] != {0}:
            notes.append(f"{NAMES[c]} on {s} MB exited with {rc}")
    # scaling checks: what ttap reports vs what the generator wrote
    for tag, p in (("json", f + ".stats.json"), ("json.gz", f + ".gz.stats.json")):
        st = load(p)
        if not st:
            notes.append(f"{s} MB .{tag}: no ttap stats --json output")
            continue
        r = st["ranks"][0]
        imp = st.get("import_stats", {})
        got_steps, got_events, got_elems = len(r.get("steps", [])), r.get("events"), imp.get("elements")
        want_steps, want_elems = meta.get("steps"), meta.get("elements")
        want_events = base_events * meta["copies"] if base_events is not None and meta else None
        ok = (got_steps == want_steps and got_events == want_events and got_elems == want_elems
              and imp.get("skipped_total", 0) == 0)
        msg = (f"{s} MB .{tag}: ttap reports {got_steps} steps (expected {want_steps}), "
               f"{got_events} events (expected {want_events} = base {base_events} x "
               f"{meta.get('copies')}), {got_elems} elements (written {want_elems}), "
               f"skipped {imp.get('skipped_total')}"
               + ("" if ok else "  <-- MISMATCH"))
        notes.append(msg)

def w(s, c):
    d = best.get((s, c))
    return d["wall"] if d else None

def rss(s, c):
    d = best.get((s, c))
    return d["rss"] * 1024 if d else None

def ratio(a, b):
    return a / b if a is not None and b else None

def fmt(x, spec="{:.2f}x"):
    return "n/a" if x is None else spec.format(x)

def verdict(x, ok):
    return "n/a" if x is None else ("yes" if ok(x) else "**no**")

L.append("")
L.append("## Goals")
L.append("")
L.append("| size | measure | measured | goal | met |")
L.append("|---|---|---:|---|---|")
for s in sizes:
    size, meta = info[s]
    r1 = ratio(w(s, "jsonload"), w(s, "ttap1"))
    r2 = ratio(w(s, "jsonload"), w(s, "ttap"))
    L.append(f"| {s} MB | json.load time / ttap time, 1 thread | {fmt(r1)} | >= 8x | {verdict(r1, lambda x: x >= 8)} |")
    L.append(f"| {s} MB | json.load time / ttap time, {ncpu} threads | {fmt(r2)} | >= 10x | {verdict(r2, lambda x: x >= 10)} |")
    gzx = w(s, "ttapgz") - w(s, "ttap") if w(s, "ttapgz") is not None and w(s, "ttap") is not None else None
    z = w(s, "zlib")
    L.append(f"| {s} MB | .gz load - plain load vs gzip -dc | {fmt(gzx, '{:.3f} s')} vs {fmt(z, '{:.3f} s')} | <= gzip -dc time | {verdict(gzx, lambda x: z is not None and x <= z)} |")
    pz = w(s, "pyzlib") - w(s, "pystart") if w(s, "pyzlib") is not None and w(s, "pystart") is not None else None
    L.append(f"| {s} MB | .gz load - plain load vs zlib inflate (python zlib - start-up) | {fmt(gzx, '{:.3f} s')} vs {fmt(pz, '{:.3f} s')} | <= zlib time (stricter) | {verdict(gzx, lambda x: pz is not None and x <= pz)} |")
    for c, label in (("ttap1", "1 thread"), ("ttap", f"{ncpu} threads"), ("ttapgz", ".gz")):
        rr = ratio(rss(s, c), size)
        L.append(f"| {s} MB | peak RSS / JSON size, {label} | {fmt(rr, '{:.3f}')} | <= 0.5 | {verdict(rr, lambda x: x <= 0.5)} |")
if len(sizes) >= 2:
    a, b = sizes[0], sizes[-1]
    sa, sb = info[a][0], info[b][0]
    for c, label in (("ttap1", "1 thread"), ("ttap", f"{ncpu} threads"), ("ttapgz", ".gz")):
        r = ratio(w(b, c), w(a, c))
        L.append(f"| {b} vs {a} MB | ttap time ratio, {label} (file size ratio {sb/sa:.2f}x) | {fmt(r)} | <= 11x | {verdict(r, lambda x: x <= 11)} |")
L.append("")
L.append("## Checks")
L.append("")
for n in notes:
    L.append(f"- {n}")
text = "\n".join(L) + "\n"
open(os.path.join(out, "load_results.md"), "w").write(text)
print(text)
PY
echo "bench_load: table written to $OUT/load_results.md (runs: $RES, stderr: $LOG)" >&2
