#!/usr/bin/env python3
"""The cross-rank reduction's speed: `ttap job` over N simulated ranks' summaries (the shape of
`ttap scan --format rank-summary`: S steps, C collectives per step, one rank late by a few
hundred microseconds at every collective), timed in the same run as a baseline: reading the same
summaries with Python's json.load. Prints the summary sizes and the ratio.

    bench/bench_job.py [--ranks 1000] [--steps 10] [--collectives 20] [--ttap build/ttap]
"""
import argparse, json, os, random, subprocess, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--ranks", type=int, default=1000)
ap.add_argument("--steps", type=int, default=10)
ap.add_argument("--collectives", type=int, default=20)
ap.add_argument("--ttap", default=os.path.join(os.path.dirname(__file__), "..", "build", "ttap"))
a = ap.parse_args()
rng = random.Random(1)
summaries = []
for r in range(a.ranks):
    offset = rng.randrange(-50000, 50000)  # each rank's clock
    steps, colls = [], []
    for s in range(a.steps):
        base = 1_000_000_000 + s * 50_000_000
        steps.append([s, base + offset, base + 40_000_000 + offset])
        for c in range(a.collectives):
            end = base + 2_000_000 * (c + 1)
            arrive = end - 500_000 - rng.randrange(0, 200_000) + (300_000 if r == 17 else 0)
            colls.append([s, "ncclKernel_AllReduce_RING_LL_Sum_float", arrive + offset, end + offset])
    summaries.append({"ttap_rank_summary": 1, "file": f"/job/rank-{r}.pt.trace.json", "rank": r,
                      "rank_known": True, "steps": a.steps, "findings": 1,
                      "top": "TTA011 comm-not-overlapped 20.0%",
                      "text": f"/job/rank-{r}.pt.trace.json: warning[TTA011 ...]\n",
                      "step_us": 40000.0, "top_cause": "TTA011 comm-not-overlapped (8.0 ms/step)",
                      "peer_wait_finding": "TTA011 comm-not-overlapped", "peer_wait_us": 8000.0,
                      "timeline": {"steps": steps, "collectives": colls}})
sizes = [len(json.dumps(s)) for s in summaries]
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "summaries.json")
    with open(path, "w") as f:
        json.dump(summaries, f)
    t0 = time.perf_counter()
    with open(path) as f:
        json.load(f)
    t_json = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = subprocess.run([a.ttap, "job", path], capture_output=True, text=True)
    t_job = time.perf_counter() - t0
late = [l for l in out.stdout.splitlines() if "TTA018" in l]
print(f"ranks {a.ranks}, {a.steps} steps x {a.collectives} collectives each; summary per rank "
      f"{max(sizes) / 1000:.1f} kB max, {sum(sizes) / 1e6:.1f} MB in all")
print(f"ttap job: {t_job:.2f} s (exit {out.returncode}); json.load of the same file: {t_json:.2f} s; "
      f"ratio {t_job / t_json:.2f}")
print(late[0][:200] if late else "no TTA018 line")
