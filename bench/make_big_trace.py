#!/usr/bin/env python3
"""Make a large Kineto (PyTorch profiler) trace by replicating a real one.

    python3 bench/make_big_trace.py --base TRACE.json[.gz] --target-mb 100 --out big100.json [--gzip]

The base trace's traceEvents are written again and again ("copies"), as if the profiler had
recorded more steps:

  * copy k is shifted in time by k * S microseconds, S being the base trace's span (first ts to
    last ts+dur over the non-metadata events) rounded up to a whole microsecond, so copies follow
    one another and a fractional timestamp keeps its exact decimal text ("...507.840" stays with
    three decimals, "...507.84" with two; integers stay integers);
  * ids are offset by k * D, D being one more than the largest id of the base, so they stay unique
    across copies and consistent within one (a flow's id stays equal to its launch's correlation):
    args "correlation", "External id", "Python id", "Python parent id", "Sequence number",
    "Ev Idx", and the "id" of flow events (ph s/t/f); "Python module id" is kept (the same module
    runs in every step);
  * "ProfilerStep#N" becomes "ProfilerStep#(N + k * n)", n being the number of steps in the base
    (largest minus smallest step number plus one);
  * metadata events (ph "M": process/thread names and sort indices) are written once, in copy 0;
  * every other top-level key (deviceProperties, distributedInfo, traceName, ...) is written once,
    in the base's order, traceEvents in its place.

The output is written streaming, one event per line (Kineto's layout but one line per event), so
a 1 GB (or larger) output needs no more memory than the parsed base. Numbers keep their text from
the base (floats are never round-tripped through a double). A summary is printed to stderr and
written as JSON to OUT.meta.json (copies, events, steps, bytes) for checking what loaders report.
"""
import argparse
import gzip
import json
import math
import os
import re
import sys
import time
from decimal import Decimal

DEFAULT_BASE = ("/work/shared/traces/real/"
                "tracelens--h100__google_owlv2-large-patch14-ensemble__1016001.json.gz")

# args keys holding ids that must stay unique per copy (all offset by the same stride).
ID_ARGS = ("correlation", "External id", "Python id", "Python parent id", "Sequence number",
           "Ev Idx")
FLOW_PHASES = ("s", "t", "f")
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")


class RawNum(str):
    """A JSON float kept as its source text (json's parse_float hook)."""
    __slots__ = ()


