#!/usr/bin/env python3
"""Language-server reliability benchmark (issue 24; bench/README.md): `ttap lsp` over stdio.

Each part reports its figure next to a baseline measured in the same run:

  keys    keystroke latency on a 1 MB buffer that holds a finding: didChange -> the
          publishDiagnostics for that version (published once the buffer has been quiet for
          150 ms), p50/p99 over 300 edits; and hover p99 on that
          buffer between edits. Baseline: a hover on a file without findings (the transport).
  hover   hover p99 while a 1 GB, 106k-step trace is analysed, and while its trace summary is
          computed (ttap.showTraceSummary in flight). Baseline: idle hover p99.
  idle    server CPU over 10 s with nothing changing, in a workspace of 120k files, with and
          without client file watchers. Baseline: the same with an empty workspace.
  rss     resident memory after analysing the 1 GB trace, against the trace's size; and the
          peak while a second, equal trace is analysed (the old snapshot is still shown).

Usage: bench/bench_lsp_reliability.py [--ttap build/ttap] [--parts keys,hover,idle,rss]
                                      [--big-trace FILE]
The 1 GB trace is made once in bench/out/ (bench/make_big_trace.py on the LSP test fixture);
--big-trace takes another in its place (bench/make_compact_trace.py's 10M events: issue 33).
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, threading, time

from lsp_bench_client import Client, cpu_seconds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "data", "lsp_workspace")


def rss_kb(pid, key="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def fixture_workspace(pad_bytes=0):
    ws = tempfile.mkdtemp(prefix="ttap-bench-rel-")
    shutil.copytree(os.path.join(FIXTURE, "log"), os.path.join(ws, "log"))
    text = open(os.path.join(FIXTURE, "train.py")).read()
    if pad_bytes:
        # Real code after the fixture's lines: the standard library's own modules, in name order
        # (a flat file of tens of thousands of one-line functions re-parses slower: see README).
        lib = os.path.dirname(os.__file__)
        chunks, size = [], 0
        for name in sorted(os.listdir(lib)):
            if size >= pad_bytes:
                break
            if name.endswith(".py"):
                with open(os.path.join(lib, name), encoding="utf-8", errors="replace") as f:
                    chunk = f.read()
                chunks.append(chunk)
                size += len(chunk.encode())
        text += "\n" + "\n".join(chunks)
    with open(os.path.join(ws, "train.py"), "w") as f:
        f.write(text)
    with open(os.path.join(ws, "other.py"), "w") as f:
        f.write("x = 1\n")
    return ws, text


def big_trace(ttap, given=None):
    if given:
        return os.path.abspath(given)
    out = os.path.join(ROOT, "bench", "out", "steps1g.json")
    if not os.path.exists(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_big_trace.py"), "--base",
                        os.path.join(FIXTURE, "log", "host_1.1700000000000.pt.trace.json"),
                        "--target-mb", "1000", "--out", out], check=True)
    return out


def hover(c, uri, line, ch=1):
    return c.call("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": line, "character": ch}})


def part_keys(ttap, rows):
    ws, text = fixture_workspace(pad_bytes=1 << 20)
    c = Client([ttap, "lsp", "--poll-ms=200"])
    c.start(ws)
    c.status("ready", 120)
    uri, other = f"file://{ws}/train.py", f"file://{ws}/other.py"
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})
    c.notify("textDocument/didOpen", {"textDocument": {"uri": other, "languageId": "python", "version": 1, "text": "x = 1\n"}})
    c.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri, 60)
    base = [hover(c, other, 0)[0] for _ in range(100)]
    keys, hovers = [], []
    line = len(text.splitlines()) - 2  # type near the end of the 1 MB buffer
    for v in range(2, 302):
        t0 = time.perf_counter()
        c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": v}, "contentChanges": [
            {"range": {"start": {"line": line, "character": 4}, "end": {"line": line, "character": 4}}, "text": "x"}]})
        t, m = c.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                      and m["params"].get("version") == v, 60)
        keys.append((t - t0) * 1000 if t else float("inf"))
        if v % 3 == 0:
            hovers.append(hover(c, uri, 11)[0])
    ms, m = hover(c, uri, 11)
    assert m and m.get("result"), "no hover on the finding after the edits"
    c.stop()
    shutil.rmtree(ws, ignore_errors=True)
    quiet = 150  # Session::kPublishAfterEditMs: a buffer is published once typing pauses
    rows.append((f"keystroke on a 1 MB buffer -> its diagnostics, p50 / p99 (300 edits; "
                 f"includes the {quiet} ms quiet period)",
                 f"{statistics.median(keys):.2f} / {pct(keys, 0.99):.2f} ms "
                 f"({statistics.median(keys) - quiet:.2f} / {pct(keys, 0.99) - quiet:.2f} beyond it)",
                 f"transport hover p99 {pct(base, 0.99):.2f} ms"))
    rows.append(("hover on the 1 MB buffer between edits, p50 / p99",
                 f"{statistics.median(hovers):.2f} / {pct(hovers, 0.99):.2f} ms",
                 f"transport hover p99 {pct(base, 0.99):.2f} ms"))


def part_hover_rss(ttap, rows, parts, given=None):
    big = big_trace(ttap, given)
    size_mb = os.path.getsize(big) / 1e6
    ws, text = fixture_workspace()
    c = Client([ttap, "lsp", "--poll-ms=200"])
    c.start(ws)
    c.status("ready", 120)
    uri = f"file://{ws}/train.py"
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})
    idle = [hover(c, uri, 11)[0] for _ in range(100)]
    # The 1 GB trace appears (renamed into place: a complete file).
    dst = os.path.join(ws, "log", "host_1.1700000000001.pt.trace.json")
    os.symlink(big, dst + ".tmp")
    os.rename(dst + ".tmp", dst)
    t_appear = time.perf_counter()
    busy = []
    c.status("loading", 60)
    while True:
        with c.cv:
            done = any(m.get("method") == "ttap/status" and m["params"]["state"] == "ready" for _, m in c.messages)
        if done or time.perf_counter() - t_appear > 600:
            break
        busy.append(hover(c, uri, 11)[0])
        time.sleep(0.02)
    c.status("ready", 600)
    analysed_s = time.perf_counter() - t_appear
    time.sleep(2)
    rss_after = rss_kb(c.p.pid) / 1024
    after = [hover(c, uri, 11)[0] for _ in range(100)]
    # The summary of the 1 GB trace, with hovers sent while it is computed.
    sid = c.request("workspace/executeCommand", {"command": "ttap.showTraceSummary", "arguments": []})
    t_sum = time.perf_counter()
    during = []
    while True:
        with c.cv:
            done = any(m.get("id") == sid and "method" not in m for _, m in c.messages)
        if done or time.perf_counter() - t_sum > 600:
            break
        during.append(hover(c, uri, 11)[0])
    ts, _ = c.reply_to(sid, 600)
    summary_ms = (ts - t_sum) * 1000
    if "rss" in parts:
        # A second trace as big: the old snapshot stays shown while the new one loads.
        peak0 = rss_kb(c.p.pid, "VmHWM")
        dst2 = os.path.join(ws, "log", "host_1.1700000000002.pt.trace.json")
        os.symlink(big, dst2 + ".tmp")
        os.rename(dst2 + ".tmp", dst2)
        os.utime(big)  # newer than the shown one
        c.status("loading", 60)
        c.status("ready", 600)
        time.sleep(2)
        peak = rss_kb(c.p.pid, "VmHWM") / 1024
        rss_after2 = rss_kb(c.p.pid) / 1024
    c.stop()
    shutil.rmtree(ws, ignore_errors=True)
    if "hover" in parts:
        rows.append((f"hover p50 / p99 while a {size_mb:.0f} MB trace is analysed ({len(busy)} hovers, {analysed_s:.1f} s)",
                     f"{statistics.median(busy):.2f} / {pct(busy, 0.99):.2f} ms",
                     f"idle hover p99 {pct(idle, 0.99):.2f} ms"))
        rows.append((f"hover p50 / p99 on its findings after analysis",
                     f"{statistics.median(after):.2f} / {pct(after, 0.99):.2f} ms",
                     f"idle hover p99 {pct(idle, 0.99):.2f} ms"))
        rows.append((f"hover p50 / p99 while its summary is computed ({len(during)} hovers; summary {summary_ms:.0f} ms)",
                     f"{statistics.median(during) if during else float('nan'):.2f} / {pct(during, 0.99) if during else float('nan'):.2f} ms",
                     f"idle hover p99 {pct(idle, 0.99):.2f} ms"))
    if "rss" in parts:
        rows.append((f"RSS after analysing the {size_mb:.0f} MB trace",
                     f"{rss_after:.0f} MB ({rss_after / size_mb:.2f}x the trace)", "goal <= 0.5x"))
        rows.append((f"peak RSS over both analyses (second trace as big) / RSS after the second",
                     f"{peak:.0f} MB ({peak / size_mb:.2f}x) / {rss_after2:.0f} MB ({rss_after2 / size_mb:.2f}x)",
                     f"before the second: peak {peak0 / 1024:.0f} MB"))


def part_idle(ttap, rows):
    def measure(ws, watchers):
        c = Client([ttap, "lsp"])
        c.start(ws, watchers)
        c.status("no-trace", 120)
        time.sleep(2)
        cpu0 = cpu_seconds(c.p.pid)
        time.sleep(10)
        used = (cpu_seconds(c.p.pid) - cpu0) / 10 * 100
        # Still finds a trace that appears afterwards.
        os.makedirs(os.path.join(ws, "runs", "log"), exist_ok=True)
        shutil.copy(os.path.join(FIXTURE, "log", "host_1.1700000000000.pt.trace.json"),
                    os.path.join(ws, "runs", "log", "t.tmp"))
        t0 = time.perf_counter()
        os.rename(os.path.join(ws, "runs", "log", "t.tmp"), os.path.join(ws, "runs", "log", "host_1.1.pt.trace.json"))
        if watchers:
            c.notify("workspace/didChangeWatchedFiles", {"changes": [
                {"uri": f"file://{ws}/runs/log/host_1.1.pt.trace.json", "type": 1}]})
        t, _ = c.status("ready", 120)
        found_s = t - t0 if t else float("inf")
        c.stop()
        shutil.rmtree(os.path.join(ws, "runs"), ignore_errors=True)
        return used, found_s

    empty = tempfile.mkdtemp(prefix="ttap-bench-idle0-")
    big = tempfile.mkdtemp(prefix="ttap-bench-idle-")
    for d in range(120):
        sub = os.path.join(big, "data", f"class_{d:03d}")
        os.makedirs(sub)
        for k in range(1000):
            open(os.path.join(sub, f"img_{k:05d}.jpg"), "w").close()
    for watchers in (False, True):
        base, _ = measure(empty, watchers)
        used, found = measure(big, watchers)
        rows.append((f"idle CPU, 120k-file workspace, {'with' if watchers else 'without'} client watchers",
                     f"{used:.2f}% of a core (a new trace shown {found:.2f} s after it appears)",
                     f"empty workspace {base:.2f}%"))
    shutil.rmtree(empty, ignore_errors=True)
    shutil.rmtree(big, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ttap", default=os.path.join(ROOT, "build", "ttap"))
    ap.add_argument("--parts", default="keys,hover,idle,rss")
    ap.add_argument("--big-trace", default=None, help="the big trace (default: make the 1 GB one)")
    args = ap.parse_args()
    ttap = os.path.abspath(args.ttap)
    parts = set(args.parts.split(","))
    rows = []
    if "keys" in parts:
        part_keys(ttap, rows)
    if "hover" in parts or "rss" in parts:
        part_hover_rss(ttap, rows, parts, args.big_trace)
    if "idle" in parts:
        part_idle(ttap, rows)
    print("| measure | value | baseline in the same run |")
    print("|---|---:|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
