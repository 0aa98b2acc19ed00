#!/usr/bin/env bash
# Packs what record_timed.py wrote in SRC into DEST for the trip back from the GPU machine
# (at most 8 files of 16 MiB): results.jsonl as is, the anti traces then the fix traces as
# tar parts of 15 MiB. Usage: pack.sh SRC DEST. Unpack: cat DEST/*.tar.part-* | tar x (per set).
set -uo pipefail
SRC=$1 DEST=$2
cp "$SRC/results.jsonl" "$DEST/" 2>/dev/null
(cd "$SRC" && ls *-anti.pt.trace.json.gz >/dev/null 2>&1 && tar cf - *-anti.pt.trace.json.gz | split -b 15m - "$DEST/anti.tar.part-")
(cd "$SRC" && ls *-fix.pt.trace.json.gz >/dev/null 2>&1 && tar cf - *-fix.pt.trace.json.gz | split -b 15m - "$DEST/fix.tar.part-")
ls -la "$SRC" "$DEST"
