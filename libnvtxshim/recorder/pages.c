/* A thread's whole events laid out on the trace file's pages (see pages.h). */
#include "pages.h"

void nvs_pages_lay_out(struct nvs_pages *out, const char *data, const uint16_t *ends,
                       uint32_t start, uint32_t used, uint32_t first, uint32_t events,
                       uint64_t file_end, const struct nvs_trace_encoder *encoder,
                       const char *padding)
{
    size_t count = 0;
    uint64_t at = 0;
    uint32_t event = first;
    while (start < used) {
        uint32_t room = NVS_FILE_PAGE - (uint32_t)((file_end + at) % NVS_FILE_PAGE);
        uint32_t piece_first = event;
        if (used - start > room) {
            /* The last event that ends within ROOM: ends[] rises, so bisect. */
            uint32_t low = event, high = events;
            while (low < high) {
                uint32_t middle = (low + high) / 2;
                if (ends[middle] - start <= room)
                    low = middle + 1;
                else
                    high = middle;
            }
            event = low;
        } else {
            event = events;
        }
        uint32_t end = event > piece_first ? ends[event - 1] : start;
        /* A gap too short for the encoder's padding (a page's last byte, before
         * an event or at the end) is never left: the piece's last event moves on
         * to the next page, and the gap with it. */
        uint32_t gap = room - (end - start);
        if (gap > 0 && gap < encoder->pad_min && event > piece_first) {
            event--;
            end = event > piece_first ? ends[event - 1] : start;
        }
        if (end > start) {
            out->data_at[count] = start;
            out->lengths[count] = end - start;
            out->pieces[count++] = (struct iovec){ (char *)data + start, end - start };
            at += end - start;
            room -= end - start;
            start = end;
        }
        if (start < used && room > 0) {
            if (room < encoder->pad_min)
                room += NVS_FILE_PAGE;
            size_t from = encoder->pad_from ? encoder->pad_from(room) : 0;
            out->data_at[count] = -1;
            out->lengths[count] = room;
            out->pieces[count++] = (struct iovec){ (char *)padding + from, room };
            at += room;
        }
    }
    out->count = count;
    out->bytes = at;
}

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
