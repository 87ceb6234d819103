/* nvtxshim diff's comparison, worked out once for the text, the page and the
 * document alike: each side's frames pooled (all its runs' frames, each
 * frame counted once), each group's noise (how far its runs' own figures lie
 * apart), and B against A with intervals from a hierarchical bootstrap.
 *
 * Why a bootstrap, and why this one: the verdict is about the median and the
 * p99 frame, and a rank test (Mann-Whitney U) answers another question (is
 * one group's frame larger than the other's more often than not) and has no
 * interval for a p99. Frames are not independent draws either: frames of one
 * run share its machine's state (load, clock, cache), so runs of the same
 * code differ by more than their frames' spread says. The bootstrap resamples
 * the way the data was made: the runs first (a side's runs drawn with
 * replacement, as many as it has), then each drawn run's frames (as many as
 * it has, with replacement); the statistic of the pooled draw, B's against
 * A's, over many draws, gives the interval (the 2.5th and 97.5th percentiles,
 * by nearest rank). Where runs differ among themselves the interval widens by
 * that much. The generator's seed is fixed, so the same inputs give the same
 * figures every time. */
#define _GNU_SOURCE
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "model/diff.h"

/* Resamples: RESAMPLES, or where the runs hold more frames than that many
 * resamples of them draw in RESAMPLE_DRAWS, fewer, RESAMPLES_LEAST at least. */
#define RESAMPLES 2000
#define RESAMPLES_LEAST 200
#define RESAMPLE_DRAWS 100000000.0
#define SEED 20260423u

const char *const nvs_diff_statistic_names[NVS_DIFF_STATISTICS] = { "median", "p99" };

bool nvs_diff_column_shown(const struct nvs_diff *diff, int c)
{
    return c == NVS_COLUMN_TOTAL || diff->side[0].shown[c];
}

const char *nvs_diff_judgement_word(enum nvs_diff_judgement judgement)
{
    switch (judgement) {
    case NVS_DIFF_SLOWER: return "slower";
    case NVS_DIFF_FASTER: return "faster";
    case NVS_DIFF_WITHIN_NOISE: return "within noise";
    default: return "unjudged";
    }
}

const char *nvs_diff_verdict_word(const struct nvs_diff *diff)
{
    bool slower = false, faster = false;
    for (int s = 0; s < NVS_DIFF_STATISTICS; s++) {
        if (diff->judgement[s] == NVS_DIFF_UNJUDGED)
            return "unjudged";
        slower |= diff->judgement[s] == NVS_DIFF_SLOWER;
        faster |= diff->judgement[s] == NVS_DIFF_FASTER;
    }
    return slower && faster ? "mixed" : slower ? "slower" : faster ? "faster" : "within noise";
}

static double percent(double from, double to)
{
    return from > 0 ? (to - from) / from * 100.0 : 0.0;
}

/* The rank (from 1) of the PERCENT-th percentile of COUNT values by nearest
 * rank, as figures_builder.c takes it: ceil(PERCENT / 100 * COUNT), in integers. */
static size_t nearest_rank(size_t count, unsigned percent)
{
    size_t rank = (percent * count + 99) / 100;
    return rank ? rank : 1;
}

static int compare_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- each side: pooled, and its noise ---------------------------------------------- */

static bool counts_in(const struct nvs_diff_frame *frame, int c)
{
    return c != NVS_COLUMN_LATENCY || frame->has_latency;
}

/* SIDE's statistics over all its runs' frames; VALUES has room for them all. */
static void pool(struct nvs_diff_side *side, const bool shown[NVS_COLUMNS], int64_t *values)
{
    for (int c = 0; c < NVS_COLUMNS; c++) {
        double *out = side->stats[c];
        memset(out, 0, sizeof side->stats[c]);
        if (!shown[c] && c != NVS_COLUMN_TOTAL)
            continue;
        size_t n = 0;
        int64_t sum = 0;
        for (size_t r = 0; r < side->run_count; r++)
            for (size_t f = 0; f < side->runs[r].frame_count; f++)
                if (counts_in(&side->runs[r].frames[f], c)) {
                    values[n++] = side->runs[r].frames[f].value[c];
                    sum += side->runs[r].frames[f].value[c];
                }
        if (!n)
            continue;
        qsort(values, n, sizeof *values, compare_int64);
        out[NVS_STAT_MEAN] = (double)sum / (double)n;
        out[NVS_STAT_P50] = (double)values[nearest_rank(n, 50) - 1];
        out[NVS_STAT_P99] = (double)values[nearest_rank(n, 99) - 1];
        out[NVS_STAT_MAX] = (double)values[n - 1];
    }
}

