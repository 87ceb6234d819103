/* A small JSON reader for trace files (trace_json.h). One event is parsed at a
 * time into an arena that is emptied before the next, so memory stays that of
 * the largest event; the text is the caller's (input.c maps a file, or reads
 * a pipe once). The writing side, quoting strings and building JSON text, is
 * util/json_text.c. */
#define _GNU_SOURCE
#include "readers/trace_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 128
#define BLOCK_BYTES (64u * 1024u)

/* ---- memory: an arena for one event, and a stack of children being parsed ---- */

struct block {
    struct block *next;
    size_t size, used;
    max_align_t data[];
};

struct arena {
    struct block *first;
};

static void *arena_alloc(struct arena *arena, size_t size)
{
    size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
    struct block **link = &arena->first;
    for (struct block *block = arena->first; block; block = block->next) {
        if (block->size - block->used >= size) {
            void *memory = (char *)block->data + block->used;
            block->used += size;
            return memory;
        }
        link = &block->next;
    }
    size_t capacity = size > BLOCK_BYTES ? size : BLOCK_BYTES;
    struct block *block = malloc(sizeof *block + capacity);
    if (!block)
        return NULL;
    block->next = NULL;
    block->size = capacity;
    block->used = size;
    *link = block;
    return block->data;
}

static void arena_reset(struct arena *arena)
{
    for (struct block *block = arena->first; block; block = block->next)
        block->used = 0;
}

static void arena_free(struct arena *arena)
{
    while (arena->first) {
        struct block *next = arena->first->next;
        free(arena->first);
        arena->first = next;
    }
}

/* Children of the containers being parsed, innermost last: a container's
 * children are copied into the arena when it closes. */
struct stack {
    char *bytes;
    size_t used, capacity;
};

static bool stack_push(struct stack *stack, const void *item, size_t size)
{
    if (stack->used + size > stack->capacity) {
        size_t capacity = stack->capacity ? stack->capacity * 2 : 4096;
        while (capacity < stack->used + size)
            capacity *= 2;
        char *bytes = realloc(stack->bytes, capacity);
        if (!bytes)
            return false;
        stack->bytes = bytes;
        stack->capacity = capacity;
    }
    memcpy(stack->bytes + stack->used, item, size);
    stack->used += size;
    return true;
}

/* ---- the parser ----------------------------------------------------------- */

struct parser {
    const char *start, *p, *end; /* the window: what is in memory of the input */
    struct arena arena;
    struct stack stack;
    int depth;
    bool ended; /* the error is the end of the window */
    char *error;
    size_t error_size;
    /* a streamed input: the window, refilled from the source at an event's
     * boundary or, when it ends inside one, that event read again from its start */
    struct nvs_source *source;
    char *window;
    size_t window_size;
    bool source_ended;
    size_t line_base, column_base; /* where the window starts, for messages: lines before it,
                                      * and characters after the last newline before it */
};

