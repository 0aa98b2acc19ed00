#!/usr/bin/env python3
"""Scores ttap against traces we recorded ourselves with measured truth (bench/record/README.md).

For each workload of measured.jsonl (written by record_timed.py on a GPU: the verdict fixed before
ttap ran, and the step time of the anti-pattern and of its fix, both measured with the profiler
off), runs `ttap scan --no-model --format json` on both traces and checks:
  verdict  the anti trace: when the fix saved >= 5% of the step, ttap's first finding at warning+
           names the verdict's category (or one in `also`); when it saved less, the injected
           anti-pattern is harmless and its category must not be at warning+ (quiet);
  cost     ttap's saving for the verdict's category (its findings of those codes together, as a
           share of the step; where it has none, the best of the accepted categories) against the measured share (anti - fix) / anti: within x1.5;
  fixed    the fix trace: the verdict's category is not at warning+ any more.
With --check it exits 1 when fewer verdicts (85%) or costs (80%) are right than on 2026-11-27
(14 of 16, 9 of 10), or a fixed run is not quiet: a regression guard (a CTest runs it so).
Usage: score.py --ttap build/ttap [--dir bench/record] [--check]"""
import argparse, json, os, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "realworld"))
from score import CODES, RANK  # noqa: E402


def scan(ttap, path):
    out = subprocess.run([ttap, "scan", "--no-model", "--format", "json", path],
                         capture_output=True, text=True)
    doc = json.loads(out.stdout)
    return doc[0] if isinstance(doc, list) else doc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ttap", required=True)
    ap.add_argument("--dir", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    rows = [json.loads(l) for l in open(os.path.join(a.dir, "measured.jsonl")) if l.strip()]
    print("| workload | verdict | measured saving | ttap's first warning+ | ttap's saving | verdict | cost | fixed |")
    print("|---|---|---|---|---|---|---|---|")
    totals = {"verdict": [0, 0], "cost": [0, 0], "fixed": [0, 0]}
    # Run-to-run noise: the controls' two identical variants differ by this share; a smaller
    # measured saving is not a cost to compare against. (A healthy verdict whose variants differ,
    # such as DDP against none, is no control.)
    noise = max([abs(r["saving_share"]) for r in rows
                 if r["verdict"] == "healthy" and "variant identical" in r["workload"]] or [0.0])
    for r in rows:
        anti = os.path.join(a.dir, "traces", r["name"] + "-anti.pt.trace.json.gz")
        fix = os.path.join(a.dir, "traces", r["name"] + "-fix.pt.trace.json.gz")
        if not (os.path.exists(anti) and os.path.exists(fix)):
            continue
        measured = r["saving_share"]
        accepted = {r["verdict"]} | {c for c in r["also"].split(",") if c and c != "-"}
        codes = set().union(*(CODES.get(c, set()) for c in accepted))
        own = CODES.get(r["verdict"], set())
        doc = scan(a.ttap, anti)
        warn = [f for f in doc.get("findings", []) if RANK.get(f["severity"], 9) <= RANK["warning"]]
        top = warn[0] if warn else None
        got = "healthy" if top is None else "%s %.0f%%" % (top["code"], 100 * top["share_of_step"])
        cold = r["verdict"] == "cold-start"
        if r["verdict"] == "healthy":
            ok = top is None or any(top["code"] in CODES.get(c, ()) for c in accepted)
        elif measured >= 0.05 or cold:
            ok = top is not None and top["code"] in codes
        else:  # harmless: the injected category stays below warning
            ok = not any(f["code"] in own for f in warn)
        totals["verdict"][0] += ok
        totals["verdict"][1] += 1
        # A category's saving: its findings together (CUDA graphs' one fix is TTA007 and TTA017
        # regions), the best of the accepted categories.
        def category_share(c):
            return sum(f["share_of_step"] for f in doc.get("findings", []) if f["code"] in CODES.get(c, ()))
        share = category_share(r["verdict"]) or max(category_share(c) for c in accepted)
        cost = "-"
        if measured > max(0.05, noise) and not cold and r["verdict"] != "healthy":
            within = share > 0 and 1 / 1.5 <= share / measured <= 1.5
            totals["cost"][0] += within
            totals["cost"][1] += 1
            cost = "yes" if within else "**no**"
        fixed = "-"
        if r["verdict"] not in ("healthy", "cold-start"):
            fdoc = scan(a.ttap, fix)
            still = [f for f in fdoc.get("findings", []) if f["code"] in own and
                     RANK.get(f["severity"], 9) <= RANK["warning"]]
            totals["fixed"][0] += not still
            totals["fixed"][1] += 1
            fixed = "yes" if not still else "**no** (%s)" % still[0]["code"]
        print("| %s | %s | %.0f%% (%.1f -> %.1f ms) | %s | %.0f%% | %s | %s | %s |" % (
            r["name"], r["verdict"], 100 * measured, r["anti_ms"], r["fix_ms"], got, 100 * share,
            "yes" if ok else "**no**", cost, fixed))
    print()
    for k, (n, d) in totals.items():
        print("%s: %d of %d" % (k, n, d))
    if a.check:
        goals = {"verdict": 0.85, "cost": 0.8, "fixed": 1.0}
        failed = [k for k, (n, d) in totals.items() if d and n < goals[k] * d]
        if failed:
            print("below the goals: " + ", ".join(failed))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
