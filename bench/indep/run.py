#!/usr/bin/env python3
"""Scores `ttap scan` on bench/indep/inject.py's injections into real traces (see inject.py).

For each base and injection it writes the injected copy and the clean copy (same rewrite, nothing
injected), runs ttap on both and reports, per category:
  recall    the category's code at warning or above (and at any severity) on costly injections
            (truth >= 2% of the step)
  cost      that finding's saving per step against the truth, within x1.5 (less the clean
            copy's finding of the code, where the base has the cause already; where the code
            has several findings, their sum less the clean copy's sum)
  quiet     harmless injections (truth < 1% of the step): no new finding at warning or above
  AUC       paired: the injected copy's trace_score above its clean copy's (ties count half)
  misnamed  a code that misnames the injection (FORBIDDEN: a one-time start-up as TTA013 or
            TTA008, copies of different tensors as TTA014) new at warning or above

ttap's savings are for the run without the profiler (its profiler-cost model), while this truth is
measured in the profiled timeline; --as-recorded turns that model off to compare like with like.

Usage: bench/indep/run.py [--ttap build/ttap] [--out /tmp/ttap-indep] [--bases F...] [--as-recorded]
       [--rocm] [--no-stack] [--legacy]
Writes OUT/results.tsv (one row per injected copy) and prints the table.
"""
import argparse, json, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "traces", "real")
DEFAULT_BASES = [
    os.path.join(SHARED, "hta--ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"),
    os.path.join(SHARED, "hta--negative_queue_length_values_check__rank0.json.gz"),
    os.path.join(SHARED, "kineto--resnet50_num_workers_0__worker0.pt.trace@jan2021.json.gz"),
    os.path.join(ROOT, "bench", "record", "traces", "healthy-fix.pt.trace.json.gz"),
    os.path.join(ROOT, "bench", "record", "traces", "optimizer-fix.pt.trace.json.gz"),
    os.path.join(ROOT, "bench", "record", "traces", "layout-fix.pt.trace.json.gz"),
]
CODES = {"dataloader": {"TTA001"}, "hostsync": {"TTA002"}, "endsync": {"TTA002"},
         "pageable": {"TTA003"}, "comm": {"TTA011"}, "smallop": set(), "pinnedcopy": set(),
         "onetime": {"TTA015"}, "allocchurn": {"TTA013"}, "samesize": {"TTA003"},
         "dispatch": {"TTA017", "TTA007"}}
LEVELS = {"dataloader": 3, "hostsync": 3, "pageable": 3, "comm": 3, "endsync": 1, "smallop": 1,
          "pinnedcopy": 1, "onetime": 2, "allocchurn": 3, "samesize": 2, "dispatch": 3}
# Codes that misname an injection when they appear at warning+ and not in the clean copy: a
# one-time start-up called steady-state, different tensors of one size called ping-pong.
FORBIDDEN = {"onetime": {"TTA013", "TTA008"}, "samesize": {"TTA014"}}
RANK = {"hint": 0, "info": 1, "warning": 2, "error": 3}


CONFIG = []  # ["--config", FILE] with --as-recorded
ROCM = []  # inject.py's --rocm / --no-stack: every copy written as ROCm / without stacks does


def scan(ttap, path):
    r = subprocess.run([ttap] + CONFIG + ["scan", "--format", "json", "--min-severity", "hint", path],
                       capture_output=True, text=True)
    if r.returncode not in (0, 1):
        return None
    d = json.loads(r.stdout)
    return d.get("traces", [d])[0] if isinstance(d, dict) and "traces" in d else d


