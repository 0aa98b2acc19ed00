#!/usr/bin/env python3
# Records real PyTorch profiler traces of CV training loops on a CUDA GPU: one clean loop and one
# per anti-pattern, each changing one thing, so that `ttap scan` / `ttap eval` can be checked on
# traces no simulator made. Run by bench/record/record_all.sh on a GPU machine (PyTorch,
# torchvision, timm); writes Kineto traces through tensorboard_trace_handler, as users do, and a
# labels file naming the anti-pattern code and the line of this file that causes it (the lines
# carry "# ttap-label: CODE" markers, read by record_all.sh).
# Usage: record_cv_traces.py --model resnet50 --variant clean --out DIR
# Status: not yet run (no GPU was lent to the task that wrote it); see record_all.sh.
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

VARIANTS = {
    "clean": "",
    "dataloader_stall": "TTA001",
    "host_sync": "TTA002",
    "pageable_copy": "TTA003",
    "small_h2d": "TTA004",
    "zero_grad_loop": "TTA005",
    "unfused_optimizer": "TTA006",
    "launch_bound": "TTA007",
    "fp32_no_tf32": "TTA009",
    "layout_conversion": "TTA010",
    "empty_cache": "TTA013",
    "device_ping_pong": "TTA014",
    "recompute_forward": "TTX101",
}


class RandomImages(torch.utils.data.Dataset):
    """Random uint8 images decoded and augmented on the CPU like a real pipeline."""

    def __init__(self, count, size):
        self.count, self.size = count, size

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(index)
        image = torch.randint(0, 256, (3, 288, 288), dtype=torch.uint8, generator=g)
        x = image.float().div_(255.0)
        top, left = int(torch.randint(0, 32, (1,), generator=g)), int(torch.randint(0, 32, (1,), generator=g))
        x = x[:, top:top + 256, left:left + 256]
        x = F.interpolate(x[None], size=(self.size, self.size), mode="bicubic", align_corners=False)[0]
        if index % 2:
            x = x.flip(2)
        x = (x - 0.45) / 0.225
        return x, index % 1000


def build_model(name):
    if name.startswith("timm:"):
        import timm
        return timm.create_model(name[5:], pretrained=False, num_classes=1000)
    import torchvision
    return getattr(torchvision.models, name)(weights=None, num_classes=1000)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--variant", default="clean", choices=sorted(VARIANTS))
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    v = args.variant
    torch.manual_seed(0)
    device = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    fp32 = v == "fp32_no_tf32"
    torch.backends.cuda.matmul.allow_tf32 = not fp32
    torch.backends.cudnn.allow_tf32 = not fp32  # ttap-label: TTA009
    batch = 4 if v == "launch_bound" else args.batch  # ttap-label: TTA007

    model = build_model(args.model).to(device)
    channels_last = v == "layout_conversion"
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        for module in model.modules():
            if isinstance(module, (nn.Conv2d, nn.Linear)) and module is not model:
                module.register_forward_hook(lambda m, i, o: o.contiguous())  # ttap-label: TTA010
    if v == "unfused_optimizer":
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)  # ttap-label: TTA006
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    workers = 0 if v == "dataloader_stall" else 8  # ttap-label: TTA001
    pin = v != "pageable_copy"
    loader = torch.utils.data.DataLoader(RandomImages(batch * 40, 224), batch_size=batch, shuffle=True,
                                         num_workers=workers, pin_memory=pin, drop_last=True,
                                         persistent_workers=workers > 0)
    class_weights = [1.0 + (c % 7) / 10.0 for c in range(1000)]
    weight_on_device = torch.tensor(class_weights, device=device)
    name = f"{args.model.replace(':', '_')}__{v}"
    handler = torch.profiler.tensorboard_trace_handler(args.out, worker_name=name)
    schedule = torch.profiler.schedule(wait=3, warmup=2, active=2, repeat=1)
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    model.train()
    with torch.profiler.profile(activities=activities, schedule=schedule, on_trace_ready=handler,
                                record_shapes=True, with_stack=True) as prof:
        for step, (images, labels) in enumerate(loader):
            if step >= 8:
                break
            if pin:
                images = images.to(device, non_blocking=True)
                labels = labels.to(device, non_blocking=True)
            else:
                images = images.cuda()  # ttap-label: TTA003
                labels = labels.cuda()
            if v == "small_h2d":
                labels = torch.stack([torch.tensor(int(t)).cuda() for t in labels])  # ttap-label: TTA004
                weight = torch.tensor(class_weights).cuda()
            else:
                weight = weight_on_device
            if channels_last:
                images = images.contiguous(memory_format=torch.channels_last)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=not fp32):
                logits = model(images)
                loss = F.cross_entropy(logits.float(), labels, weight=weight)
                if v == "recompute_forward":
                    with torch.no_grad():
                        top1 = (model(images).argmax(1) == labels).float().mean()  # ttap-label: TTX101
            if v == "device_ping_pong":
                soft = F.one_hot(labels.cpu(), 1000).float() * 0.9 + 0.1 / 1000  # ttap-label: TTA014
                loss = loss + 0.0 * (logits.float().log_softmax(1) * soft.to(device)).sum()
            if v == "host_sync" and loss.item() > 100.0:  # ttap-label: TTA002
                print("loss spike", file=sys.stderr)
            loss.backward()
            optimizer.step()
            if v == "zero_grad_loop":
                for p in model.parameters():
                    p.grad.zero_()  # ttap-label: TTA005
            else:
                optimizer.zero_grad(set_to_none=True)
            if v == "empty_cache":
                torch.cuda.empty_cache()  # ttap-label: TTA013
            prof.step()
    torch.cuda.synchronize()
    print(f"recorded {name}", file=sys.stderr)


if __name__ == "__main__":
    main()
