#!/usr/bin/env bash
# The packaged linux-x64 .vsix on systems that have only their base packages: a minimal Debian 12
# (debootstrap --variant=minbase bookworm) and, for the glibc floor, a minimal Ubuntu 22.04
# (jammy: glibc 2.35). In each chroot the extension's own `ttap` prints its version and doctor
# report, answers `initialize` over stdio, and scans the bundled example. Needs root, debootstrap
# and network access to the mirrors; not part of CI (a few minutes, ~300 MB per chroot).
# Usage: bench/vsix_chroot.sh [VSIX]   (default: editors/vscode/ttap-linux-x64.vsix; make it with
#        editors/vscode/scripts/package-linux-x64.sh)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
vsix=${1:-$repo/editors/vscode/ttap-linux-x64.vsix}
[ -f "$vsix" ] || { echo "no $vsix: run editors/vscode/scripts/package-linux-x64.sh" >&2; exit 2; }
out=${BENCH_OUT:-$repo/bench/out}/chroots
mkdir -p "$out"

run_in() {  # SUITE MIRROR
  local suite=$1 mirror=$2 root="$out/$1"
  if [ ! -x "$root/bin/sh" ]; then
    echo "== debootstrap $suite (minbase)"
    debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$out/$suite.log" 2>&1
  fi
  # A running system has /proc; the dynamic loader reads /proc/self/exe for $ORIGIN.
  mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
  trap 'umount "$root/proc" 2>/dev/null || true' RETURN
  rm -rf "$root/opt/ttap" && mkdir -p "$root/opt/ttap"
  (cd "$root/opt/ttap" && unzip -q "$vsix")
  cp "$repo/examples/resnet50_num_workers_0/"{worker0.pt.trace.json.gz,train.py} "$root/opt/ttap/"
  local bin=/opt/ttap/extension/bin/linux-x64/ttap
  echo "== $suite: $(chroot "$root" /usr/bin/ldd --version | head -1)"
  echo "packages installed: $(chroot "$root" dpkg-query -W | wc -l)"
  chroot "$root" "$bin" --version
  chroot "$root" "$bin" doctor
  local init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":null,"capabilities":{}}}'
  local down='{"jsonrpc":"2.0","id":2,"method":"shutdown"}'
  local exit_msg='{"jsonrpc":"2.0","method":"exit"}'
  local reply
  reply=$(printf 'Content-Length: %d\r\n\r\n%sContent-Length: %d\r\n\r\n%sContent-Length: %d\r\n\r\n%s' \
    "${#init}" "$init" "${#down}" "$down" "${#exit_msg}" "$exit_msg" | chroot "$root" "$bin" lsp)
  echo "lsp exit status $?; initialize answered: $(echo "$reply" | grep -o '"serverInfo":{[^}]*}')"
  chroot "$root" /bin/sh -c "cd /opt/ttap && $bin scan --workspace . worker0.pt.trace.json.gz" || [ $? -eq 1 ]
}

run_in bookworm http://deb.debian.org/debian
run_in jammy http://archive.ubuntu.com/ubuntu
