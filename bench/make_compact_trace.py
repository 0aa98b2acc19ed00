#!/usr/bin/env python3
"""Make a compact Kineto trace: many small events in one profiler step, few bytes per event.

    python3 bench/make_compact_trace.py --events 10000000 --out bench/out/compact10m.json

The shape of a long eager step recorded without Python stacks: on the main thread, one
ProfilerStep#1 annotation holding N/4 short aten ops, each with one cudaLaunchKernel call whose
kernel runs on stream 7 (correlation ids link them, as Kineto writes them); names are short and
args minimal, so the file is about 170 bytes per event, the "compact" case of issue 33 (a 1.67 GB
trace of 10M events). Peak memory of `ttap stats`, `ttap scan` and the server is reported against
the file's size (bench/README.md).
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    ops = max(1, (a.events - 1) // 4)  # op, launch, kernel, ac2g-less: 4 rows per op incl. a child op
    t0 = 1_700_000_000_000_000  # us
    with open(a.out, "w") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100", '
                '"computeMajor": 9, "computeMinor": 0}], "traceEvents": [\n')
        step_dur = ops * 10 + 10
        f.write('{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,'
                f'"ts":{t0},"dur":{step_dur}}}')
        names = ["aten::add", "aten::mul", "aten::relu", "aten::mm"]
        kernels = ["k_add", "k_mul", "k_relu", "k_gemm"]
        out = []
        for i in range(ops):
            ts = t0 + 1 + i * 10
            n = i % 4
            c = i + 1
            out.append(f',\n{{"ph":"X","cat":"cpu_op","name":"{names[n]}","pid":1,"tid":1,'
                       f'"ts":{ts},"dur":8,"args":{{"External id":{c},"Sequence number":{c}}}}}')
            out.append(f',\n{{"ph":"X","cat":"cpu_op","name":"aten::empty","pid":1,"tid":1,'
                       f'"ts":{ts},"dur":1,"args":{{"External id":{c},"Sequence number":{c}}}}}')
            out.append(f',\n{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,'
                       f'"tid":1,"ts":{ts + 2},"dur":5,"args":{{"correlation":{c},'
                       f'"External id":{c}}}}}')
            out.append(f',\n{{"ph":"X","cat":"kernel","name":"{kernels[n]}","pid":0,"tid":7,'
                       f'"ts":{ts + 9},"dur":3,"args":{{"correlation":{c},"stream":7,'
                       f'"device":0,"External id":{c}}}}}')
            if len(out) >= 40000:
                f.write("".join(out))
                out.clear()
        f.write("".join(out))
        f.write("\n]}\n")
    print(f"{a.out}: {1 + 4 * ops} events", file=sys.stderr)


if __name__ == "__main__":
    main()
