/* Which of a process's columns the report shows: the text summary, the JSON
 * document and the page alike. figures_builder.c marks the columns the data has
 * (shown); of the parts a frame is made of (usb to rest), those no frame spent
 * time in are left out as well: a domain with calls, none of them inside a
 * frame (an X11 connection made at start), or a loop that makes no such
 * calls, would be a column of zeros. The page's put_process_section applies
 * the same rule (report_html.c, has_data). */
#ifndef NVS_CLI_REPORT_COLUMNS_H
#define NVS_CLI_REPORT_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>

#include "model/figures.h"

/* OUT[c]: whether PROCESS's column c is shown. */
static inline void nvs_report_columns_shown(const struct nvs_report_process *process,
                                            bool out[NVS_COLUMNS])
{
    for (int c = 0; c < NVS_COLUMNS; c++) {
        out[c] = process->shown[c];
        if (!out[c] || c < NVS_FIRST_PART || c > NVS_LAST_PART)
            continue;
        out[c] = false;
        for (size_t f = 0; f < process->count && !out[c]; f++)
            out[c] = process->frames[f].value[c] != 0;
    }
}

#endif
