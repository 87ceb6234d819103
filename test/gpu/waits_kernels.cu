// The kernels test/cuda/cuda_waits.c launches, for a real GPU (CUDA_WAITS_IMAGE):
// each takes the one pointer the program passes (NULL) and does nothing with it.
extern "C" __global__ void nvs_stub_kernel_a(int *unused) { if (unused) *unused = 1; }
extern "C" __global__ void nvs_stub_kernel_b(int *unused) { if (unused) *unused = 2; }
extern "C" __global__ void nvs_stub_kernel_c(int *unused) { if (unused) *unused = 3; }
// Launched from a library (cuLibraryGetKernel) by its C++ name, _Z17nvs_stub_kernel_dPi.
__global__ void nvs_stub_kernel_d(int *unused) { if (unused) *unused = 4; }
