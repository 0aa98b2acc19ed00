#!/usr/bin/env python3
"""Keystrokes in a large file that has findings (issue 33, item 2): `ttap lsp` over stdio on the
bundled example (examples/resnet50_num_workers_0: its trace puts findings on train.py), with
train.py padded to 1 MB and to 6 MB by ordinary functions after its own lines. Per size: open
the buffer, wait for its diagnostics, then N times: a didChange (one character typed at the end)
followed at once by a hover on a finding's line; the hover's latency is the edit+hover time the
user feels. Baseline in the same run: the same loop on the unpadded train.py.

Usage: bench/bench_lsp_edit.py [--ttap build/ttap] [--n 200]
"""
import argparse, os, shutil, statistics, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_bench_client import Client

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "examples", "resnet50_num_workers_0")


def filler(target_bytes, start):
    out, i = [], start
    size = 0
    while size < target_bytes:
        block = (f"\n\ndef helper_{i}(x, y=None):\n    \"\"\"Pads the file.\"\"\"\n"
                 f"    total = 0\n    for k in range(10):\n        total += k * x\n"
                 f"    if y is not None:\n        total = total + y\n    return total\n")
        out.append(block)
        size += len(block)
        i += 1
    return "".join(out)


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def run(ttap, pad_bytes, n):
    ws = tempfile.mkdtemp(prefix="ttap-bench-edit-")
    shutil.copy(os.path.join(EXAMPLE, "worker0.pt.trace.json.gz"), ws)
    src = open(os.path.join(EXAMPLE, "train.py")).read()
    text = src + (filler(pad_bytes - len(src), 0) if pad_bytes > len(src) else "")
    with open(os.path.join(ws, "train.py"), "w") as f:
        f.write(text)
    c = Client([ttap, "lsp"])
    uri = f"file://{ws}/train.py"
    c.call("initialize", {"processId": None, "rootUri": f"file://{ws}",
                          "workspaceFolders": [{"uri": f"file://{ws}", "name": "ws"}],
                          "capabilities": {}})
    c.notify("initialized", {})
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                       "version": 1, "text": text}})
    _, pub = c.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                    and m["params"]["uri"] == uri and m["params"]["diagnostics"], timeout=300)
    if pub is None:
        sys.exit("no diagnostics for train.py")
    line = pub["params"]["diagnostics"][0]["range"]["start"]["line"]
    lines = text.count("\n")
    times = []
    for k in range(n):
        end = {"line": lines + k, "character": 0}
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2 + k},
            "contentChanges": [{"range": {"start": end, "end": end}, "text": "#\n"}]})
        ms, reply = c.call("textDocument/hover",
                           {"textDocument": {"uri": uri}, "position": {"line": line, "character": 4}})
        times.append(ms)
    c.call("shutdown", None)
    c.notify("exit", None)
    shutil.rmtree(ws, ignore_errors=True)
    return len(text), times, reply


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ttap", default="build/ttap")
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()
    ttap = os.path.abspath(args.ttap)
    print("| buffer | edit+hover p50 | p99 | hover has findings |")
    print("|---|---|---|---|")
    for pad in (0, 1_000_000, 6_000_000):
        size, times, reply = run(ttap, pad, args.n)
        has = bool(reply and reply.get("result"))
        print(f"| {size / 1e6:.2f} MB | {statistics.median(times):.2f} ms | "
              f"{pct(times, 0.99):.2f} ms | {has} |")


if __name__ == "__main__":
    main()
