#!/usr/bin/env bash
# Runs the headless-Neovim client test on a copy of the fixture workspace.
# Usage: run_nvim_test.sh TTAP_BINARY REPO_ROOT
set -euo pipefail
ttap=$1; repo=$2
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
cp -r "$repo/tests/data/lsp_workspace/." "$ws/"
timeout 120 nvim --headless -u NONE -i NONE -n \
  -c "luafile $repo/tests/editors/nvim_client_test.lua" -- "$ttap" "$repo" "$ws" 2>&1
