#!/usr/bin/env python3
# Records real PyTorch profiler traces on a CUDA GPU, each anti-pattern next to its fix, and
# measures what the fix saves with the profiler off: the independent truth for ttap's verdicts
# and what-ifs (bench/record/README.md). Each workload is a small, realistic loop written as users
# write it; the anti variant and the fix variant differ only in the lines marked "# ttap-anti".
#
# Usage (on the GPU machine):  record_timed.py OUTDIR [--only NAME,...] [--budget SECONDS]
# Writes OUTDIR/<name>-<variant>.pt.trace.json.gz and OUTDIR/results.jsonl (one line per
# workload: verdict, measured ms/step of each variant with and without the profiler).
# Each workload runs in its own process with a timeout, so one failure loses only itself.
# Not used by CI or the tests; bench/record/ingest.sh turns the output into corpus rows.
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)

# name -> (verdict category, severity, also-accepted categories, what the anti variant does)
WORKLOADS = {
    "dataloader": ("dataloader", "error", "gpu-idle",
                   "resnet18 96px bs128 bf16 training; DataLoader num_workers=0 with FFT augmentation "
                   "in __getitem__ (fix: 8 workers, pin_memory)"),
    "hostsync": ("host-sync", "warning", "cpu-overhead,gpu-idle",
                 "8-layer transformer encoder bs32 seq128 bf16 training; isfinite(h).all() assert after "
                 "every layer and loss.item() every step (fix: no per-layer checks, loss kept on GPU)"),
    "pageable": ("pageable-copy", "warning", "host-sync,gpu-idle",
                 "resnet18 112px bs256 bf16 channels_last training; 38 MB fp32 batch copied from pageable "
                 "memory with .cuda() (fix: pinned buffer, non_blocking=True)"),
    "optimizer": ("unfused-optimizer", "error", "zero-grad,cpu-overhead",
                  "60 x (Linear 512, LayerNorm, GELU) bs64 fp32 training; Adam(foreach=False) and "
                  "zero_grad(set_to_none=False) (fix: Adam(fused=True), set_to_none)"),
    "decode": ("cpu-overhead", "error", "gpu-idle",
               "12-block 384-wide decoder, batch 1, one token per step, bf16 eager under no_grad "
               "(fix: the same step captured once as a CUDA graph and replayed)"),
    "tf32": ("no-tensor-cores", "error", "-",
             "4 x Linear 4096 MLP bs4096 fp32 training with float32 matmul precision 'highest' "
             "(fix: 'high', i.e. TF32)"),
    "emptycache": ("allocator-churn", "warning", "-",
                   "4-layer transformer encoder d1024 bs16 seq512 bf16 training; torch.cuda.empty_cache() "
                   "every step (fix: none)"),
    "pingpong": ("ping-pong", "error", "host-sync,pageable-copy,gpu-idle",
                 "MLP bs1024 width 4096; activations clipped on the CPU with numpy mid-forward "
                 "(.cpu() -> np.clip -> .cuda()) (fix: torch.clamp on the GPU)"),
    "smallcopies": ("small-copies", "error", "cpu-overhead,gpu-idle",
                    "MLP on 512 samples built per step from 512 small CPU tensors, each .cuda()'d "
                    "(fix: torch.stack on the CPU into pinned memory, one copy)"),
    "healthy": ("healthy", "-", "no-tensor-cores",
                "resnet50 224px bs128 bf16 channels_last training, fused SGD, data already on GPU "
                "(fix variant identical: the control)"),
    "checkpoint": ("gpu-idle", "error", "pageable-copy,host-sync",
                   "4-layer transformer encoder d512 training; torch.save(state_dict) to local disk every "
                   "step (fix: none); no catalogue cause names checkpoint I/O"),
    "hostsync2": ("host-sync", "warning", "dataloader,gpu-idle",
                  "resnet50 112px bs64 bf16 training; light augmentation in the main process "
                  "(num_workers=0) and loss.item() after backward, so the CPU cannot prepare the next "
                  "batch while the GPU computes (fix: loss kept on the GPU, logged every 50 steps)"),
    "graphed": ("cpu-overhead", "error", "gpu-idle",
                "8-layer transformer encoder d512 bs32 seq128 bf16 training, AdamW(capturable), eager "
                "(fix: the whole step - forward, backward, optimizer - captured once as a CUDA graph)"),
    "layout": ("layout", "warning", "-",
               "resnet50 224px bs64 bf16 training with channels_last weights, NCHW input and every "
               "conv/linear output made NCHW-contiguous again by a forward hook (fix: no hook, "
               "channels_last input)"),
    "zerograd": ("zero-grad", "warning", "cpu-overhead,unfused-optimizer",
                 "60 x (Linear 512, LayerNorm, GELU) bs64 training, fused Adam; gradients zeroed by a "
                 "Python loop of p.grad.zero_() (fix: optimizer.zero_grad(), set_to_none)"),
    "compile": ("cold-start", "error", "-",
                "small transformer under torch.compile, profiled from its first call (compilation) "
                "(fix variant: the same, steady state)"),
    "samesize": ("pageable-copy", "warning", "host-sync,gpu-idle",
                 "resnet18 112px bs256 bf16 training; the 38.5 MB fp32 batch copied in from pageable "
                 "memory with .cuda(), and a different GPU tensor of the same size (the augmented "
                 "batch, kept for logging) copied out into a pinned buffer every step: same-size "
                 "copies both ways that are not one buffer going back and forth (fix: the batch from "
                 "a pinned buffer with non_blocking=True; the copy out stays)"),
    "coldeager": ("cold-start", "error", "-",
                  "resnet50 224px bs32 bf16 eager inference, profiled from the process's first CUDA "
                  "work (context, cuDNN/cuBLAS handles and workspaces, the allocator's first "
                  "cudaMallocs) (fix variant: the same, steady state)"),
    "sidestream": ("pageable-copy", "error", "gpu-idle",
                   "small 3-conv CNN 224px bs128 bf16 channels_last training with a side-stream "
                   "prefetch: the next 77 MB fp32 batch is copied on a copy stream with "
                   ".cuda(non_blocking=True) from pageable memory, which blocks the CPU for the whole "
                   "copy (fix: pinned host buffers, so the copy overlaps compute)"),
    "moefp32": ("no-tensor-cores", "error", "-",
                "4-block MoE transformer d1024 (8 experts of 4096, top-2, HF-style torch.where "
                "routing) on 8 x 512 tokens, fp32 inference with float32 matmul precision "
                "'highest' (fix: 'high', i.e. TF32)"),
    "eagerres": ("cpu-overhead", "error", "gpu-idle",
                 "resnet18 224px batch 1 fp32 eager inference under no_grad, ~60 small kernels a "
                 "forward (fix: the forward captured once as a CUDA graph and replayed)"),
    "healthytfm": ("healthy", "-", "-",
                   "12-layer pre-norm transformer d1024 bs8 seq1024 bf16 training with a 32k "
                   "vocabulary head and fused AdamW, data on the GPU (fix variant identical: a "
                   "second control)"),
    "graphbreak": ("cpu-overhead", "error", "gpu-idle",
                   "6-layer transformer encoder d512 bs4 seq128 inference under torch.compile with a "
                   "graph break after every layer, default mode, steady state (compilation in the "
                   "warm-up) (fix: no graph breaks, mode='reduce-overhead', i.e. CUDA graphs)"),
    "coldfirstfwd": ("cold-start", "error", "-",
                     "6-layer GPT-style LM d768 (32k vocabulary) bs8 seq256 bf16 inference, moved to "
                     "the GPU before profiling and profiled from its first forward: the CUDA context "
                     "exists, but cuBLAS's handle and workspace, lazily loaded kernels and the "
                     "allocator's first blocks come inside the first embedding and matmuls (fix "
                     "variant: the same, steady state)"),
    "graphbreak1": ("cpu-overhead", "error", "gpu-idle",
                    "the graphbreak model (6 layers d512, a graph break after each) at batch 1, "
                    "16 tokens: compiled with default mode, steady state (fix: no graph breaks, "
                    "mode='reduce-overhead')"),
    "healthyinf": ("healthy", "-", "-",
                   "resnet50 224px bs256 bf16 channels_last inference under inference_mode, data on "
                   "the GPU: GPU-bound (fix variant identical: a third control)"),
    "healthyprefill": ("healthy", "-", "-",
                       "8-layer pre-norm transformer d2048 bs4 seq2048 bf16 forward under "
                       "inference_mode (an LLM prefill): GPU-bound (fix variant identical: a fourth "
                       "control)"),
    "fewworkers": ("dataloader", "error", "gpu-idle",
                   "resnet18 96px bs256 bf16 training; DataLoader with num_workers=2 and FFT "
                   "augmentation in __getitem__, so two workers cannot keep up (fix: 12 workers)"),
    "itemsync": ("host-sync", "warning", "cpu-overhead,gpu-idle",
                 "6-layer transformer encoder d512 bs16 seq256 bf16 training with gradient clipping; "
                 "loss.item() and the clipped norm's .item() logged every step (fix: both kept on "
                 "the GPU)"),
    "compilecold": ("cpu-overhead", "error", "gpu-idle",
                    "the graphbreak1 model (6 layers, a graph break after each, batch 1) under "
                    "torch.compile, profiled from its first call for 8 steps, as a user profiles a "
                    "script from its start: compilation in step 1, launch-bound steps after it. "
                    "The steady state's cause comes first; the compilation is one-time (fix: no "
                    "graph breaks, mode='reduce-overhead', steady state)"),
    "evalloop": ("host-sync", "warning", "cpu-overhead,gpu-idle",
                 "resnet50 224px bs32 bf16 channels_last evaluation under inference_mode; the "
                 "batch's correct count read with .item() every batch (fix: counts kept on the "
                 "GPU)"),
    "coldvit": ("cold-start", "error", "-",
                "timm vit_base_patch16_224 bs32 bf16 inference, profiled from the model's creation: "
                "its weights initialised on the CPU, moved to the GPU, then its first forwards "
                "(fix variant: the same, steady state)"),
    "coldtrain": ("cold-start", "error", "-",
                  "resnet50 224px bs64 bf16 channels_last training with fused AdamW, the model on the "
                  "GPU before profiling, profiled from its first step for 6 steps without a "
                  "warm-up: the first step sets up cuDNN/cuBLAS, the optimizer's state and the "
                  "allocator's blocks; the steps after it are GPU-bound (fix variant: the same, "
                  "steady state)"),
    "ddp1": ("healthy", "-", "-",
             "resnet50 224px bs64 bf16 channels_last training wrapped in DistributedDataParallel "
             "with one rank (NCCL), as users profile DDP code on one GPU: its all-reduces have "
             "no peer to wait for (fix variant: the same model without DDP; a control)"),
    "fp16scaler": ("healthy", "-", "host-sync",
                   "resnet50 224px bs64 channels_last training with fp16 autocast and GradScaler, "
                   "whose step reads the inf check every step (fix: bf16 autocast, no scaler); "
                   "GPU-bound either way"),
}
ORDER = ["dataloader", "hostsync", "pageable", "optimizer", "decode", "tf32", "emptycache",
         "pingpong", "smallcopies", "healthy", "checkpoint", "compile", "hostsync2", "graphed",
         "layout", "zerograd", "samesize", "coldeager", "sidestream", "moefp32", "eagerres",
         "healthytfm", "graphbreak", "coldfirstfwd", "graphbreak1", "healthyinf", "healthyprefill",
         "fewworkers", "itemsync", "compilecold", "evalloop", "coldvit", "coldtrain", "ddp1",
         "fp16scaler"]