def load_base(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    size = len(data)
    doc = json.loads(data, parse_float=RawNum)
    del data
    if isinstance(doc, list):  # legacy: a bare array of events
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        sys.exit(f"make_big_trace: {path}: no traceEvents array")
    return doc, size


# ---------------------------------------------------------------- serialization
def enc_str(s):
    return json.dumps(s, ensure_ascii=False)


def enc(v):
    """Compact one-line JSON with Kineto's ', ' and ': ' separators; RawNum as its text."""
    if isinstance(v, RawNum):
        return str.__str__(v)
    if isinstance(v, str):
        return enc_str(v)
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, dict):
        return "{" + ", ".join(enc_str(k) + ": " + enc(x) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(enc(x) for x in v) + "]"
    raise TypeError(f"cannot encode {type(v)}")


def enc_pretty(v, indent):
    """Indented JSON for the top-level keys (deviceProperties, distributedInfo...)."""
    pad = "  " * indent
    if isinstance(v, dict) and v:
        items = [pad + "  " + enc_str(k) + ": " + enc_pretty(x, indent + 1) for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(v, list) and v and any(isinstance(x, (dict, list)) for x in v):
        items = [pad + "  " + enc_pretty(x, indent + 1) for x in v]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return enc(v)


# ---------------------------------------------------------------- templates
# An event template is a list of parts: str (literal JSON text) or a slot tuple:
#   ("ts", int_part, suffix)   ->  str(int_part + k*shift) + suffix      (non-negative plain numbers)
#   ("tsd", Decimal)           ->  str(Decimal + k*shift)                 (anything else)
#   ("id", value)              ->  str(value + k*stride)
#   ("step", n)                ->  enc_str("ProfilerStep#" + str(n + k*nsteps))
_PLAIN_NUM = re.compile(r"^(\d+)(\.\d+)?$")


def ts_slot(v):
    text = str.__str__(v) if isinstance(v, RawNum) else str(v)
    m = _PLAIN_NUM.match(text)
    if m:
        return ("ts", int(m.group(1)), m.group(2) or "")
    return ("tsd", Decimal(text))


class Template:
    __slots__ = ("parts",)

    def __init__(self):
        self.parts = []

    def lit(self, s):
        if self.parts and isinstance(self.parts[-1], str):
            self.parts[-1] += s
        else:
            self.parts.append(s)

    def slot(self, t):
        self.parts.append(t)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def build_template(ev):
    t = Template()
    t.lit("{")
    first = True
    is_flow = ev.get("ph") in FLOW_PHASES
    for k, v in ev.items():
        t.lit(("" if first else ", ") + enc_str(k) + ": ")
        first = False
        if k == "ts" and (is_int(v) or isinstance(v, RawNum)):
            t.slot(ts_slot(v))
        elif k == "name" and isinstance(v, str) and STEP_RE.match(v):
            t.slot(("step", int(STEP_RE.match(v).group(1))))
        elif k == "id" and is_flow and is_int(v):
            t.slot(("id", v))
        elif k == "args" and isinstance(v, dict):
            t.lit("{")
            afirst = True
            for ak, av in v.items():
                t.lit(("" if afirst else ", ") + enc_str(ak) + ": ")
                afirst = False
                if ak in ID_ARGS and is_int(av):
                    t.slot(("id", av))
                else:
                    t.lit(enc(av))
            t.lit("}")
        else:
            t.lit(enc(v))
    t.lit("}")
    return t.parts


def render(parts, k, shift, stride, nsteps):
    out = []
    for p in parts:
        if p.__class__ is str:
            out.append(p)
            continue
        kind = p[0]
        if kind == "ts":
            out.append(str(p[1] + k * shift) + p[2])
        elif kind == "id":
            out.append(str(p[1] + k * stride))
        elif kind == "step":
            out.append('"ProfilerStep#' + str(p[1] + k * nsteps) + '"')
        else:  # tsd
            out.append(str(p[1] + k * shift))
    return "".join(out)


def num(v):
    if isinstance(v, RawNum):
        return Decimal(str.__str__(v))
    if is_int(v):
        return Decimal(v)
    return None


# ---------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default=DEFAULT_BASE, help="real trace to replicate (.json/.json.gz)")
    ap.add_argument("--target-mb", type=float, default=100.0,
                    help="uncompressed output size to reach, in MB (10^6 bytes); default 100")
    ap.add_argument("--copies", type=int, help="number of copies (overrides --target-mb)")
    ap.add_argument("--out", help="output path (required unless --plan)")
    ap.add_argument("--gzip", action="store_true", help="gzip the output (as it is written)")
    ap.add_argument("--gzip-level", type=int, default=6, help="gzip level (default 6)")
    ap.add_argument("--plan", action="store_true",
                    help="only print the number of copies --target-mb needs, write nothing")
    args = ap.parse_args()
    if not args.out and not args.plan:
        ap.error("--out is required")

    t0 = time.time()
    doc, base_bytes = load_base(args.base)
    events = doc["traceEvents"]

    # Span of the base (non-metadata events), step numbering, id stride.
    lo = hi = None
    steps = set()
    max_id = 0
    for ev in events:
        if not isinstance(ev, dict):
            continue
        name = ev.get("name")
        if isinstance(name, str):
            m = STEP_RE.match(name)
            if m:
                steps.add(int(m.group(1)))
        if ev.get("ph") in FLOW_PHASES and is_int(ev.get("id")):
            max_id = max(max_id, ev["id"])
        a = ev.get("args")
        if isinstance(a, dict):
            for key in ID_ARGS:
                if is_int(a.get(key)):
                    max_id = max(max_id, a[key])
        if ev.get("ph") == "M":
            continue
        ts = num(ev.get("ts"))
        if ts is None:
            continue
        end = ts + (num(ev.get("dur")) or 0)
        lo = ts if lo is None or ts < lo else lo
        hi = end if hi is None or end > hi else hi
    if lo is None:
        sys.exit("make_big_trace: base has no timed events")
    shift = max(1, math.ceil(hi - lo))          # whole microseconds: decimal text unchanged
    stride = max_id + 1
    nsteps = (max(steps) - min(steps) + 1) if steps else 0
    base_step_count = len(steps)

    # Templates (metadata events are only written in copy 0).
    templates = []   # (parts, is_meta)
    for ev in events:
        if isinstance(ev, dict):
            templates.append((build_template(ev), ev.get("ph") == "M"))
        else:
            templates.append(([enc(ev)], True))  # odd element: keep once, verbatim
    n_meta = sum(1 for _, m in templates if m)
    n_rep = len(templates) - n_meta

    # Head / tail: the other top-level keys, in order, around traceEvents.
    keys = list(doc.keys())
    ti = keys.index("traceEvents")
    head_items = [(k, doc[k]) for k in keys[:ti]]
    tail_items = [(k, doc[k]) for k in keys[ti + 1:]]
    head = "{\n" + "".join("  " + enc_str(k) + ": " + enc_pretty(v, 1) + ",\n"
                           for k, v in head_items) + '  "traceEvents": [\n'
    tail = "\n  ]" + "".join(",\n  " + enc_str(k) + ": " + enc_pretty(v, 1)
                             for k, v in tail_items) + "\n}\n"

    # Number of copies: from the size of copy 0 (later copies are about as big).
    if args.copies:
        copies = args.copies
    else:
        copy0 = sum(len(render(p, 0, shift, stride, nsteps).encode()) + 4 for p, _ in templates)
        target = args.target_mb * 1e6
        copies = max(1, math.ceil((target - len(head) - len(tail)) / copy0))
    if args.plan:
        print(copies)
        return

    out_tmp = args.out + ".tmp"
    raw = open(out_tmp, "wb")
    f = gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=args.gzip_level,
                      mtime=0) if args.gzip else raw
    written = 0

    def w(s):
        nonlocal written
        b = s.encode("utf-8")
        written += len(b)
        f.write(b)

    w(head)
    first = True
    n_written = 0
    for k in range(copies):
        buf = []
        for parts, is_meta in templates:
            if is_meta and k > 0:
                continue
            buf.append(render(parts, k, shift, stride, nsteps))
            if len(buf) >= 20000:
                w(("" if first else ",\n") + "  " + ",\n  ".join(buf))
                first = False
                n_written += len(buf)
                buf = []
        if buf:
            w(("" if first else ",\n") + "  " + ",\n  ".join(buf))
            first = False
            n_written += len(buf)
    w(tail)
    if f is not raw:
        f.close()
    raw.close()
    os.replace(out_tmp, args.out)

    meta = {
        "base": os.path.abspath(args.base),
        "base_json_bytes": base_bytes,
        "base_elements": len(events),
        "base_metadata_events": n_meta,
        "base_steps": base_step_count,
        "copies": copies,
        "elements": n_written,
        "replicated_per_copy": n_rep,
        "steps": base_step_count * copies,
        "step_numbers": ([min(steps), min(steps) + nsteps * copies - 1] if steps else None),
        "json_bytes": written,
        "file_bytes": os.path.getsize(args.out),
        "bytes_per_element": round(written / max(1, n_written), 1),
        "time_shift_us": shift,
        "id_stride": stride,
        "gzip": bool(args.gzip),
        "seconds": round(time.time() - t0, 1),
    }
    with open(args.out + ".meta.json", "w") as mf:
        json.dump(meta, mf, indent=2)
        mf.write("\n")
    print("make_big_trace: " + ", ".join(f"{k}={v}" for k, v in meta.items() if k != "base"),
          file=sys.stderr)


if __name__ == "__main__":
    main()
