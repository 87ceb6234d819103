/* A thread's whole events laid out on the trace file's pages (trace_writer.c):
 * no event crosses a 4 KiB page of the file, so a write the kernel cuts short
 * (a SIGKILL, a full disk) ends between two whole events. Pure: no I/O, no
 * state; the writer holds the file lock and writes the pieces with pwritev. */
#ifndef NVS_RECORDER_PAGES_H
#define NVS_RECORDER_PAGES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "trace.h"

#define NVS_FILE_PAGE 4096u
#define NVS_WRITE_PIECES 32u

_Static_assert(NVS_TRACE_EVENT_MAX < NVS_FILE_PAGE, "an event fits in a page of the file");

/* The pieces of one write: runs of whole events, each within what is left of a
 * page of the file, and blanks up to a page's end before an event that would
 * cross it. data_at: each piece's offset in the buffer (-1 for blanks), to tell
 * after a short write which events reached the file. */
struct nvs_pages {
    struct iovec pieces[NVS_WRITE_PIECES];
    int64_t data_at[NVS_WRITE_PIECES];
    size_t lengths[NVS_WRITE_PIECES];
    size_t count;
    uint64_t bytes; /* all pieces together */
};

/* The events [FIRST, EVENTS) of DATA, which end at ENDS[] (rising), from byte
 * START to USED, laid out to be written at FILE_END; blanks come from PADDING
 * (the encoder's pad_from, at least two pages of it). */
/* Inline: the writer's every flush makes it, and in line it keeps the pieces in
 * registers (out of line, a flush cost about 50 instructions more). */
static inline void nvs_pages_lay_out(struct nvs_pages *out, const char *data, const uint16_t *ends,
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

/* After a write of PAGES that reached only WRITTEN bytes: how many of the
 * events [FIRST, EVENTS) (ending at ENDS[]) reached the file whole; *KEPT, the
 * bytes up to the last of them, where the file must end. */
uint32_t nvs_pages_whole_events(const struct nvs_pages *pages, const uint16_t *ends, uint32_t first,
                                uint32_t events, uint64_t written, uint64_t *kept);

#endif
