#!/usr/bin/env bash
# Builds what test/gpu/check.py runs on a GPU machine into one folder (default
# .gpukit), on a machine with this project's build dependencies (make deps) and
# nvcc; the GPU machine then needs only its driver, python3 with PyTorch, and
# this folder. Programs that link libraries a GPU machine may lack (the
# harness: libusb, Xlib) get them beside them in KIT/lib.
set -euo pipefail
cd "$(dirname "$0")/../.."
kit=${1:-.gpukit}
cuda=${CUDA_HOME:-/usr/local/cuda}
nvcc=$cuda/bin/nvcc
arch="-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"
make -s all build/harness_physical build/test/libemuv4l2.so
rm -rf "$kit"; mkdir -p "$kit/lib"
cp build/libnvtxshim.so build/nvtxshim build/harness_physical build/test/libemuv4l2.so "$kit/"
for library in $(ldd build/harness_physical | awk '/=> \// && !/libc\.so|libpthread|libdl|libm\.so/ {print $3}'); do
  cp -L "$library" "$kit/lib/"
done
# The driver API programs, linked against the toolkit's libcuda stub (the
# driver's soname, so the real libcuda.so.1 is the one they load).
for program in test/cuda/cuda_copies.c test/cuda/cuda_waits.c test/gpu/gpu_context.c test/gpu/gpu_cost.c; do
  cc -O2 -Wall -isystem "$cuda/include" "$program" -o "$kit/$(basename "$program" .c)" \
     -L"$cuda/lib64/stubs" -lcuda -ldl
done
"$nvcc" -fatbin $arch test/gpu/waits_kernels.cu -o "$kit/waits_kernels.fatbin"
"$nvcc" -O2 $arch test/gpu/gpu_calls.cu -o "$kit/gpu_calls_static"
"$nvcc" -O2 $arch --default-stream per-thread test/gpu/gpu_calls.cu -o "$kit/gpu_calls_static_ptds"
"$nvcc" -O2 $arch -cudart shared -Xlinker -rpath,'$ORIGIN/lib' test/gpu/gpu_calls.cu -o "$kit/gpu_calls_shared"
cp -L "$cuda"/lib64/libcudart.so.1[0-9] "$kit/lib/"
du -sh "$kit"
