#!/usr/bin/env bash
# Installs VS Code for the browser (code-server, from npm) and puppeteer-core here, for the
# real-editor test (tests/editors/vscode_browser_test.mjs); scripts/setup.sh --tests calls it
# after installing Debian's Chromium and ripgrep. Idempotent: quiet when it is all there.
#
# code-server's own postinstall cannot run as root under npm (it asks for --unsafe-perm), wants
# to download ripgrep and prebuilt binaries from GitHub, and compiles native modules with
# node-gyp. So the packages are installed with --ignore-scripts and this script does its steps:
# VS Code's server dependencies from its shrinkwrap, the native module code-server needs built
# against the installed Node's headers, the asar and CLI links, and Debian's rg for ripgrep.
set -euo pipefail
cd "$(dirname "$0")"

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" != 20 ]; then
  echo "browser test: code-server 4.100.3 needs Node 20 (this is $node_major); not installed" >&2
  exit 0
fi
vscode=node_modules/code-server/lib/vscode
stamp=node_modules/.ttap-installed
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(sha256sum package-lock.json | cut -c1-64)" ]; then
  exit 0
fi
echo "setup: installing code-server and puppeteer-core for the real-editor test (npm)" >&2
npm ci --ignore-scripts --silent --no-audit --no-fund >/dev/null
(cd "$vscode" && npm install --omit=dev --ignore-scripts --silent --no-audit --no-fund >/dev/null)
(cd "$vscode/extensions" && npm install --omit=dev --ignore-scripts --silent --no-audit --no-fund >/dev/null)

# The one native module code-server loads at start (argon2, its password hashing), against this
# Node's headers (nodesource and Debian's libnode-dev put them in <prefix>/include/node; without
# them node-gyp would download them), where node-pre-gyp would put it. VS Code's own native
# modules (spdlog, node-pty, native-watchdog) serve logs to disk, terminals and crash watching:
# the test opens none, and without them the server goes on.
nodedir=$(dirname "$(dirname "$(command -v node)")")
gyp_args=(--silent)
[ -f "$nodedir/include/node/node.h" ] && gyp_args+=(--nodedir="$nodedir")
here=$PWD
(cd node_modules/argon2 && node "$here/node_modules/node-gyp/bin/node-gyp.js" rebuild \
  "${gyp_args[@]}" --module_name=argon2 --napi_build_version=3 \
  --module_path="$here/node_modules/argon2/lib/binding/napi-v3" >/dev/null)

ln -sfn node_modules "$vscode/node_modules.asar"
ln -sfn code-linux.sh "$vscode/bin/remote-cli/code-server"
ln -sfn browser-linux.sh "$vscode/bin/helpers/browser.sh"
mkdir -p "$vscode/node_modules/@vscode/ripgrep/bin"
ln -sfn "$(command -v rg)" "$vscode/node_modules/@vscode/ripgrep/bin/rg"
sha256sum package-lock.json | cut -c1-64 >"$stamp"
