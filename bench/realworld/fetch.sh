#!/usr/bin/env bash
# Extracts each manifest trace, by its git blob, from a snapshot of its repository into
# bench/realworld/traces/ (git-ignored: third-party data is never committed). Snapshots are
# bare git directories under $TTAP_MIRROR (default /work/.mirror, where the team's `fetch` tool
# puts them: <owner>+<name>/...). Rows whose snapshot is absent are skipped and counted.
set -uo pipefail
cd "$(dirname "$0")"
MIRROR=${TTAP_MIRROR:-/work/.mirror}
mkdir -p traces
have=0 missing=0
while IFS=$'\t' read -r id repo commit path blob _; do
  [ "$id" = id ] && continue
  if ls traces/"$id".json traces/"$id".json.gz >/dev/null 2>&1; then have=$((have + 1)); continue; fi
  gitdir=$(find "$MIRROR/${repo/\//+}" -maxdepth 3 -name HEAD -printf '%h\n' 2>/dev/null | head -n 1)
  ext=.json; case "$path" in *.gz) ext=.json.gz ;; esac
  if [ -n "$gitdir" ] && git --git-dir="$gitdir" cat-file -p "$blob" > traces/"$id$ext" 2>/dev/null; then
    have=$((have + 1))
  else
    rm -f traces/"$id$ext"; missing=$((missing + 1))
  fi
done < manifest.tsv
echo "fetch: $have traces present, $missing without a snapshot" >&2