# ----------------------------------------------------------------------------------------------
# Workloads: build(variant) -> step() callable. Imports happen in the child process only.
# ----------------------------------------------------------------------------------------------

def bf16_train(torch, F, model, opt, images, labels):
    """One classifier training step under bf16 autocast, the step most workloads share; returns
    the loss."""
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(images), labels)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def bf16_training_step(torch, F, model, opt, images, labels):
    """bf16_train on fixed GPU tensors, as a step: the controls', the layout, DDP and
    cold-training workloads' loop."""
    def step():
        bf16_train(torch, F, model, opt, images, labels)
    return step


def fft_loader_training(torch, F, workers, batch_size, pin_memory):
    """ResNet-18 at 96 px trained from a DataLoader whose __getitem__ runs an FFT augmentation
    (the dataloader and fewworkers workloads)."""
    import numpy as np
    import torchvision

    class AugmentedImages(torch.utils.data.Dataset):
        def __len__(self):
            return 1 << 30

        def __getitem__(self, index):
            rng = np.random.default_rng(index)
            image = rng.random((3, 96, 96), dtype=np.float32)
            spectrum = np.fft.rfft2(image) * np.exp(-0.01 * np.arange(49))
            image = np.fft.irfft2(spectrum, s=(96, 96)).astype(np.float32)
            return torch.from_numpy(image), index % 10

    loader = torch.utils.data.DataLoader(AugmentedImages(), batch_size=batch_size,
                                         num_workers=workers, pin_memory=pin_memory,
                                         persistent_workers=workers > 0)
    batches = iter(loader)
    model = torchvision.models.resnet18(num_classes=10).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, fused=True)

    def step():
        images, labels = next(batches)
        images = images.cuda(non_blocking=True)
        labels = labels.cuda(non_blocking=True)
        bf16_train(torch, F, model, opt, images, labels)
    return step


