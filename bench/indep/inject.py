#!/usr/bin/env python3
"""An anti-pattern injector that shares no code with ttap (issue 37's independent benchmark).

`ttap gen --bases` injects with C++ that lives beside the detectors; this one is written apart
from them, in Python's standard library, so that a detector tuned to its own injector's event
shapes shows here. It adds one anti-pattern to every ProfilerStep of a real Kineto trace and
measures the truth with its own timeline: the main process's CPU events move by a shift that
grows at each injected call and changes at each call that waits for the GPU; every GPU op starts
at the later of its (moved) launch plus the latency it had and the end of the op before it on its
stream plus the gap it had; a launch call held by a full launch queue (100 us or more) waits for
the op that ended just before it returned, which freed its slot. The cost of an injection is the sum over steps of the step's new
length minus its old one. The clean copy of the pair goes through the same rewrite with nothing
injected, so both copies differ only by the injection.

Categories (each the shape a PyTorch program leaves in the trace):
  dataloader  a DataLoader __next__ of D ms at the start of each step (CPU only)
  hostsync    .item() mid-step: aten::item > aten::_local_scalar_dense > cudaMemcpyAsync (a 4-byte
              device-to-pageable copy) + cudaStreamSynchronize, waiting for the GPU's queue
  pageable    x.to("cuda") of B bytes from pageable memory at the start of the step:
              aten::to > aten::_to_copy > aten::copy_ > cudaMemcpyAsync, blocking until the copy
              (Pageable -> Device, 8 GB/s) is done
  comm        K NCCL all-reduces launched after backward (before the optimizer, or at 85% of the
              step) on the compute stream, each a kernel of C/K ms: nothing overlaps them
  smallop     harmless: one 4 us CPU op per step
  pinnedcopy  harmless: a 64 KiB non-blocking copy from pinned memory at the step's start
  endsync     a torch.cuda.synchronize() after the step's last op (harmless when the GPU has
              finished by then, costly when it trails the CPU: the truth decides)
  onetime     a cudaFree of D ms (library / context start-up) in the first step only: one-time,
              never steady-state
  allocchurn  torch.cuda.empty_cache() each step: cudaMalloc of M us, then a cudaFree that
              waits for the device
  dispatch    D us more CPU time (10/30/100) in every top-level op that launches GPU work:
              Python hooks, autocast casts, a wrapper's checks (CPU-overhead-bound when costly)
  samesize    a pinned non-blocking device-to-host copy at the step's start and a pageable
              host-to-device copy of the same size (a different tensor) mid-step: pageable-copy,
              never ping-pong

Usage: inject.py --base TRACE --kind KIND --level L --out OUT.json.gz   (L: 0..2, the magnitude)
       inject.py --base TRACE --clean --out OUT.json.gz
       [--rocm]: written as PyTorch on ROCm writes it (hip* calls, "Host" copies, blocking copies
       and .item() as one hipMemcpyWithStream, an MI300X), the timing unchanged
       [--no-stack]: without Python frames, as recorded without with_stack=True
       [--legacy]: as a 2021 profiler wrote it (Operator/Runtime/Kernel categories, no
       deviceProperties)
Prints one JSON line: kind, level, truth_us_per_step, step_us, steps.
"""
import argparse, bisect, gzip, json, math, sys

GPU_CATS = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
RUNTIME_CATS = {"cuda_runtime", "Runtime", "cuda_driver"}
LATENCY_US = 5.0  # launch to start on an idle GPU, for ops this script adds
GAP_US = 1.0  # between back-to-back ops on a stream
PAGEABLE_BW = 8e9  # bytes/s
PINNED_BW = 24e9
QUEUE_WAIT_MIN_US = 100.0  # a launch call this long waited for a slot in a full launch queue
QUEUE_RETURN_US = 20.0  # ... and returned this soon after the op that freed the slot ended


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        d = json.load(f)
    return d if isinstance(d, dict) else {"traceEvents": d}


def is_gpu(e, gpu_pids):
    return e.get("cat") in GPU_CATS or (e.get("pid") in gpu_pids and e.get("cat") != "python_function")


