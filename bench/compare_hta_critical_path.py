#!/usr/bin/env python3
"""Cross-check of `ttap stats` critical-path attribution against Holistic Trace Analysis's own
critical-path output (../shared/traces/hta_critical_path.json) on the same step of each trace.

HTA's path leaves out the gaps between top-level CPU ops, so its length is often shorter than the
step; the comparison is therefore of GPU time on the path in microseconds (HTA: gpu_compute_bound
+ gpu_communication_bound + gpu_kernel_kernel_overhead; ttap: GPU compute, communication, memcpy,
memset and GPU gaps), and of which side bounds the step (GPU share above one half or not).

    bench/compare_hta_critical_path.py [--ttap build/ttap] [--shared ../shared]
"""
import argparse, json, os, subprocess, sys

GPU_TTAP = ["gpu-matmul", "gpu-kernel", "communication", "memcpy", "memset", "gpu-gap"]
GPU_HTA = ["gpu_compute_bound", "gpu_communication_bound", "gpu_kernel_kernel_overhead"]

def main():
    ap = argparse.ArgumentParser()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--ttap", default=os.path.join(root, "build", "ttap"))
    ap.add_argument("--shared", default=os.path.join(root, "..", "shared"))
    a = ap.parse_args()
    ref = json.load(open(os.path.join(a.shared, "traces", "hta_critical_path.json")))
    print("| trace | step | HTA path us | HTA GPU us | ttap wall us | ttap GPU us | HTA bound | ttap bound |")
    print("|---|---|---|---|---|---|---|---|")
    agree = total = 0
    for name, e in sorted(ref.items()):
        if not e.get("success"):
            continue
        step = e["step"]
        if not step.startswith("ProfilerStep#"):
            continue
        number = int(step.split("#")[1])
        out = subprocess.run([a.ttap, "stats", "--json", os.path.join(a.shared, "traces", "real", name)],
                             capture_output=True, text=True)
        if out.returncode != 0:
            continue
        rank = json.loads(out.stdout)["ranks"][0]
        steps = [s for s in rank["where_the_time_went"]["steps"] if s["step"] == number]
        if not steps:
            continue
        s = steps[0]
        ours_gpu = sum(s["causes_us"].get(c, 0) for c in GPU_TTAP)
        hta_gpu = sum(e["bound_by_us"].get(c, 0) for c in GPU_HTA)
        hta_len = e["critical_path_length_us"]
        hta_bound = "GPU" if hta_gpu > hta_len / 2 else "CPU"
        ours_bound = "GPU" if ours_gpu > s["wall_us"] / 2 else "CPU"
        total += 1
        agree += hta_bound == ours_bound
        print(f"| {name[:60]} | {number} | {hta_len:.0f} | {hta_gpu:.0f} | {s['wall_us']:.0f} | "
              f"{ours_gpu:.0f} | {hta_bound} | {ours_bound} |")
    print(f"\nbound side agrees on {agree} of {total} steps")

if __name__ == "__main__":
    sys.exit(main())
