#!/usr/bin/env bash
# tools/ttap_dask.py on a local Dask cluster (two worker processes) over the 8 PARAM DLRM ranks
# of ../shared: its job report must be the one `ttap scan DIR` prints, TTA018 included.
#   ttap_dask_test.sh TTAP REPO_ROOT   (CTest: tools_ttap_dask; 77 = skipped)
set -euo pipefail
ttap=$1
root=$2
if ! /usr/bin/python3 -c 'import distributed' 2>/dev/null; then
  echo "skip: Debian's python3-distributed is not installed (scripts/setup.sh --tests)"
  exit 77
fi
real=$root/../shared/traces/real
shopt -s nullglob
ranks=("$real"/param--dlrm_kineto.tar.gz__worker*_step_12.*.pt.trace.json.gz)
if [ ${#ranks[@]} -ne 8 ]; then
  echo "skip: the 8 PARAM DLRM ranks of ../shared are not here"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/job"
for f in "${ranks[@]}"; do ln -s "$f" "$dir/job/"; done
"$ttap" scan --no-model "$dir/job" >"$dir/scan.txt" || [ $? -eq 1 ]
"$root/tools/ttap_dask.py" "$dir/job" --workers 2 --ttap "$ttap" --scan-arg=--no-model \
  >"$dir/dask.txt" 2>"$dir/dask.err" || [ $? -eq 1 ]
if ! diff "$dir/scan.txt" "$dir/dask.txt"; then
  echo "ttap_dask.py's report differs from ttap scan DIR's (above); its stderr:"
  cat "$dir/dask.err"
  exit 1
fi
grep -q '\[TTA018 straggler-rank\]: ranks 7, ' "$dir/dask.txt"
"$root/tools/ttap_dask.py" "$dir/job" --workers 2 --ttap "$ttap" --scan-arg=--no-model \
  --format json >"$dir/dask.json" 2>>"$dir/dask.err" || [ $? -eq 1 ]
/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["ranks"] == 8 and j["job"]["late_ranks"][0] == 7, j' "$dir/dask.json"
echo "ttap_dask: the job report on 8 ranks through Dask is ttap scan DIR's"
