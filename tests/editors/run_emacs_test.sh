#!/usr/bin/env bash
# Runs the batch-Emacs client test (eglot or lsp-mode) on a copy of the fixture workspace.
# Usage: run_emacs_test.sh TTAP_BINARY REPO_ROOT eglot|lsp-mode
set -euo pipefail
ttap=$1; repo=$2; client=$3
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
cp -r "$repo/tests/data/lsp_workspace/." "$ws/"
HOME=$(mktemp -d) timeout 120 emacs --batch -Q -l "$repo/tests/editors/emacs_client_test.el" \
  "$ttap" "$repo" "$ws" "$client" 2>&1
