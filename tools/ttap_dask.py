#!/usr/bin/python3
"""Scan a multi-GPU job's traces on a Dask cluster and report the job as `ttap scan DIR` does.

Each rank's trace is scanned where a Dask worker runs (`ttap scan --format rank-summary`: the
rank's findings, its steps and its collective kernels, a few kB), and the machine that runs this
script reduces the summaries (`ttap job`): the per-rank table, each rank's lateness at the
collectives and TTA018 straggler-rank. The report is the one `ttap scan DIR` prints on one
machine for the same traces.

    tools/ttap_dask.py /shared/run42/traces/                      # a local cluster
    tools/ttap_dask.py /shared/run42/traces/ --scheduler tcp://head:8786 --ttap /opt/ttap/bin/ttap

Workers must see the traces and the ttap binary at the same paths (a shared file system, as a
job's traces usually are). Debian: apt-get install python3-distributed (Dask 2022.12).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def list_traces(paths):
    """Files as given; directories as `ttap scan DIR` lists them (*.json, *.json.gz, sorted)."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            names = sorted(n for n in os.listdir(p)
                           if n.endswith(".json") or n.endswith(".json.gz"))
            base = p if p.endswith("/") else p + "/"
            files += sorted(base + n for n in names if os.path.isfile(base + n))
        else:
            files.append(p)
    return files


def scan_rank(ttap, trace, scan_args):
    """On a worker: one rank's summary (JSON text)."""
    r = subprocess.run([ttap, "scan", "--format", "rank-summary", *scan_args, trace],
                       capture_output=True, text=True)
    if r.returncode not in (0, 1):  # 1: the rank has findings
        raise RuntimeError(f"{trace}: ttap scan failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="+", help="trace files or directories of them")
    ap.add_argument("--scheduler", help="a running Dask scheduler (tcp://host:8786); "
                    "default: a local cluster on this machine")
    ap.add_argument("--workers", type=int, default=0,
                    help="local cluster: worker processes (default: the CPU count)")
    ap.add_argument("--ttap", default=shutil.which("ttap") or "ttap",
                    help="the ttap binary, at the same path on every worker")
    ap.add_argument("--format", choices=["text", "json"], default="text")
    ap.add_argument("--scan-arg", action="append", default=[],
                    help="passed to each `ttap scan` (repeat: --scan-arg=--no-model)")
    args = ap.parse_args()
    files = list_traces(args.traces)
    if not files:
        print("ttap_dask: no trace files", file=sys.stderr)
        return 2
    from distributed import Client, LocalCluster  # Debian's python3-distributed

    cluster = None
    if args.scheduler:
        client = Client(args.scheduler)
    else:
        cluster = LocalCluster(n_workers=args.workers or os.cpu_count() or 1,
                               threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        futures = client.map(scan_rank, [args.ttap] * len(files), files,
                             [args.scan_arg] * len(files), pure=False)
        summaries = [json.loads(s) for s in client.gather(futures)]
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(summaries, f)
        path = f.name
    try:
        return subprocess.run([args.ttap, "job", "--format", args.format, path]).returncode
    finally:
        os.unlink(path)


if __name__ == "__main__":
    sys.exit(main())
