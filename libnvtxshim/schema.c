/* The kernel mark's text, written by the library (kernel.c) and read back by
 * `nvtxshim report` from nsys exports, where a mark keeps only its text. The
 * writer and the reader sit side by side so that they cannot drift apart. */
#include "schema.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *plural(uint64_t count)
{
    return count == 1 ? "" : "s";
}

int nvs_kernel_mark_format(char *out, size_t size, uint64_t frame,
                           const struct nvs_kernel_figures *figures)
{
    const uint64_t *v = figures->value;
    char migrations[48] = "", urbs[72] = "";
    if (v[NVS_FIGURE_MIGRATIONS])
        snprintf(migrations, sizeof migrations, ", %" PRIu64 " migration%s",
                 v[NVS_FIGURE_MIGRATIONS], plural(v[NVS_FIGURE_MIGRATIONS]));
    if (v[NVS_FIGURE_URBS])
        snprintf(urbs, sizeof urbs, ", %" PRIu64 " URB%s %.1f ms in the kernel", v[NVS_FIGURE_URBS],
                 plural(v[NVS_FIGURE_URBS]), (double)v[NVS_FIGURE_URB_NS] / 1e6);
    return snprintf(out, size,
                    "frame %" PRIu64 ": runnable %.1f ms (%" PRIu64
                    " preemption%s), blocked %.1f ms, "
                    "%" PRIu64 " fault%s%s%s",
                    frame, (double)v[NVS_FIGURE_RUNNABLE_NS] / 1e6, v[NVS_FIGURE_PREEMPTIONS],
                    plural(v[NVS_FIGURE_PREEMPTIONS]), (double)v[NVS_FIGURE_BLOCKED_NS] / 1e6,
                    v[NVS_FIGURE_FAULTS], plural(v[NVS_FIGURE_FAULTS]), migrations, urbs);
}

/* ---- reading it back ------------------------------------------------------------- */

static bool literal(const char **at, const char *text)
{
    size_t length = strlen(text);
    if (strncmp(*at, text, length))
        return false;
    *at += length;
    return true;
}

static bool count(const char **at, uint64_t *value)
{
    const char *p = *at;
    uint64_t n = 0;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (n > (UINT64_MAX - 9) / 10)
            return false;
        n = n * 10 + (uint64_t)(*p - '0');
    }
    *at = p;
    *value = n;
    return true;
}

/* "12.3 ms" as nanoseconds. */
static bool milliseconds(const char **at, uint64_t *ns)
{
    uint64_t whole, fraction = 0, scale = 1;
    if (!count(at, &whole) || whole > UINT64_MAX / 1000000u)
        return false;
    if (**at == '.') {
        (*at)++;
        for (; **at >= '0' && **at <= '9'; (*at)++)
            if (scale < 1000000u) {
                fraction = fraction * 10 + (uint64_t)(**at - '0');
                scale *= 10;
            }
    }
    *ns = whole * 1000000u + fraction * (1000000u / scale);
    return literal(at, " ms");
}

/* "N noun" or "N nouns". */
static bool counted(const char **at, const char *noun, uint64_t *value)
{
    if (!count(at, value) || !literal(at, " ") || !literal(at, noun))
        return false;
    literal(at, "s");
    return true;
}

bool nvs_kernel_mark_parse(const char *text, uint64_t *frame, struct nvs_kernel_figures *figures)
{
    uint64_t *v = figures->value;
    const char *at = text;
    memset(figures, 0, sizeof *figures);
    if (!literal(&at, "frame ") || !count(&at, frame) || !literal(&at, ": runnable ") ||
        !milliseconds(&at, &v[NVS_FIGURE_RUNNABLE_NS]) || !literal(&at, " (") ||
        !counted(&at, "preemption", &v[NVS_FIGURE_PREEMPTIONS]) || !literal(&at, "), blocked ") ||
        !milliseconds(&at, &v[NVS_FIGURE_BLOCKED_NS]) || !literal(&at, ", ") ||
        !counted(&at, "fault", &v[NVS_FIGURE_FAULTS]))
        return false;
    figures->present = 1u << NVS_FIGURE_RUNNABLE_NS | 1u << NVS_FIGURE_BLOCKED_NS |
        1u << NVS_FIGURE_PREEMPTIONS | 1u << NVS_FIGURE_FAULTS | 1u << NVS_FIGURE_MIGRATIONS |
        1u << NVS_FIGURE_URBS;
    const char *before = at;
    if (!literal(&at, ", ") || !counted(&at, "migration", &v[NVS_FIGURE_MIGRATIONS]))
        at = before;
    before = at;
    if (literal(&at, ", ") && counted(&at, "URB", &v[NVS_FIGURE_URBS]) && literal(&at, " ") &&
        milliseconds(&at, &v[NVS_FIGURE_URB_NS]))
        figures->present |= 1u << NVS_FIGURE_URB_NS;
    else
        v[NVS_FIGURE_URBS] = 0, at = before;
    return true;
}