static bool fail(struct parser *parser, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

static bool fail(struct parser *parser, const char *format, ...)
{
    if (parser->p >= parser->end) {
        parser->ended = true;
        snprintf(parser->error, parser->error_size, "the file ends inside an event");
        return false;
    }
    size_t line = 1 + parser->line_base, column = 1 + parser->column_base;
    for (const char *c = parser->start; c < parser->p; c++) {
        if (*c == '\n') {
            line++;
            column = 1;
        } else {
            column++;
        }
    }
    char what[160];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(what, sizeof what, format, arguments);
    va_end(arguments);
    snprintf(parser->error, parser->error_size, "not JSON at line %zu, column %zu: %s", line,
             column, what);
    return false;
}

static bool out_of_memory(struct parser *parser)
{
    snprintf(parser->error, parser->error_size, "out of memory");
    return false;
}

static void skip_space(struct parser *parser)
{
    const char *p = parser->p;
    while (p < parser->end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    parser->p = p;
}

/* The window's first read, and the least room a read is given. */
#define WINDOW_CHUNK ((size_t)1 << 20)

/* More of a streamed input in the window: what is before *KEEP (or before P,
 * with KEEP NULL) let go, the rest moved to its start (P and *KEEP with it),
 * the room after it filled from the source. 1: bytes were added; 0: the input
 * has ended (or is not streamed); -1: it could not be read, or one event is
 * more than the source's max_event (the error set). */
static int more(struct parser *parser, const char **keep)
{
    if (!parser->source || parser->source_ended)
        return 0;
    const char *from = keep ? *keep : parser->p;
    for (const char *c = parser->start, *newline; c < from; c = newline + 1) {
        if (!(newline = memchr(c, '\n', (size_t)(from - c)))) {
            parser->column_base += (size_t)(from - c);
            break;
        }
        parser->line_base++;
        parser->column_base = 0;
    }
    size_t kept = (size_t)(parser->end - from);
    size_t p_at = (size_t)(parser->p - from);
    if (kept && from != parser->window)
        memmove(parser->window, from, kept);
    if (parser->window_size - kept < WINDOW_CHUNK / 4) {
        size_t size = parser->window_size ? parser->window_size * 2 : WINDOW_CHUNK;
        size_t max = parser->source->max_event;
        if (max && kept > max) {
            snprintf(parser->error, parser->error_size, "an event of more than %zu bytes", max);
            return -1;
        }
        char *grown = realloc(parser->window, size);
        if (!grown) {
            snprintf(parser->error, parser->error_size, "out of memory");
            return -1;
        }
        parser->window = grown;
        parser->window_size = size;
    }
    parser->start = parser->window;
    parser->end = parser->window + kept;
    parser->p = parser->window + p_at;
    if (keep)
        *keep = parser->window;
    long got = parser->source->read(parser->source->context, parser->window + kept,
                                    parser->window_size - kept, parser->error, parser->error_size);
    if (got < 0)
        return -1;
    if (got == 0) {
        parser->source_ended = true;
        return 0;
    }
    parser->end += got;
    return 1;
}

/* Blanks skipped, the window refilled as needed: false when the input ends
 * first, or cannot be read (then the error is set and BROKEN). */
static bool skip_space_more(struct parser *parser, bool *broken)
{
    *broken = false;
    for (;;) {
        skip_space(parser);
        if (parser->p < parser->end)
            return true;
        int got = more(parser, NULL);
        if (got <= 0) {
            *broken = got < 0;
            return false;
        }
    }
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Four hex digits after \u at P; -1 when they are not there. */
static long hex4(const char *p, const char *end)
{
    if (end - p < 4)
        return -1;
    long value = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_digit(p[i]);
        if (digit < 0)
            return -1;
        value = value * 16 + digit;
    }
    return value;
}

static char *put_utf8(char *out, unsigned long code)
{
    if (code < 0x80) {
        *out++ = (char)code;
    } else if (code < 0x800) {
        *out++ = (char)(0xC0 | (code >> 6));
        *out++ = (char)(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
        *out++ = (char)(0xE0 | (code >> 12));
        *out++ = (char)(0x80 | ((code >> 6) & 0x3F));
        *out++ = (char)(0x80 | (code & 0x3F));
    } else {
        *out++ = (char)(0xF0 | (code >> 18));
        *out++ = (char)(0x80 | ((code >> 12) & 0x3F));
        *out++ = (char)(0x80 | ((code >> 6) & 0x3F));
        *out++ = (char)(0x80 | (code & 0x3F));
    }
    return out;
}

/* A string at parser->p (its opening quote), decoded into the arena. Bytes
 * that are not valid UTF-8 are kept as they are: a reader, not a validator. */
static bool parse_string(struct parser *parser, const char **text, size_t *length)
{
    const char *p = parser->p + 1, *end = parser->end;
    const char *close = p;
    while (close < end && *close != '"')
        close += *close == '\\' ? 2 : 1;
    if (close >= end) {
        parser->p = end;
        return fail(parser, "unterminated string");
    }
    char *out = arena_alloc(&parser->arena, (size_t)(close - p) + 1);
    if (!out)
        return out_of_memory(parser);
    char *o = out;
    while (p < close) {
        const char *run = p;
        while (p < close && *p != '\\')
            p++;
        memcpy(o, run, (size_t)(p - run));
        o += p - run;
        if (p >= close)
            break;
        char escape = p[1];
        p += 2;
        switch (escape) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            long code = hex4(p, close);
            if (code < 0) {
                parser->p = p;
                return fail(parser, "bad \\u escape");
            }
            p += 4;
            if (code >= 0xD800 && code <= 0xDBFF && close - p >= 6 && p[0] == '\\' && p[1] == 'u') {
                long low = hex4(p + 2, close);
                if (low >= 0xDC00 && low <= 0xDFFF) {
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                    p += 6;
                }
            }
            if (code >= 0xD800 && code <= 0xDFFF)
                code = 0xFFFD; /* a lone surrogate */
            o = put_utf8(o, (unsigned long)code);
            break;
        }
        default: parser->p = p - 1; return fail(parser, "bad escape \\%c", escape);
        }
    }
    *o = '\0';
    *text = out;
    *length = (size_t)(o - out);
    parser->p = close + 1;
    return true;
}

static bool parse_number(struct parser *parser, struct nvs_json *value)
{
    const char *p = parser->p, *end = parser->end;
    const char *begin = p;
    if (p < end && *p == '-')
        p++;
    if (p >= end || *p < '0' || *p > '9') {
        parser->p = p;
        return fail(parser, "a number needs a digit");
    }
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9') {
            parser->p = p;
            return fail(parser, "a number needs a digit after its point");
        }
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || *p < '0' || *p > '9') {
            parser->p = p;
            return fail(parser, "a number needs a digit in its exponent");
        }
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p >= end) {
        /* "12" at the very end may be "123" cut off: the event is incomplete. */
        parser->p = p;
        return fail(parser, "number at the end of the input");
    }
    value->type = NVS_JSON_NUMBER;
    value->text = begin;
    value->length = (size_t)(p - begin);
    parser->p = p;
    return true;
}

