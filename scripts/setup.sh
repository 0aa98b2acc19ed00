#!/usr/bin/env bash
# Installs everything TorchTraceAP needs on a fresh Debian 12 machine (idempotent, quiet when
# nothing is missing): Debian packages with apt-get and the tree-sitter Python grammar from npm.
# With --tests (scripts/test.sh) also what the real-editor and Dask tests need: Debian's
# Chromium, ripgrep and python3-distributed, then code-server and puppeteer-core from npm
# (tests/editors/browser/install.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
tests=0
[ "${1:-}" = --tests ] && tests=1

PKGS=(build-essential cmake ninja-build ccache pkg-config python3
      libsimdjson-dev nlohmann-json3-dev libtorch-dev libopenblas0-pthread libtree-sitter-dev
      libasio-dev libcurl4-openssl-dev catch2 zlib1g-dev libdeflate-dev libcpptoml-dev
      clang libclang-rt-14-dev neovim time emacs-nox elpa-eglot elpa-lsp-mode unzip
      clang-format)
# node/npm: Debian's packages unless a node with npm is already there (nodesource bundles npm).
if ! command -v npm >/dev/null 2>&1; then PKGS+=(nodejs npm); fi
if [ "$tests" = 1 ]; then PKGS+=(chromium ripgrep python3-distributed); fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# tree-sitter-python 0.23.6: grammar ABI 14, which Debian's libtree-sitter 0.20.7 loads (0.25 does not).
GRAMMAR=third_party/tree-sitter-python
if [ ! -f "$GRAMMAR/src/parser.c" ]; then
  echo "setup: fetching tree-sitter-python@0.23.6 from npm" >&2
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent tree-sitter-python@0.23.6 >/dev/null)
  mkdir -p "$GRAMMAR"
  tar -xzf "$tmp"/tree-sitter-python-0.23.6.tgz -C "$GRAMMAR" --strip-components=1
  rm -rf "$tmp"
fi

# Test-only npm packages: Ajv and the official SARIF 2.1.0 schema for the SARIF check.
if [ ! -d tests/sarif/node_modules/ajv-draft-04 ]; then
  echo "setup: installing the SARIF schema check (npm)" >&2
  (cd tests/sarif && npm ci --silent --no-audit --no-fund >/dev/null)
fi

# The VS Code extension's packages (vscode-languageclient, TypeScript, vsce): its build and the
# vscode-jsonrpc client test use them.
if [ ! -d editors/vscode/node_modules/vscode-languageserver-protocol ] || [ ! -d editors/vscode/node_modules/esbuild ]; then
  echo "setup: installing the VS Code extension's npm packages" >&2
  (cd editors/vscode && npm ci --silent --no-audit --no-fund >/dev/null)
fi

# VS Code for the browser and its driver, for the real-editor test (scripts/test.sh only).
if [ "$tests" = 1 ]; then tests/editors/browser/install.sh; fi
