/* An input of the command (report, convert, diff) read as a stream: a file, a
 * pipe, or standard input ("-"); gzipped or not, which is found from its first
 * bytes, never from its name; and what it holds, by its content. */
#ifndef NVS_CLI_INPUT_H
#define NVS_CLI_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What an input holds, from its (decompressed) first bytes. */
enum nvs_input_kind {
    NVS_INPUT_JSON,    /* blanks, then [ or {: a JSON trace */
    NVS_INPUT_PFTRACE, /* a Perfetto Trace: field 1 holding a whole packet */
    NVS_INPUT_SQLITE,  /* an SQLite database (an nsys export) */
    NVS_INPUT_EMPTY,   /* nothing at all */
    NVS_INPUT_OTHER,   /* none of those */
};

/* An input read as a stream, a chunk at a time: a file, a pipe or standard
 * input, gunzipped as it comes where it is gzipped (gzip members one after
 * another; what follows a whole member and is no other is left; a member cut
 * short, or corrupt after some data, ends the input where it breaks). The
 * first bytes are read ahead to say what it holds. Memory: a megabyte or so,
 * whatever the input's length. */
struct nvs_stream {
    enum nvs_input_kind kind;
    bool gzipped;
    bool from_file; /* a regular file, which a reader may also open by name */
    uint64_t given; /* bytes given so far (decompressed) */
    /* private */
    int fd;
    bool own_fd, raw_ended, member_ended, failed;
    uint64_t max;
    unsigned char *head; /* the first bytes, read ahead, given first */
    size_t head_length, head_at;
    void *inflater; /* a z_stream, when gzipped */
    unsigned char *raw;
};

/* Opens PATH ("-": standard input) as STREAM and reads its first bytes: its
 * KIND is known on return. MAX: the most bytes a pipe or a decompressed input
 * may give (0: no limit; a plain regular file is not limited). Returns 0, or
 * -1 with one reason in WHY (the system's error, "not a whole gzip file: ..."). */
int nvs_stream_open(struct nvs_stream *stream, const char *path, uint64_t max, char *why,
                    size_t why_size);

/* Up to SIZE bytes of STREAM into INTO: how many, 0 at its end, or -1 with
 * one reason in WHY ("more than N bytes ...", the system's error). */
long nvs_stream_read(struct nvs_stream *stream, unsigned char *into, size_t size, char *why,
                     size_t why_size);

void nvs_stream_close(struct nvs_stream *stream);

/* What BYTES (the first LENGTH of an input, after decompression) hold. */
enum nvs_input_kind nvs_input_kind_of(const unsigned char *bytes, size_t length);

/* SIZE as a count of bytes: digits with an optional k, M, G or T (powers of
 * 1024) and an optional "B" or "iB". False when it is not one, or 0. */
bool nvs_input_parse_size(const char *text, uint64_t *size);

#endif