static bool parse_literal(struct parser *parser, const char *word, enum nvs_json_type type,
                          struct nvs_json *value)
{
    size_t length = strlen(word);
    size_t available = (size_t)(parser->end - parser->p);
    if (memcmp(parser->p, word, available < length ? available : length) != 0)
        return fail(parser, "unexpected character '%c'", *parser->p);
    if (available < length) {
        parser->p = parser->end;
        return fail(parser, "cut off");
    }
    value->type = type;
    parser->p += length;
    return true;
}

static bool parse_value(struct parser *parser, struct nvs_json *value);

/* After an array's item or an object's member: 1 at CLOSE (consumed), 0 after a
 * comma (consumed), -1 on anything else (the parser's error set). */
static int after_element(struct parser *parser, char close, const char *expected)
{
    skip_space(parser);
    if (parser->p >= parser->end) {
        fail(parser, "cut off");
        return -1;
    }
    if (*parser->p == close) {
        parser->p++;
        return 1;
    }
    if (*parser->p != ',') {
        fail(parser, "%s", expected);
        return -1;
    }
    parser->p++;
    return 0;
}

/* The elements pushed since BASE, moved to the arena; false when out of memory. */
static bool keep_elements(struct parser *parser, size_t base, size_t count, void **elements)
{
    *elements = NULL;
    if (count) {
        size_t bytes = parser->stack.used - base;
        if (!(*elements = arena_alloc(&parser->arena, bytes)))
            return out_of_memory(parser);
        memcpy(*elements, parser->stack.bytes + base, bytes);
    }
    parser->stack.used = base;
    return true;
}

static bool parse_array(struct parser *parser, struct nvs_json *value)
{
    size_t base = parser->stack.used;
    size_t count = 0;
    parser->p++;
    skip_space(parser);
    if (parser->p < parser->end && *parser->p == ']') {
        parser->p++;
    } else {
        for (;;) {
            struct nvs_json item;
            if (!parse_value(parser, &item))
                return false;
            if (!stack_push(&parser->stack, &item, sizeof item))
                return out_of_memory(parser);
            count++;
            int end = after_element(parser, ']', "expected ',' or ']' in an array");
            if (end < 0)
                return false;
            if (end)
                break;
        }
    }
    value->type = NVS_JSON_ARRAY;
    value->count = count;
    void *items;
    if (!keep_elements(parser, base, count, &items))
        return false;
    value->items = items;
    return true;
}