class Base:
    def __init__(self, d, rocm=False):
        self.d = d
        self.rocm = rocm
        ev = d["traceEvents"]
        self.old_style = any(e.get("cat") == "Kernel" for e in ev)
        self.gpu_pids = {e["pid"] for e in ev if e.get("cat") in GPU_CATS}
        steps = [e for e in ev if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
                 and not is_gpu(e, self.gpu_pids)]
        if not steps:
            raise SystemExit("base has no ProfilerStep")
        steps.sort(key=lambda e: e["ts"])
        self.steps = steps
        self.main_pid, self.main_tid = steps[0]["pid"], steps[0]["tid"]
        kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "Kernel")]
        if not kernels:
            raise SystemExit("base has no kernels")
        by_stream = {}
        for k in kernels:
            s = (k["pid"], k["tid"])
            by_stream[s] = by_stream.get(s, 0) + k.get("dur", 0)
        self.main_stream = max(by_stream, key=by_stream.get)
        k0 = next(k for k in kernels if (k["pid"], k["tid"]) == self.main_stream)
        self.stream_args = {a: k0["args"][a] for a in ("device", "context", "stream") if a in k0.get("args", {})}
        self.next_corr = 1 + max([int(e.get("args", {}).get("correlation", 0) or 0) for e in ev] + [0])
        self.next_ext = 1 + max([int(e.get("args", {}).get("External id", 0) or 0) for e in ev] + [0])

    def cat(self, kind):
        new = {"op": "cpu_op", "rt": "cuda_runtime", "kernel": "kernel", "memcpy": "gpu_memcpy", "flow": "ac2g"}
        old = {"op": "Operator", "rt": "Runtime", "kernel": "Kernel", "memcpy": "Memcpy", "flow": "async"}
        return (old if self.old_style else new)[kind]

    def launches_inside(self, op):
        """Whether a launch call of the main thread starts inside |op|."""
        if not hasattr(self, "_launch_ts"):
            self._launch_ts = sorted(e["ts"] for e in self.d["traceEvents"]
                                     if e.get("cat") in RUNTIME_CATS and e.get("pid") == self.main_pid
                                     and e.get("tid") == self.main_tid and "Launch" in e.get("name", ""))
        i = bisect.bisect_left(self._launch_ts, op["ts"])
        return i < len(self._launch_ts) and self._launch_ts[i] < op["ts"] + op.get("dur", 0)

    def top_level_boundaries(self, step):
        """Start times of the step's direct children on the main thread (op boundaries)."""
        a, b = step["ts"], step["ts"] + step["dur"]
        kids = [e for e in self.d["traceEvents"] if e.get("ph") == "X" and e.get("pid") == self.main_pid
                and e.get("tid") == self.main_tid and a < e["ts"] < b and e["ts"] + e.get("dur", 0) <= b
                and e is not step and e.get("cat") not in ("python_function", "Trace")]
        kids.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        top, end = [], a
        for k in kids:
            if k["ts"] >= end:
                top.append(k)
                end = k["ts"] + k.get("dur", 0)
        return top


class Injection:
    """One injected call at original time t (inserted before the events that start at t)."""

    def __init__(self, t, kind, **p):
        self.t, self.kind, self.p = t, kind, p


