/* An input as a stream (input.h): a file, a pipe or standard input read a
 * chunk at a time, inflated as it comes when it begins with gzip's magic
 * bytes, within the caller's limit. */
#define _GNU_SOURCE
#include "readers/input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "readers/pftrace_wire.h"

#define CHUNK (1u << 18) /* read from the descriptor this much at a time */

static const unsigned char gzip_magic[2] = { 0x1f, 0x8b };
static const char sqlite_magic[16] = "SQLite format 3";

enum nvs_input_kind nvs_input_kind_of(const unsigned char *bytes, size_t length)
{
    if (length == 0)
        return NVS_INPUT_EMPTY;
    if (length >= sizeof sqlite_magic && memcmp(bytes, sqlite_magic, sizeof sqlite_magic) == 0)
        return NVS_INPUT_SQLITE;
    if (nvs_pb_starts_trace(bytes, length))
        return NVS_INPUT_PFTRACE;
    size_t at = 0;
    if (length >= 3 && bytes[0] == 0xef && bytes[1] == 0xbb && bytes[2] == 0xbf)
        at = 3; /* a byte-order mark, as some editors write */
    while (at < length &&
           (bytes[at] == ' ' || bytes[at] == '\t' || bytes[at] == '\r' || bytes[at] == '\n'))
        at++;
    if (at == length)
        return NVS_INPUT_EMPTY;
    return bytes[at] == '[' || bytes[at] == '{' ? NVS_INPUT_JSON : NVS_INPUT_OTHER;
}

bool nvs_input_parse_size(const char *text, uint64_t *size)
{
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (end == text || errno || text[0] == '-')
        return false;
    unsigned shift = 0;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'M':
        shift = 20;
        end++;
        break;
    case 'G':
        shift = 30;
        end++;
        break;
    case 'T':
        shift = 40;
        end++;
        break;
    default: break;
    }
    if (shift && *end == 'i')
        end++;
    if (*end == 'B')
        end++;
    if (*end || value == 0 || value > (UINT64_MAX >> shift))
        return false;
    *size = (uint64_t)value << shift;
    return true;
}

static ssize_t read_some(int fd, unsigned char *into, size_t size)
{
    for (;;) {
        ssize_t got = read(fd, into, size);
        if (got >= 0 || errno != EINTR)
            return got;
    }
}

static void say_size(char *why, size_t why_size, uint64_t max, bool gzipped)
{
    snprintf(why, why_size, "more than %llu bytes%s (--max-input SIZE raises the limit)",
             (unsigned long long)max, gzipped ? " once decompressed" : "");
}

/* ---- an input as a stream ------------------------------------------------------------ */

/* The first bytes read ahead: the kind is decided on this much (or all there is). */
#define HEAD_BYTES ((size_t)1 << 20)

/* Raw bytes of STREAM's descriptor (after the two read first) into INTO. */
static long raw_read(struct nvs_stream *stream, unsigned char *into, size_t size, char *why,
                     size_t why_size)
{
    if (stream->raw_ended)
        return 0;
    ssize_t got = read_some(stream->fd, into, size);
    if (got < 0) {
        snprintf(why, why_size, "%s", strerror(errno));
        return -1;
    }
    stream->raw_ended = got == 0;
    return (long)got;
}

/* Decompressed bytes into INTO: as many as come of one read of the raw input, at least one unless
 * the input has ended. */
static long inflated_read(struct nvs_stream *stream, unsigned char *into, size_t size, char *why,
                          size_t why_size)
{
    z_stream *z = stream->inflater;
    for (;;) {
        if (z->avail_in == 0) {
            long got = raw_read(stream, stream->raw, CHUNK, why, why_size);
            if (got < 0)
                return -1;
            if (got == 0)
                return 0; /* the end of the input, or a member cut short */
            z->next_in = stream->raw;
            z->avail_in = (uInt)got;
        }
        if (stream->member_ended) {
            /* Another member may follow (gzip files concatenate); anything
             * else after a whole member is not gzip's, and is left. */
            if (z->next_in[0] != gzip_magic[0] ||
                (z->avail_in >= 2 && z->next_in[1] != gzip_magic[1])) {
                stream->raw_ended = true;
                z->avail_in = 0;
                return 0;
            }
            inflateReset(z);
            stream->member_ended = false;
        }
        z->next_out = into;
        z->avail_out = (uInt)(size > (1u << 30) ? 1u << 30 : size);
        uInt before = z->avail_out;
        int status = inflate(z, Z_NO_FLUSH);
        size_t made = before - z->avail_out;
        if (status == Z_STREAM_END) {
            stream->member_ended = true;
        } else if (status == Z_DATA_ERROR || status == Z_NEED_DICT || status == Z_MEM_ERROR) {
            if ((stream->given == 0 && made == 0) || status == Z_MEM_ERROR) {
                snprintf(why, why_size, "not a whole gzip file: %s",
                         status == Z_MEM_ERROR ? "out of memory"
                             : z->msg          ? z->msg
                                               : "corrupt");
                return -1;
            }
            stream->raw_ended = true;
            z->avail_in = 0;
            return (long)made; /* what came before the break, then the end */
        }
        if (made)
            return (long)made;
    }
}

