#!/usr/bin/env bash
# make deps-aarch64: what make ARCH=aarch64 and test/test_aarch64.py need on an x86-64
# machine, with apt, only when missing: Debian's cross compiler, qemu's user-mode emulator,
# and through multiarch (dpkg --add-architecture arm64) the arm64 builds of what the library,
# the command and the test programs link. umockdev's arm64 preload library cannot be
# installed beside the amd64 umockdev package (the two conflict), so it is taken from its
# package into /usr/local/lib/nvtxshim-aarch64. Idempotent; one line when all is present.
set -euo pipefail

[ "$(uname -m)" = x86_64 ] || { echo "deps-aarch64: nothing to do on $(uname -m)"; exit 0; }
packages=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static
          libusb-1.0-0-dev:arm64 libsqlite3-dev:arm64 zlib1g-dev:arm64)
preload_dir=/usr/local/lib/nvtxshim-aarch64
preload=$preload_dir/libumockdev-preload.so.0

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else echo "deps-aarch64: need root to run: $*" >&2; exit 1
  fi
}

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ] && [ -f "$preload" ]; then
  echo "deps-aarch64: all present"
  exit 0
fi
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "deps-aarch64: adding the arm64 architecture (dpkg --add-architecture arm64)"
  as_root dpkg --add-architecture arm64
fi
as_root apt-get update -q
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps-aarch64: installing: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if [ ! -f "$preload" ]; then
  echo "deps-aarch64: umockdev's arm64 preload library into $preload_dir"
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  (cd "$scratch" && chmod 0755 . && apt-get download -q umockdev:arm64 >/dev/null && dpkg-deb -x umockdev_*_arm64.deb tree)
  as_root install -d "$preload_dir"
  as_root install -m 0644 "$scratch"/tree/usr/lib/aarch64-linux-gnu/libumockdev-preload.so.0.0.0 "$preload"
fi