def build_dataloader(variant, torch, nn, F):
    workers = 0 if variant == "anti" else 8  # ttap-anti
    return fft_loader_training(torch, F, workers, 128, pin_memory=variant != "anti")


def build_hostsync(variant, torch, nn, F):
    layers = nn.ModuleList([nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)
                            for _ in range(8)]).cuda()
    head = nn.Linear(512, 1000).cuda()
    params = list(layers.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
    x = torch.randn(32, 128, 512, device="cuda")
    y = torch.randint(0, 1000, (32, 128), device="cuda")
    losses = []

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            h = x
            for layer in layers:
                h = layer(h)
                if variant == "anti":
                    assert torch.isfinite(h).all(), "non-finite activation"  # ttap-anti
            loss = F.cross_entropy(head(h).flatten(0, 1).float(), y.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad()
        if variant == "anti":
            losses.append(loss.item())  # ttap-anti
        else:
            losses.append(loss.detach())
        if len(losses) > 100:
            del losses[:50]
    return step


def build_pageable(variant, torch, nn, F):
    import torchvision
    model = torchvision.models.resnet18(num_classes=100).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, fused=True)
    pinned = variant != "anti"
    host = [torch.randn(256, 3, 112, 112, pin_memory=pinned) for _ in range(2)]
    labels = torch.randint(0, 100, (256,), device="cuda")
    count = [0]

    def step():
        batch = host[count[0] % 2]
        count[0] += 1
        if variant == "anti":
            images = batch.cuda()  # ttap-anti
        else:
            images = batch.cuda(non_blocking=True)
        images = images.contiguous(memory_format=torch.channels_last)
        bf16_train(torch, F, model, opt, images, labels)
    return step


def build_optimizer(variant, torch, nn, F):
    blocks = []
    for _ in range(60):
        blocks += [nn.Linear(512, 512), nn.LayerNorm(512), nn.GELU()]
    model = nn.Sequential(*blocks).cuda()
    if variant == "anti":
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=False)  # ttap-anti
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(64, 512, device="cuda")

    def step():
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=variant != "anti")  # ttap-anti
    return step


