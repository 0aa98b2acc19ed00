#!/usr/bin/env python3
"""Does the learned window scorer add anything to the rules on data nobody here simulated?

1. Zero-shot families, recorded (bench/record/zeroshot, record_zeroshot.py): window and trace
   AUC of the rules, the model, each of its score parts and the fusions ttap can ship, from
   `ttap eval --windows-tsv` (trace score: the mean window score; the rules' and the fused
   score's trace AUC as `ttap eval` prints them are in its eval.md). Window labels: the
   recorder's truth ranges.
2. The real-world corpus (bench/realworld, verdicts written before ttap ran): trace AUC of
   "has a cause" against "healthy", by the rules' trace score (share of the run the findings
   account for), the model's mean window score, and the fused window score's mean.
95% percentile bootstrap intervals over windows resp. traces (1000 resamples, seed 1).

Usage: zeroshot_auc.py --ttap build/ttap [--model models/ttap-window-scorer.pt] [--corpus-fold B]
(a model trained on the corpus's fold A as weak bags, bench/train_real_bags.sh, is judged on B)
Not a test; its table is in models/MODEL_CARD.md."""
import argparse
import csv
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def auc(scores, labels):
    pos = [s for s, l in zip(scores, labels) if l]
    neg = [s for s, l in zip(scores, labels) if not l]
    if not pos or not neg:
        return float("nan")
    ranked = sorted(zip(scores, labels))
    # Mann-Whitney with average ranks for ties.
    rank_sum, i = 0.0, 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        avg = (i + j + 1) / 2.0
        rank_sum += avg * sum(1 for k in range(i, j) if ranked[k][1])
        i = j
    return (rank_sum - len(pos) * (len(pos) + 1) / 2.0) / (len(pos) * len(neg))


def bootstrap(scores, labels, n=1000, seed=1):
    rng = random.Random(seed)
    values = []
    idx = list(range(len(scores)))
    for _ in range(n):
        pick = [rng.choice(idx) for _ in idx]
        v = auc([scores[i] for i in pick], [labels[i] for i in pick])
        if v == v:
            values.append(v)
    values.sort()
    if not values:
        return float("nan"), float("nan")
    return values[int(0.025 * len(values))], values[min(len(values) - 1, int(0.975 * len(values)))]


def fmt(scores, labels):
    lo, hi = bootstrap(scores, labels)
    return "%.3f [%.3f, %.3f]" % (auc(scores, labels), lo, hi)


def zero_shot(ttap, model):
    out = tempfile.mkdtemp(prefix="ttap-zs-")
    subprocess.run([ttap, "eval", os.path.join(HERE, "zeroshot"), "--split", "unseen", "--methods",
                    "rules,model,fused", "--model", model, "--windows-tsv", "--out", out],
                   check=True, capture_output=True)
    rows = list(csv.DictReader(open(os.path.join(out, "windows.tsv")), delimiter="\t"))
    wl = [int(r["window_label"]) for r in rows]
    f = lambda k: [float(r[k]) for r in rows]  # noqa: E731
    rules, model_s = f("rules"), f("model")
    methods = {"rules": rules, "model (shipped parts)": model_s,
               "model part mil": f("mil"), "model part cat": f("cat"),
               "model part unusual": f("unusual")}
    for name, m in (("noisy-OR", 1.0), ("noisy-OR m/2 (ttap scan)", 0.5), ("noisy-OR m/4", 0.25)):
        methods["fused " + name] = [1 - (1 - r) * (1 - m * s) for r, s in zip(rules, model_s)]
    traces = sorted({r["trace"] for r in rows})
    tl = [int(next(r["trace_label"] for r in rows if r["trace"] == t)) for t in traces]
    print("## Zero-shot families recorded on an H200 (%d traces, %d with a costly anti-pattern; "
          "%d windows, %d labelled)\n" % (len(traces), sum(tl), len(rows), sum(wl)))
    print("| method | window AUC | trace AUC (mean window score) |\n|---|---|---|")
    for name, s in methods.items():
        mean = [sum(v for v, r in zip(s, rows) if r["trace"] == t) /
                sum(1 for r in rows if r["trace"] == t) for t in traces]
        print("| %s | %s | %s |" % (name, fmt(s, wl), fmt(mean, tl)))
    print("\n(ttap eval's own table, trace score = share of the run the findings account for: %s)\n"
          % os.path.join(out, "eval.md"))


def realworld(ttap, model, fold=None):
    sys.path.insert(0, os.path.join(ROOT, "bench", "realworld"))
    from bags import fold_of  # noqa: E402
    manifest = os.path.join(ROOT, "bench", "realworld", "manifest.tsv")
    traces = os.path.join(ROOT, "bench", "realworld", "traces")
    rows = list(csv.DictReader(open(manifest), delimiter="\t"))
    scores = {"rules (share of the run)": [], "model (mean window score)": [],
              "fused (mean window score)": []}
    labels, missing = [], 0
    for r in rows:
        if fold and fold_of(r["repo"]) != fold:
            continue
        found = [p for p in os.listdir(traces) if p.startswith(r["id"] + ".")] \
            if os.path.isdir(traces) else []
        if not found:
            missing += 1
            continue
        proc = subprocess.run([ttap, "scan", "--model", model, "--format", "json",
                               os.path.join(traces, found[0])], capture_output=True, text=True)
        doc = json.loads(proc.stdout)
        doc = doc[0] if isinstance(doc, list) else doc
        windows = doc.get("windows", [])
        n = max(1, len(windows))
        labels.append(0 if r["verdict"] == "healthy" else 1)
        scores["rules (share of the run)"].append(doc.get("trace_score", 0.0))
        scores["model (mean window score)"].append(sum(w.get("model_score", 0.0) for w in windows) / n)
        scores["fused (mean window score)"].append(sum(w.get("score", 0.0) for w in windows) / n)
    print("## Real-world corpus%s (%d traces, %d healthy; %d not fetched)\n"
          % (" fold " + fold if fold else "", len(labels), labels.count(0), missing))
    print("| method | trace AUC, a cause vs healthy |\n|---|---|")
    for name, s in scores.items():
        print("| %s | %s |" % (name, fmt(s, labels)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ttap", required=True)
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "ttap-window-scorer.pt"))
    ap.add_argument("--corpus-fold", choices=["A", "B"],
                    help="only the corpus repositories of this fold (bench/realworld/bags.py)")
    a = ap.parse_args()
    zero_shot(a.ttap, a.model)
    realworld(a.ttap, a.model, a.corpus_fold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
