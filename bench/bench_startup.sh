#!/usr/bin/env bash
# Start-up cost: `ttap --version` (never maps libtorch) against `ttap doctor` (dlopens the
# libtorch models module) and /bin/true, measured in the same run. Goal: --version under 50 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
TTAP=${TTAP:-build/ttap}
RUNS=${RUNS:-30}
python3 - "$TTAP" "$RUNS" <<'PY'
import subprocess, sys, time
ttap, runs = sys.argv[1], int(sys.argv[2])
def median_ms(cmd):
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ts.append((time.perf_counter() - t) * 1000)
    ts.sort()
    return ts[len(ts) // 2]
base = median_ms(["/bin/true"])
version = median_ms([ttap, "--version"])
doctor = median_ms([ttap, "doctor"])
print("| command | median ms | vs /bin/true |")
print("|---|---:|---:|")
print(f"| /bin/true | {base:.1f} | 1.0x |")
print(f"| ttap --version | {version:.1f} | {version / base:.1f}x |")
print(f"| ttap doctor (dlopen libtorch) | {doctor:.1f} | {doctor / base:.1f}x |")
print(f"\n--version goal < 50 ms: {'met' if version < 50 else 'NOT met'}; "
      f"libtorch would add {doctor - version:.0f} ms to every start-up if linked")
PY