def eager_or_graphed(variant, torch, model, example):
    """An inference step under no_grad: eager (the anti variant), or captured once as a CUDA
    graph and replayed (the fix)."""
    if variant == "anti":
        def step():
            with torch.no_grad():
                return model(example)  # ttap-anti
        return step
    static_in = example.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            model(static_in)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        static_out = model(static_in)

    def step():
        static_in.copy_(example)
        graph.replay()
        return static_out
    return step


def build_decode(variant, torch, nn, F):
    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.cache_k = nn.Parameter(torch.randn(1, 6, 256, d // 6), requires_grad=False)
            self.cache_v = nn.Parameter(torch.randn(1, 6, 256, d // 6), requires_grad=False)

        def forward(self, h):
            q, k, v = self.qkv(self.ln1(h)).chunk(3, dim=-1)
            q = q.view(1, 1, 6, -1).transpose(1, 2)
            att = F.scaled_dot_product_attention(q, self.cache_k, self.cache_v)
            h = h + self.proj(att.transpose(1, 2).reshape(1, 1, -1))
            return h + self.down(F.gelu(self.up(self.ln2(h))))

    model = nn.Sequential(*[Block(384) for _ in range(12)]).cuda().to(torch.bfloat16).eval()
    token = torch.randn(1, 1, 384, device="cuda", dtype=torch.bfloat16)
    return eager_or_graphed(variant, torch, model, token)


def build_tf32(variant, torch, nn, F):
    torch.set_float32_matmul_precision("highest" if variant == "anti" else "high")  # ttap-anti
    model = nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                          nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, fused=True)
    x = torch.randn(4096, 4096, device="cuda")

    def step():
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    return step


def build_emptycache(variant, torch, nn, F):
    model = nn.TransformerEncoder(nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True),
                                  num_layers=4, enable_nested_tensor=False).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(16, 512, 1024, device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if variant == "anti":
            torch.cuda.empty_cache()  # ttap-anti
    return step


def build_pingpong(variant, torch, nn, F):
    import numpy as np
    first = nn.Sequential(nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 4096)).cuda()
    second = nn.Sequential(nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 1000)).cuda()
    x = torch.randn(1024, 4096, device="cuda")

    def step():
        with torch.no_grad():
            h = first(x)
            if variant == "anti":
                clipped = np.clip(h.cpu().numpy(), -3.0, 3.0)  # ttap-anti
                h = torch.from_numpy(clipped).cuda()  # ttap-anti
            else:
                h = h.clamp(-3.0, 3.0)
            return second(h)
    return step


def build_smallcopies(variant, torch, nn, F):
    model = nn.Sequential(nn.Linear(64, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    samples = [torch.randn(64) for _ in range(512)]
    labels = torch.randint(0, 10, (512,))
    staging = torch.empty(512, 64, pin_memory=True)

    def step():
        if variant == "anti":
            batch = torch.stack([s.cuda() for s in samples])  # ttap-anti
            target = labels.cuda()
        else:
            torch.stack(samples, out=staging)
            batch = staging.cuda(non_blocking=True)
            target = labels.cuda(non_blocking=True)
        loss = F.cross_entropy(model(batch), target)
        loss.backward()
        opt.step()
        opt.zero_grad()
    return step


def build_healthy(variant, torch, nn, F):
    import torchvision
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, fused=True)
    images = torch.randn(128, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (128,), device="cuda")
    return bf16_training_step(torch, F, model, opt, images, labels)


def build_checkpoint(variant, torch, nn, F):
    model = nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True),
                                  num_layers=4, enable_nested_tensor=False).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(32, 256, 512, device="cuda")
    path = "/tmp/ttap_record_checkpoint.pt"

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if variant == "anti":
            torch.save(model.state_dict(), path)  # ttap-anti
    return step


