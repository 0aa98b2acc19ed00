#!/usr/bin/env python3
"""Does ttap's verdict on a real trace survive how else the same run could have been recorded?

The corpus's verdicts name a run's main cause, which does not depend on the profiler's options. So
each corpus trace is rewritten as if recorded
  no-stack   without with_stack=True (its python_function events and "Call stack" args dropped),
  no-steps   without a schedule / prof.step() (its ProfilerStep#N markers dropped),
  cut        stopped halfway through its run (traces with 4 steps or more): the CPU's events
             after the middle of the middle step dropped (those across it end there), the GPU
             work launched before it kept,
  legacy     by a 2021 profiler: categories Operator / Runtime / Kernel / Memcpy / Memset
             (ProfilerStep an Operator), flows "async", and no deviceProperties, cuda_sync or
             gpu_user_annotation events, which it did not write,
  rocm       on ROCm (bench/indep/inject.py's rocmify: hip* calls, copies whose host side is
             "Host", blocking copies as hipMemcpyWithStream, an MI300X), except where the
             verdict is no-tensor-cores (that depends on the GPU),
  no-shapes  without record_shapes=True (the ops' Input Dims / types / strides args dropped),
  rounded    with whole-microsecond ts and dur (older Kineto, or a tool that re-saved it),
  legacy-no-steps  both legacy and no-steps (a 2021 profiler writes record_function as an
             Operator, so a loop's own annotations look like ops),
and scored against the same verdict as the trace itself (score.py's judge), and against the code
ttap names first as recorded. A variant is listed only
where the rewrite removed something. A verdict that holds as recorded but not in a variant is a
brittleness real users meet: many record without stacks, or profile one call without steps.

Usage: bench/realworld/variants.py [--ttap build/ttap] [--dir bench/realworld] [--out DIR]
       [--jobs N] [--only ID...] [--variants NAME...]
"""
import argparse, gzip, json, os, re, sys, tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "indep"))
from score import judge, read_manifest, trace_of  # noqa: E402
from inject import legacyfy, rocmify  # noqa: E402

STEP = re.compile(r"^ProfilerStep#\d+$")


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return json.load(f)


def events_of(doc):
    return doc if isinstance(doc, list) else doc.get("traceEvents", [])


def with_events(doc, events):
    if isinstance(doc, list):
        return events
    out = dict(doc)
    out["traceEvents"] = events
    return out


def no_stack(doc):
    kept, removed = [], 0
    for e in events_of(doc):
        if e.get("cat") == "python_function":
            removed += 1
            continue
        args = e.get("args")
        if isinstance(args, dict) and "Call stack" in args:
            e = dict(e, args={k: v for k, v in args.items() if k != "Call stack"})
            removed += 1
        kept.append(e)
    return with_events(doc, kept), removed


def no_steps(doc):
    evs = events_of(doc)
    kept = [e for e in evs if not STEP.match(str(e.get("name", "")))]
    return with_events(doc, kept), len(evs) - len(kept)


GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset")