def job(args, base, kind, level):
    stem = os.path.basename(base).split(".")[0][:40]
    out = os.path.join(args.out, f"{stem}-{kind}{level}.json.gz")
    r = subprocess.run([sys.executable, os.path.join(HERE, "inject.py"), "--base", base, "--kind", kind,
                        "--level", str(level), "--out", out] + ROCM, capture_output=True, text=True)
    if r.returncode:
        return None
    meta = json.loads(r.stdout)
    return dict(meta, base=stem, path=out, result=scan(args.ttap, out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ttap", default=os.path.join(ROOT, "build", "ttap"))
    ap.add_argument("--out", default="/tmp/ttap-indep")
    ap.add_argument("--bases", nargs="*", default=DEFAULT_BASES)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--as-recorded", action="store_true",
                    help="ttap without its profiler-cost model (profiler_op_us = profiler_frame_us = 0): "
                         "savings in the profiled timeline, the regime this injector's truth is in")
    ap.add_argument("--rocm", action="store_true",
                    help="write every copy as PyTorch on ROCm would (inject.py --rocm)")
    ap.add_argument("--no-stack", action="store_true",
                    help="drop every copy's Python frames (inject.py --no-stack)")
    ap.add_argument("--legacy", action="store_true",
                    help="write every copy as a 2021 profiler would (inject.py --legacy)")
    args = ap.parse_args()
    if args.rocm:
        ROCM.append("--rocm")
    if args.no_stack:
        ROCM.append("--no-stack")
    if args.legacy:
        ROCM.append("--legacy")
    args.ttap = os.path.abspath(args.ttap)
    os.makedirs(args.out, exist_ok=True)
    if args.as_recorded:
        cfg = os.path.join(args.out, "as-recorded.toml")
        with open(cfg, "w") as f:
            f.write("[thresholds]\nprofiler_op_us = 0\nprofiler_frame_us = 0\n")
        CONFIG.extend(["--config", cfg])
    bases = [b for b in args.bases if os.path.exists(b)]
    clean = {}
    for b in bases:
        stem = os.path.basename(b).split(".")[0][:40]
        out = os.path.join(args.out, f"{stem}-clean.json.gz")
        subprocess.run([sys.executable, os.path.join(HERE, "inject.py"), "--base", b, "--clean", "--out", out]
                       + ROCM, check=True, capture_output=True)
        clean[stem] = scan(args.ttap, out)
    work = [(b, k, lv) for b in bases for k in CODES for lv in range(LEVELS[k])]
    with ThreadPoolExecutor(args.jobs) as ex:
        rows = [r for r in ex.map(lambda w: job(args, *w), work) if r]
    stats = {}
    lines = ["base\tkind\tlevel\ttruth_us\tstep_us\tclass\tfound\tseverity\test_us\tratio\tfirst\tquiet"]
    for r in rows:
        res, cl = r["result"], clean[r["base"]]
        if res is None or cl is None:
            continue
        truth, step = r["truth_us_per_step"], r["step_us"]
        costly = truth >= 0.02 * step
        harmless = truth < 0.01 * step
        cls = "costly" if costly else ("harmless" if harmless else "between")
        codes = CODES[r["kind"]]
        match = [f for f in res["findings"] if f["code"] in codes]
        best = max(match, key=lambda f: f["time_lost_us_per_step"], default=None)
        sev = best["severity"] if best else "-"
        est = best["time_lost_us_per_step"] if best else 0.0
        # A base that has the cause already (a DataLoader stall of its own): the finding covers
        # both, the truth only the injection; the clean copy's finding is taken off. A code
        # with one finding per region (TTA017: forward, backward, the step's eager ops) spreads
        # an injection over its regions: its findings' sum is compared with the clean copy's.
        if best and len(match) > 1:
            est = sum(f["time_lost_us_per_step"] for f in match)
            pre = sum(f["time_lost_us_per_step"] for f in cl["findings"] if f["code"] in codes)
        else:
            pre = max((f["time_lost_us_per_step"] for f in cl["findings"] if f["code"] in codes),
                      default=0.0)
        est = max(0.0, est - pre) if best else 0.0
        ratio = est / truth if truth > 0 else float("nan")
        warn = [f for f in res["findings"] if RANK[f["severity"]] >= 2]
        first = warn[0]["code"] if warn else "-"
        clean_warn = {f["code"] for f in cl["findings"] if RANK[f["severity"]] >= 2}
        new_warn = [f["code"] for f in warn if f["code"] not in clean_warn]
        misnamed = [c for c in new_warn if c in FORBIDDEN.get(r["kind"], ())]
        s = stats.setdefault(r["kind"], {"costly": 0, "rec_w": 0, "rec_any": 0, "cost": 0, "harmless": 0,
                                         "quiet": 0, "pairs": 0, "auc": 0.0, "first": 0, "misnamed": 0,
                                         "n": 0})
        s["n"] += 1
        s["misnamed"] += bool(misnamed)
        if costly:
            s["costly"] += 1
            s["rec_w"] += bool(best and RANK[sev] >= 2)
            s["rec_any"] += bool(best)
            s["cost"] += bool(best and 1 / 1.5 <= ratio <= 1.5)
            s["first"] += first in codes
            s["pairs"] += 1
            a, c = res.get("trace_score", 0), cl.get("trace_score", 0)
            s["auc"] += 1.0 if a > c else (0.5 if a == c else 0.0)
        if harmless:
            s["harmless"] += 1
            s["quiet"] += not new_warn
        lines.append("\t".join(map(str, [r["base"], r["kind"], r["level"], round(truth), round(step), cls,
                                         ",".join(sorted({f["code"] for f in match})) or "-", sev, round(est),
                                         f"{ratio:.2f}", first, ",".join(new_warn) or "-"])))
    with open(os.path.join(args.out, "results.tsv"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print()
    print("| kind | costly | recall (warning+) | recall (any) | first at warning+ | cost within x1.5 | paired AUC | harmless quiet | misnamed |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k, s in stats.items():
        auc = f"{s['auc'] / s['pairs']:.2f}" if s["pairs"] else "-"
        print(f"| {k} | {s['costly']} | {s['rec_w']}/{s['costly']} | {s['rec_any']}/{s['costly']} | "
              f"{s['first']}/{s['costly']} | {s['cost']}/{s['costly']} | {auc} | {s['quiet']}/{s['harmless']} | "
              f"{s['misnamed']}/{s['n']} |")


if __name__ == "__main__":
    main()
