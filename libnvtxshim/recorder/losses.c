/* What the recorder did not record (see losses.h). */
#include "losses.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "../log.h"
#include "trace.h"

static _Atomic uint64_t lost[NVS_LOSS_KINDS];
static _Atomic int errors[NVS_LOSS_KINDS]; /* the errno of the last loss of each kind, 0: none */

void nvs_writer_count(enum nvs_writer_loss why, uint64_t events)
{
    if (events)
        atomic_fetch_add_explicit(&lost[why], events, memory_order_relaxed);
}

void nvs_writer_count_error(enum nvs_writer_loss why, uint64_t events, int error)
{
    atomic_store_explicit(&errors[why], error, memory_order_relaxed);
    nvs_writer_count(why, events);
}

void nvs_losses_say(const char *path)
{
    static const char *const why[NVS_LOSS_KINDS] = {
        [NVS_LOSS_WRITE_FAILED] = " because the file could not be written",
        [NVS_LOSS_TOO_DEEP] = " ranges nested deeper than " NVS_TRACE_STACK_DEPTH_TEXT
                              " on one thread",
        [NVS_LOSS_IN_HANDLER] =
            " made by signal handlers that interrupted an event on their thread",
        [NVS_LOSS_NO_MEMORY] = " for want of memory",
        [NVS_LOSS_MOVED] = " made for the file that stopped being this process's, which only that "
                           "file could read",
        [NVS_LOSS_OPEN_AT_END] = " push/pop ranges still open at the end that could not be ended "
                                 "there (another thread's, or under a write a signal handler "
                                 "interrupted)",
    };
    const char *pieces[6 + 3 * NVS_LOSS_KINDS];
    char numbers[NVS_LOSS_KINDS + 1][24];
    size_t count = 0;
    uint64_t total = 0;
    for (int kind = 0; kind < NVS_LOSS_KINDS; kind++)
        total += atomic_load(&lost[kind]);
    if (!total)
        return;
    pieces[count++] = "NVTXSHIM_TRACE=";
    pieces[count++] = path;
    pieces[count++] = ": events not recorded: ";
    bool first = true;
    for (int kind = 0; kind < NVS_LOSS_KINDS; kind++) {
        uint64_t kind_lost = atomic_load(&lost[kind]);
        if (!kind_lost)
            continue;
        if (!first)
            pieces[count++] = ", ";
        first = false;
        pieces[count++] = nvs_log_number(numbers[kind], kind_lost);
        pieces[count++] = why[kind];
        int error = atomic_load(&errors[kind]);
        if (error) {
            pieces[count++] = " (";
            pieces[count++] = nvs_log_error_text(error);
            pieces[count++] = ")";
        }
    }
    nvs_log_pieces(pieces, count);
}

void nvs_losses_forget(void)
{
    for (int kind = 0; kind < NVS_LOSS_KINDS; kind++) {
        atomic_store(&lost[kind], 0);
        atomic_store(&errors[kind], 0);
    }
}
