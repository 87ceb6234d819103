/* A small JSON reader for trace files: a bare array of events (the form
 * NVTXSHIM_TRACE and nvtxshim convert write) or {"traceEvents":[...]} (the
 * other form of the Chrome trace format, which the recorder wrote before),
 * read one event at a time so that a trace of a million events needs the
 * memory of one. A trace cut short (a process killed by a signal leaves no
 * closing "]", or "]}", and maybe a trailing comma and blank padding) is read
 * up to its last complete event. Also the writing side's small pieces: a
 * string quoted for JSON, and JSON text built piece by piece. */
#ifndef NVS_CLI_TRACE_JSON_H
#define NVS_CLI_TRACE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "readers/source.h"

enum nvs_json_type {
    NVS_JSON_NULL,
    NVS_JSON_FALSE,
    NVS_JSON_TRUE,
    NVS_JSON_NUMBER,
    NVS_JSON_STRING,
    NVS_JSON_ARRAY,
    NVS_JSON_OBJECT,
};

struct nvs_json_member;

/* One value. A string's text is decoded UTF-8, NUL-terminated (an escaped NUL
 * ends it early; length has the whole); a number's text is its source
 * characters, not NUL-terminated. Valid until the callback returns. */
struct nvs_json {
    enum nvs_json_type type;
    const char *text;
    size_t length;
    size_t count; /* items of an array, members of an object */
    struct nvs_json *items;
    struct nvs_json_member *members;
};

struct nvs_json_member {
    const char *key;
    struct nvs_json value;
};

/* The member KEY of OBJECT (the last one, as most readers do), or NULL. */
const struct nvs_json *nvs_json_get(const struct nvs_json *object, const char *key);

/* The string member KEY of OBJECT, or NULL when absent or not a string. */
const char *nvs_json_get_string(const struct nvs_json *object, const char *key);

/* A number as a double; false for anything else. */
bool nvs_json_double(const struct nvs_json *value, double *out);

/* A number as an integer (a fraction is cut off); false for anything else or
 * one out of range. */
bool nvs_json_int64(const struct nvs_json *value, int64_t *out);

/* A number of microseconds as nanoseconds, exactly for up to three decimals
 * (trace timestamps such as 830634154.324 would lose digits as a double). */
bool nvs_json_microseconds(const struct nvs_json *value, int64_t *nanoseconds);

struct nvs_trace_read {
    size_t events;        /* events given to the callback */
    bool bare_array;      /* [...], not {"traceEvents":[...]} */
    bool cut_short;       /* the file ends before its closing ] (or ]}) */
    bool last_incomplete; /* ... in the middle of an event, which was dropped */
};

/* Called for each element of traceEvents, in file order; a non-zero return
 * stops the reading and is returned. */
typedef int (*nvs_trace_event_fn)(const struct nvs_json *event, void *context);

/* Reads the trace in TEXT (LENGTH bytes; what load.c read), calling CALLBACK
 * for each event. Returns 0, the callback's non-zero value, or -1 with ERROR
 * set (a sentence without the file name: "not JSON at line 3, column 7: ...",
 * "empty file"). */
int nvs_trace_json_parse(const char *text, size_t length, nvs_trace_event_fn callback,
                         void *context, struct nvs_trace_read *result, char *error,
                         size_t error_size);

/* nvs_trace_json_parse of the bytes SOURCE gives, read as they come: the
 * memory is that of the event being read (a window of about a megabyte), not
 * of the trace. */
int nvs_trace_json_read(struct nvs_source *source, nvs_trace_event_fn callback, void *context,
                        struct nvs_trace_read *result, char *error, size_t error_size);

#endif
