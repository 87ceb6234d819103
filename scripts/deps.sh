#!/usr/bin/env bash
# Installs what building, testing and the demo need, with apt, only when missing.
# Idempotent: a machine that already has everything gets one line and no apt call.
# Debian 12 (non-free component, for Nsight Systems) and Ubuntu 24.04 (multiverse).
set -euo pipefail

packages=(
  build-essential pkg-config
  libusb-1.0-0-dev
  libx11-dev libxcb1-dev libxcb-shm0-dev libxext-dev libxdamage-dev libgl-dev libegl-dev
  libxrender-dev libxcb-render0-dev libvulkan-dev
  xvfb mesa-utils x11-utils
  libcairo2-dev python3-gi python3-gi-cairo gir1.2-gtk-3.0 vulkan-tools mesa-vulkan-drivers
  umockdev libumockdev-dev python3-usb python3-numpy python3-pytest
  # scripts/pyenv.sh's virtual environment (test/pftrace_check.py).
  python3-venv
  # Real clients test/test_emucam.py runs on the emulated camera.
  usbutils fxload sigrok-cli python3-usb1
  # Real clients test/test_emuv4l2.py runs on the emulated V4L2 camera (test/v4l2dev/), and
  # the serial and HID tools for the device-file tests.
  ffmpeg v4l-utils python3-opencv python3-serial python3-hid fido2-tools libhidapi-hidraw0
  # Real I2C clients test/test_i2c.py runs on the emulated bus (test/i2cdev/).
  i2c-tools python3-smbus
  sqlite3 libsqlite3-dev zlib1g-dev
  # test/test_report_html.py renders nvtxshim report's page in headless Chromium and measures
  # the picture with PIL.
  chromium python3-pil
  # test/test_report_json.py validates report --json against docs/schema/report-v1.json.
  python3-jsonschema
  valgrind strace
  # make tags (scripts/tags.py), and the style test/test_style.py checks (.clang-format).
  universal-ctags clang-format
  btrfs-progs
  nsight-systems nsight-systems-target
)
# For the kernel probe (and clang's runtimes for make fuzz); where the distribution
# lacks one, the library is built without the probe (make says so) and everything
# else works.
optional=(libbpf-dev bpftool clang libclang-rt-dev)

# NVTX3 is header-only: the CUDA toolkit has it; otherwise Debian's nvidia-cuda-dev.
nvtx_found=
for dir in "${CUDA_HOME:-/usr/local/cuda}/include" /usr/local/cuda/include /usr/include; do
  [ -f "$dir/nvtx3/nvToolsExt.h" ] && nvtx_found=$dir && break
done
[ -n "$nvtx_found" ] || packages+=(nvidia-cuda-dev)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done
optional_missing=()
for p in "${optional[@]}"; do
  installed "$p" || optional_missing+=("$p")
done

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else echo "deps: need root to run: $*" >&2; exit 1
  fi
}

# Nsight Systems lives in Debian's non-free component, and the driver stub it
# depends on pulls nvidia-support from contrib (Ubuntu: multiverse).
# Add those components beside the existing sources when no source offers them.
enable_nsight_component() {
  . /etc/os-release
  local component suites uris file
  case "${ID:-}" in
    debian) component="contrib non-free";   uris=http://deb.debian.org/debian
            suites="${VERSION_CODENAME} ${VERSION_CODENAME}-updates" ;;
    ubuntu) component=multiverse; uris=http://archive.ubuntu.com/ubuntu
            suites="${VERSION_CODENAME} ${VERSION_CODENAME}-updates" ;;
    *) echo "deps: unknown distribution '${ID:-?}': install nsight-systems yourself" >&2; return 0 ;;
  esac
  if grep -rqsE "^(Components:.*[[:space:]]|deb .*[[:space:]])${component##* }([[:space:]]|$)" \
       /etc/apt/sources.list /etc/apt/sources.list.d/; then
    return 0
  fi
  file=/etc/apt/sources.list.d/nvtxshim-${component##* }.sources
  echo "deps: enabling the '${component}' component for Nsight Systems (${file})"
  printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: %s\nSigned-By: %s\n' \
    "$uris" "$suites" "$component" \
    "$( [ "$ID" = debian ] && echo /usr/share/keyrings/debian-archive-keyring.gpg \
                           || echo /usr/share/keyrings/ubuntu-archive-keyring.gpg)" \
    | as_root tee "$file" >/dev/null
}

if [ $((${#missing[@]} + ${#optional_missing[@]})) -gt 0 ]; then
  case " ${missing[*]} " in *" nsight-systems"*|*" nvidia-cuda-dev "*) enable_nsight_component ;; esac
  as_root apt-get update -q
  for p in "${optional_missing[@]}"; do
    candidate=$(apt-cache policy "$p" 2>/dev/null | sed -n 's/^ *Candidate: //p')
    if [ -n "$candidate" ] && [ "$candidate" != "(none)" ]; then
      missing+=("$p")
    else
      echo "deps: no package '$p' here: the library will be built without the kernel probe" >&2
    fi
  done
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Debian's nsight-systems misses this path: without it `nsys profile` leaves a
# .qdstrm and no report (docs/ARCHITECTURE.md, "The tools").
importer_real=/usr/lib/nsight-systems/host-linux-x64
importer_link=/usr/lib/x86_64-linux-gnu/nsight-systems/host-linux-x64
if [ -d "$importer_real" ] && [ ! -e "$importer_link" ]; then
  echo "deps: linking $importer_link -> $importer_real (nsys importer path)"
  as_root mkdir -p "$(dirname "$importer_link")"
  as_root ln -s "$importer_real" "$importer_link"
fi

[ ${#missing[@]} -gt 0 ] || echo "deps: all present"

# The Python environment with PyPI's perfetto schema that test/pftrace_check.py needs: on a
# failure the other tests still run, and test/test_trace_pftrace.py fails quoting the reason.
"$(dirname "$0")/pyenv.sh" || echo "deps: no build/pyenv: test/test_trace_pftrace.py will fail" >&2
