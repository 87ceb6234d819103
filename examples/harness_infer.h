/* The harness's inference, as plain C: the reference the CPU path runs and the
 * GPU kernels (harness_kernels.cu) match bit for bit. Integer arithmetic only,
 * so every path picks the same action.
 *
 *   convolve:    c[y][x] = sum of (r+g+b) over the 3x3 neighbourhood of (x, y),
 *                borders clamped (edge pixels repeat);
 *   cell argmax: the frame split into a 4x4 grid of cells (W/4 x H/4 pixels;
 *                pixels beyond 4 whole cells are ignored), the action is the
 *                cell with the largest sum of c, ties to the lowest index. */
#ifndef HARNESS_INFER_H
#define HARNESS_INFER_H

#include <stdint.h>

#define HARNESS_GRID 4
#define HARNESS_CELLS (HARNESS_GRID * HARNESS_GRID)

static inline int harness_clamp(int value, int limit)
{
    return value < 0 ? 0 : value >= limit ? limit - 1 : value;
}

static inline void harness_convolve(const uint8_t *rgb, uint32_t *out, int width, int height)
{
    for (int y = 0; y < height; y++) {
        for (int x = 0; x < width; x++) {
            uint32_t sum = 0;
            for (int dy = -1; dy <= 1; dy++) {
                for (int dx = -1; dx <= 1; dx++) {
                    const uint8_t *p = rgb +
                        ((size_t)harness_clamp(y + dy, height) * width +
                         (size_t)harness_clamp(x + dx, width)) *
                            3;
                    sum += (uint32_t)p[0] + p[1] + p[2];
                }
            }
            out[(size_t)y * width + x] = sum;
        }
    }
}

static inline int harness_cell_argmax(const uint32_t *convolved, int width, int height)
{
    uint64_t sums[HARNESS_CELLS] = { 0 };
    int cell_w = width / HARNESS_GRID, cell_h = height / HARNESS_GRID;
    for (int y = 0; y < cell_h * HARNESS_GRID; y++)
        for (int x = 0; x < cell_w * HARNESS_GRID; x++)
            sums[(y / cell_h) * HARNESS_GRID + x / cell_w] += convolved[(size_t)y * width + x];
    int best = 0;
    for (int i = 1; i < HARNESS_CELLS; i++)
        if (sums[i] > sums[best])
            best = i;
    return best;
}

#endif