static bool parse_object(struct parser *parser, struct nvs_json *value)
{
    size_t base = parser->stack.used;
    size_t count = 0;
    parser->p++;
    skip_space(parser);
    if (parser->p < parser->end && *parser->p == '}') {
        parser->p++;
    } else {
        for (;;) {
            struct nvs_json_member member;
            size_t key_length;
            skip_space(parser);
            if (parser->p >= parser->end)
                return fail(parser, "cut off");
            if (*parser->p != '"')
                return fail(parser, "expected a member name in quotes");
            if (!parse_string(parser, &member.key, &key_length))
                return false;
            skip_space(parser);
            if (parser->p >= parser->end)
                return fail(parser, "cut off");
            if (*parser->p != ':')
                return fail(parser, "expected ':' after a member name");
            parser->p++;
            if (!parse_value(parser, &member.value))
                return false;
            if (!stack_push(&parser->stack, &member, sizeof member))
                return out_of_memory(parser);
            count++;
            int end = after_element(parser, '}', "expected ',' or '}' in an object");
            if (end < 0)
                return false;
            if (end)
                break;
        }
    }
    value->type = NVS_JSON_OBJECT;
    value->count = count;
    void *members;
    if (!keep_elements(parser, base, count, &members))
        return false;
    value->members = members;
    return true;
}

static bool parse_value(struct parser *parser, struct nvs_json *value)
{
    memset(value, 0, sizeof *value);
    skip_space(parser);
    if (parser->p >= parser->end)
        return fail(parser, "cut off");
    if (parser->depth >= MAX_DEPTH)
        return fail(parser, "nested deeper than %d", MAX_DEPTH);
    bool ok;
    parser->depth++;
    switch (*parser->p) {
    case '{': ok = parse_object(parser, value); break;
    case '[': ok = parse_array(parser, value); break;
    case '"':
        value->type = NVS_JSON_STRING;
        ok = parse_string(parser, &value->text, &value->length);
        break;
    case 't': ok = parse_literal(parser, "true", NVS_JSON_TRUE, value); break;
    case 'f': ok = parse_literal(parser, "false", NVS_JSON_FALSE, value); break;
    case 'n': ok = parse_literal(parser, "null", NVS_JSON_NULL, value); break;
    default: ok = parse_number(parser, value); break;
    }
    parser->depth--;
    return ok;
}

/* PARSE(PARSER, OUT) at P; where the window ends inside what it reads and the
 * input goes on, the window is refilled and it is run again from its start.
 * False: not JSON, or (ENDED) the input ends inside it, or it could not be read. */
static bool parse_more(struct parser *parser, bool (*parse)(struct parser *parser, void *out),
                       void *out)
{
    for (;;) {
        const char *from = parser->p;
        parser->ended = false;
        if (parse(parser, out))
            return true;
        if (!parser->ended)
            return false;
        arena_reset(&parser->arena);
        parser->stack.used = 0;
        parser->depth = 0;
        int got = more(parser, &from);
        parser->p = from;
        if (got < 0)
            parser->ended = false;
        if (got <= 0)
            return false;
    }
}

static bool value_at(struct parser *parser, void *value)
{
    return parse_value(parser, value);
}

/* A member name: its text and length. */
struct key {
    const char *text;
    size_t length;
};

static bool key_at(struct parser *parser, void *key)
{
    struct key *out = key;
    return parse_string(parser, &out->text, &out->length);
}

static bool parse_value_more(struct parser *parser, struct nvs_json *value)
{
    return parse_more(parser, value_at, value);
}

