#!/usr/bin/env bash
# make test-container: docker/Dockerfile built for real and the image run as its users run it.
#
#   scripts/container.sh [build|test]     build: the engine, the base and the image;
#                                         test (the default): those, then the checks
#
# 1. The engine: docker when its daemon answers, else podman (installed with apt when
#    missing: podman, runc, catatonit for --init, podman-docker for a `docker` command).
#    podman runs with runc and cgroupfs through a containers.conf of its own
#    (CONTAINERS_CONF), as podman's default runtime (crun) refuses a cgroup v1 / hybrid
#    host ("cgroups in hybrid mode not supported"); with explicit ulimits too where a
#    container cannot start without them (runc: "error setting rlimits ... operation not
#    permitted": podman's defaults above this machine's hard limits).
# 2. The base, cached in the engine, made when missing: localhost/debian:bookworm, a Debian
#    12 root file system (debootstrap --variant=minbase from the Debian mirror apt uses)
#    imported into the engine; and on it, where this machine has a CUDA toolkit, that
#    toolkit's headers and nvcc (localhost/debian-cuda:bookworm-X.Y), as in an nvidia/cuda
#    devel image. NVS_CONTAINER_BASE names another base (pulled when not here).
# 3. The image: docker/Dockerfile (NVS_CONTAINER_DOCKERFILE) built from the checkout
#    with CUDA_IMAGE=the base, tagged NVS_CONTAINER_IMAGE (default nvtxshim-test).
#    The engine caches its layers: the packages are installed again only when
#    scripts/deps.sh changes.
# 4. The checks: test/container/container_checks.py, against the image and BUILD (the
#    same runs made outside, to compare).
#
# NVS_CONTAINER_ENGINE=docker|podman picks the engine. The build's output goes to
# BUILD/container/build.log, its steps to the terminal.
set -euo pipefail
cd "$(dirname "$0")/.."
prog=container
mode=${1:-test}
case $mode in build|test) ;; *) echo "$prog: unknown mode '$mode' (build or test)" >&2; exit 2 ;; esac
build=${BUILD:-build}
python=${PYTHON:-/usr/bin/python3}
image=${NVS_CONTAINER_IMAGE:-nvtxshim-test}
dockerfile=${NVS_CONTAINER_DOCKERFILE:-docker/Dockerfile}
work=$build/container
mkdir -p "$work"
work=$(cd "$work" && pwd)
started=$SECONDS

say() { echo "$prog: $*"; }
took() { say "$1 ($((SECONDS - $2)) s)"; }
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else echo "$prog: need root to run: $*" >&2; exit 1
  fi
}
apt_install() {
  say "installing: $* (log: $work/apt.log)"
  if ! { as_root apt-get update -q && DEBIAN_FRONTEND=noninteractive \
           as_root apt-get install -y -q --no-install-recommends "$@"; } >> "$work/apt.log" 2>&1; then
    tail -20 "$work/apt.log" >&2
    echo "$prog: apt-get could not install $*" >&2
    exit 1
  fi
}

# ---- 1. the engine ------------------------------------------------------------------------
# A docker command may be podman-docker's (its --version says podman) or a client without a
# daemon: docker only when `docker info` answers and it is not podman.
is_podman() { "$1" --version 2>/dev/null | grep -qi podman; }
engine=${NVS_CONTAINER_ENGINE:-}
if [ -z "$engine" ]; then
  if command -v docker >/dev/null 2>&1 && ! is_podman docker && docker info >/dev/null 2>&1; then
    engine=docker
  else
    engine=podman
  fi
