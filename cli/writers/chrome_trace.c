/* A trace's events in the Chrome trace format (chrome_trace.h): each event's
 * JSON, the names quoted once, and the output file, gzipped through stdio so
 * that the writer is the same. */
#define _GNU_SOURCE
#include "writers/chrome_trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "util/json_text.h"

/* Each event on a line of its own that ends "},": the form NVTXSHIM_TRACE
 * writes (docs/user-guide.md: The trace file). */
static void begin_item(struct nvs_chrome_writer *writer)
{
    if (writer->items++)
        fputs(",\n", writer->out);
}

static void put_string(struct nvs_chrome_writer *writer, const char *text)
{
    size_t need = strlen(text) * 6 + 3;
    if (need > writer->quoted_size) {
        char *grown = realloc(writer->quoted, need);
        if (!grown) {
            writer->failed = true;
            return;
        }
        writer->quoted = grown;
        writer->quoted_size = need;
    }
    size_t length = nvs_json_quote(writer->quoted, writer->quoted_size, text);
    fwrite(writer->quoted, 1, length, writer->out);
}

static uint64_t hash_name(const char *text, size_t length)
{
    uint64_t hash = 14695981039346656037ull;
    for (size_t i = 0; i < length; i++)
        hash = (hash ^ (unsigned char)text[i]) * 1099511628211ull;
    return hash;
}

/* put_string of a name, quoted once: kept as the text, a NUL, then its JSON. */
static void put_interned(struct nvs_chrome_writer *writer, const char *text)
{
    if (!writer->names) {
        put_string(writer, text);
        return;
    }
    size_t length = strlen(text);
    uint64_t hash = hash_name(text, length);
    struct map_slot *slot;
    for (slot = nvs_map_find(&writer->by_text, hash, length); slot;
         slot = nvs_map_next(&writer->by_text, slot)) {
        const struct quoted_name *name = &writer->names[slot->value];
        if (memcmp(name->json, text, length + 1) == 0) {
            fwrite(name->json + length + 1, 1, name->length, writer->out);
            return;
        }
    }
    size_t need = length + 1 + length * 6 + 3;
    char *json = writer->name_count < QUOTED_NAMES ? malloc(need) : NULL;
    if (!json || !(slot = nvs_map_add(&writer->by_text, hash, length))) {
        free(json);
        put_string(writer, text);
        return;
    }
    memcpy(json, text, length + 1);
    struct quoted_name *name = &writer->names[writer->name_count];
    *name = (struct quoted_name){ json,
                                  nvs_json_quote(json + length + 1, need - length - 1, text) };
    slot->value = writer->name_count++;
    fwrite(json + length + 1, 1, name->length, writer->out);
}

/* Nanoseconds as microseconds with three decimals, exactly. */
static void put_microseconds(struct nvs_chrome_writer *writer, int64_t nanoseconds)
{
    uint64_t magnitude = nanoseconds < 0 ? (uint64_t)0 - (uint64_t)nanoseconds
                                         : (uint64_t)nanoseconds;
    fprintf(writer->out, "%s%" PRIu64 ".%03" PRIu64, nanoseconds < 0 ? "-" : "", magnitude / 1000,
            magnitude % 1000);
}

void nvs_chrome_put_metadata(struct nvs_chrome_writer *writer, const char *what, uint32_t pid,
                             uint32_t tid, const char *name)
{
    begin_item(writer);
    fprintf(writer->out,
            "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
            ",\"args\":{\"name\":",
            what, pid, tid);
    put_string(writer, name);
    fputs("}}", writer->out);
}

/* {"name":...,"cat":...,PHASE,"ts":TIME: how every event starts. */
static void put_head(struct nvs_chrome_writer *writer, const struct nvs_event *event,
                     const char *phase, int64_t time)
{
    begin_item(writer);
    fputs("{\"name\":", writer->out);
    put_interned(writer, event->name);
    fputs(",\"cat\":", writer->out);
    put_interned(writer, event->domain);
    fprintf(writer->out, ",%s,\"ts\":", phase);
    put_microseconds(writer, time);
}

/* ,"pid":P,"tid":T and the args, when ARGS, then the closing brace. */
static void put_tail(struct nvs_chrome_writer *writer, uint32_t pid, uint32_t tid, const char *args)
{
    fprintf(writer->out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, pid, tid);
    if (args && args[0])
        fprintf(writer->out, ",\"args\":{%s}", args);
    fputc('}', writer->out);
}

void nvs_chrome_put_mark(struct nvs_chrome_writer *writer, const struct nvs_event *event)
{
    put_head(writer, event, "\"ph\":\"i\",\"s\":\"t\"", event->start);
    put_tail(writer, event->pid, event->tid, event->args);
}

