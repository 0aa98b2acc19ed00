#!/usr/bin/env bash
# Builds the linux-x64 .vsix: a portable `ttap` (TTAP_PORTABLE: tree-sitter, zlib and libstdc++
# static; libsimdjson carried in bin/linux-x64/lib, found through RPATH $ORIGIN/lib; libcurl and
# libtorch opened only when used) bundled with the extension (esbuild: one extension.js).
# Checks that the binary needs nothing but glibc and what it carries, and prints the newest glibc
# symbol version it uses. Usage: editors/vscode/scripts/package-linux-x64.sh  (from anywhere)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
ext="$repo/editors/vscode"
build="$repo/build-portable"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTTAP_PORTABLE=ON \
  -DTTAP_BUILD_MODELS=OFF -DTTAP_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target ttap -j "$(nproc)"

bin="$ext/bin/linux-x64"
rm -rf "$bin"
mkdir -p "$bin/lib"
cp "$build/ttap" "$bin/ttap"
strip "$bin/ttap"
# Every library outside glibc that the binary still loads goes beside it.
# libstdc++ and libgcc_s stay the system's: only libsimdjson uses them, needing GCC 5's.
glibc='^(linux-vdso|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|ld-linux|libstdc\+\+|libgcc_s)'
while read -r name _ path _; do
  [[ "$name" =~ $glibc ]] && continue
  [ -f "$path" ] && cp -L "$path" "$bin/lib/$name"
done < <(ldd "$bin/ttap" | awk '$2 == "=>" {print $1, $2, $3, $4}')
echo "carried: $(ls "$bin/lib" | tr '\n' ' ')"
# What it needs now: glibc, and its own lib/ (RPATH $ORIGIN/lib).
bad=$(ldd "$bin/ttap" | awk '$2 == "=>" {print $1, $3}' | grep -Ev "$glibc" | grep -v "$bin/lib/" || true)
if [ -n "$bad" ]; then
  echo "package: the binary still needs system libraries: $bad" >&2
  exit 1
fi
echo "newest glibc symbol: $(objdump -T "$bin/ttap" "$bin"/lib/*.so* | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1)"
"$bin/ttap" --version

cd "$ext"
npm ci --silent
npm run --silent bundle
npx vsce package --target linux-x64 --allow-missing-repository -o "ttap-linux-x64.vsix"
unzip -l "ttap-linux-x64.vsix" | tail -1
