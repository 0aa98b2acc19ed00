#!/usr/bin/env python3
# Calibration runs on a CUDA GPU for two of ttap's assumptions (docs/causal_model.md):
#  1. the profiler's own CPU cost per recorded op: three CPU-bound loops from record_timed.py,
#     timed without the profiler and profiled with each combination of with_stack and
#     record_shapes (trace per combination, so ttap can count the events it would correct for);
#  2. what TF32 and bf16 save on fp32 GEMMs by size: the kernel time of fp32 ('highest'),
#     TF32 ('high') and bf16 matmuls for sizes from 256 to 8192.
# Usage (on the GPU machine): record_calib.py OUTDIR  ->  OUTDIR/calib.json and
# OUTDIR/calib-<workload>-<stack><shapes>.pt.trace.json.gz. Not used by CI or the tests.
import gzip
import json
import os
import shutil
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_timed  # noqa: E402


def profile(step, path, with_stack, record_shapes, active=3):
    from torch.profiler import ProfilerActivity, schedule
    raw = path[:-3]
    sched = schedule(wait=0, warmup=2, active=active, repeat=1)
    with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                                schedule=sched, on_trace_ready=lambda p: p.export_chrome_trace(raw),
                                record_shapes=record_shapes, with_stack=with_stack) as prof:
        for _ in range(2 + active):
            step()
            prof.step()
    torch.cuda.synchronize()
    with open(raw, "rb") as src, gzip.open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.remove(raw)


def gemm_ms(n, m, k, mode):
    dtype = torch.bfloat16 if mode == "bf16" else torch.float32
    torch.set_float32_matmul_precision("highest" if mode == "fp32" else "high")
    a = torch.randn(n, k, device="cuda", dtype=dtype)
    b = torch.randn(k, m, device="cuda", dtype=dtype)
    for _ in range(3):
        a @ b
    reps = max(3, min(200, int(2e11 / (2.0 * n * m * k))))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        a @ b
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    result = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "overhead": [],
              "gemm": []}
    # 1. Profiler overhead per configuration.
    for name, variant in (("hostsync", "fix"), ("optimizer", "fix"), ("decode", "anti")):
        torch.manual_seed(0)
        step = getattr(record_timed, "build_" + name)(variant, torch, nn, F)
        for _ in range(5):
            step()
        real = record_timed.timed_ms(torch, step, 30)
        row = {"workload": f"{name}-{variant}", "real_ms": real, "configs": {}}
        for with_stack in (True, False):
            for shapes in (True, False):
                tag = ("S" if with_stack else "s") + ("H" if shapes else "h")
                path = os.path.join(out, f"calib-{name}-{tag}.pt.trace.json.gz")
                t0 = time.perf_counter()
                profile(step, path, with_stack, shapes)
                row["configs"][tag] = round(time.perf_counter() - t0, 3)
        result["overhead"].append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        del step
        torch.cuda.empty_cache()
    # 2. GEMM time by precision and size (square and skinny).
    shapes = [(s, s, s) for s in (256, 512, 1024, 2048, 4096, 8192)]
    shapes += [(8192, 1024, 1024), (64, 4096, 4096), (32768, 512, 512), (2048, 11008, 4096)]
    for n, m, k in shapes:
        row = {"n": n, "m": m, "k": k}
        for mode in ("fp32", "tf32", "bf16"):
            row[mode] = gemm_ms(n, m, k, mode)
        result["gemm"].append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    with open(os.path.join(out, "calib.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