def build_hostsync2(variant, torch, nn, F):
    import torchvision

    class LightAugment(torch.utils.data.Dataset):
        def __len__(self):
            return 1 << 30

        def __getitem__(self, index):
            g = torch.Generator().manual_seed(index)
            image = torch.rand(3, 128, 128, generator=g)
            image = image[:, 8:120, 8:120].flip(2) * 2.0 - 1.0
            return image, index % 100

    loader = torch.utils.data.DataLoader(LightAugment(), batch_size=64, num_workers=0)
    batches = iter(loader)
    model = torchvision.models.resnet50(num_classes=100).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, fused=True)
    history = []

    def step():
        images, labels = next(batches)
        images = images.cuda(non_blocking=True).contiguous(memory_format=torch.channels_last)
        labels = labels.cuda(non_blocking=True)
        loss = bf16_train(torch, F, model, opt, images, labels)
        if variant == "anti":
            history.append(loss.item())  # ttap-anti
        else:
            history.append(loss.detach())
            if len(history) % 50 == 0:
                print(float(torch.stack(history[-50:]).mean()), file=sys.stderr)
    return step


def build_graphed(variant, torch, nn, F):
    layers = nn.Sequential(*[nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0, batch_first=True)
                             for _ in range(8)]).cuda()
    head = nn.Linear(512, 1000).cuda()
    params = list(layers.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4, capturable=True, foreach=True)
    x = torch.randn(32, 128, 512, device="cuda")
    y = torch.randint(0, 1000, (32, 128), device="cuda")

    def eager_step():
        with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
            loss = F.cross_entropy(head(layers(x)).flatten(0, 1).float(), y.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss
    if variant == "anti":
        return eager_step  # ttap-anti
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            eager_step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
            static_loss = F.cross_entropy(head(layers(x)).flatten(0, 1).float(), y.flatten())
        static_loss.backward()
        opt.step()

    def step():
        graph.replay()
        return static_loss
    return step


def build_layout(variant, torch, nn, F):
    import torchvision
    model = torchvision.models.resnet50(num_classes=100).cuda().to(memory_format=torch.channels_last)
    if variant == "anti":
        for module in model.modules():
            if isinstance(module, (nn.Conv2d, nn.Linear)):
                module.register_forward_hook(lambda m, i, o: o.contiguous())  # ttap-anti
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, fused=True)
    images = torch.randn(64, 3, 224, 224, device="cuda")
    if variant != "anti":
        images = images.contiguous(memory_format=torch.channels_last)
    labels = torch.randint(0, 100, (64,), device="cuda")
    return bf16_training_step(torch, F, model, opt, images, labels)


def build_zerograd(variant, torch, nn, F):
    blocks = []
    for _ in range(60):
        blocks += [nn.Linear(512, 512), nn.LayerNorm(512), nn.GELU()]
    model = nn.Sequential(*blocks).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(64, 512, device="cuda")

    def step():
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        if variant == "anti":
            for p in model.parameters():
                p.grad.zero_()  # ttap-anti
        else:
            opt.zero_grad()
    return step


def build_samesize(variant, torch, nn, F):
    import torchvision
    model = torchvision.models.resnet18(num_classes=100).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, fused=True)
    pinned = variant != "anti"
    host = [torch.randn(256, 3, 112, 112, pin_memory=pinned) for _ in range(2)]
    kept = torch.empty(256, 3, 112, 112, pin_memory=True)  # the augmented batch, for logging
    labels = torch.randint(0, 100, (256,), device="cuda")
    count = [0]

    def step():
        batch = host[count[0] % 2]
        count[0] += 1
        if variant == "anti":
            images = batch.cuda()  # ttap-anti
        else:
            images = batch.cuda(non_blocking=True)
        augmented = torch.flip(images, dims=[3]) * 0.5 + 0.25
        kept.copy_(augmented, non_blocking=True)
        x = augmented.contiguous(memory_format=torch.channels_last)
        bf16_train(torch, F, model, opt, x, labels)
    return step


def build_coldeager(variant, torch, nn, F):
    import torchvision
    model = torchvision.models.resnet50(num_classes=1000).eval()
    state = {"model": None}
    x_host = torch.randn(32, 3, 224, 224)

    def step():
        # The first call moves the model and input to the GPU: the process's first CUDA work.
        if state["model"] is None:
            state["model"] = model.cuda()
            state["x"] = x_host.cuda()
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            return state["model"](state["x"])
    return step