def plan(base, kind, level):
    injections = []
    mean_step = sum(s["dur"] for s in base.steps) / len(base.steps)
    for s in base.steps:
        top = base.top_level_boundaries(s)
        a = s["ts"]
        first = top[0]["ts"] if top else a + 1
        if kind == "dataloader":
            injections.append(Injection(first, kind, dur=[0.1, 0.3, 1.0][level] * mean_step))
        elif kind == "pageable":
            dur = [0.05, 0.2, 0.5][level] * mean_step
            injections.append(Injection(first, kind, bytes=int(dur * 1e-6 * PAGEABLE_BW)))
        elif kind == "pinnedcopy":
            injections.append(Injection(first, kind, bytes=64 << 10))
        elif kind == "smallop":
            injections.append(Injection(first, kind))
        elif kind == "hostsync":
            frac = [0.3, 0.5, 0.7][level]
            t = nearest_boundary(top, a + frac * s["dur"], first, frac)
            injections.append(Injection(t, kind))
        elif kind == "endsync":
            t = (top[-1]["ts"] + top[-1]["dur"]) if top else a + s["dur"] - 1
            injections.append(Injection(min(t, a + s["dur"] - 1), kind))
        elif kind == "comm":
            total = [0.1, 0.3, 0.6][level] * mean_step
            # After backward: the optimizer's step (not a zero_grad at the step's start).
            opt = [k for k in top if k["ts"] > a + 0.4 * s["dur"] and "zero_grad" not in k["name"]
                   and any(w in k["name"].lower() for w in ("optimizer", "optim.", "adam", "sgd"))]
            t = opt[0]["ts"] if opt else nearest_boundary(top, a + 0.85 * s["dur"], first, 0.85)
            injections.append(Injection(t, kind, total=total, count=4))
        elif kind == "onetime":
            if s is base.steps[0]:  # library / context start-up inside the first step only
                injections.append(Injection(first, kind, dur=[0.5, 2.0, 8.0][level] * mean_step))
        elif kind == "allocchurn":
            t = nearest_boundary(top, a + 0.5 * s["dur"], first, 0.5)
            injections.append(Injection(t, kind, malloc=[300.0, 1000.0, 3000.0][level]))
        elif kind == "dispatch":
            # Python / dispatcher overhead in every op that launches GPU work (hooks, autocast's
            # casts, a wrapper's checks): each top-level op that encloses a launch takes D us more.
            d = [10.0, 30.0, 100.0][level]
            for k in top:
                if base.launches_inside(k):
                    # Just after the op's start: the next representable time (epoch-based
                    # microsecond stamps near 1.6e15 step by 0.25 us; ts + 0.001 would round
                    # back to ts and put the time before the op instead of inside it).
                    t = max(k["ts"] + 0.001, math.nextafter(float(k["ts"]), math.inf))
                    injections.append(Injection(t, "grow", dur=d))
        elif kind == "samesize":
            dur = [0.05, 0.2, 0.5][level] * mean_step
            nbytes = int(dur * 1e-6 * PAGEABLE_BW)
            injections.append(Injection(first, "samesize_d2h", bytes=nbytes))
            t = nearest_boundary(top, a + 0.5 * s["dur"], first, 0.5)
            injections.append(Injection(max(t, first + 1), "samesize_h2d", bytes=nbytes))
        else:
            raise SystemExit("unknown kind " + kind)
    injections.sort(key=lambda i: i.t)
    return injections


_chosen = {}  # (fraction) -> index of the top-level op chosen in the first step


def nearest_boundary(top, want, default, frac=None):
    """The start of the top-level op nearest |want|; with |frac|, the op of the same index as
    in the first step (the same line of the loop, as a program's anti-pattern is)."""
    if not top:
        return default
    if frac is not None and frac in _chosen:
        return top[min(_chosen[frac], len(top) - 1)]["ts"]
    i = min(range(len(top)), key=lambda k: abs(top[k]["ts"] - want))
    if frac is not None:
        _chosen[frac] = i
    return top[i]["ts"]


class Shift:
    """The CPU shift as a step function of original time: breakpoints (t, shift from t on)."""

    def __init__(self):
        self.ts, self.vals = [], []

    def add(self, t, value):
        assert not self.ts or t >= self.ts[-1]
        self.ts.append(t)
        self.vals.append(value)

    def at_start(self, t):  # events starting at t move with a breakpoint at t
        i = bisect.bisect_right(self.ts, t) - 1
        return self.vals[i] if i >= 0 else 0.0

    def at_end(self, t):  # events ending at t do not (they ended before the inserted call)
        i = bisect.bisect_left(self.ts, t) - 1
        return self.vals[i] if i >= 0 else 0.0