void nvs_chrome_put_complete(struct nvs_chrome_writer *writer, const struct nvs_event *event)
{
    put_head(writer, event, "\"ph\":\"X\"", event->start);
    fputs(",\"dur\":", writer->out);
    put_microseconds(writer, nvs_chrome_range_end(event) - event->start);
    put_tail(writer, event->pid, event->tid, event->args);
}

/* One half of an async pair, joined by (pid, cat, ID): the begin on the
 * thread that started the range, with its args; the end on the one that
 * ended it. */
void nvs_chrome_put_async(struct nvs_chrome_writer *writer, const struct nvs_event *event, bool end,
                          uint64_t id)
{
    put_head(writer, event, end ? "\"ph\":\"e\"" : "\"ph\":\"b\"",
             end ? nvs_chrome_range_end(event) : event->start);
    fprintf(writer->out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"id\":%" PRIu64, event->pid,
            end && event->end_tid ? event->end_tid : event->tid, id);
    if (!end && event->args && event->args[0])
        fprintf(writer->out, ",\"args\":{%s}", event->args);
    fputc('}', writer->out);
}

/* ---- launch arrows ------------------------------------------------------------ */

/* Launch arrows as flow events v1, the form the Trace Event Format describes
 * (chrome://tracing reads it, Perfetto too): "s" at the call's start on its
 * thread, "f" with "bp":"e" at the work's start on its GPU row. Perfetto's
 * JSON importer (json_trace_parser.cc, flow_tracker.cc) binds an "s" to the
 * innermost slice open on its thread's track when it reads the "s", and an
 * "f" with "bp":"e" the same way on its own track; an "f" without "bp" would
 * wait for the next slice to begin there (the next kernel, not this one).
 * Its sorter reads the events of one time complete events first, longest
 * first, then the rest in file order: by the time it reads a flow event, the
 * call's (the work's) slice has begun and is the innermost one open, unless a
 * shorter slice starts at the same nanosecond on that row. A v1 flow event
 * binds only on its thread's own track, never to an async pair (b/e), which
 * has a track of its own: a call or piece of work written as one gets no
 * arrow, nor does work that starts before its call (an "f" read before its
 * "s" finds no flow to end). Perfetto's v2 form (bind_id with flow_out and
 * flow_in on the slices themselves) would bind async pairs too; v1 is kept
 * as the form the format describes. Each "s" and "f" is written right after
 * its slice, so that readers that take the events of one time in file order
 * bind them alike. */
void nvs_chrome_put_flow(struct nvs_chrome_writer *writer, const struct nvs_event *event,
                         bool finish, uint64_t id)
{
    begin_item(writer);
    fprintf(writer->out,
            "{\"name\":\"launch\",\"cat\":\"cuda flow\",\"ph\":\"%s\",\"id\":%" PRIu64 ",\"ts\":",
            finish ? "f\",\"bp\":\"e" : "s", id);
    put_microseconds(writer, event->start);
    fprintf(writer->out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 "}", event->pid, event->tid);
}

/* ---- gzip: OUT.gz through stdio, so that the writer is the same ---------------- */

static ssize_t gzip_write(void *cookie, const char *bytes, size_t size)
{
    size_t done = 0;
    while (done < size) {
        unsigned piece = size - done > (1u << 30) ? 1u << 30 : (unsigned)(size - done);
        int written = gzwrite(cookie, bytes + done, piece);
        if (written <= 0)
            break;
        done += (size_t)written;
    }
    return (ssize_t)done; /* short: stdio sets the stream's error */
}

static int gzip_close(void *cookie)
{
    int status = gzclose(cookie);
    if (status == Z_OK)
        return 0;
    if (status != Z_ERRNO)
        errno = status == Z_MEM_ERROR ? ENOMEM : EIO;
    return EOF;
}

/* PATH opened for writing, gzipped when its name ends .gz; NULL with errno. */
FILE *nvs_chrome_open_output(const char *path)
{
    size_t length = strlen(path);
    if (length < 3 || strcmp(path + length - 3, ".gz") != 0)
        return fopen(path, "w");
    errno = 0;
    /* Level 1: on the bench's harness export, 8 times smaller than the JSON for
     * +40% of convert's time; level 6 (zlib's default) is another quarter
     * smaller for +130%. */
    gzFile file = gzopen(path, "wb1");
    if (!file) {
        errno = errno ? errno : ENOMEM;
        return NULL;
    }
    gzbuffer(file, 1 << 18);
    FILE *out = fopencookie(file, "w",
                            (cookie_io_functions_t){ .write = gzip_write, .close = gzip_close });
    if (!out) {
        int error = errno;
        gzclose(file);
        unlink(path);
        errno = error;
    }
    return out;
}

void nvs_chrome_writer_free(struct nvs_chrome_writer *writer)
{
    free(writer->quoted);
    for (size_t i = 0; i < writer->name_count; i++)
        free(writer->names[i].json);
    free(writer->names);
    nvs_map_free(&writer->by_text);
}