def build_compile(variant, torch, nn, F):
    model = nn.TransformerEncoder(nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True),
                                  num_layers=2, enable_nested_tensor=False).cuda()
    compiled = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(16, 128, 256, device="cuda")

    def step():
        loss = compiled(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    return step


def build_sidestream(variant, torch, nn, F):
    model = nn.Sequential(nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.ReLU(),
                          nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
                          nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))
    model = model.cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, fused=True)
    pinned = variant != "anti"  # ttap-anti
    host = [torch.randn(128, 3, 224, 224, pin_memory=pinned) for _ in range(2)]
    labels = torch.randint(0, 10, (128,), device="cuda")
    copy_stream = torch.cuda.Stream()
    state = {"count": 0, "next": None}

    def prefetch():
        batch = host[state["count"] % 2]
        state["count"] += 1
        with torch.cuda.stream(copy_stream):
            state["next"] = batch.cuda(non_blocking=True)

    prefetch()

    def step():
        torch.cuda.current_stream().wait_stream(copy_stream)
        images = state["next"]
        images.record_stream(torch.cuda.current_stream())
        prefetch()
        x = images.contiguous(memory_format=torch.channels_last)
        bf16_train(torch, F, model, opt, x, labels)
    return step


def build_moefp32(variant, torch, nn, F):
    torch.set_float32_matmul_precision("highest" if variant == "anti" else "high")  # ttap-anti

    class MoE(nn.Module):
        def __init__(self, d, hidden, experts):
            super().__init__()
            self.router = nn.Linear(d, experts, bias=False)
            self.experts = nn.ModuleList([nn.Sequential(nn.Linear(d, hidden), nn.GELU(),
                                                        nn.Linear(hidden, d))
                                          for _ in range(experts)])

        def forward(self, x):
            weights = F.softmax(self.router(x), dim=-1)
            top_w, top_i = weights.topk(2, dim=-1)
            top_w = top_w / top_w.sum(dim=-1, keepdim=True)
            out = torch.zeros_like(x)
            for e, expert in enumerate(self.experts):
                token, slot = torch.where(top_i == e)
                if token.numel() == 0:
                    continue
                out.index_add_(0, token, expert(x[token]) * top_w[token, slot, None])
            return out

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, 16, batch_first=True)
            self.moe = MoE(d, 4 * d, 8)

        def forward(self, x):
            h = self.ln1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            b, s, d = x.shape
            return x + self.moe(self.ln2(x).reshape(b * s, d)).reshape(b, s, d)

    model = nn.Sequential(*[Block(1024) for _ in range(4)]).cuda().eval()
    x = torch.randn(8, 512, 1024, device="cuda")

    def step():
        with torch.no_grad():
            return model(x)
    return step


def build_eagerres(variant, torch, nn, F):
    import torchvision
    model = torchvision.models.resnet18().cuda().eval()
    image = torch.randn(1, 3, 224, 224, device="cuda")
    return eager_or_graphed(variant, torch, model, image)


def build_healthytfm(variant, torch, nn, F):
    layers = nn.TransformerEncoder(nn.TransformerEncoderLayer(1024, 16, 4096, dropout=0.0,
                                                              batch_first=True, norm_first=True),
                                   num_layers=12, enable_nested_tensor=False).cuda()
    head = nn.Linear(1024, 32000).cuda()
    opt = torch.optim.AdamW(list(layers.parameters()) + list(head.parameters()), lr=1e-4, fused=True)
    x = torch.randn(8, 1024, 1024, device="cuda")
    y = torch.randint(0, 32000, (8, 1024), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = head(layers(x))
        loss = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad()
    return step


def build_graphbreak(variant, torch, nn, F, batch=4, tokens=128):
    class Layer(nn.Module):
        def __init__(self, breaks):
            super().__init__()
            self.inner = nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0, batch_first=True)
            self.breaks = breaks

        def forward(self, x):
            x = self.inner(x)
            if self.breaks:
                torch._dynamo.graph_break()
            return x

    breaks = variant == "anti"  # ttap-anti
    model = nn.Sequential(*[Layer(breaks) for _ in range(6)]).cuda().eval()
    if variant == "anti":
        compiled = torch.compile(model)  # ttap-anti
    else:
        compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    x = torch.randn(batch, tokens, 512, device="cuda")

    def step():
        with torch.no_grad():
            return compiled(x)
    return step


def build_graphbreak1(variant, torch, nn, F):
    return build_graphbreak(variant, torch, nn, F, batch=1, tokens=16)