def rewrite(base, injections):
    """The trace with |injections| added, and the truth (sum of step growth, us)."""
    ev = [e for e in base.d["traceEvents"] if not (e.get("cat") == "gpu_user_annotation")]
    gpu_pids = base.gpu_pids
    xs = [e for e in ev if e.get("ph") == "X" and "dur" in e]
    gpu_ops = [e for e in xs if is_gpu(e, gpu_pids)]
    cpu = [e for e in xs if not is_gpu(e, gpu_pids)]
    launch_of = {}
    for e in cpu:
        c = e.get("args", {}).get("correlation")
        if c is not None and e.get("cat") in RUNTIME_CATS:
            launch_of[c] = e
    # Every GPU op in its stream's order, with the call that launched it (or a virtual launch).
    items = []  # (orig time, order, kind, payload)
    ops_of_call = {}
    for g in gpu_ops:
        call = launch_of.get(g.get("args", {}).get("correlation"))
        if call is not None and call.get("pid") == base.main_pid:
            ops_of_call.setdefault(id(call), []).append(g)
        else:
            items.append((g["ts"] - LATENCY_US, 1, "virtual", g))
    for e in cpu:
        if e.get("cat") in RUNTIME_CATS and e.get("pid") == base.main_pid:
            items.append((e["ts"], 1, "call", e))
    for inj in injections:
        items.append((inj.t, 0, "inject", inj))
    items.sort(key=lambda x: (x[0], x[1]))

    prev_orig_end = {}  # stream -> original end of the last op placed
    new_end = {}  # stream -> new end of the last op placed
    last_new_end = 0.0  # the latest new end of any op placed (what a device sync waits for)
    last_orig_end = 0.0
    new_ts = {}  # id(gpu op) -> new start
    placed = []  # (original launch time, original end, new end) of every base GPU op
    ends_orig, ends_new = [], []  # the placed ops' original ends (sorted) and their new ends
    shift = Shift()
    delta = 0.0
    added = []  # new events
    added_ends = []  # new ends of the GPU ops added

    def place(g, launch_orig, launch_new):
        nonlocal last_new_end, last_orig_end
        s = (g["pid"], g["tid"])
        s0, d = g["ts"], g.get("dur", 0)
        e_prev0 = prev_orig_end.get(s)
        # The constraint with less slack over its physical minimum bound the op in the base; it
        # keeps its exact offset, so that nothing injected reproduces the base exactly.
        launch_slack = s0 - launch_orig - LATENCY_US
        queue_slack = (s0 - e_prev0 - GAP_US) if e_prev0 is not None else float("inf")
        if launch_slack <= queue_slack:
            a = s0 - launch_orig
            b = min(GAP_US, s0 - e_prev0) if e_prev0 is not None else 0.0
        else:
            a, b = min(LATENCY_US, s0 - launch_orig), s0 - e_prev0
        start = max(launch_new + a, (new_end[s] + b) if s in new_end else -1e30)
        new_ts[id(g)] = start
        placed.append((launch_orig, s0 + d, start + d))
        i = bisect.bisect_right(ends_orig, s0 + d)
        ends_orig.insert(i, s0 + d)
        ends_new.insert(i, start + d)
        prev_orig_end[s] = s0 + d
        new_end[s] = start + d
        last_new_end = max(last_new_end, start + d)
        last_orig_end = max(last_orig_end, s0 + d)
        return start + d

    def new_op(s, name, cat, launch_new, dur, args):
        """Places an added GPU op on stream s at the later of its launch and the stream's end."""
        nonlocal last_new_end
        start = max(launch_new + LATENCY_US, new_end.get(s, -1e30) + GAP_US)
        new_end[s] = start + dur
        last_new_end = max(last_new_end, start + dur)
        added_ends.append(start + dur)
        g = {"ph": "X", "cat": cat, "name": name, "pid": s[0], "tid": s[1], "ts": start, "dur": dur, "args": args}
        added.append(g)
        return g

    def cpu_event(name, cat, ts, dur, args=None):
        e = {"ph": "X", "cat": cat, "name": name, "pid": base.main_pid, "tid": base.main_tid, "ts": ts, "dur": dur,
             "args": dict(args or {})}
        added.append(e)
        return e

    def launch(call_ts, call_dur, name, gpu_name, gpu_cat, gpu_dur, gpu_args, parent_ext):
        corr = base.next_corr
        base.next_corr += 1
        call = cpu_event(name, base.cat("rt"), call_ts, call_dur, {"correlation": corr, "External id": parent_ext})
        args = dict(base.stream_args)
        args.update(gpu_args)
        args.update({"correlation": corr, "External id": parent_ext})
        g = new_op(base.main_stream, gpu_name, gpu_cat, call_ts, gpu_dur, args)
        flow = base.cat("flow")
        added.append({"ph": "s", "id": corr, "pid": base.main_pid, "tid": base.main_tid, "ts": call_ts, "cat": flow, "name": flow})
        added.append({"ph": "f", "id": corr, "pid": g["pid"], "tid": g["tid"], "ts": g["ts"], "cat": flow, "name": flow, "bp": "e"})
        return call, g

    def ext():
        base.next_ext += 1
        return base.next_ext - 1

    pending = []  # (original time, shift from then on): a waiting call's new end
    for t, _, kind, x in items:
        while pending and pending[0][0] <= t:
            bt, delta = pending.pop(0)
            shift.add(bt, delta)
        if kind == "virtual":
            place(x, t, t + delta)
            continue
        if kind == "call":
            t0, d0 = x["ts"], x["dur"]
            t_new = t0 + delta
            end0 = t0 + d0
            ops = ops_of_call.get(id(x), [])
            own_end0, own_end = None, None
            for g in ops:
                e = place(g, t0, t_new)
                if own_end is None or e > own_end:
                    own_end, own_end0 = e, g["ts"] + g.get("dur", 0)
            name = x.get("name", "")
            waits_for = None
            # Calls that block the host: synchronizes (stream, device, event), and copies that
            # touch pageable memory or are synchronous by name (cudaMemcpy, hipMemcpyWithStream);
            # device-to-device and pinned copies by cudaMemcpyAsync do not.
            blocking_copy = "Memcpy" in name and ops and (
                "Async" not in name or any("Pageable" in g.get("name", "") for g in ops))
            if "Synchronize" in name or name in ("cudaFree", "hipFree"):
                waits_for = (last_orig_end, last_new_end)
            elif blocking_copy and own_end0 is not None:
                waits_for = (own_end0, own_end)
            elif "Launch" in name and d0 >= QUEUE_WAIT_MIN_US:
                # A launch held by a full launch queue returns when an earlier op finishes and
                # frees a slot: it waits for that op (the one that ended just before it returned).
                k = bisect.bisect_right(ends_orig, end0) - 1
                if k >= 0 and ends_orig[k] >= end0 - QUEUE_RETURN_US and ends_orig[k] >= t0:
                    waits_for = (ends_orig[k], ends_new[k])
            if waits_for is not None:
                w0, wnew = waits_for
                if w0 >= t0:  # it waited for that op: it still returns just after it
                    end_new = max(t_new + min(d0, 10.0), wnew + (end0 - w0))
                else:  # the GPU had finished: it waits only if the GPU now trails
                    end_new = max(t_new + d0, wnew + 5.0)
                if abs((end_new - end0) - delta) > 1e-9:
                    pending.append((end0 - 1e-6, end_new - end0))
                    pending.sort()
            continue
        # An injection at original time t.
        inj = x
        t_new = t + delta
        if inj.kind == "dataloader":
            d = inj.p["dur"]
            cpu_event("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", base.cat("op"), t_new, d,
                      {"External id": ext()})
            cpu_event("aten::stack", base.cat("op"), t_new + 0.6 * d, 0.3 * d, {"External id": ext()})
            grow = d
        elif inj.kind == "grow":
            grow = inj.p["dur"]  # the enclosing op's own CPU time grows; no event added
        elif inj.kind == "smallop":
            cpu_event("aten::detach", base.cat("op"), t_new, 4.0, {"External id": ext()})
            grow = 4.0
        elif inj.kind == "onetime":
            # cuBLAS / context start-up: a cudaFree(0) that blocks for D, then cudaMalloc.
            d = inj.p["dur"]
            cpu_event("cudaFree", base.cat("rt"), t_new + 5.0, d, {"correlation": base.next_corr})
            cpu_event("cudaMalloc", base.cat("rt"), t_new + 8.0 + d, 120.0, {"correlation": base.next_corr + 1})
            base.next_corr += 2
            grow = d + 130.0
        elif inj.kind == "allocchurn":
            # torch.cuda.empty_cache() each step, so the next allocation calls cudaMalloc again and
            # the release cudaFree, which waits for the device.
            m = inj.p["malloc"]
            cpu_event("cudaMalloc", base.cat("rt"), t_new + 4.0, m, {"correlation": base.next_corr})
            base.next_corr += 1
            free_ts = t_new + 8.0 + m
            free_end = max(free_ts + 0.3 * m, last_new_end + 0.3 * m)
            cpu_event("cudaFree", base.cat("rt"), free_ts, free_end - free_ts, {"correlation": base.next_corr})
            base.next_corr += 1
            total = free_end + 3.0 - t_new
            cpu_event("aten::empty", base.cat("op"), t_new, 8.0 + m - 2.0, {"External id": ext()})
            cpu_event("torch/cuda/memory.py(192): empty_cache", "python_function", free_ts - 2.0,
                      free_end - free_ts + 4.0)
            grow = total
        elif inj.kind == "samesize_d2h":
            # A result copied out into pinned memory, non_blocking (the host reads it later).
            nbytes = inj.p["bytes"]
            e_id = ext()
            cdur = nbytes / PINNED_BW * 1e6
            call, g = launch(t_new + 10.0, 7.0, "cudaMemcpyAsync", "Memcpy DtoH (Device -> Pinned)",
                             base.cat("memcpy"), cdur, {"bytes": nbytes}, e_id)
            for name, off in (("aten::to", 0.0), ("aten::_to_copy", 2.0), ("aten::copy_", 6.0)):
                cpu_event(name, base.cat("op"), t_new + off, 20.0 - off - (1.0 if off else 0.0),
                          {"External id": e_id if name == "aten::copy_" else ext(),
                           "Input Dims": [[nbytes // 4]], "Input type": ["float"]})
            grow = 21.0
        elif inj.kind in ("pageable", "pinnedcopy", "samesize_h2d"):
            pinned = inj.kind == "pinnedcopy"
            nbytes = inj.p["bytes"]
            e_id = ext()
            cdur = nbytes / (PINNED_BW if pinned else PAGEABLE_BW) * 1e6
            call_ts = t_new + 12.0
            src = "Pinned" if pinned else "Pageable"
            call, g = launch(call_ts, 0, "cudaMemcpyAsync", f"Memcpy HtoD ({src} -> Device)", base.cat("memcpy"),
                             cdur, {"bytes": nbytes, "memory bandwidth (GB/s)": nbytes / cdur / 1e3}, e_id)
            call_end = (call_ts + 6.0) if pinned else (g["ts"] + g["dur"] + 3.0)
            call["dur"] = call_end - call_ts
            total = call_end + 4.0 - t_new
            for name, off in (("aten::to", 0.0), ("aten::_to_copy", 3.0), ("aten::copy_", 8.0)):
                cpu_event(name, base.cat("op"), t_new + off, total - off - (2.0 if off else 0.0),
                          {"External id": e_id if name == "aten::copy_" else ext(),
                           "Input Dims": [[nbytes // 4]], "Input type": ["float"]})
            grow = total
        elif inj.kind in ("hostsync", "endsync"):
            e_id = ext()
            if inj.kind == "hostsync":
                call_ts = t_new + 14.0
                call, g = launch(call_ts, 9.0, "cudaMemcpyAsync", "Memcpy DtoH (Device -> Pageable)",
                                 base.cat("memcpy"), 1.5, {"bytes": 4}, e_id)
                sync_ts = call_ts + 10.0
                sync_end = max(sync_ts + 3.0, g["ts"] + g["dur"] + 4.0)
                if base.rocm:  # ROCm's memcpy_and_sync: one hipMemcpyWithStream that blocks
                    call["dur"] = sync_end - call_ts
                else:
                    cpu_event("cudaStreamSynchronize", base.cat("rt"), sync_ts, sync_end - sync_ts,
                              {"correlation": base.next_corr})
                    base.next_corr += 1
                total = sync_end + 3.0 - t_new
                cpu_event("aten::item", base.cat("op"), t_new, total, {"External id": ext()})
                cpu_event("aten::_local_scalar_dense", base.cat("op"), t_new + 6.0, total - 8.0, {"External id": e_id})
            else:
                sync_ts = t_new + 3.0
                sync_end = max(sync_ts + 4.0, last_new_end + 4.0)
                cpu_event("cudaDeviceSynchronize", base.cat("rt"), sync_ts, sync_end - sync_ts,
                          {"correlation": base.next_corr})
                base.next_corr += 1
                total = sync_end + 2.0 - t_new
            grow = total
        elif inj.kind == "comm":
            k, total_gpu = inj.p["count"], inj.p["total"]
            cur = t_new
            for i in range(k):
                e_id = ext()
                nelems = int(total_gpu / k * 1e-6 * 50e9 / 4)  # a 50 GB/s bus
                op = cpu_event("nccl:all_reduce", base.cat("op"), cur, 24.0,
                               {"External id": e_id, "Input Dims": [[nelems]], "Input type": ["float"]})
                cpu_event("record_param_comms", base.cat("op"), cur + 2.0, 20.0,
                          {"External id": ext(), "Collective name": "allreduce", "dtype": "Float",
                           "In msg nelems": nelems, "Out msg nelems": nelems, "Group size": 8,
                           "Process Group Name": "0", "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]"})
                launch(cur + 8.0, 9.0, "cudaLaunchKernel",
                       "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                       base.cat("kernel"), total_gpu / k, {"grid": [8, 1, 1], "block": [256, 1, 1]}, e_id)
                cur += 26.0
            grow = cur - t_new
        else:
            raise SystemExit("unknown kind " + inj.kind)
        delta += grow
        shift.add(t, delta)

    # The run's span: from the first step's start to the later of the last step's end and the end
    # of the GPU work launched before it ends (the CPU may run ahead of the GPU).
    first, last = base.steps[0], base.steps[-1]
    last_end0 = last["ts"] + last["dur"]
    gpu_end0 = max([e0 for l0, e0, _ in placed if l0 <= last_end0] + [last_end0])
    gpu_end_new = max([en for l0, _, en in placed if l0 <= last_end0] + added_ends + [0.0])
    span0 = gpu_end0 - first["ts"]
    span_new = max(last_end0 + shift.at_end(last_end0), gpu_end_new) - (first["ts"] + shift.at_start(first["ts"]))
    # Move every event: CPU events of the main process by the shift; GPU ops to their new starts.
    step_growth = 0.0
    step_ids = {id(s) for s in base.steps}
    out = []
    for e in ev:
        if e.get("ph") == "X" and "dur" in e and is_gpu(e, gpu_pids):
            if id(e) in new_ts:
                e = dict(e, ts=new_ts[id(e)])
            out.append(e)
            continue
        if e.get("pid") != base.main_pid or "ts" not in e or e.get("ph") == "M":
            out.append(e)
            continue
        if e.get("ph") == "X" and "dur" in e:
            a, b = e["ts"], e["ts"] + e["dur"]
            na, nb = a + shift.at_start(a), b + shift.at_end(b)
            if id(e) in step_ids:
                step_growth += (nb - na) - (b - a)
            out.append(dict(e, ts=na, dur=nb - na))
        elif e.get("ph") == "f" and e.get("cat") in ("ac2g", "async"):
            out.append(e)  # a GPU-side flow end: moved below with its op
        else:
            out.append(dict(e, ts=e["ts"] + shift.at_start(e["ts"])))
    # Flow ends move with their GPU op.
    op_move = {}
    for e in ev:
        if id(e) in new_ts and "correlation" in e.get("args", {}):
            op_move[e["args"]["correlation"]] = new_ts[id(e)] - e["ts"]
    for i, e in enumerate(out):
        if e.get("ph") == "f" and e.get("pid") in gpu_pids and op_move.get(e.get("id")):
            out[i] = dict(e, ts=e["ts"] + op_move[e["id"]])
    out.extend(added)
    d = dict(base.d)
    d["traceEvents"] = out
    return d, span_new - span0


HOST_SIDE = {"(Pageable -> Device)": "(Host -> Device)", "(Pinned -> Device)": "(Host -> Device)",
             "(Device -> Pageable)": "(Device -> Host)", "(Device -> Pinned)": "(Device -> Host)"}


def rocmify(d):
    """The trace as PyTorch on ROCm writes it: hip* runtime calls, copies whose host side is
    "Host" (ROCm does not say pageable or pinned), blocking copies as hipMemcpyWithStream (which
    returns when its copy is done) and asynchronous ones as hipMemcpyAsync, an MI300X device.
    Timing is unchanged: it is applied after the injection, to the clean copy and the injected
    one alike."""
    ev = d["traceEvents"]
    copy_of = {}
    for e in ev:
        if e.get("cat") in ("gpu_memcpy", "Memcpy") and "correlation" in e.get("args", {}):
            copy_of[e["args"]["correlation"]] = e.get("name", "")
    for e in ev:
        n = e.get("name", "")
        if e.get("cat") in RUNTIME_CATS and e.get("ph") == "X":
            if n in ("cudaMemcpyAsync", "cudaMemcpy"):
                g = copy_of.get(e.get("args", {}).get("correlation"), "")
                blocking = n == "cudaMemcpy" or "Pageable" in g
                e["name"] = "hipMemcpyWithStream" if blocking else "hipMemcpyAsync"
            elif n.startswith("cuda"):
                e["name"] = "hip" + n[4:]
            elif n.startswith("cu"):
                e["name"] = "hip" + n[2:]
        elif e.get("cat") in ("gpu_memcpy", "Memcpy"):
            for cuda, hip in HOST_SIDE.items():
                n = n.replace(cuda, hip)
            e["name"] = n
    props = d.get("deviceProperties") or [{"id": 0}]
    d["deviceProperties"] = [dict(p, name="AMD Instinct MI300X", computeMajor=9, computeMinor=4)
                             for p in props]
    return d


LEGACY_CATS = {"cpu_op": "Operator", "user_annotation": "Operator", "cuda_runtime": "Runtime",
               "cuda_driver": "Runtime", "kernel": "Kernel", "gpu_memcpy": "Memcpy",
               "gpu_memset": "Memset", "ac2g": "async"}


def legacyfy(d):
    """The trace as a 2021 profiler wrote it: categories Operator / Runtime / Kernel / Memcpy /
    Memset (record_function markers and ProfilerStep are Operators too), flows "async", and no
    deviceProperties, cuda_sync or gpu_user_annotation events, which it did not write. Returns
    the trace and how many events changed."""
    if isinstance(d, list):
        return d, 0
    out, changed = [], 0
    for e in d.get("traceEvents", []):
        cat = e.get("cat")
        if cat in ("cuda_sync", "gpu_user_annotation"):
            changed += 1
            continue
        if cat in LEGACY_CATS:
            e = dict(e, cat=LEGACY_CATS[cat])
            changed += 1
        out.append(e)
    d = {k: v for k, v in d.items() if k != "deviceProperties"}
    d["traceEvents"] = out
    return d, changed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--kind")
    ap.add_argument("--level", type=int, default=1)
    ap.add_argument("--clean", action="store_true")
    ap.add_argument("--out", required=True)
    ap.add_argument("--rocm", action="store_true", help="write the trace as PyTorch on ROCm would")
    ap.add_argument("--no-stack", action="store_true",
                    help="drop the Python frames, as a profile recorded without with_stack=True")
    ap.add_argument("--legacy", action="store_true",
                    help="write the trace as a 2021 profiler would (legacyfy)")
    a = ap.parse_args()
    base = Base(load(a.base), rocm=a.rocm)
    injections = [] if a.clean else plan(base, a.kind, a.level)
    d, growth = rewrite(base, injections)
    if a.rocm:
        d = rocmify(d)
    if a.no_stack:
        d["traceEvents"] = [e for e in d["traceEvents"] if e.get("cat") != "python_function"]
    if a.legacy:
        d, _ = legacyfy(d)
    with gzip.open(a.out, "wt") as f:
        json.dump(d, f)
    n = len(base.steps)
    step_us = sum(s["dur"] for s in base.steps) / n
    print(json.dumps({"kind": "clean" if a.clean else a.kind, "level": a.level, "steps": n,
                      "truth_us_per_step": growth / n, "step_us": step_us}))


if __name__ == "__main__":
    main()
