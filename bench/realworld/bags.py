#!/usr/bin/env python3
"""Writes real traces as a weakly labelled `ttap train` dataset (issue 35, item 3): each trace is a
bag with its trace-level label only, as the paper's MIL trains. Where the anti-pattern lies in
the trace is not known, so its one label is of a family no rule covers (`TTXREAL`): `ttap train`
then teaches through the trace label alone and leaves every window's category unknown.

Sources, each labelled by truth written before ttap ran on it:
  - the real-world corpus (manifest.tsv): a verdict other than `healthy` is a positive bag;
  - our recordings (bench/record/measured.jsonl): the anti-pattern run of a workload whose fix
    measured >= 5% faster is a positive bag; both runs of the healthy control are clean.
The corpus is cut into two folds by repository (a stable hash of owner/name), so that a model
trained on one fold can be judged on the other's repositories: --fold A writes fold A (and the
recordings), --fold B fold B; --list prints which repository is in which fold.

Usage: bags.py --out DIR --fold A|B [--no-recorded] | --list"""
import argparse
import csv
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
RECORD = os.path.join(ROOT, "bench", "record")


def fold_of(repo):
    return "A" if hashlib.sha1(repo.encode()).digest()[0] % 2 == 0 else "B"


def corpus_rows():
    return list(csv.DictReader(open(os.path.join(HERE, "manifest.tsv")), delimiter="\t"))


def trace_file(trace_id):
    d = os.path.join(HERE, "traces")
    found = [p for p in os.listdir(d) if p.startswith(trace_id + ".")] if os.path.isdir(d) else []
    return os.path.join(d, found[0]) if found else None


def write_bag(out, stem, path, positive, group, task):
    link = os.path.join(out, stem + (".json.gz" if path.endswith(".gz") else ".json"))
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.abspath(path), link)
    doc = {"source": "real", "task": task, "hardware": "", "trace": os.path.basename(link),
           "trace_label": "anti-pattern" if positive else "clean", "workload_group": group,
           "split": "train", "seen": True, "seed": 0, "severity": 0,
           # A family no rule covers: the label teaches through the bag only (ttap train).
           "labels": [{"code": "TTXREAL", "family": "real", "start_us": 0, "end_us": 0}]
           if positive else [],
           "pre_existing": []}
    with open(os.path.join(out, "labels", stem + ".labels.json"), "w") as f:
        json.dump(doc, f, indent=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--fold", choices=["A", "B"])
    ap.add_argument("--no-recorded", action="store_true")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    rows = corpus_rows()
    if a.list:
        for r in rows:
            print("%s\t%s\t%s\t%s" % (fold_of(r["repo"]), r["repo"], r["id"], r["verdict"]))
        return 0
    if not a.out or not a.fold:
        ap.error("--out and --fold are needed (or --list)")
    os.makedirs(os.path.join(a.out, "labels"), exist_ok=True)
    counts = {"positive": 0, "clean": 0, "absent": 0}
    for r in rows:
        if fold_of(r["repo"]) != a.fold:
            continue
        path = trace_file(r["id"])
        if not path:
            counts["absent"] += 1
            continue
        positive = r["verdict"] != "healthy"
        write_bag(a.out, "real-" + r["id"], path, positive, "real:" + r["repo"], r["workload"])
        counts["positive" if positive else "clean"] += 1
    if not a.no_recorded:
        for line in open(os.path.join(RECORD, "measured.jsonl")):
            if not line.strip():
                continue
            m = json.loads(line)
            variants = ["anti", "fix"] if m["verdict"] == "healthy" else ["anti"]
            if m["verdict"] not in ("healthy", "cold-start") and m["saving_share"] < 0.05:
                continue  # a harmless injection: neither a clean run nor an anti-pattern
            for v in variants:
                path = os.path.join(RECORD, "traces", "%s-%s.pt.trace.json.gz" % (m["name"], v))
                if not os.path.exists(path):
                    counts["absent"] += 1
                    continue
                positive = m["verdict"] != "healthy"
                write_bag(a.out, "rec-%s-%s" % (m["name"], v), path, positive,
                          "recorded:" + m["name"], m["workload"])
                counts["positive" if positive else "clean"] += 1
    print("bags: %(positive)d positive, %(clean)d clean, %(absent)d traces absent" % counts,
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
