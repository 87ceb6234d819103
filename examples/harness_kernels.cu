// The harness's inference on the GPU: the same integer computation as
// harness_infer.h, so GPU and CPU pick the same action. Built by nvcc into a
// fat binary that harness_physical embeds and loads with cuModuleLoadData.
#define GRID 4
#define CELLS (GRID * GRID)
#define LANES 16  // threads per cell in harness_cell_argmax

__device__ static int clamp_to(int value, int limit)
{
    return value < 0 ? 0 : value >= limit ? limit - 1 : value;
}

// One thread per pixel: 3x3 sum of r+g+b with clamped borders.
extern "C" __global__ void harness_convolve(const unsigned char *rgb, unsigned *out, int width,
                                            int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height)
        return;
    unsigned sum = 0;
    for (int dy = -1; dy <= 1; dy++) {
        for (int dx = -1; dx <= 1; dx++) {
            const unsigned char *p =
                rgb + ((size_t)clamp_to(y + dy, height) * width + clamp_to(x + dx, width)) * 3;
            sum += p[0] + p[1] + p[2];
        }
    }
    out[(size_t)y * width + x] = sum;
}

// One block of CELLS * LANES threads: LANES threads sum each cell's rows, then
// thread 0 picks the largest cell (ties to the lowest index).
extern "C" __global__ void harness_cell_argmax(const unsigned *convolved, int *action, int width,
                                               int height)
{
    __shared__ unsigned long long partial[CELLS * LANES];
    int cell = threadIdx.x / LANES, lane = threadIdx.x % LANES;
    int cell_w = width / GRID, cell_h = height / GRID;
    int x0 = (cell % GRID) * cell_w, y0 = (cell / GRID) * cell_h;
    unsigned long long sum = 0;
    for (int y = y0 + lane; y < y0 + cell_h; y += LANES)
        for (int x = x0; x < x0 + cell_w; x++)
            sum += convolved[(size_t)y * width + x];
    partial[threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    unsigned long long best_sum = 0;
    int best = 0;
    for (int c = 0; c < CELLS; c++) {
        unsigned long long total = 0;
        for (int l = 0; l < LANES; l++)
            total += partial[c * LANES + l];
        if (c == 0 || total > best_sum) {
            best_sum = total;
            best = c;
        }
    }
    *action = best;
}