static struct nvs_diff_spread spread_of(double least, double greatest, double pooled)
{
    return (struct nvs_diff_spread){ least, greatest, percent(pooled, pooled + greatest - least) };
}

/* How far SIDE's runs lie apart: their own median and p99 frames, and each
 * column's mean. */
static void noise(struct nvs_diff_side *side)
{
    static const int stat_of[NVS_DIFF_STATISTICS] = { NVS_STAT_P50, NVS_STAT_P99 };
    for (int s = 0; s < NVS_DIFF_STATISTICS; s++) {
        double least = INFINITY, greatest = -INFINITY;
        for (size_t r = 0; r < side->run_count; r++) {
            least = fmin(least, side->runs[r].stats[NVS_COLUMN_TOTAL][stat_of[s]]);
            greatest = fmax(greatest, side->runs[r].stats[NVS_COLUMN_TOTAL][stat_of[s]]);
        }
        side->spread[s] = spread_of(least, greatest, side->stats[NVS_COLUMN_TOTAL][stat_of[s]]);
    }
    for (int c = 0; c < NVS_COLUMNS; c++) {
        double least = INFINITY, greatest = -INFINITY;
        for (size_t r = 0; r < side->run_count; r++) {
            const struct nvs_diff_run *run = &side->runs[r];
            double mean = run->shown[c] || c == NVS_COLUMN_TOTAL ? run->stats[c][NVS_STAT_MEAN] : 0;
            least = fmin(least, mean);
            greatest = fmax(greatest, mean);
        }
        side->column_spread[c] = spread_of(least, greatest, side->stats[c][NVS_STAT_MEAN]);
    }
}

/* ---- the bootstrap ---------------------------------------------------------------- */

/* xoshiro256** (Blackman and Vigna), seeded by splitmix64: fast, and the same
 * sequence on every machine. */
struct generator {
    uint64_t state[4];
};

