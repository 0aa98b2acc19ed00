#!/usr/bin/env python3
"""Turns record_zeroshot.py's traces into a `ttap eval` dataset (bench/harness/labels.h).

Each `ttap_truth` range that the recorder put around the anti-pattern's lines becomes a label
(its CPU span, extended to the end of the GPU work launched inside it) and is removed from the
trace, with its GPU-side twin, so ttap never sees the answer. Every trace is split "unseen" and
every label family "unseen": no rule and no training group holds these anti-patterns. An anti
trace whose fix saved less than --harmless of the step (measured without the profiler) is
labelled clean: the anti-pattern is there but costs nothing a user would fix.

Usage: zeroshot_dataset.py SRC DEST [--harmless 0.05]
  SRC holds <name>-{anti,fix}.pt.trace.json.gz and measured.jsonl; DEST gets the stripped
  traces and labels/<stem>.labels.json. Then: ttap eval DEST --split unseen --methods ..."""
import argparse
import gzip
import json
import os

CODES = {"gcpause": "TTX201", "logging": "TTX202", "pylist": "TTX203", "casts": "TTX204",
         "anomaly": "TTX205", "cudnnbench": "TTX206"}
LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaMemcpyAsync",
            "cudaMemsetAsync", "cudaMemcpy", "cudaGraphLaunch")


def strip_and_label(doc):
    """Removes the truth ranges from |doc| and returns their intervals (us, trace clock)."""
    events = doc["traceEvents"]
    spans = [e for e in events if e.get("name") == "ttap_truth" and e.get("ph") == "X"]
    cpu = [(float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), e.get("pid"))
           for e in spans if e.get("cat") != "gpu_user_annotation"]
    gpu_spans = [(float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)))
                 for e in spans if e.get("cat") == "gpu_user_annotation"]
    # The GPU work each CPU span launched: runtime calls inside it, then their correlated activity.
    launched = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and \
                any(n in e.get("name", "") for n in LAUNCHES):
            corr = (e.get("args") or {}).get("correlation")
            if corr is not None:
                launched[corr] = float(e["ts"])
    gpu_end = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            corr = (e.get("args") or {}).get("correlation")
            if corr in launched:
                gpu_end[corr] = float(e["ts"]) + float(e.get("dur", 0))
    intervals = []
    for start, end, _pid in cpu:
        last = max([gpu_end[c] for c, t in launched.items() if start <= t <= end and c in gpu_end],
                   default=end)
        intervals.append([start, max(end, last)])
    for start, end in gpu_spans:
        intervals.append([start, end])
    intervals.sort()
    merged = []
    for s, e in intervals:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    doc["traceEvents"] = [e for e in events if e.get("name") != "ttap_truth"]
    return merged


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dest")
    ap.add_argument("--harmless", type=float, default=0.05)
    a = ap.parse_args()
    os.makedirs(os.path.join(a.dest, "labels"), exist_ok=True)
    rows = [json.loads(l) for l in open(os.path.join(a.src, "measured.jsonl")) if l.strip()]
    for r in rows:
        family = r["name"].split("-")[0]
        for variant in ("anti", "fix"):
            stem = f"{r['name']}-{variant}"
            path = os.path.join(a.src, stem + ".pt.trace.json.gz")
            if not os.path.exists(path):
                continue
            with gzip.open(path, "rt") as f:
                doc = json.load(f)
            intervals = strip_and_label(doc)
            costly = variant == "anti" and r["saving_share"] >= a.harmless
            assert variant == "fix" or intervals, f"{stem}: no ttap_truth range"
            with gzip.open(os.path.join(a.dest, stem + ".pt.trace.json.gz"), "wt",
                           compresslevel=9) as f:
                json.dump(doc, f, separators=(",", ":"))
            labels = {
                "source": "recorded", "task": r["name"], "workload_group": r["name"],
                "hardware": r.get("gpu", ""), "variant": variant,
                "trace": stem + ".pt.trace.json.gz",
                "trace_label": "anti-pattern" if costly else "clean",
                "split": "unseen", "seen": False, "seed": 0,
                "severity": round(max(r["saving_share"], 0.0), 3) if costly else 0.0,
                "labels": [{"code": CODES[family], "family": "unseen", "start_us": int(s),
                            "end_us": int(e) + 1, "file": "record_zeroshot.py", "line": 0}
                           for s, e in intervals] if costly else [],
                "pre_existing": [],
            }
            if variant == "anti":
                labels["time_lost_us_per_step"] = round(1000 * r["saving_ms"], 3)
                labels["run_us_per_step"] = round(1000 * r["anti_ms"], 3)
            with open(os.path.join(a.dest, "labels", stem + ".labels.json"), "w") as f:
                json.dump(labels, f, indent=2, sort_keys=True)
                f.write("\n")
            print(f"{stem}: {labels['trace_label']}, {len(intervals)} truth ranges")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
