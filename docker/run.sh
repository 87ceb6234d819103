#!/usr/bin/env bash
# docker/run.sh: run the libnvtxshim image (docker/Dockerfile) with what profiling a
# physical rig needs: the GPU, the X display (local or ssh -X forwarded), USB devices
# (hot-plug included), MIT-SHM, and the rights Nsight Systems' CPU sampling and the
# kernel probe need. The current directory is mounted at /work and is the working
# directory, so reports land next to you. The engine is docker or podman (podman-docker's
# `docker` is podman too); --engine picks one.
#
# Usage: docker/run.sh [OPTIONS] [--] [COMMAND [ARG...]]
#
#   docker/run.sh                  the image's command: make -C /opt/libnvtxshim demo
#   docker/run.sh -- bash          a shell in /work
#   docker/run.sh -- nsys profile -t nvtx,osrt,cuda -o /work/rig \
#       sh -c 'LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$LIBNVTXSHIM" exec ./my_loop'
#
# Every option is explained where it is applied below, with what still works without
# it; docker/README.md has the same as a table. `docker/run.sh --help` lists them.
set -euo pipefail

prog=docker/run.sh

usage() {
  cat <<'EOF'
Usage: docker/run.sh [OPTIONS] [--] [COMMAND [ARG...]]

Runs the libnvtxshim image with the GPU, the X display, USB devices, MIT-SHM and the
rights nsys needs; $PWD is mounted at /work and is the working directory. Without a
COMMAND the image's own runs: make -C /opt/libnvtxshim demo.

Options:
  --image NAME        image to run (default: $LIBNVTXSHIM_IMAGE, else nvtxshim)
  --engine CMD        the container engine: docker, podman, or a path to either
                      (default: $LIBNVTXSHIM_ENGINE, else docker when it is on PATH,
                      else podman)
  --no-gpu            no --gpus all (hosts without an NVIDIA GPU or container toolkit;
                      also automatic when /dev/nvidiactl is missing)
  --no-x11            no display: DISPLAY, the X socket and the cookie stay outside
  --host-network      share the host's network (automatic for DISPLAY=localhost:N,
                      the ssh -X case)
  --no-usb            do not expose /dev/bus/usb
  --no-ipc-host       keep a private IPC namespace (X11 then falls back from MIT-SHM
                      to XPutImage)
  --perf MODE         rights for nsys CPU sampling and context switches:
                        full     SYS_ADMIN + PERFMON + seccomp=unconfined (default;
                                 works with any Docker and kernel >= 4.x)
                        perfmon  PERFMON only (Docker >= 23.0 and kernel >= 5.8)
                        none     nothing added (NVTX, OS runtime and CUDA traces
                                 still work; CPU samples and context switches do not)
  --bpf               BPF + PERFMON for the kernel probe (automatic when
                      NVTXSHIM_KERNEL=on is set here)
  --tmpfs-tmp         /tmp as an exec-able tmpfs in memory (default: the container's
                      own /tmp, on its writable layer, which is exec-able too)
  --docker-opt ARG    one more argument for the engine's run (repeatable), e.g.
                      --docker-opt=--shm-size=2g
  -n, --dry-run       print the engine's command instead of running it
  -q, --quiet         no notes on stderr
  -h, --help          this text

Every NVTXSHIM_* variable set here is passed into the container.
EOF
}

note() { [ "$quiet" = 1 ] || echo "$prog: $*" >&2; }
die() { echo "$prog: $*" >&2; echo "$prog: see $prog --help" >&2; exit 2; }

image=${LIBNVTXSHIM_IMAGE:-nvtxshim}
engine=${LIBNVTXSHIM_ENGINE:-}
gpu=1 x11=1 usb=1 ipc_host=1 host_network=0 perf=full bpf=0 tmpfs_tmp=0
dry_run=0 quiet=0
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --image) [ $# -ge 2 ] || die "--image needs a name"; image=$2; shift ;;
    --image=*) image=${1#*=} ;;
    --engine) [ $# -ge 2 ] || die "--engine needs docker, podman or a path"; engine=$2; shift ;;
    --engine=*) engine=${1#*=} ;;
    --no-gpu) gpu=0 ;;
    --no-x11) x11=0 ;;
    --host-network) host_network=1 ;;
    --no-usb) usb=0 ;;
    --no-ipc-host) ipc_host=0 ;;
    --perf) [ $# -ge 2 ] || die "--perf needs full, perfmon or none"; perf=$2; shift ;;
    --perf=*) perf=${1#*=} ;;
    --bpf) bpf=1 ;;
    --tmpfs-tmp) tmpfs_tmp=1 ;;
    --docker-opt) [ $# -ge 2 ] || die "--docker-opt needs an argument"; extra+=("$2"); shift ;;
    --docker-opt=*) extra+=("${1#*=}") ;;
    -n|--dry-run) dry_run=1 ;;
    -q|--quiet) quiet=1 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    -*) die "unknown option '$1'" ;;
    *) break ;;  # the command starts here
  esac
  shift
