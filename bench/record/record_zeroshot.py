#!/usr/bin/env python3
# Records real PyTorch traces of anti-patterns that no catalogue rule describes (the "zero-shot
# families" of issue 35), each beside its fix, with what the fix saves measured with the
# profiler off. The truth for the learned window scorer and TTA900: which trace holds the
# anti-pattern (the anti variant), where it is (a `ttap_truth` record_function range around the
# anti lines, turned into labels and removed from the trace by zeroshot_dataset.py before ttap
# reads it) and what it costs (measured).
#
# Usage (on the GPU machine):  record_zeroshot.py OUTDIR [--only NAME,...] [--budget SECONDS]
# Writes OUTDIR/<name>-<variant>.pt.trace.json.gz and OUTDIR/results.jsonl, as record_timed.py.
# Not used by CI or the tests. The committed traces name their frames by this file's def lines
# (bench/record/zeroshot; a scan test checks gc.collect()'s line): keep build()'s lines in place.
# The command line and the per-workload child processes are record_timed.py's drive().
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record_timed import drive, profile_into, timed_ms  # noqa: E402

HERE = os.path.abspath(__file__)

# family -> what the anti variant adds (the fix removes it). Bases: "tfm" (a 6-layer transformer
# encoder, bs32 seq128, bf16 autocast training), "cnn" (resnet18 112px bs128 bf16 training) and,
# for cudnnbench, "cnn50" (resnet50, bs32).
FAMILIES = {
    "gcpause": "gc.collect() every step while 400k small Python objects are alive",
    "logging": "per-step logging: 20,000 floats of history formatted and written to a file",
    "pylist": "the step's input built with torch.tensor() from nested Python lists",
    "casts": "every Linear/Conv2d output cast to fp32, made contiguous and cast back (forward hook)",
    "anomaly": "torch.autograd.detect_anomaly() left on around the step",
    "cudnnbench": "cudnn.benchmark=True while the input resolution changes every step",
}
ORDER = [f + "-" + b for f in FAMILIES
         for b in (("cnn", "cnn50") if f == "cudnnbench" else ("tfm", "cnn"))]


def build(name, variant, torch, nn, F):
    import contextlib
    import gc
    family, base = name.split("-")
    anti = variant == "anti"
    truth = (lambda: torch.profiler.record_function("ttap_truth")) if anti else contextlib.nullcontext
    if base == "tfm":
        model = nn.Sequential(
            nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True),
                                  num_layers=6, enable_nested_tensor=False),
            nn.Linear(512, 1000)).cuda()
    else:
        import torchvision
        arch = torchvision.models.resnet50 if base == "cnn50" else torchvision.models.resnet18
        model = arch(num_classes=100).cuda()
    batch = 32 if base == "cnn50" else 128
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    torch.backends.cudnn.benchmark = family == "cudnnbench" and anti
    if family == "casts" and anti:
        def hook(module, inputs, output):
            with truth():
                return output.float().contiguous().to(output.dtype)  # ttap-anti
        for m in model.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d)):
                m.register_forward_hook(hook)
    junk = [{"i": i, "v": [i, str(i)]} for i in range(400000)] if family == "gcpause" else None
    history = [0.001 * i for i in range(20000)]
    log = open(os.devnull if not anti else "/tmp/ttap_zeroshot.log", "w")
    count = [0]
    if base == "tfm":
        tokens = torch.randn(32, 128, 512)
        target = torch.randint(0, 1000, (32, 128), device="cuda")
        pylist = tokens.tolist()
    else:
        images = torch.randn(batch, 3, 112, 112)
        target = torch.randint(0, 100, (batch,), device="cuda")
        pylist = images.tolist()
    x_cpu = tokens if base == "tfm" else images
    x_gpu = x_cpu.cuda()
    x_pinned = x_cpu.pin_memory()

    def inputs():
        if family == "pylist" and anti:
            with truth():
                return torch.tensor(pylist, device="cuda")  # ttap-anti
        if family == "pylist":
            return x_pinned.cuda(non_blocking=True)  # the fix: a pinned tensor, copied async
        if family == "cudnnbench":
            size = 96 + 8 * (count[0] % 40)  # a new resolution every step, for 40 steps
            return torch.randn(batch, 3, size, size, device="cuda")
        return x_gpu

    def step():
        count[0] += 1
        x = inputs()
        ctx = torch.autograd.detect_anomaly() if family == "anomaly" and anti else contextlib.nullcontext()
        with ctx, (truth() if family in ("anomaly", "cudnnbench") else contextlib.nullcontext()):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                out = model(x)
                loss = F.cross_entropy(out.flatten(0, 1).float() if base == "tfm" else out.float(),
                                       target.flatten())
            loss.backward()
        opt.step()
        opt.zero_grad()
        if anti and family == "gcpause":
            with truth():
                gc.collect()  # ttap-anti
        if anti and family == "logging":
            with truth():
                history.append(float(count[0]))
                log.write(" ".join("%.6f" % v for v in history[-20000:]) + "\n")  # ttap-anti
                log.flush()
    step.junk = junk
    return step


def run_child(name, outdir):
    import gc
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    torch.manual_seed(0)
    result = {"name": name, "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
    steps = {"cudnnbench": 12, "pylist": 8, "anomaly": 10}.get(name.split("-")[0], 25)
    # Both variants built, warmed up and timed in turn (anti, fix, anti, fix; the faster of each
    # pair kept): GPU clocks and the allocator drift over a process's life, and one variant timed
    # after the other took that drift for a saving.
    built = {}
    for variant in ("anti", "fix"):
        built[variant] = build(name, variant, torch, nn, F)
        for _ in range(3):
            built[variant]()
    for variant in ("anti", "fix", "anti", "fix"):
        ms = timed_ms(torch, built[variant], steps)
        result[variant + "_ms"] = min(ms, result.get(variant + "_ms", ms))
        result.setdefault(variant + "_runs", []).append(round(ms, 3))
    for variant in ("anti", "fix"):
        profile_into(torch, built[variant], os.path.join(outdir, f"{name}-{variant}.pt.trace.json.gz"), 2, 3)
        print(f"{name} {variant}: {result[variant + '_runs']} ms/step", file=sys.stderr, flush=True)
    del built
    gc.collect()
    family = name.split("-")[0]
    result.update(verdict="zero-shot", family=family, workload=FAMILIES[family],
                  saving_ms=result["anti_ms"] - result["fix_ms"],
                  saving_share=(result["anti_ms"] - result["fix_ms"]) / result["anti_ms"])
    print("RESULT " + json.dumps(result), flush=True)
    return 0


def main():
    return drive(HERE, ORDER, run_child, 360.0, 15, lambda name: 75, tail_lines=4)


if __name__ == "__main__":
    sys.exit(main())
