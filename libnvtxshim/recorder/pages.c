/* A thread's whole events laid out on the trace file's pages (see pages.h). */
#include "pages.h"

uint32_t nvs_pages_whole_events(const struct nvs_pages *pages, const uint16_t *ends, uint32_t first,
                                uint32_t events, uint64_t written, uint64_t *kept)
{
    uint64_t file_at = 0;
    uint32_t whole = 0, e = first;
    *kept = 0;
    for (size_t piece = 0; piece < pages->count; piece++) {
        if (pages->data_at[piece] >= 0) {
            uint64_t data_start = (uint64_t)pages->data_at[piece];
            for (; e < events && ends[e] <= data_start + pages->lengths[piece]; e++) {
                uint64_t end_in_file = file_at + (ends[e] - data_start);
                if (end_in_file > written)
                    return whole;
                *kept = end_in_file;
                whole++;
            }
        }
        file_at += pages->lengths[piece];
    }
    return whole;
}