fi
case $engine in
  docker) ;;
  podman)
    wanted=()
    command -v podman >/dev/null 2>&1 || wanted+=(podman)
    command -v runc >/dev/null 2>&1 || wanted+=(runc)
    [ -x /usr/libexec/podman/catatonit ] || [ -x /usr/bin/catatonit ] || wanted+=(catatonit)
    dpkg-query -W -f='${Status}' podman-docker 2>/dev/null | grep -q 'install ok installed' \
      || wanted+=(podman-docker)
    [ ${#wanted[@]} -eq 0 ] || apt_install "${wanted[@]}"
    # Read by podman and by podman-docker's docker, for build and run alike; the ulimits
    # are added below when a container cannot start without them.
    podman_conf() {
      printf '%s\n' '# Written by scripts/container.sh (make test-container): podman with runc and' \
        '# cgroupfs (docker/README.md, "podman"), and ulimits where the defaults are refused.' \
        '[containers]' "$1" '' '[engine]' 'runtime = "runc"' 'cgroup_manager = "cgroupfs"' \
        > "$work/containers.conf"
    }
    podman_conf ''
    export CONTAINERS_CONF=$work/containers.conf ;;
  *) echo "$prog: NVS_CONTAINER_ENGINE is '$engine': docker or podman" >&2; exit 2 ;;
esac
say "engine: $engine ($("$engine" --version | head -1))"

# ---- 2. the base ----------------------------------------------------------------------------
# Debian 12, and on it, when this machine builds against a CUDA toolkit (CUDA_HOME, else
# /usr/local/cuda: cuda.h and nvtx3/), that toolkit's headers, nvcc and its compilers at the
# same path, /usr/local/cuda linked to it: the layout of an nvidia/cuda devel image, which
# cannot be pulled everywhere. Debian's own CUDA headers (nvidia-cuda-dev, CUDA 11.8: what
# deps.sh installs on a base without them) are too old for the library (docker/README.md).
debian=localhost/debian:bookworm
make_debian() {
  local step=$SECONDS mirror root
  command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
  # The mirror this machine's apt takes Debian 12 from.
  mirror=$(apt-get indextargets --format '$(REPO_URI)' 'Codename: bookworm' 'Label: Debian' \
             'Component: main' 2>/dev/null | head -1)
  mirror=${mirror:-http://deb.debian.org/debian/}
  root=$work/rootfs
  as_root rm -rf "$root"
  say "base: debootstrap --variant=minbase bookworm from $mirror (log: $work/debootstrap.log)"
  if ! as_root debootstrap --variant=minbase bookworm "$root" "$mirror" > "$work/debootstrap.log" 2>&1; then
    tail -20 "$work/debootstrap.log" >&2
    echo "$prog: debootstrap failed (the whole log: $work/debootstrap.log)" >&2
    exit 1
  fi
  if ! as_root tar -C "$root" -c . | "$engine" import - "$debian" >> "$work/debootstrap.log" 2>&1; then
    tail -5 "$work/debootstrap.log" >&2
    echo "$prog: $engine import of $root failed" >&2
    exit 1
  fi
  as_root rm -rf "$root"
  took "base: $debian imported" "$step"
}
toolkit=$(readlink -f "${CUDA_HOME:-/usr/local/cuda}" 2>/dev/null || true)
cuda_version=
if [ -n "$toolkit" ] && [ -f "$toolkit/include/cuda.h" ] && [ -f "$toolkit/include/nvtx3/nvToolsExt.h" ]; then
  cuda_version=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$toolkit/include/cuda.h")
  cuda_version=$((cuda_version / 1000)).$((cuda_version % 1000 / 10))
fi
if [ -n "${NVS_CONTAINER_BASE:-}" ]; then
  base=$NVS_CONTAINER_BASE
elif [ -n "$cuda_version" ]; then
  base=localhost/debian-cuda:bookworm-$cuda_version
else
  base=$debian
fi
if "$engine" image inspect "$base" >/dev/null 2>&1; then
  say "base: $base (cached)"
elif [ "$base" = "$debian" ]; then
  make_debian
elif [ "$base" = "localhost/debian-cuda:bookworm-$cuda_version" ]; then
  "$engine" image inspect "$debian" >/dev/null 2>&1 || make_debian
  step=$SECONDS
  context=$work/cuda-base
  name=$(basename "$toolkit")
  rm -rf "$context"
  mkdir -p "$context/local/$name"
  # Not lib/: its libraries are the runtime's (the driver is the host's); nvcc needs none.
  for part in bin include nvvm targets; do
    [ ! -e "$toolkit/$part" ] || cp -a "$toolkit/$part" "$context/local/$name/"
  done
  ln -s "$name" "$context/local/cuda"
  printf '%s\n' "FROM $debian" 'COPY local /usr/local/' 'ENV PATH=/usr/local/cuda/bin:$PATH' \
    > "$context/Dockerfile"
  "$engine" build -q -t "$base" "$context" >/dev/null
  rm -rf "$context"
  took "base: $base (Debian 12, with $toolkit's headers and nvcc, /usr/local/cuda linked to it)" "$step"
else
  say "base: pulling $base"
  "$engine" pull "$base"
fi

# podman's default ulimits (nofile 1048576) may be above this machine's hard limits, and
# without CAP_SYS_RESOURCE runc cannot raise them ("error setting rlimits for ready process:
# ... operation not permitted"): then the hard nofile limit here, and 4096 processes (as
# high as nproc was seen to go where this was written).
if [ "$engine" = podman ] && ! podman run --rm "$base" true >/dev/null 2>"$work/probe.log"; then
  if grep -q 'setting rlimit' "$work/probe.log"; then
    nofile=$(ulimit -Hn) nproc=$(ulimit -Hu)
    [ "$nofile" != unlimited ] || nofile=1048576
    if [ "$nproc" = unlimited ] || [ "$nproc" -gt 4096 ]; then nproc=4096; fi
    podman_conf "default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]"
    say "podman: setrlimit refused, so ulimits nofile=$nofile nproc=$nproc ($CONTAINERS_CONF)"
  fi
  if ! podman run --rm "$base" true >/dev/null 2>"$work/probe.log"; then
    cat "$work/probe.log" >&2
    echo "$prog: podman cannot start a container of $base (with $CONTAINERS_CONF)" >&2
    exit 1
  fi
fi

# ---- 3. the image ---------------------------------------------------------------------------
step=$SECONDS
say "image: $engine build -f $dockerfile --build-arg CUDA_IMAGE=$base -t $image . (log: $work/build.log)"
set +e
"$engine" build -f "$dockerfile" --build-arg "CUDA_IMAGE=$base" -t "$image" . 2>&1 \
  | tee "$work/build.log" | grep --line-buffered -E '^(STEP [0-9]+/|Step [0-9]+/|#[0-9]+ \[|--> Using cache)'
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  tail -30 "$work/build.log" >&2
  echo "$prog: $engine build failed with status $status (the whole log: $work/build.log)" >&2
  exit 1
fi
took "image: $image built" "$step"
[ "$mode" = test ] || exit 0

# ---- 4. the checks --------------------------------------------------------------------------
step=$SECONDS
status=0
NVS_CONTAINER_ENGINE=$engine NVS_CONTAINER_IMAGE=$image NVS_TEST_BUILD=$build \
  "$python" -m pytest -q -rs -p no:cacheprovider test/container/container_checks.py || status=$?
took "checks ended with status $status" "$step"
say "make test-container took $((SECONDS - started)) s"
exit "$status"