def build_coldfirstfwd(variant, torch, nn, F):
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32000, 768)
            self.layers = nn.TransformerEncoder(
                nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, batch_first=True,
                                           norm_first=True),
                num_layers=6, enable_nested_tensor=False)
            self.head = nn.Linear(768, 32000)

        def forward(self, tokens):
            return self.head(self.layers(self.embed(tokens)))

    model = LM().cuda().eval()
    tokens = torch.randint(0, 32000, (8, 256), device="cuda")

    def step():
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            return model(tokens)
    return step


def build_healthyinf(variant, torch, nn, F):
    import torchvision
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet50().cuda().eval().to(memory_format=torch.channels_last)
    images = torch.randn(256, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)

    def step():
        with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
            return model(images)
    return step


def build_healthyprefill(variant, torch, nn, F):
    layers = nn.TransformerEncoder(nn.TransformerEncoderLayer(2048, 16, 8192, dropout=0.0,
                                                              batch_first=True, norm_first=True),
                                   num_layers=8, enable_nested_tensor=False).cuda().eval()
    x = torch.randn(4, 2048, 2048, device="cuda")

    def step():
        with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
            return layers(x)
    return step


def build_fewworkers(variant, torch, nn, F):
    workers = 2 if variant == "anti" else 12  # ttap-anti
    return fft_loader_training(torch, F, workers, 256, pin_memory=True)


