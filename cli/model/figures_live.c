/* top's live view of the figures builder (figures_builder.h): each process's
 * frames so far, the last few and the slowest with its longest calls, without
 * working out a whole report. */
#include "model/figures_builder.h"

#include <stdlib.h>
#include <string.h>

/* Row K of PROC as a report shows it: measured when its frame is open, the
 * rest made, copies and launches together in cuda unless LAUNCHES show. */
static struct nvs_report_frame view_row(struct nvs_figures_builder *builder,
                                        const struct proc *proc, size_t k, bool launches)
{
    struct nvs_report_frame row = proc->rows[k];
    if (proc->open[k] != NOT_OPEN)
        nvs_figures_measure_open(nvs_figures_open_frame(builder, proc->open[k]), &row);
    row.value[NVS_COLUMN_REST] = row.value[NVS_COLUMN_TOTAL] - row.value[NVS_COLUMN_REST];
    if (!launches)
        row.value[NVS_COLUMN_CUDA] = row.value[NVS_COLUMN_LATENCY];
    row.value[NVS_COLUMN_LATENCY] = 0;
    return row;
}

/* The K-th smallest of VALUES (COUNT > K), which are reordered: Hoare's selection. */
static int64_t select_kth(int64_t *values, size_t count, size_t k)
{
    size_t low = 0, high = count - 1;
    while (low < high) {
        int64_t pivot = values[low + (high - low) / 2];
        size_t i = low, j = high;
        while (i <= j) {
            while (values[i] < pivot)
                i++;
            while (values[j] > pivot)
                j--;
            if (i <= j) {
                int64_t swap = values[i];
                values[i] = values[j];
                values[j] = swap;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            high = j;
        else if (k >= i)
            low = i;
        else
            return values[k];
    }
    return values[k];
}

int nvs_figures_live(struct nvs_figures_builder *builder, size_t last, struct nvs_live_loop *loop)
{
    memset(loop, 0, sizeof *loop);
    if (builder->failed)
        return -1;
    struct proc *proc = NULL;
    for (size_t p = 0; p < builder->proc_count; p++)
        if (builder->procs[p].count && (!proc || builder->procs[p].count > proc->count))
            proc = &builder->procs[p];
    if (!proc)
        return 0;
    size_t n = proc->count;
    loop->pid = proc->pid;
    loop->name = nvs_figures_process_name(builder->events, proc->pid);
    loop->count = n;
    loop->estimated = proc->estimated;
    loop->budget_ns = builder->budget_ns ? builder->budget_ns : proc->budget_ns;
    /* launches show when a closed frame's do, or an open one's of those shown */
    size_t from = last < n ? n - last : 0;
    bool launches = proc->launches;
    for (size_t k = from; k < n && !launches; k++)
        launches = view_row(builder, proc, k, true).value[NVS_COLUMN_LAUNCH] >= LAUNCH_SHOWN_NS;
    int64_t *totals = malloc(n * sizeof *totals);
    if (!totals)
        return -1;
    size_t slowest = 0;
    int64_t sum = 0;
    for (size_t k = 0; k < n; k++) {
        totals[k] = proc->rows[k].value[NVS_COLUMN_TOTAL];
        sum += totals[k];
        if (totals[k] > totals[slowest])
            slowest = k;
        loop->over_budget += loop->budget_ns > 0 && totals[k] > loop->budget_ns;
    }
    loop->max = (double)totals[slowest];
    loop->p99 = (double)select_kth(totals, n, (99 * n + 99) / 100 - 1);
    loop->p50 = (double)select_kth(totals, n, (50 * n + 99) / 100 - 1);
    free(totals);
    (void)sum;
    loop->last_count = n - from;
    loop->first_number = proc->rows[from].number;
    loop->last_number = proc->rows[n - 1].number;
    bool spent[NVS_COLUMNS];
    memcpy(spent, proc->spent, sizeof spent);
    for (size_t k = from; k < n; k++) {
        struct nvs_report_frame row = view_row(builder, proc, k, launches);
        for (int c = 0; c < NVS_COLUMNS; c++) {
            loop->last_mean[c] += (double)row.value[c] / (double)(n - from);
            spent[c] |= row.value[c] != 0;
        }
    }
    loop->slowest = view_row(builder, proc, slowest, launches);
    for (int c = 0; c < NVS_COLUMNS; c++)
        spent[c] |= loop->slowest.value[c] != 0;
    if (proc->open[slowest] != NOT_OPEN)
        loop->call_count = nvs_figures_longest_calls(
            nvs_figures_open_frame(builder, proc->open[slowest]), loop->calls);
    else if (proc->slowest_start == proc->rows[slowest].start) {
        loop->call_count = proc->slowest_call_count;
        memcpy(loop->calls, proc->slowest_calls, sizeof loop->calls);
    }
    for (int c = NVS_COLUMN_TOTAL; c <= NVS_COLUMN_REST; c++)
        loop->shown[c] = nvs_column_rules[c].rule == RULE_DEVICE ? proc->device[c] : true;
    loop->shown[NVS_COLUMN_LAUNCH] = launches;
    /* a part no frame spent time in is left out, as the report leaves it out (of the frames
     * still open, those the view shows are looked at) */
    for (int c = NVS_FIRST_PART; c <= NVS_LAST_PART; c++)
        loop->shown[c] = loop->shown[c] && spent[c];
    return 1;
}