static uint64_t rotate(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static void seed_generator(struct generator *generator, uint64_t seed)
{
    for (int i = 0; i < 4; i++) {
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        generator->state[i] = z ^ (z >> 31);
    }
}

static uint64_t next(struct generator *generator)
{
    uint64_t *s = generator->state;
    uint64_t result = rotate(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotate(s[3], 45);
    return result;
}

/* A whole number below COUNT (Lemire's multiply and shift; its bias, under
 * COUNT / 2^64, is nothing here). */
static size_t below(struct generator *generator, size_t count)
{
    return (size_t)(((unsigned __int128)next(generator) * count) >> 64);
}

static void swap(int64_t *values, ptrdiff_t i, ptrdiff_t j)
{
    int64_t value = values[i];
    values[i] = values[j];
    values[j] = value;
}

/* The RANK-th smallest (from 1) of VALUES[0..COUNT), which is reordered so
 * that what lies before it is no larger and what lies after no smaller:
 * Hoare's selection, the pivot the median of the first, middle and last. */
static int64_t select_rank(int64_t *values, size_t count, size_t rank)
{
    ptrdiff_t low = 0, high = (ptrdiff_t)count - 1, k = (ptrdiff_t)rank - 1;
    while (low < high) {
        ptrdiff_t middle = low + (high - low) / 2;
        if (values[middle] < values[low])
            swap(values, middle, low);
        if (values[high] < values[low])
            swap(values, high, low);
        if (values[high] < values[middle])
            swap(values, high, middle);
        int64_t pivot = values[middle];
        ptrdiff_t i = low - 1, j = high + 1;
        for (;;) {
            do
                i++;
            while (values[i] < pivot);
            do
                j--;
            while (values[j] > pivot);
            if (i >= j)
                break;
            swap(values, i, j);
        }
        /* VALUES[low..j] are no larger than the pivot, the rest no smaller */
        if (k <= j)
            high = j;
        else
            low = j + 1;
    }
    return values[k];
}

/* The columns whose mean the bootstrap follows: the frame's own and the parts
 * and the kernel probe's, where shown. */
static size_t followed_columns(const struct nvs_diff *diff, int columns[NVS_COLUMNS])
{
    size_t count = 0;
    for (int c = 0; c < NVS_COLUMNS; c++)
        if (c != NVS_COLUMN_LATENCY && nvs_diff_column_shown(diff, c))
            columns[count++] = c;
    return count;
}

/* One resample of SIDE: its runs drawn with replacement, then each drawn run's
 * frames; into STATS its median and p99 frame, into MEANS the COLUMNS' means.
 * A run's frames are drawn as counts (TAKEN, room for the largest run), then
 * read in order: the same draw as picking frames one by one, without a cache
 * miss for every frame of a long run. */
static void resample(const struct nvs_diff_side *side, struct generator *generator, int64_t *buffer,
                     uint32_t *taken, const int *columns, size_t column_count,
                     double stats[NVS_DIFF_STATISTICS], double means[NVS_COLUMNS])
{
    size_t n = 0;
    int64_t sums[NVS_COLUMNS] = { 0 };
    for (size_t r = 0; r < side->run_count; r++) {
        const struct nvs_diff_run *run = &side->runs[below(generator, side->run_count)];
        memset(taken, 0, run->frame_count * sizeof *taken);
        for (size_t f = 0; f < run->frame_count; f++)
            taken[below(generator, run->frame_count)]++;
        for (size_t f = 0; f < run->frame_count; f++) {
            if (!taken[f])
                continue;
            const struct nvs_diff_frame *frame = &run->frames[f];
            for (uint32_t k = 0; k < taken[f]; k++)
                buffer[n++] = frame->value[NVS_COLUMN_TOTAL];
            for (size_t k = 0; k < column_count; k++)
                sums[columns[k]] += (int64_t)taken[f] * frame->value[columns[k]];
        }
    }
    size_t median_rank = nearest_rank(n, 50), p99_rank = nearest_rank(n, 99);
    stats[NVS_DIFF_MEDIAN] = (double)select_rank(buffer, n, median_rank);
    /* what lies past the median is no smaller: the p99 is among it */
    stats[NVS_DIFF_P99] = (double)select_rank(buffer + median_rank - 1, n - median_rank + 1,
                                              p99_rank - median_rank + 1);
    for (size_t k = 0; k < column_count; k++)
        means[columns[k]] = (double)sums[columns[k]] / (double)n;
}

/* The interval of the COUNT estimates in VALUES (sorted here): the 2.5th and
 * the 97.5th percentiles, by nearest rank. */
static void interval_of(double *values, size_t count, struct nvs_diff_interval *out)
{
    qsort(values, count, sizeof *values, compare_double);
    unsigned tail = (100 - NVS_DIFF_CONFIDENCE) * 10 / 2; /* per mille: 25 */
    size_t low = (tail * count + 999) / 1000, high = ((1000 - tail) * count + 999) / 1000;
    out->low = values[(low ? low : 1) - 1];
    out->high = values[(high ? high : 1) - 1];
}

static size_t largest_run(const struct nvs_diff_side *side)
{
    size_t largest = 0;
    for (size_t r = 0; r < side->run_count; r++)
        if (side->runs[r].frame_count > largest)
            largest = side->runs[r].frame_count;
    return largest;
}

static int bootstrap(struct nvs_diff *diff)
{
    int columns[NVS_COLUMNS];
    size_t column_count = followed_columns(diff, columns);
    double frames = (double)(diff->side[0].frame_count + diff->side[1].frame_count);
    size_t resamples = RESAMPLES;
    if (frames * RESAMPLES > RESAMPLE_DRAWS)
        resamples = (size_t)fmax(RESAMPLES_LEAST, RESAMPLE_DRAWS / frames);
    diff->resamples = resamples;
    diff->seed = SEED;
    size_t room = 0;
    for (int side = 0; side < 2; side++) {
        size_t most = diff->side[side].run_count * largest_run(&diff->side[side]);
        room = most > room ? most : room;
    }
    size_t largest = largest_run(&diff->side[0]) > largest_run(&diff->side[1])
        ? largest_run(&diff->side[0])
        : largest_run(&diff->side[1]);
    int64_t *buffer = malloc(room * sizeof *buffer);
    uint32_t *taken = malloc(largest * sizeof *taken);
    double *estimates = malloc((NVS_DIFF_STATISTICS + column_count) * resamples *
                               sizeof *estimates);
    if (!buffer || !taken || !estimates) {
        free(buffer);
        free(taken);
        free(estimates);
        return -1;
    }
    struct generator generator;
    seed_generator(&generator, diff->seed);
    for (size_t i = 0; i < resamples; i++) {
        double stats[2][NVS_DIFF_STATISTICS], means[2][NVS_COLUMNS];
        for (int side = 0; side < 2; side++)
            resample(&diff->side[side], &generator, buffer, taken, columns, column_count,
                     stats[side], means[side]);
        for (int s = 0; s < NVS_DIFF_STATISTICS; s++)
            estimates[s * resamples + i] = percent(stats[0][s], stats[1][s]);
        for (size_t k = 0; k < column_count; k++)
            estimates[(NVS_DIFF_STATISTICS + k) * resamples + i] = means[1][columns[k]] -
                means[0][columns[k]];
    }
    for (int s = 0; s < NVS_DIFF_STATISTICS; s++)
        interval_of(estimates + s * resamples, resamples, &diff->change[s]);
    for (size_t k = 0; k < column_count; k++)
        interval_of(estimates + (NVS_DIFF_STATISTICS + k) * resamples, resamples,
                    &diff->column_change[columns[k]]);
    free(buffer);
    free(taken);
    free(estimates);
    return 0;
}

/* ---- the verdict ------------------------------------------------------------------ */

/* B against A: each change's estimate (the pooled figures'), its judgement
 * against A's noise, and the columns that moved the frame. */
static void judge(struct nvs_diff *diff)
{
    const struct nvs_diff_side *a = &diff->side[0], *b = &diff->side[1];
    static const int stat_of[NVS_DIFF_STATISTICS] = { NVS_STAT_P50, NVS_STAT_P99 };
    for (int s = 0; s < NVS_DIFF_STATISTICS; s++) {
        struct nvs_diff_interval *change = &diff->change[s];
        change->estimate = percent(a->stats[NVS_COLUMN_TOTAL][stat_of[s]],
                                   b->stats[NVS_COLUMN_TOTAL][stat_of[s]]);
        double noise = a->spread[s].percent;
        diff->judgement[s] = a->run_count < 2 ? NVS_DIFF_UNJUDGED
            : change->low > noise             ? NVS_DIFF_SLOWER
            : change->high < -noise           ? NVS_DIFF_FASTER
                                              : NVS_DIFF_WITHIN_NOISE;
        diff->regression[s] = diff->gate[s] >= 0 && change->low > diff->gate[s];
    }
    for (int c = 0; c < NVS_COLUMNS; c++) {
        if (c == NVS_COLUMN_LATENCY || !nvs_diff_column_shown(diff, c))
            continue;
        struct nvs_diff_interval *change = &diff->column_change[c];
        change->estimate = b->stats[c][NVS_STAT_MEAN] - a->stats[c][NVS_STAT_MEAN];
        /* A's noise in the column: its runs' means apart (none with one run) */
        double noise = a->column_spread[c].greatest - a->column_spread[c].least;
        diff->column_beyond[c] = change->low > noise || change->high < -noise;
    }
    /* Named: the parts (and the kernel's) beyond the noise, each a tenth of
     * the frame's own change or more (and a microsecond), the largest first. */
    double least = fmax(0.001 * NVS_DIFF_NS_PER_MS,
                        fabs(diff->column_change[NVS_COLUMN_TOTAL].estimate) / 10);
    diff->named_count = 0;
    for (int c = NVS_FIRST_PART; c < NVS_COLUMNS; c++) {
        if (c == NVS_COLUMN_LATENCY || !nvs_diff_column_shown(diff, c) || !diff->column_beyond[c])
            continue;
        double moved = fabs(diff->column_change[c].estimate);
        if (moved < least)
            continue;
        size_t at = diff->named_count;
        if (at == NVS_DIFF_NAMED_COLUMNS) {
            if (moved <= fabs(diff->column_change[diff->named[at - 1]].estimate))
                continue;
            at--;
        } else {
            diff->named_count++;
        }
        for (; at > 0 && fabs(diff->column_change[diff->named[at - 1]].estimate) < moved; at--)
            diff->named[at] = diff->named[at - 1];
        diff->named[at] = c;
    }
}

/* ---- names ------------------------------------------------------------------------ */

struct name_entry {
    const struct nvs_diff_name *row;
    int side;
};

static int by_key(const void *left, const void *right)
{
    const struct name_entry *x = left, *y = right;
    int order = strcmp(x->row->domain, y->row->domain);
    return order ? order : strcmp(x->row->name, y->row->name);
}

static int by_change(const void *left, const void *right)
{
    const struct nvs_diff_name_change *x = left, *y = right;
    double dx = fabs(x->per_frame[1] - x->per_frame[0]),
           dy = fabs(y->per_frame[1] - y->per_frame[0]);
    if (dx != dy)
        return dx < dy ? 1 : -1;
    int order = strcmp(x->domain, y->domain);
    return order ? order : strcmp(x->name, y->name);
}

/* Each name of any run: per side its count and mean over all its runs, the
 * median of its runs' p99s (a p99 of all the ranges would need them all), and
 * its time per frame (count x mean over the side's frames); by the time per
 * frame it moved. */
static int name_changes(struct nvs_diff *diff)
{
    size_t total = 0;
    for (int side = 0; side < 2; side++)
        for (size_t r = 0; r < diff->side[side].run_count; r++)
            total += diff->side[side].runs[r].name_count;
    struct name_entry *entries = malloc((total + 1) * sizeof *entries);
    double *p99s = malloc((total + 1) * sizeof *p99s);
    diff->names = calloc(total + 1, sizeof *diff->names);
    if (!entries || !p99s || !diff->names) {
        free(entries);
        free(p99s);
        return -1;
    }
    size_t n = 0;
    for (int side = 0; side < 2; side++)
        for (size_t r = 0; r < diff->side[side].run_count; r++)
            for (size_t k = 0; k < diff->side[side].runs[r].name_count; k++)
                entries[n++] = (struct name_entry){ &diff->side[side].runs[r].names[k], side };
    qsort(entries, n, sizeof *entries, by_key);
    size_t count = 0;
    for (size_t i = 0; i < n;) {
        size_t end = i;
        while (end < n && by_key(&entries[i], &entries[end]) == 0)
            end++;
        struct nvs_diff_name_change *change = &diff->names[count++];
        change->domain = entries[i].row->domain;
        change->name = entries[i].row->name;
        for (int side = 0; side < 2; side++) {
            double time = 0;
            size_t runs = 0;
            for (size_t k = i; k < end; k++) {
                if (entries[k].side != side)
                    continue;
                change->count[side] += entries[k].row->count;
                time += (double)entries[k].row->count * entries[k].row->mean;
                p99s[runs++] = entries[k].row->p99;
                change->estimated[side] |= entries[k].row->estimated;
            }
            if (!runs)
                continue;
            change->in[side] = true;
            change->mean[side] = change->count[side] ? time / (double)change->count[side] : 0;
            qsort(p99s, runs, sizeof *p99s, compare_double);
            change->p99[side] = p99s[nearest_rank(runs, 50) - 1];
            change->per_frame[side] = time / (double)diff->side[side].frame_count;
        }
        i = end;
    }
    qsort(diff->names, count, sizeof *diff->names, by_change);
    diff->name_count = count;
    free(entries);
    free(p99s);
    return 0;
}

/* ---- the whole -------------------------------------------------------------------- */

int nvs_diff_compute(struct nvs_diff *diff)
{
    bool shown[NVS_COLUMNS] = { false };
    size_t most = 0;
    for (int side = 0; side < 2; side++) {
        struct nvs_diff_side *group = &diff->side[side];
        group->frame_count = 0;
        for (size_t r = 0; r < group->run_count; r++) {
            group->frame_count += group->runs[r].frame_count;
            for (int c = 0; c < NVS_COLUMNS; c++)
                shown[c] |= group->runs[r].shown[c];
        }
        most = group->frame_count > most ? group->frame_count : most;
    }
    shown[NVS_COLUMN_TOTAL] = true;
    /* a part no frame of any run spent time in (an X11 connection made at start,
     * a loop without copies) would be a row of zeros */
    for (int c = NVS_FIRST_PART; c <= NVS_LAST_PART; c++) {
        bool time = false;
        for (int side = 0; side < 2 && shown[c] && !time; side++)
            for (size_t r = 0; r < diff->side[side].run_count && !time; r++)
                for (size_t f = 0; f < diff->side[side].runs[r].frame_count && !time; f++)
                    time = diff->side[side].runs[r].frames[f].value[c] != 0;
        shown[c] = time;
    }
    int64_t *values = malloc((most + 1) * sizeof *values);
    if (!values)
        return -1;
    for (int side = 0; side < 2; side++) {
        memcpy(diff->side[side].shown, shown, sizeof shown);
        pool(&diff->side[side], shown, values);
        noise(&diff->side[side]);
    }
    free(values);
    if (bootstrap(diff) != 0 || name_changes(diff) != 0)
        return -1;
    judge(diff);
    return 0;
}

static void free_run(struct nvs_diff_run *run)
{
    free(run->path);
    free(run->process);
    free(run->frames);
    for (size_t k = 0; k < run->name_count; k++) {
        free(run->names[k].domain);
        free(run->names[k].name);
    }
    free(run->names);
}

void nvs_diff_free(struct nvs_diff *diff)
{
    for (int side = 0; side < 2; side++) {
        struct nvs_diff_side *group = &diff->side[side];
        for (size_t r = 0; r < group->run_count; r++)
            free_run(&group->runs[r]);
        free(group->runs);
        for (size_t d = 0; d < group->directory_count; d++) {
            free(group->directories[d].path);
            for (size_t k = 0; k < group->directories[d].left_out_count; k++)
                free(group->directories[d].left_out[k]);
            free(group->directories[d].left_out);
        }
        free(group->directories);
    }
    free(diff->names);
}