def build_itemsync(variant, torch, nn, F):
    layers = nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0,
                                                              batch_first=True),
                                   num_layers=6, enable_nested_tensor=False).cuda()
    head = nn.Linear(512, 1000).cuda()
    params = list(layers.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
    x = torch.randn(16, 256, 512, device="cuda")
    y = torch.randint(0, 1000, (16, 256), device="cuda")
    log = []

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(head(layers(x)).flatten(0, 1).float(), y.flatten())
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad()
        if variant == "anti":
            log.append((loss.item(), norm.item()))  # ttap-anti
        else:
            log.append((loss.detach(), norm.detach()))
        if len(log) > 100:
            del log[:50]
    return step


def build_compilecold(variant, torch, nn, F):
    return build_graphbreak1(variant, torch, nn, F)


def build_evalloop(variant, torch, nn, F):
    import torchvision
    model = torchvision.models.resnet50().cuda().eval().to(memory_format=torch.channels_last)
    images = torch.randn(32, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (32,), device="cuda")
    correct = []

    def step():
        with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
            hits = (model(images).argmax(dim=1) == labels).sum()
        if variant == "anti":
            correct.append(hits.item())  # ttap-anti
        else:
            correct.append(hits)
        if len(correct) > 100:
            del correct[:50]
    return step


def build_coldvit(variant, torch, nn, F):
    import timm
    state = {}

    def step():
        if "model" not in state:
            model = timm.create_model("vit_base_patch16_224", pretrained=False)
            state["model"] = model.cuda().eval()
            state["x"] = torch.randn(32, 3, 224, 224, device="cuda")
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            return state["model"](state["x"])
    return step


def build_coldtrain(variant, torch, nn, F):
    import torchvision
    model = torchvision.models.resnet50(num_classes=100).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    images = torch.randn(64, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    labels = torch.randint(0, 100, (64,), device="cuda")
    return bf16_training_step(torch, F, model, opt, images, labels)


def build_ddp1(variant, torch, nn, F):
    import torch.distributed as dist
    import torchvision
    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29531")
        dist.init_process_group("nccl", rank=0, world_size=1)
    model = torchvision.models.resnet50(num_classes=100).cuda().to(memory_format=torch.channels_last)
    if variant == "anti":
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])  # ttap-anti
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, fused=True)
    images = torch.randn(64, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    labels = torch.randint(0, 100, (64,), device="cuda")
    return bf16_training_step(torch, F, model, opt, images, labels)


def build_fp16scaler(variant, torch, nn, F):
    import torchvision
    model = torchvision.models.resnet50(num_classes=100).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", enabled=variant == "anti")  # ttap-anti
    dtype = torch.float16 if variant == "anti" else torch.bfloat16  # ttap-anti
    images = torch.randn(64, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    labels = torch.randint(0, 100, (64,), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=dtype):
            loss = F.cross_entropy(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    return step


# ----------------------------------------------------------------------------------------------
# One workload in a child process: time both variants without the profiler, then profile each.
# ----------------------------------------------------------------------------------------------

def timed_ms(torch, step, steps):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return 1000.0 * (time.perf_counter() - start) / steps


def profile_into(torch, step, path, warmup, active, with_stack=True):
    """Profiles warmup + active steps; the trace holds the active ones. Nothing is synchronised
    inside the recorded steps (a sync there would drain the warm-up steps' GPU work into them)."""
    from torch.profiler import ProfilerActivity, profile, schedule
    raw = path[:-3]  # without .gz

    def ready(prof):
        prof.export_chrome_trace(raw)
    sched = schedule(wait=0, warmup=warmup, active=active, repeat=1)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=sched,
                 on_trace_ready=ready, record_shapes=True, with_stack=with_stack) as prof:
        for i in range(warmup + active):
            step()
            if i == warmup - 1:
                torch.cuda.synchronize()  # before the first recorded step begins
            prof.step()
    torch.cuda.synchronize()
    with open(raw, "rb") as src, gzip.open(path, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(raw)


def run_child(name, outdir):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    torch.manual_seed(0)
    build = globals()["build_" + name]
    # The GPU's name is asked last: asking initialises CUDA, which a cold workload records.
    result = {"name": name, "torch": torch.__version__}
    steps = {"tf32": 20, "healthy": 15, "emptycache": 20, "checkpoint": 10, "dataloader": 15,
             "moefp32": 20, "healthytfm": 15, "healthyinf": 15, "healthyprefill": 15,
             "fewworkers": 15}.get(name, 40)
    cold = name in ("compile", "coldeager", "coldfirstfwd", "compilecold", "coldvit", "coldtrain")
    for variant in ("anti", "fix"):
        t0 = time.perf_counter()
        step = build(variant, torch, nn, F)
        trace = os.path.join(outdir, f"{name}-{variant}.pt.trace.json.gz")
        if cold and variant == "anti":
            # Profiled from the very first call: compilation (or the process's first CUDA work) is
            # inside the trace. No Python stacks for compile (the Python tracer would record every
            # frame of the compiler).
            profile_into(torch, step, trace, 0, {"compilecold": 8, "coldtrain": 6}.get(name, 3),
                         with_stack=name not in ("compile", "compilecold"))
            result["anti_ms"] = timed_ms(torch, step, steps)
            result["anti_build_s"] = round(time.perf_counter() - t0, 2)
        else:
            for _ in range(5):
                step()
            result[variant + "_ms"] = timed_ms(torch, step, steps)
            active = 2 if name in ("healthy", "dataloader", "healthytfm", "healthyinf", "healthyprefill",
                                     "fewworkers") else 3
            profile_into(torch, step, trace, 2, active, with_stack=not cold)
        result[variant + "_s"] = round(time.perf_counter() - t0, 2)
        del step
        import gc
        gc.collect()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        print(f"{name} {variant}: {result.get(variant + '_ms'):.3f} ms/step", file=sys.stderr, flush=True)
    verdict, severity, also, what = WORKLOADS[name]
    result["gpu"] = torch.cuda.get_device_name(0)
    result.update(verdict=verdict, severity=severity, also=also, workload=what,
                  saving_ms=result["anti_ms"] - result["fix_ms"],
                  saving_share=(result["anti_ms"] - result["fix_ms"]) / result["anti_ms"])
    print("RESULT " + json.dumps(result), flush=True)
    return 0


def drive(script, order, run_child, default_budget, min_left, limit_of, tail_lines=6):
    """The command line of a recorder (this one, record_zeroshot.py): OUTDIR [--only NAME,...]
    [--budget SECONDS]. Each workload of |order| runs as `script OUTDIR --child NAME` in its own
    process with a time limit (limit_of(name), within what is left of the budget; none starts
    with less than |min_left| s left), so one failure loses only itself; its RESULT lines go to
    OUTDIR/results.jsonl."""
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--only", default="")
    ap.add_argument("--budget", type=float, default=default_budget)
    ap.add_argument("--child", default="")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    if a.child:
        return run_child(a.child, a.outdir)
    names = [n for n in order if not a.only or n in a.only.split(",")]
    start = time.perf_counter()
    with open(os.path.join(a.outdir, "results.jsonl"), "a") as results:
        for name in names:
            left = a.budget - (time.perf_counter() - start)
            if left < min_left:
                print(f"skipped {name}: budget spent", file=sys.stderr, flush=True)
                continue
            try:
                proc = subprocess.run([sys.executable, script, a.outdir, "--child", name],
                                      capture_output=True, text=True,
                                      timeout=min(left, limit_of(name)))
                out, err, rc = proc.stdout, proc.stderr, proc.returncode
            except subprocess.TimeoutExpired as e:
                out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
                err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
                rc = "timeout"
            for l in out.splitlines():
                if l.startswith("RESULT "):
                    results.write(l[7:] + "\n")
            results.flush()
            tail = "\n".join(err.splitlines()[-tail_lines:])
            print(f"== {name} rc={rc} {time.perf_counter() - start:.0f}s\n{tail}", file=sys.stderr,
                  flush=True)
    return 0


def main():
    return drive(HERE, ORDER, run_child, 400.0, 20,
                 lambda name: 150 if name in ("compile", "graphbreak", "graphbreak1", "compilecold") else 75)


if __name__ == "__main__":
    sys.exit(main())
