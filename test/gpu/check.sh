#!/usr/bin/env bash
# The CUDA checks that need a real GPU, which the stand-in driver (test/cuda) cannot
# stand in for: run on a machine with one, from
# the repository root, e.g. through the device tool:
#   bash test/gpu/check.sh        (writes $OUT/gpu-check.txt when OUT is set)
# (a) the driver-API program, (b) a runtime-API program built with nvcc's
# default static runtime, (c) PyTorch copies, pageable and pinned, blocking and
# non_blocking — each with the shim and NVTXSHIM_TRACE, then the cuda ranges.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-build/gpu}; mkdir -p "$out" build/gpu
report="$out/gpu-check.txt"
exec > >(tee "$report") 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
nvcc --version | tail -1
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda} make -s build/libnvtxshim.so || exit 1
shim=$PWD/build/libnvtxshim.so
summarise() {
  python3 - "$1" <<'PY'
import collections, sys
sys.path.insert(0, "test")
import traceformat  # the trace file's rules: the bare array, cut short or whole; b/e pairs joined
events, _ = traceformat.join_async(traceformat.read_trace(sys.argv[1]))
for (name, payload), n in sorted(collections.Counter(
        (e["name"], e.get("args", {}).get("payload")) for e in events
        if e.get("ph") == "X" and e.get("cat") == "cuda").items()):
    print("   %4d  %-45s payload=%s" % (n, name, payload))
PY
}
run() {
  local label=$1; shift
  echo "== $label: $*"
  rm -f build/gpu/$label.json
  NVTXSHIM_TRACE=$PWD/build/gpu/$label.json LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$shim" "$@"
  echo "   exit $?"
  [ -f build/gpu/$label.json ] && summarise build/gpu/$label.json
}
cc -O2 -I"${CUDA_HOME:-/usr/local/cuda}/include" test/cuda/cuda_copies.c -o build/gpu/driver_copies -lcuda -ldl
for mode in linked getproc getproc-ptds loader; do run "driver-$mode" build/gpu/driver_copies $mode; done
nvcc -O2 test/gpu/gpu_copies.cu -o build/gpu/runtime_static
run runtime-static build/gpu/runtime_static
run pytorch python3 -c '
import torch
x = torch.randn(1 << 18)
for pinned in (False, True):
    for blocking in (True, False):
        src = x.pin_memory() if pinned else x
        y = src.to("cuda", non_blocking=not blocking)
        z = y.to("cpu", non_blocking=not blocking)
        torch.cuda.synchronize()
print("pytorch: 4 round trips of", x.numel() * 4, "bytes")'
