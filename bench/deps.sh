#!/usr/bin/env bash
# What `make bench` needs beyond scripts/deps.sh: the tracers it compares the
# shim with. apt, only when missing, idempotent; one line when all is there.
# A tracer the distribution lacks is not fatal: its row says "not installed".
# With a directory (make bench passes build/bench): the nCompass SDK, the converter
# `nvtxshim convert` is compared with, in a virtual environment there, from PyPI.
set -euo pipefail

packages=(ltrace uftrace bpftrace valgrind python3-venv)
NCOMPASS_VERSION=0.1.15

# ncompass DIR: `pip install ncompass` in DIR/ncompass, once. Not fatal either.
ncompass() {
  local venv=$1/ncompass
  if [ -x "$venv/bin/python3" ] && "$venv/bin/python3" -c "import ncompass" 2>/dev/null; then
    return 0
  fi
  echo "bench deps: installing ncompass $NCOMPASS_VERSION from PyPI in $venv"
  { /usr/bin/python3 -m venv "$venv" && "$venv/bin/python3" -m pip install -q "ncompass==$NCOMPASS_VERSION"; } \
    || { echo "bench deps: could not install ncompass: the convert comparison will say so" >&2; rm -rf "$venv"; }
}
trap '[ -n "${1:-}" ] && ncompass "$1"' EXIT

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "bench deps: all present"
  exit 0
fi

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else echo "bench deps: need root to run: $*" >&2; return 1
  fi
}

if ! command -v apt-get >/dev/null 2>&1; then
  echo "bench deps: no apt-get here; install ${missing[*]} yourself (their rows will say not installed)" >&2
  exit 0
fi
as_root apt-get update -q || { echo "bench deps: apt-get update failed; going on" >&2; exit 0; }
available=()
for p in "${missing[@]}"; do
  candidate=$(apt-cache policy "$p" 2>/dev/null | sed -n 's/^ *Candidate: //p')
  if [ -n "$candidate" ] && [ "$candidate" != "(none)" ]; then
    available+=("$p")
  else
    echo "bench deps: no package '$p' here: its row will say not installed" >&2
  fi
done
if [ ${#available[@]} -gt 0 ]; then
  echo "bench deps: installing: ${available[*]}"
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends "${available[@]}" \
    || echo "bench deps: apt-get install failed; the missing tools' rows will say not installed" >&2
fi