done
case $perf in full|perfmon|none) ;; *) die "--perf: '$perf' is not full, perfmon or none" ;; esac
[ -n "$image" ] || die "--image: empty name"

# ---- the engine ------------------------------------------------------------------------
# docker or podman take the same run options here, except the GPU (below). podman-docker's
# `docker` is a script that runs podman: what the engine is comes from its --version.
if [ -z "$engine" ]; then
  if command -v docker >/dev/null 2>&1; then engine=docker
  elif command -v podman >/dev/null 2>&1; then engine=podman
  else die "neither docker nor podman is on PATH (--engine names one)"
  fi
fi
command -v "$engine" >/dev/null 2>&1 || die "--engine: '$engine' is not a command"
engine_kind=docker
if "$engine" --version 2>/dev/null | grep -qi podman; then engine_kind=podman; fi

args=(run --rm --init -i)
# A terminal only when there is one: scripts and CI pipe in and out.
if [ -t 0 ] && [ -t 1 ]; then args+=(-t); fi
# --init: a small init as PID 1 forwards Ctrl-C to the program and reaps orphans
# (nsys starts an agent process of its own). Without it the command itself is PID 1.

# ---- the working directory -----------------------------------------------------------
# Reports (nsys -o, NVTXSHIM_TRACE) written under /work land in the host's current
# directory. They belong to root there (the container runs as root; see README).
# The image's own checkout stays usable from here: make -C /opt/libnvtxshim demo.
args+=(-v "$PWD:/work" -w /work)

# ---- temporary files -----------------------------------------------------------------
# nsys unpacks helper programs into TMPDIR and runs them, so TMPDIR must not be on a
# noexec filesystem. In the container TMPDIR is /tmp on the container's writable
# layer, which allows exec; a host TMPDIR is never passed in. --tmpfs-tmp puts /tmp in
# memory instead, with exec set explicitly (Docker's --tmpfs default is noexec, which
# would break nsys); mounts below /tmp (the X socket) are placed on top of it.
args+=(-e TMPDIR=/tmp)
if [ "$tmpfs_tmp" = 1 ]; then args+=(--tmpfs '/tmp:rw,exec,nosuid,nodev,mode=1777'); fi

# ---- the GPU ---------------------------------------------------------------------------
# --gpus all: the NVIDIA Container Toolkit mounts the host driver (libcuda, nvidia-smi)
# and the /dev/nvidia* nodes. podman takes the GPUs as a CDI device instead,
# --device nvidia.com/gpu=all, described by the toolkit's `nvidia-ctk cdi generate
# --output=/etc/cdi/nvidia.yaml` (NVIDIA's instructions for podman); without that file
# podman refuses the device, so run.sh then runs without the GPU and says so. Needed for CUDA programs and nsys --trace=cuda. Without
# it everything else works: the USB and X11 ranges, frames, the trace file, and
# `make demo` (it then uses the test suite's stand-in driver).
# NVIDIA_DRIVER_CAPABILITIES: the image asks for compute,utility; graphics adds the
# driver's GLX/EGL libraries so GL programs can render on the GPU of a local NVIDIA X
# server. Set it here to override.
if [ "$gpu" = 1 ] && [ ! -e /dev/nvidiactl ]; then
  note "no /dev/nvidiactl on this host: running without --gpus (say --no-gpu to silence this)"
  gpu=0
