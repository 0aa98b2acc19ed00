#!/usr/bin/env python3
"""Scores ttap against the hand-written verdicts of bench/realworld/manifest.tsv.

For each row whose trace is present under bench/realworld/traces/, runs
`ttap scan --no-model --format json` and takes ttap's first finding at warning or above (ttap
sorts them: trace-incomplete first, then by what the fix saves). The verdict is right when that
finding's code names the verdict's category or one in `also`; `healthy` is right when nothing is
at warning or above. Prints a table (markdown) and the total; writes --json if asked.
Called by bench/realworld.sh."""
import argparse, json, os, subprocess, sys

CODES = {
    "dataloader": {"TTA001"}, "host-sync": {"TTA002"}, "pageable-copy": {"TTA003"},
    "small-copies": {"TTA004"}, "zero-grad": {"TTA005"}, "unfused-optimizer": {"TTA006"},
    "cpu-overhead": {"TTA007", "TTA017"}, "gpu-idle": {"TTA008"}, "no-tensor-cores": {"TTA009"},
    "layout": {"TTA010"}, "comm-exposed": {"TTA011", "TTA022"}, "comm-per-parameter": {"TTA012"},
    "allocator-churn": {"TTA013"}, "ping-pong": {"TTA014"}, "cold-start": {"TTA015"},
    "trace-incomplete": {"TTA016"},
}
RANK = {"error": 0, "warning": 1, "info": 2, "hint": 3}


def read_manifest(directory):
    """The manifest's rows as dicts, keyed by its header."""
    rows = []
    with open(os.path.join(directory, "manifest.tsv"), encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            if line.strip():
                rows.append(dict(zip(header, line.rstrip("\n").split("\t"))))
    return rows


def trace_of(directory, row):
    """The row's trace under DIR/traces/, or None when it was not fetched."""
    for ext in (".json", ".json.gz"):
        p = os.path.join(directory, "traces", row["id"] + ext)
        if os.path.exists(p):
            return p
    return None


def judge(ttap, trace, row):
    """Scans |trace| and judges ttap's first finding at warning+ against |row|'s verdict:
    (what ttap said, the run's speed-up, right?)."""
    out = subprocess.run([ttap, "scan", "--no-model", "--format", "json", trace],
                         capture_output=True, text=True)
    try:
        doc = json.loads(out.stdout)
    except ValueError:
        return "unreadable", "", False
    if isinstance(doc, list):
        doc = doc[0]
    top = next((f for f in doc.get("findings", [])
                if RANK.get(f["severity"], 9) <= RANK["warning"]), None)
    accepted = {row["verdict"]} | {c for c in row.get("also", "-").split(",") if c and c != "-"}
    if top is None:
        return "healthy", doc.get("run", {}).get("speedup"), "healthy" in accepted
    got = "%s %s %.0f%%" % (top["code"], top["severity"], 100 * top["share_of_step"])
    ok = any(top["code"] in CODES.get(c, ()) for c in accepted)
    return got, doc.get("run", {}).get("speedup"), ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ttap", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--json")
    a = ap.parse_args()
    results, absent = [], 0
    for r in read_manifest(a.dir):
        trace = trace_of(a.dir, r)
        if not trace:
            absent += 1
            continue
        got, speed, ok = judge(a.ttap, trace, r)
        results.append((r, got, speed, ok))
    right = sum(1 for x in results if x[3])
    print("| id | verdict (also) | ttap's first finding at warning+ | right |")
    print("|---|---|---|---|")
    for r, got, speed, ok in results:
        also = "" if r.get("also", "-") in ("", "-") else " (" + r["also"] + ")"
        print("| %s | %s%s | %s | %s |" % (r["id"], r["verdict"], also, got, "yes" if ok else "**no**"))
    print("\n%d of %d verdicts right (%.0f%%); %d rows without their trace (run fetch.sh)" %
          (right, len(results), 100.0 * right / max(1, len(results)), absent))
    if a.json:
        with open(a.json, "w") as f:
            json.dump([{"id": r["id"], "verdict": r["verdict"], "ttap": got, "right": ok}
                       for r, got, _, ok in results], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