def cut(doc):
    """The profiler stopped halfway through the middle step: the CPU's events after that moment
    are gone (those across it end there), while the GPU work launched before it is kept, as the
    profiler's stop waits for it and flushes its activity."""
    evs = events_of(doc)
    steps = sorted((e for e in evs if STEP.match(str(e.get("name", ""))) and e.get("ph") == "X"
                    and str(e.get("cat", "")) in ("user_annotation", "cpu_op", "Operator")),
                   key=lambda e: float(e["ts"]))
    if len(steps) < 4:
        return doc, 0
    mid = steps[len(steps) // 2]
    at = float(mid["ts"]) + float(mid.get("dur", 0)) / 2
    launched = {(e.get("args") or {}).get("correlation") for e in evs
                if e.get("cat") in ("cuda_runtime", "Runtime", "cuda_driver") and "ts" in e
                and float(e["ts"]) < at}
    launched.discard(None)
    kept, removed = [], 0
    for e in evs:
        ts = e.get("ts")
        if ts is None or e.get("ph") == "M" or float(ts) < at:
            if ts is not None and e.get("ph") == "X" and e.get("cat") not in GPU_CATS and \
                    float(ts) + float(e.get("dur", 0)) > at:
                e = dict(e, dur=at - float(ts))
            kept.append(e)
        elif e.get("cat") in GPU_CATS and (e.get("args") or {}).get("correlation") in launched:
            kept.append(e)
        else:
            removed += 1
    return with_events(doc, kept), removed


def rocm(doc):
    if isinstance(doc, list) or not any(str(e.get("name", "")).startswith("cuda")
                                        for e in doc.get("traceEvents", [])):
        return doc, 0
    return rocmify(doc), 1


SHAPE_ARGS = ("Input Dims", "Input dims", "Input type", "Input Strides", "Concrete Inputs",
              "Input Type")


def no_shapes(doc):
    """Recorded without record_shapes=True: the ops' input shapes, dtypes and strides gone."""
    kept, removed = [], 0
    for e in events_of(doc):
        args = e.get("args")
        if isinstance(args, dict) and any(k in args for k in SHAPE_ARGS):
            e = dict(e, args={k: v for k, v in args.items() if k not in SHAPE_ARGS})
            removed += 1
        kept.append(e)
    return with_events(doc, kept), removed


def rounded(doc):
    """Written with whole microseconds (older Kineto, or a tool that re-saved the trace): every
    ts and dur rounded, so nanosecond-precise orderings and zero-length gaps move by up to 1 us."""
    kept, changed = [], 0
    for e in events_of(doc):
        new = dict(e)
        for k in ("ts", "dur"):
            v = e.get(k)
            if isinstance(v, (int, float)) or (isinstance(v, str) and re.match(r"^-?\d+(\.\d+)?$", v)):
                r = round(float(v))
                if float(v) != r:
                    changed += 1
                new[k] = r
        kept.append(new)
    return with_events(doc, kept), changed


def legacy_no_steps(doc):
    doc, removed = no_steps(doc)
    if not removed:
        return doc, 0
    doc, changed = legacyfy(doc)
    return doc, removed + changed


VARIANTS = {"no-stack": no_stack, "no-steps": no_steps, "cut": cut, "legacy": legacyfy,
            "legacy-no-steps": legacy_no_steps, "no-shapes": no_shapes, "rounded": rounded,
            "rocm": rocm}


def run_row(a, row):
    trace = trace_of(a.dir, row)
    if not trace:
        return None
    got = {"as recorded": judge(a.ttap, trace, row)}
    doc = load(trace)
    for name, rewrite in VARIANTS.items():
        if name == "rocm" and row["verdict"] == "no-tensor-cores":
            continue
        variant, removed = rewrite(json.loads(json.dumps(doc)) if isinstance(doc, dict) else list(doc))
        if not removed:
            continue
        path = os.path.join(a.out, "%s.%s.json.gz" % (row["id"], name))
        with gzip.open(path, "wt", encoding="utf-8") as f:
            json.dump(variant, f)
        got[name] = judge(a.ttap, path, row)
    return row, got


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--ttap", default=os.path.join(here, "..", "..", "build", "ttap"))
    ap.add_argument("--dir", default=here)
    ap.add_argument("--out", default=tempfile.mkdtemp(prefix="ttap-variants-"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--variants", nargs="*", help="run only these rewrites")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.variants:
        for name in list(VARIANTS):
            if name not in a.variants:
                del VARIANTS[name]
    rows = [r for r in read_manifest(a.dir) if not a.only or r["id"] in a.only]
    with ThreadPoolExecutor(a.jobs) as ex:
        results = [x for x in ex.map(lambda r: run_row(a, r), rows) if x]
    names = ["as recorded"] + list(VARIANTS)
    print("| id | verdict (also) | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    totals = {n: [0, 0] for n in names}
    for row, got in results:
        cells = []
        for n in names:
            if n not in got:
                cells.append("-")
                continue
            what, _, ok = got[n]
            totals[n][0] += ok
            totals[n][1] += 1
            cells.append(what if ok else "**%s**" % what)
        also = "" if row.get("also", "-") in ("", "-") else " (" + row["also"] + ")"
        print("| %s | %s%s | %s |" % (row["id"], row["verdict"], also, " | ".join(cells)))
    print()
    for n in names:
        print("%s: %d of %d right" % (n, totals[n][0], totals[n][1]))
    # Beyond the verdict: whether the rewrite keeps the first finding's code (a verdict's "also"
    # list lets two codes pass; the same run should still lead with the same one).
    for n in VARIANTS:
        pairs = [(row["id"], got["as recorded"][0].split()[0], got[n][0].split()[0])
                 for row, got in results if n in got]
        moved = [(i, a, b) for i, a, b in pairs if a != b]
        print("%s: first code as recorded in %d of %d %s" % (n, len(pairs) - len(moved),
                                                             len(pairs), moved))
    # The traces right as recorded whose verdict a variant loses.
    lost = [(row["id"], n) for row, got in results for n in VARIANTS
            if n in got and got["as recorded"][2] and not got[n][2]]
    print("right as recorded, wrong in a variant: %d %s" % (len(lost), lost))
    return 0


if __name__ == "__main__":
    sys.exit(main())