fi
if [ "$gpu" = 1 ] && [ "$engine_kind" = podman ] && \
   ! grep -qs 'nvidia.com/gpu' /etc/cdi/*.yaml /etc/cdi/*.json /var/run/cdi/*.yaml /var/run/cdi/*.json; then
  note "podman: no CDI spec names nvidia.com/gpu (sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml): running without the GPU (say --no-gpu to silence this)"
  gpu=0
fi
if [ "$gpu" = 1 ] && [ "$engine_kind" = podman ]; then
  args+=(--device nvidia.com/gpu=all -e "NVIDIA_DRIVER_CAPABILITIES=${NVIDIA_DRIVER_CAPABILITIES:-compute,utility,graphics}")
elif [ "$gpu" = 1 ]; then
  args+=(--gpus all -e "NVIDIA_DRIVER_CAPABILITIES=${NVIDIA_DRIVER_CAPABILITIES:-compute,utility,graphics}")
fi

# ---- the X display ---------------------------------------------------------------------
# DISPLAY plus the X socket directory (read-only is enough to connect) reach a local
# X server. The cookie: a copy of this display's entry with its host part replaced by
# the wildcard family (xauth's "ffff"), because Xlib picks a local display's cookie
# by hostname and the container's hostname differs from the host's. The copy lives in a
# private temporary file, mounted read-only as XAUTHORITY, removed when the run ends.
# Without the display a program still runs if it does not need one (--use_gui=0).
xauth_copy=
cleanup() { if [ -n "$xauth_copy" ]; then rm -f "$xauth_copy"; fi; }
trap cleanup EXIT
if [ "$x11" = 1 ] && [ -n "${DISPLAY:-}" ]; then
  display_host=${DISPLAY%:*}
  case $display_host in
    ""|unix)
      # A local socket: /tmp/.X11-unix/X<N>. A server that listens only on the
      # abstract socket @/tmp/.X11-unix/X<N> (no file) is reachable only from the
      # host's network namespace, which holds the abstract socket names.
      display_number=${DISPLAY##*:}
      display_number=${display_number%%.*}
      if [ ! -S "/tmp/.X11-unix/X$display_number" ] && [ "$host_network" = 0 ]; then
        note "no socket file /tmp/.X11-unix/X$display_number for DISPLAY=$DISPLAY: using --network host (abstract socket)"
        host_network=1
      fi ;;
    localhost|127.*|::1|ip6-localhost|'[::1]')
      # ssh -X forwards the display as a TCP port on the host's loopback
      # (localhost:10.0 is port 6010). The container's own loopback is a different
      # one: only the host's network namespace reaches that port.
      if [ "$host_network" = 0 ]; then
        note "DISPLAY=$DISPLAY is a TCP port on this host's loopback (ssh -X): using --network host"
        host_network=1
      fi ;;
    *) ;;  # another machine: reachable through Docker's default network
  esac
  args+=(-e DISPLAY)
  if [ -d /tmp/.X11-unix ]; then args+=(-v /tmp/.X11-unix:/tmp/.X11-unix:ro); fi
  if command -v xauth >/dev/null 2>&1; then
    xauth_copy=$(mktemp "${XDG_RUNTIME_DIR:-/tmp}/nvtxshim-xauth.XXXXXX")
    xauth nlist "$DISPLAY" 2>/dev/null | sed -e 's/^..../ffff/' \
      | xauth -q -f "$xauth_copy" nmerge - 2>/dev/null || true
  fi
  if [ -n "$xauth_copy" ] && [ -s "$xauth_copy" ]; then
    args+=(-v "$xauth_copy:/run/nvtxshim.xauth:ro" -e XAUTHORITY=/run/nvtxshim.xauth)
  elif [ -f "${XAUTHORITY:-$HOME/.Xauthority}" ]; then
    # No xauth here (or no entry for this display): the cookie file as it is, and the
    # host's hostname so that its hostname/unix:N entries match.
    args+=(-v "${XAUTHORITY:-$HOME/.Xauthority}:/run/nvtxshim.xauth:ro" -e XAUTHORITY=/run/nvtxshim.xauth)
    if [ "$host_network" = 0 ]; then args+=(--hostname "$(hostname)"); fi
  else
    note "no X cookie found for $DISPLAY: the X server must accept the container without one"
  fi
elif [ "$x11" = 1 ]; then
  note "DISPLAY is not set: no X display in the container"
fi

# --network host: the host's network namespace. Needed for ssh -X displays (above);
# libusb's hotplug notifications come from the host's udev over netlink, which a
# container also sees only in the host's network namespace (not tested here).
# Without it the container has its own network; local displays and USB still work.
if [ "$host_network" = 1 ]; then args+=(--network host); fi

# --ipc=host: the host's System V IPC namespace. MIT-SHM hands the X server a shared
# memory segment id, which the server can attach only in the same IPC namespace.
# Without it the server still offers MIT-SHM but cannot attach the container's
# segment, and programs that check (the harness does) fall back from XShmPutImage to
# XPutImage through the socket: the program still draws and the library's ranges still
# show, as XPutImage ranges carrying the image bytes; only the copies cost more.
# /dev/shm stays the container's own, a tmpfs (as large as the kernel allows, half the
# memory: not Docker's 64 MB, which PyTorch's DataLoader workers can exhaust). The host's
# /dev/shm, which --ipc=host would bring in, holds nsys 2022.4's session registry
# (NSys-2022.4.2.1, keyed by process ids): an nsys in the container, whose process ids
# are another namespace's, failed there in 3 of 8 runs while nsys ran on the host too
# ("Agent launcher failed", "FATAL ERROR ... Session.cpp"), and in none of 10 with its own.
# MIT-SHM's segments are System V shared memory, not files in /dev/shm.
if [ "$ipc_host" = 1 ]; then args+=(--ipc=host --tmpfs /dev/shm:rw,nosuid,nodev,noexec); fi

# ---- USB devices -----------------------------------------------------------------------
# A bind mount of /dev/bus/usb (the host's live device directory) plus a cgroup rule
# allowing USB device nodes (character major 189), instead of --device /dev/bus/usb:
# --device copies the nodes that exist when the container starts, so a camera that
# re-enumerates (unplug/replug, a USB reset, a firmware reload) comes back with a new
# /dev/bus/usb/BBB/DDD the container never sees. With the mount the new node appears
# and the rule lets the container open it. Read-only is enough to open device nodes
# and keeps the container from creating or deleting them on the host.
# Without it: the emulated camera (build/emucam, umockdev) still works; real devices
# are not reachable.
if [ "$usb" = 1 ]; then
  if [ -d /dev/bus/usb ]; then
    args+=(-v /dev/bus/usb:/dev/bus/usb:ro --device-cgroup-rule='c 189:* rmw')
  else
    note "no /dev/bus/usb on this host: no USB devices in the container"
  fi
fi

# ---- profiling rights ------------------------------------------------------------------
# nsys samples CPUs and records context switches with perf_event_open. Docker's default
# seccomp profile allows it only with CAP_PERFMON (Docker 23.0 and later) or
# CAP_SYS_ADMIN, and the capability must be present. "full" adds both and lifts the
# seccomp filter, which works with older Docker and kernels without CAP_PERFMON
# (< 5.8); "perfmon" is the narrow set for current ones. Without them NVTX, OS-runtime
# and CUDA tracing all still work: only --sample=cpu and --cpuctxsw lose their data.
# The host's kernel.perf_event_paranoid is read here: NVIDIA documents <= 2 for CPU
# sampling and <= 1 for kernel samples. Root with PERFMON or SYS_ADMIN is exempt from
# it in the kernel's own checks, but not in rootless Docker or a user namespace, and
# `nsys status -e` in the container reports the level either way.
case $perf in
  full) args+=(--cap-add SYS_ADMIN --cap-add PERFMON --security-opt seccomp=unconfined) ;;
  perfmon) args+=(--cap-add PERFMON) ;;
  none) ;;
esac
if [ "$perf" != none ] && [ -r /proc/sys/kernel/perf_event_paranoid ]; then
  paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
  if [ "$paranoid" -gt 2 ] 2>/dev/null; then
    note "host kernel.perf_event_paranoid = $paranoid (> 2): nsys CPU sampling may be refused;"
    note "  to allow it until reboot: sudo sysctl -w kernel.perf_event_paranoid=2 (1 for kernel samples)"
  else
    note "host kernel.perf_event_paranoid = $paranoid"
  fi
fi

# The kernel probe (NVTXSHIM_KERNEL=on) loads BPF programs: CAP_BPF + CAP_PERFMON
# (kernel >= 5.8; Docker >= 23.0 lets bpf() through its seccomp profile with CAP_BPF,
# older Docker needs --perf full). memlock: kernels before 5.11 charge BPF maps to
# RLIMIT_MEMLOCK. Without them only the probe's `kernel` domain is missing. (The probe
# itself is a later issue: this build validates NVTXSHIM_KERNEL and says it does not
# act on it yet.)
if [ "${NVTXSHIM_KERNEL:-}" = on ]; then bpf=1; fi
if [ "$bpf" = 1 ]; then args+=(--cap-add BPF --cap-add PERFMON --ulimit memlock=-1:-1); fi

# ---- the library's configuration -------------------------------------------------------
# Every NVTXSHIM_* variable set here goes in with its value (-e NAME takes it from this
# environment).
while IFS= read -r name; do
  args+=(-e "$name")
done < <(compgen -e | grep '^NVTXSHIM_' || true)

# ${a[@]+...}: an empty array is "unbound" to set -u in bash before 4.4.
args+=(${extra[@]+"${extra[@]}"} "$image" "$@")

if [ "$dry_run" = 1 ]; then
  printf '%q ' "$engine" "${args[@]}"
  echo
  if [ -n "$xauth_copy" ]; then note "(dry run: the cookie copy $xauth_copy is removed on exit)"; fi
  exit 0
fi
"$engine" "${args[@]}"
