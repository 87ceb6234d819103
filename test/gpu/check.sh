#!/usr/bin/env bash
# The CUDA checks that need a real GPU, which the stand-in driver and runtime
# (test/cuda) cannot stand in for. On a machine with this project's build
# dependencies, build the kit once:
#   bash test/gpu/kit.sh            (.gpukit: the library, the programs, their libraries)
# then on the GPU machine, from the repository root (the kit beside it):
#   bash test/gpu/check.sh          (writes OUT/gpu-check.txt and OUT/traces.tar.gz when OUT is set)
# It needs the driver, python3 with PyTorch, and nothing else. What it checks:
# test/gpu/check.py. docs/gpu-verification.md records a run.
set -uo pipefail
cd "$(dirname "$0")/../.."
kit=${GPU_KIT:-.gpukit}
out=${OUT:-build/gpu}
mkdir -p "$out"
[ -f "$kit/libnvtxshim.so" ] || bash test/gpu/kit.sh "$kit" || exit 1
PYTHONUNBUFFERED=1 python3 test/gpu/check.py "$kit" "$out" 2>&1 | tee "$out/gpu-check.txt"
status=${PIPESTATUS[0]}
tar -C "$kit" -czf "$out/traces.tar.gz" traces
exit "$status"