/* Bytes of the input as it is meant (decompressed), after the head. */
static long body_read(struct nvs_stream *stream, unsigned char *into, size_t size, char *why,
                      size_t why_size)
{
    return stream->inflater ? inflated_read(stream, into, size, why, why_size)
                            : raw_read(stream, into, size, why, why_size);
}

int nvs_stream_open(struct nvs_stream *stream, const char *path, uint64_t max, char *why,
                    size_t why_size)
{
    memset(stream, 0, sizeof *stream);
    bool standard = strcmp(path, "-") == 0;
    int fd = standard ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    struct stat status;
    if (fd < 0 || fstat(fd, &status) != 0) {
        snprintf(why, why_size, "%s", strerror(errno));
        if (fd >= 0 && !standard)
            close(fd);
        return -1;
    }
    stream->fd = fd;
    stream->own_fd = !standard;
    if (S_ISDIR(status.st_mode)) {
        snprintf(why, why_size, "%s", strerror(EISDIR));
        nvs_stream_close(stream);
        return -1;
    }
    stream->from_file = S_ISREG(status.st_mode) && !standard;
    if (S_ISREG(status.st_mode))
        posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    stream->head = malloc(HEAD_BYTES);
    stream->raw = malloc(CHUNK);
    if (!stream->head || !stream->raw) {
        snprintf(why, why_size, "out of memory");
        nvs_stream_close(stream);
        return -1;
    }
    /* The first two bytes say whether it is gzip. */
    size_t first = 0;
    while (first < 2) {
        long got = raw_read(stream, stream->head + first, 2 - first, why, why_size);
        if (got < 0) {
            nvs_stream_close(stream);
            return -1;
        }
        if (got == 0)
            break;
        first += (size_t)got;
    }
    if (first == 2 && memcmp(stream->head, gzip_magic, 2) == 0) {
        z_stream *z = calloc(1, sizeof *z);
        if (!z || inflateInit2(z, 15 + 16) != Z_OK) {
            free(z);
            snprintf(why, why_size, "out of memory");
            nvs_stream_close(stream);
            return -1;
        }
        stream->inflater = z;
        stream->gzipped = true;
        memcpy(stream->raw, stream->head, 2);
        z->next_in = stream->raw;
        z->avail_in = 2;
        first = 0;
    } else if (!S_ISREG(status.st_mode) || standard) {
        stream->max = max;
    }
    if (stream->gzipped)
        stream->max = max;
    /* the head: as much as HEAD_BYTES holds, or all there is */
    stream->head_length = first;
    while (stream->head_length < HEAD_BYTES) {
        long got = body_read(stream, stream->head + stream->head_length,
                             HEAD_BYTES - stream->head_length, why, why_size);
        if (got < 0) {
            nvs_stream_close(stream);
            return -1;
        }
        if (got == 0)
            break;
        stream->head_length += (size_t)got;
    }
    stream->kind = nvs_input_kind_of(stream->head, stream->head_length);
    return 0;
}

long nvs_stream_read(struct nvs_stream *stream, unsigned char *into, size_t size, char *why,
                     size_t why_size)
{
    long got;
    if (stream->head_at < stream->head_length) {
        size_t left = stream->head_length - stream->head_at;
        got = (long)(left < size ? left : size);
        memcpy(into, stream->head + stream->head_at, (size_t)got);
        stream->head_at += (size_t)got;
    } else {
        got = body_read(stream, into, size, why, why_size);
        if (got < 0)
            return -1;
    }
    stream->given += (uint64_t)got;
    if (stream->max && stream->given > stream->max) {
        say_size(why, why_size, stream->max, stream->gzipped);
        return -1;
    }
    return got;
}

void nvs_stream_close(struct nvs_stream *stream)
{
    if (stream->inflater) {
        inflateEnd(stream->inflater);
        free(stream->inflater);
    }
    free(stream->head);
    free(stream->raw);
    if (stream->own_fd && stream->fd >= 0)
        close(stream->fd);
    memset(stream, 0, sizeof *stream);
    stream->fd = -1;
}