/* The elements of the events array, parser->p just past its '['. */
static int read_events(struct parser *parser, nvs_trace_event_fn callback, void *context,
                       struct nvs_trace_read *result, bool *closed)
{
    *closed = false;
    bool broken;
    if (!skip_space_more(parser, &broken)) {
        result->cut_short = true;
        return broken ? -1 : 0;
    }
    if (*parser->p == ']') {
        parser->p++;
        *closed = true;
        return 0;
    }
    for (;;) {
        struct nvs_json event;
        if (!parse_value_more(parser, &event)) {
            if (parser->ended) {
                result->cut_short = result->last_incomplete = true;
                return 0;
            }
            return -1;
        }
        result->events++;
        int stop = callback(&event, context);
        arena_reset(&parser->arena);
        if (stop)
            return stop;
        if (!skip_space_more(parser, &broken)) {
            result->cut_short = true;
            return broken ? -1 : 0;
        }
        if (*parser->p == ']') {
            parser->p++;
            *closed = true;
            return 0;
        }
        if (*parser->p != ',') {
            fail(parser, "expected ',' or ']' after an event");
            return -1;
        }
        parser->p++;
        if (!skip_space_more(parser, &broken)) {
            result->cut_short = true;
            return broken ? -1 : 0;
        }
        if (*parser->p == ']') { /* a trailing comma: tolerated */
            parser->p++;
            *closed = true;
            return 0;
        }
    }
}

static int read_document(struct parser *parser, nvs_trace_event_fn callback, void *context,
                         struct nvs_trace_read *result)
{
    while (parser->end - parser->p < 3 && more(parser, NULL) > 0)
        continue;
    if (parser->end - parser->p >= 3 && memcmp(parser->p, "\xEF\xBB\xBF", 3) == 0)
        parser->p += 3;
    bool broken;
    if (!skip_space_more(parser, &broken)) {
        if (!broken)
            snprintf(parser->error, parser->error_size, "empty file");
        return -1;
    }
    bool closed;
    if (*parser->p == '[') {
        parser->p++;
        result->bare_array = true;
        return read_events(parser, callback, context, result, &closed);
    }
    if (*parser->p != '{') {
        fail(parser, "a trace file starts with '{' or '['");
        return -1;
    }
    parser->p++;
    bool found = false, complete = false;
    if (skip_space_more(parser, &broken) && *parser->p == '}') {
        parser->p++;
        complete = true;
    } else if (!broken) {
        for (;;) {
            if (!skip_space_more(parser, &broken))
                break;
            if (*parser->p != '"') {
                fail(parser, "expected a member name in quotes");
                return -1;
            }
            struct key key;
            if (!parse_more(parser, key_at, &key)) {
                if (parser->ended)
                    break;
                return -1;
            }
            bool events = !found && strcmp(key.text, "traceEvents") == 0;
            if (!skip_space_more(parser, &broken))
                break;
            if (*parser->p != ':') {
                fail(parser, "expected ':' after a member name");
                return -1;
            }
            parser->p++;
            if (!skip_space_more(parser, &broken))
                break;
            if (events && *parser->p == '[') {
                arena_reset(&parser->arena);
                parser->p++;
                found = true;
                int status = read_events(parser, callback, context, result, &closed);
                if (status || !closed)
                    return status;
            } else {
                struct nvs_json ignored;
                if (!parse_value_more(parser, &ignored)) {
                    if (parser->ended)
                        break;
                    return -1;
                }
            }
            arena_reset(&parser->arena);
            if (!skip_space_more(parser, &broken))
                break;
            if (*parser->p == '}') {
                parser->p++;
                complete = true;
                break;
            }
            if (*parser->p != ',') {
                fail(parser, "expected ',' or '}' after a member");
                return -1;
            }
            parser->p++;
        }
    }
    if (broken)
        return -1;
    if (!complete && found) {
        result->cut_short = true; /* the closing } is missing: nothing else is */
        return 0;
    }
    if (!found) {
        snprintf(parser->error, parser->error_size, "no traceEvents array");
        return -1;
    }
    if (skip_space_more(parser, &broken)) {
        fail(parser, "text after the end of the trace");
        return -1;
    }
    return broken ? -1 : 0;
}

static int parse_with(struct parser *parser, nvs_trace_event_fn callback, void *context,
                      struct nvs_trace_read *result)
{
    memset(result, 0, sizeof *result);
    if (parser->error_size)
        parser->error[0] = '\0';
    int status = read_document(parser, callback, context, result);
    arena_free(&parser->arena);
    free(parser->stack.bytes);
    free(parser->window);
    return status;
}

int nvs_trace_json_parse(const char *text, size_t length, nvs_trace_event_fn callback,
                         void *context, struct nvs_trace_read *result, char *error,
                         size_t error_size)
{
    struct parser parser = {
        .start = text,
        .p = text,
        .end = text + length,
        .error = error,
        .error_size = error_size,
    };
    return parse_with(&parser, callback, context, result);
}

int nvs_trace_json_read(struct nvs_source *source, nvs_trace_event_fn callback, void *context,
                        struct nvs_trace_read *result, char *error, size_t error_size)
{
    struct parser parser = { .error = error, .error_size = error_size, .source = source };
    return parse_with(&parser, callback, context, result);
}

/* ---- values ---------------------------------------------------------------- */

const struct nvs_json *nvs_json_get(const struct nvs_json *object, const char *key)
{
    if (!object || object->type != NVS_JSON_OBJECT)
        return NULL;
    for (size_t i = object->count; i-- > 0;)
        if (strcmp(object->members[i].key, key) == 0)
            return &object->members[i].value;
    return NULL;
}

const char *nvs_json_get_string(const struct nvs_json *object, const char *key)
{
    const struct nvs_json *value = nvs_json_get(object, key);
    return value && value->type == NVS_JSON_STRING ? value->text : NULL;
}

bool nvs_json_double(const struct nvs_json *value, double *out)
{
    if (!value || value->type != NVS_JSON_NUMBER)
        return false;
    char buffer[64];
    if (value->length >= sizeof buffer) {
        char *copy = strndup(value->text, value->length);
        if (!copy)
            return false;
        *out = strtod(copy, NULL);
        free(copy);
        return true;
    }
    memcpy(buffer, value->text, value->length);
    buffer[value->length] = '\0';
    *out = strtod(buffer, NULL);
    return true;
}

/* The integer part of a plain number (no exponent): false when there is an
 * exponent or the digits do not fit. */
static bool integer_part(const struct nvs_json *value, bool *negative, int64_t *magnitude,
                         const char **rest)
{
    const char *p = value->text, *end = value->text + value->length;
    *negative = p < end && *p == '-';
    if (*negative)
        p++;
    int64_t result = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        if (result > (INT64_MAX - (*p - '0')) / 10)
            return false;
        result = result * 10 + (*p - '0');
    }
    for (const char *q = p; q < end; q++)
        if (*q == 'e' || *q == 'E')
            return false;
    *magnitude = result;
    *rest = p;
    return true;
}

bool nvs_json_int64(const struct nvs_json *value, int64_t *out)
{
    if (!value || value->type != NVS_JSON_NUMBER)
        return false;
    bool negative;
    int64_t magnitude;
    const char *rest;
    if (integer_part(value, &negative, &magnitude, &rest)) {
        *out = negative ? -magnitude : magnitude;
        return true;
    }
    double number;
    if (!nvs_json_double(value, &number) || !(number > -9.2e18 && number < 9.2e18))
        return false;
    *out = (int64_t)number;
    return true;
}

bool nvs_json_microseconds(const struct nvs_json *value, int64_t *nanoseconds)
{
    if (!value || value->type != NVS_JSON_NUMBER)
        return false;
    bool negative;
    int64_t whole;
    const char *rest;
    if (integer_part(value, &negative, &whole, &rest) && whole <= INT64_MAX / 1000 - 1) {
        const char *end = value->text + value->length;
        int64_t fraction = 0;
        int digits = 0;
        bool round_up = false;
        if (rest < end && *rest == '.') {
            for (const char *p = rest + 1; p < end; p++, digits++) {
                if (digits < 3)
                    fraction = fraction * 10 + (*p - '0');
                else if (digits == 3)
                    round_up = *p >= '5';
            }
        }
        for (int i = digits; i < 3; i++)
            fraction *= 10;
        int64_t result = whole * 1000 + fraction + (round_up ? 1 : 0);
        *nanoseconds = negative ? -result : result;
        return true;
    }
    double number;
    if (!nvs_json_double(value, &number) || !(number > -9.2e15 && number < 9.2e15))
        return false;
    *nanoseconds = llround(number * 1000.0);
    return true;
}
