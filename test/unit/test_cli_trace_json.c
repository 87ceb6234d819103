/* Unit tests of the command's JSON reader for trace files (cli/readers/trace_json.c),
 * run alone: texts in memory (and a few files) parsed, each event the reader
 * hands over written back as compact text and compared with what it must be.
 * Also the reader's refusals: garbage and deep nesting end in an error, never
 * in a crash (make test-asan runs this under ASan and UBSan). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "readers/trace_json.h"
#include "util/json_text.h"

/* ---- the events read, written back as text ------------------------------------ */

struct seen {
    char text[8192];                 /* each event written back, one a line */
    size_t used;
    size_t events;
    size_t stop_at;                  /* the callback returns 7 at this event (1-based); 0: never */
    int (*check)(const struct nvs_json *event, struct seen *seen);
};

static void put(struct seen *seen, const char *text, size_t length)
{
    if (seen->used + length < sizeof seen->text) {
        memcpy(seen->text + seen->used, text, length);
        seen->used += length;
        seen->text[seen->used] = '\0';
    }
}

/* A string's bytes as they are, but quotes, backslashes and control characters
 * (an escaped NUL included) as \xHH, so that any decoding shows. */
static void put_string(struct seen *seen, const char *text, size_t length)
{
    put(seen, "\"", 1);
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 || c == '"' || c == '\\') {
            char escaped[8];
            snprintf(escaped, sizeof escaped, "\\x%02x", c);
            put(seen, escaped, 4);
        } else {
            put(seen, text + i, 1);
        }
    }
    put(seen, "\"", 1);
}

static void put_value(struct seen *seen, const struct nvs_json *value)
{
    switch (value->type) {
    case NVS_JSON_NULL: put(seen, "null", 4); break;
    case NVS_JSON_FALSE: put(seen, "false", 5); break;
    case NVS_JSON_TRUE: put(seen, "true", 4); break;
    case NVS_JSON_NUMBER: put(seen, value->text, value->length); break;
    case NVS_JSON_STRING: put_string(seen, value->text, value->length); break;
    case NVS_JSON_ARRAY:
        put(seen, "[", 1);
        for (size_t i = 0; i < value->count; i++) {
            if (i)
                put(seen, ",", 1);
            put_value(seen, &value->items[i]);
        }
        put(seen, "]", 1);
        break;
    case NVS_JSON_OBJECT:
        put(seen, "{", 1);
        for (size_t i = 0; i < value->count; i++) {
            if (i)
                put(seen, ",", 1);
            put_string(seen, value->members[i].key, strlen(value->members[i].key));
            put(seen, ":", 1);
            put_value(seen, &value->members[i].value);
        }
        put(seen, "}", 1);
        break;
    }
}

static int on_event(const struct nvs_json *event, void *context)
{
    struct seen *seen = context;
    seen->events++;
    put_value(seen, event);
    put(seen, "\n", 1);
    if (seen->check && seen->check(event, seen))
        return 1;
    return seen->events == seen->stop_at ? 7 : 0;
}

struct outcome {
    int status;
    struct nvs_trace_read result;
    char error[256];
};

/* A text handed out STEP bytes a read, as a pipe may. */
struct chunks {
    const char *text;
    size_t length, at, step;
};

static long read_chunk(void *context, char *into, size_t size, char *error, size_t error_size)
{
    struct chunks *chunks = context;
    (void)error, (void)error_size;
    size_t n = chunks->length - chunks->at;
    if (n > chunks->step)
        n = chunks->step;
    if (n > size)
        n = size;
    memcpy(into, chunks->text + chunks->at, n);
    chunks->at += n;
    return (long)n;
}

/* TEXT parsed whole; and streamed in reads of 1, 7 and 4096 bytes, which must
 * see the same events and say the same (a failure counted where they do not). */
static struct outcome parse_length(const char *text, size_t length, struct seen *seen)
{
    struct outcome outcome;
    memset(seen->text, 0, sizeof seen->text);
    seen->used = seen->events = 0;
    outcome.status = nvs_trace_json_parse(text, length, on_event, seen, &outcome.result, outcome.error,
                                          sizeof outcome.error);
    static const size_t steps[] = {1, 7, 4096};
    for (size_t s = 0; s < sizeof steps / sizeof *steps; s++) {
        struct seen streamed = {.stop_at = seen->stop_at};   /* a check counts once, in the whole read */
        struct chunks chunks = {text, length, 0, steps[s]};
        struct nvs_source source = {read_chunk, &chunks, 0};
        struct outcome again;
        again.status = nvs_trace_json_read(&source, on_event, &streamed, &again.result, again.error,
                                           sizeof again.error);
        bool same = again.status == outcome.status && strcmp(streamed.text, seen->text) == 0 &&
                    again.result.events == outcome.result.events &&
                    again.result.bare_array == outcome.result.bare_array &&
                    again.result.cut_short == outcome.result.cut_short &&
                    again.result.last_incomplete == outcome.result.last_incomplete &&
                    (outcome.status != -1 || strcmp(again.error, outcome.error) == 0);
        if (!same) {
            failed++;
            printf("FAIL streamed in %zu-byte reads: status %d (%s) against %d (%s) for %.60s\n", steps[s],
                   again.status, again.error, outcome.status, outcome.error, text);
        }
    }
    return outcome;
}

static struct outcome parse(const char *text, struct seen *seen)
{
    return parse_length(text, strlen(text), seen);
}

/* TEXT read whole and complete: every event as WANTED has it, in order. */
static void check_read(const char *what, const char *text, const char *wanted, bool bare_array)
{
    struct seen seen = {0};
    struct outcome outcome = parse(text, &seen);
    if (outcome.status == 0 && strcmp(seen.text, wanted) == 0 && !outcome.result.cut_short &&
        !outcome.result.last_incomplete && outcome.result.bare_array == bare_array &&
        outcome.result.events == seen.events) {
        passed++;
        return;
    }
    failed++;
    printf("FAIL %s: status %d (%s), cut_short %d, bare_array %d\n  got    %s\n  wanted %s\n", what,
           outcome.status, outcome.error, outcome.result.cut_short, outcome.result.bare_array, seen.text,
           wanted);
}

/* TEXT refused with an error that contains MESSAGE. */
static void check_refused(const char *what, const char *text, size_t length, const char *message)
{
    struct seen seen = {0};
    struct outcome outcome = parse_length(text, length, &seen);
    if (outcome.status == -1 && strstr(outcome.error, message)) {
        passed++;
        return;
    }
    failed++;
    printf("FAIL %s: status %d, error \"%s\", wanted one with \"%s\"\n", what, outcome.status,
           outcome.error, message);
}

/* ---- well-formed traces ----------------------------------------------------------- */

static void test_bare_array(void)
{
    check_read("bare array",
               "[\n{\"name\":\"frame 1\",\"cat\":\"nvtxshim\",\"ph\":\"X\",\"ts\":830633901.112,"
               "\"dur\":16.5,\"pid\":5304,\"tid\":5304},\n"
               "{\"name\":\"mark\",\"ph\":\"i\",\"ts\":3,\"s\":\"t\"}\n]\n",
               "{\"name\":\"frame 1\",\"cat\":\"nvtxshim\",\"ph\":\"X\",\"ts\":830633901.112,"
               "\"dur\":16.5,\"pid\":5304,\"tid\":5304}\n"
               "{\"name\":\"mark\",\"ph\":\"i\",\"ts\":3,\"s\":\"t\"}\n", true);
    check_read("empty array", "[]", "", true);
    check_read("blank around", " \t\r\n[ ] \n", "", true);
    check_read("byte order mark", "\xEF\xBB\xBF[{}]", "{}\n", true);
    check_read("any value is an event", "[1,\"two\",[3],null,true,false]",
               "1\n\"two\"\n[3]\nnull\ntrue\nfalse\n", true);
    check_read("a trailing comma before the close", "[{\"a\":1},\n]", "{\"a\":1}\n", true);
}

static void test_trace_events_object(void)
{
    check_read("traceEvents", "{\"traceEvents\":[{\"a\":1},{\"b\":2}]}", "{\"a\":1}\n{\"b\":2}\n",
               false);
    check_read("members before and after traceEvents",
               "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"x\":[1,{\"y\":2}]},"
               "\"traceEvents\":[{\"a\":1}],\"systemTraceEvents\":\"\"}",
               "{\"a\":1}\n", false);
    check_read("empty traceEvents", "{\"traceEvents\":[]}", "", false);
}

/* ---- values --------------------------------------------------------------------------- */

static void test_numbers_as_written(void)
{
    check_read("numbers keep their source text",
               "[0,-12,3.25,1e3,-2.5E-2,6.02e+23,830634154.324,-0.0]",
               "0\n-12\n3.25\n1e3\n-2.5E-2\n6.02e+23\n830634154.324\n-0.0\n", true);
    check_refused("a minus alone", "[-]", 3, "a number needs a digit");
    check_refused("a point first", "[.5]", 4, "a number needs a digit");
    check_refused("nothing after the point", "[1.]", 4, "a digit after its point");
    check_refused("an empty exponent", "[1e+]", 5, "a digit in its exponent");
}

struct number_case {
    const char *text;
    bool int_ok;
    int64_t integer;
    bool microseconds_ok;
    int64_t nanoseconds;
};

static const struct number_case number_cases[] = {
    {"0", true, 0, true, 0},
    {"-5", true, -5, true, -5000},
    {"12.7", true, 12, true, 12700},
    {"830634154.324", true, 830634154, true, 830634154324},
    {"1.2345", true, 1, true, 1235},        /* the fourth decimal rounds */
    {"1.2344", true, 1, true, 1234},
    {"-0.5", true, 0, true, -500},
    {"1e3", true, 1000, true, 1000000},
    {"2.5e-1", true, 0, true, 250},
    {"9223372036854775807", true, INT64_MAX, false, 0},
    {"-9223372036854775807", true, -INT64_MAX, false, 0},
    {"9223372036854775808", false, 0, false, 0},
    {"1e300", false, 0, false, 0},
};

static size_t number_index;

static int check_number(const struct nvs_json *event, struct seen *seen)
{
    (void)seen;
    const struct number_case *want = &number_cases[number_index++];
    int64_t integer = 0, nanoseconds = 0;
    bool int_ok = nvs_json_int64(event, &integer);
    bool microseconds_ok = nvs_json_microseconds(event, &nanoseconds);
    bool good = int_ok == want->int_ok && (!int_ok || integer == want->integer) &&
                microseconds_ok == want->microseconds_ok &&
                (!microseconds_ok || nanoseconds == want->nanoseconds);
    if (good) {
        passed++;
    } else {
        failed++;
        printf("FAIL number %s: int64 %d %lld, microseconds %d %lld\n", want->text, int_ok,
               (long long)integer, microseconds_ok, (long long)nanoseconds);
    }
    return 0;
}

static void test_numbers_as_values(void)
{
    char text[1024] = "[";
    size_t count = sizeof number_cases / sizeof number_cases[0];
    for (size_t i = 0; i < count; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s", i ? "," : "",
                 number_cases[i].text);
    strcat(text, "]");
    struct seen seen = {.check = check_number};
    number_index = 0;
    struct outcome outcome = parse(text, &seen);
    CHECK(outcome.status == 0 && number_index == count);

    double value = 0;
    struct nvs_json number = {.type = NVS_JSON_NUMBER, .text = "-2.5E-2", .length = 7};
    CHECK(nvs_json_double(&number, &value) && value == -0.025);
    number.length = 4; /* "-2.5": the text is not NUL-terminated, its length counts */
    CHECK(nvs_json_double(&number, &value) && value == -2.5);
    struct nvs_json string = {.type = NVS_JSON_STRING, .text = "12", .length = 2};
    int64_t integer;
    CHECK(!nvs_json_double(&string, &value) && !nvs_json_int64(&string, &integer) &&
          !nvs_json_microseconds(&string, &integer));
    CHECK(!nvs_json_int64(NULL, &integer));
}

/* The decoded text is NUL-terminated at an escaped NUL, its length whole. */
static int check_escaped_nul(const struct nvs_json *event, struct seen *seen)
{
    (void)seen;
    CHECK(event->type == NVS_JSON_STRING && event->length == 3 && strlen(event->text) == 1 &&
          event->text[2] == 'b' && event->text[3] == '\0');
    return 0;
}

static void test_strings_and_escapes(void)
{
    check_read("simple escapes", "[\"q\\\"b\\\\s\\/b\\bf\\fn\\nr\\rt\\t\"]",
               "\"q\\x22b\\x5cs/b\\x08f\\x0cn\\x0ar\\x0dt\\x09\"\n", true);
    check_read("unicode escapes", "[\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\"]",
               "\"A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"\n", true);
    check_read("a lone high surrogate", "[\"\\ud800x\"]", "\"\xEF\xBF\xBDx\"\n", true);
    check_read("a lone low surrogate", "[\"\\udc00\"]", "\"\xEF\xBF\xBD\"\n", true);
    check_read("a high surrogate before another escape", "[\"\\ud83d\\u0041\"]",
               "\"\xEF\xBF\xBD" "A\"\n", true);
    check_read("an escaped NUL keeps the rest in length", "[\"a\\u0000b\"]", "\"a\\x00b\"\n", true);
    check_read("UTF-8 as it is, and bytes that are not UTF-8 kept",
               "[\"caf\xC3\xA9 \xFF\xFE\"]", "\"caf\xC3\xA9 \xFF\xFE\"\n", true);
    check_read("escapes in member names", "[{\"a\\\"b\\u0063\":\"\"}]",
               "{\"a\\x22bc\":\"\"}\n", true);
    check_refused("an unknown escape", "[\"\\x41\"]", 8, "bad escape \\x");
    check_refused("a \\u escape with a non-hex digit", "[\"\\u12g4\"]", 10, "bad \\u escape");
    check_refused("a \\u escape cut by the quote", "[\"\\u12\"]", 8, "bad \\u escape");

    struct seen seen = {.check = check_escaped_nul};
    struct outcome outcome = parse("[\"a\\u0000b\"]", &seen);
    CHECK(outcome.status == 0 && seen.events == 1);
}

static int check_nested(const struct nvs_json *event, struct seen *seen)
{
    (void)seen;
    const struct nvs_json *args = nvs_json_get(event, "args");
    CHECK(args && args->type == NVS_JSON_OBJECT && args->count == 4);
    int64_t payload = 0;
    CHECK(nvs_json_int64(nvs_json_get(args, "payload"), &payload) && payload == 7);
    const struct nvs_json *inner = nvs_json_get(args, "inner");
    CHECK(inner && inner->type == NVS_JSON_OBJECT);
    CHECK(nvs_json_get_string(inner, "s") && strcmp(nvs_json_get_string(inner, "s"), "t") == 0);
    const struct nvs_json *list = nvs_json_get(inner, "list");
    CHECK(list && list->type == NVS_JSON_ARRAY && list->count == 4);
    if (list && list->type == NVS_JSON_ARRAY && list->count == 4) {
        CHECK(list->items[1].type == NVS_JSON_ARRAY && list->items[1].count == 2);
        const struct nvs_json *deepest = &list->items[1].items[1];
        CHECK(deepest->type == NVS_JSON_OBJECT && nvs_json_get(deepest, "x") &&
              nvs_json_get(deepest, "x")->type == NVS_JSON_NULL);
        CHECK(list->items[2].type == NVS_JSON_TRUE && list->items[3].type == NVS_JSON_FALSE);
    }
    /* The last of two members of one name, as most readers take it. */
    CHECK(nvs_json_get_string(args, "twice") && strcmp(nvs_json_get_string(args, "twice"), "2") == 0);
    CHECK(!nvs_json_get(args, "absent") && !nvs_json_get_string(inner, "list"));
    CHECK(!nvs_json_get(list, "s") && !nvs_json_get(NULL, "s"));
    return 0;
}

static void test_nested_args(void)
{
    const char *text = "[{\"name\":\"n\",\"ph\":\"X\",\"args\":{\"payload\":7,\"twice\":\"1\","
                       "\"inner\":{\"list\":[1,[2,{\"x\":null}],true,false],\"s\":\"t\"},"
                       "\"twice\":\"2\"}}]";
    check_read("nested args", text,
               "{\"name\":\"n\",\"ph\":\"X\",\"args\":{\"payload\":7,\"twice\":\"1\","
               "\"inner\":{\"list\":[1,[2,{\"x\":null}],true,false],\"s\":\"t\"},"
               "\"twice\":\"2\"}}\n", true);
    struct seen seen = {.check = check_nested};
    struct outcome outcome = parse(text, &seen);
    CHECK(outcome.status == 0 && seen.events == 1);
}

/* ---- traces cut short ------------------------------------------------------------------ */

/* TEXT, cut short, read up to its last complete event: WANTED those events. */
static void check_cut(const char *what, const char *text, const char *wanted, bool incomplete)
{
    struct seen seen = {0};
    struct outcome outcome = parse(text, &seen);
    if (outcome.status == 0 && outcome.result.cut_short && outcome.result.last_incomplete == incomplete &&
        strcmp(seen.text, wanted) == 0) {
        passed++;
        return;
    }
    failed++;
    printf("FAIL %s: status %d (%s), cut_short %d, last_incomplete %d\n  got    %s\n  wanted %s\n",
           what, outcome.status, outcome.error, outcome.result.cut_short, outcome.result.last_incomplete,
           seen.text, wanted);
}

static void test_cut_short(void)
{
    check_cut("after a comma", "[{\"a\":1},{\"b\":2},", "{\"a\":1}\n{\"b\":2}\n", false);
    check_cut("after a comma and padding", "[{\"a\":1},\n        \n", "{\"a\":1}\n", false);
    check_cut("after an event", "[{\"a\":1}", "{\"a\":1}\n", false);
    check_cut("after the opening bracket", "[", "", false);
    check_cut("inside a member name", "[{\"a\":1},{\"na", "{\"a\":1}\n", true);
    check_cut("after a member name", "[{\"a\":1},{\"b\":", "{\"a\":1}\n", true);
    check_cut("inside a string", "[{\"a\":1},{\"b\":\"xy", "{\"a\":1}\n", true);
    check_cut("inside an escape", "[{\"a\":1},{\"b\":\"x\\", "{\"a\":1}\n", true);
    check_cut("inside a \\u escape", "[{\"a\":1},{\"b\":\"\\u00", "{\"a\":1}\n", true);
    check_cut("a number at the end, which may go on", "[{\"a\":1},{\"b\":12", "{\"a\":1}\n", true);
    check_cut("inside a literal", "[{\"a\":1},{\"b\":tr", "{\"a\":1}\n", true);
    check_cut("inside nested args", "[{\"a\":1},{\"args\":{\"l\":[1,{\"x\":", "{\"a\":1}\n", true);
    check_cut("traceEvents after a comma", "{\"traceEvents\":[{\"a\":1},", "{\"a\":1}\n", false);
    check_cut("traceEvents without its closing brace", "{\"traceEvents\":[{\"a\":1}]",
              "{\"a\":1}\n", false);

    /* Every cut of a whole trace reads: the events complete before the cut, no more. */
    static const char trace[] =
        "[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"p\\\"q\"}},\n"
        "{\"name\":\"x \\u00e9\",\"cat\":\"usb\",\"ph\":\"X\",\"ts\":12.345,\"dur\":1.5,\"pid\":1,"
        "\"tid\":2,\"args\":{\"payload\":-3,\"ok\":true,\"none\":null,\"f\":false}},\n"
        "{\"name\":\"m\",\"ph\":\"i\",\"ts\":1e2,\"pid\":1,\"tid\":2,\"args\":{\"l\":[[],{}]}}\n]\n";
    size_t length = sizeof trace - 1;
    size_t ends[3], found = 0;
    for (size_t i = 0; i < length && found < 3; i++)
        if (trace[i] == '\n' && i > 1)
            ends[found++] = i - (trace[i - 1] == ',' ? 1 : 0); /* just after each event's '}' */
    bool all_good = found == 3;
    for (size_t cut = 1; cut < length && all_good; cut++) {
        char *copy = malloc(cut); /* exactly CUT bytes: ASan sees any read past them */
        if (!copy)
            return;
        memcpy(copy, trace, cut);
        struct seen seen = {0};
        struct outcome outcome = parse_length(copy, cut, &seen);
        free(copy);
        size_t complete = 0;
        for (size_t e = 0; e < 3; e++)
            complete += ends[e] <= cut;
        bool closed = cut >= length - 1; /* the closing ] is there */
        bool good = outcome.status == 0 && outcome.result.cut_short == !closed &&
                    seen.events == complete;
        if (!good) {
            printf("FAIL cut at %zu: status %d (%s), %zu events (wanted %zu), cut_short %d\n", cut,
                   outcome.status, outcome.error, seen.events, complete, outcome.result.cut_short);
            all_good = false;
        }
    }
    CHECK(all_good);
}

/* ---- refusals ------------------------------------------------------------------------ */

static void test_garbage_refused(void)
{
    check_refused("empty", "", 0, "empty file");
    check_refused("blank", " \n\t", 3, "empty file");
    check_refused("not JSON", "hello", 5, "a trace file starts with '{' or '['");
    check_refused("binary", "\0\1\2\3", 4, "a trace file starts with");
    check_refused("a member name without quotes", "[{a:1}]", 7, "expected a member name in quotes");
    check_refused("no colon", "[{\"a\" 1}]", 9, "expected ':' after a member name");
    check_refused("two values in an array", "[[1 2]]", 7, "expected ',' or ']' in an array");
    check_refused("two values in an object", "[{\"a\":1 \"b\":2}]", 15,
                  "expected ',' or '}' in an object");
    check_refused("a closing brace for the array", "[\n{\"a\":1}\n}", 11,
                  "not JSON at line 3, column 1: expected ',' or ']' after an event");
    check_refused("a misspelt literal", "[nul]", 5, "unexpected character 'n'");
    check_refused("a word", "[yes]", 5, "a number needs a digit");
    check_refused("no traceEvents", "{\"other\":[1]}", 13, "no traceEvents array");
    check_refused("text after the trace", "{\"traceEvents\":[1]} x", 21,
                  "text after the end of the trace");
    check_refused("traceEvents not an array", "{\"traceEvents\":1}", 17, "no traceEvents array");

    /* Bytes from a generator: each text is read or refused, and nothing else happens. */
    uint32_t state = 12345;
    static const char alphabet[] = "[]{}\",:\\u0123456789.eE+-tfnrlasx \n\xC3\xA9\xFF";
    bool all_ended = true;
    for (int round = 0; round < 20000; round++) {
        char text[48];
        size_t length = 1 + round % (sizeof text - 1);
        for (size_t i = 0; i < length; i++) {
            state = state * 1664525u + 1013904223u;
            text[i] = alphabet[(state >> 16) % (sizeof alphabet - 1)];
        }
        text[0] = round % 2 ? '[' : text[0];
        char *copy = malloc(length);
        if (!copy)
            return;
        memcpy(copy, text, length);
        struct seen seen = {0};
        struct outcome outcome = parse_length(copy, length, &seen);
        free(copy);
        all_ended &= outcome.status == 0 || (outcome.status == -1 && outcome.error[0]);
    }
    CHECK(all_ended);
}

static char *repeated(const char *piece, size_t times, const char *middle, const char *close,
                      size_t *length)
{
    size_t piece_length = strlen(piece), middle_length = strlen(middle), close_length = strlen(close);
    *length = 1 + times * (piece_length + close_length) + middle_length + 1;
    char *text = malloc(*length + 1);
    if (!text)
        return NULL;
    char *p = text;
    *p++ = '[';
    for (size_t i = 0; i < times; i++, p += piece_length)
        memcpy(p, piece, piece_length);
    memcpy(p, middle, middle_length);
    p += middle_length;
    for (size_t i = 0; i < times; i++, p += close_length)
        memcpy(p, close, close_length);
    *p++ = ']';
    *p = '\0';
    return text;
}

static void test_deep_nesting(void)
{
    /* An event nested 128 values deep is read (127 arrays around a number); 129, refused. */
    size_t length;
    char *text = repeated("[", 127, "1", "]", &length);
    struct seen seen = {0};
    struct outcome outcome = text ? parse_length(text, length, &seen) : (struct outcome){.status = -2};
    CHECK(outcome.status == 0 && seen.events == 1);
    free(text);
    text = repeated("[", 128, "1", "]", &length);
    if (text)
        check_refused("129 values deep", text, length, "nested deeper than 128");
    free(text);
    /* Far deeper, in arrays and objects, closed or not: refused, the stack intact. */
    text = repeated("{\"a\":", 100000, "1", "}", &length);
    if (text)
        check_refused("100000 nested objects", text, length, "nested deeper than 128");
    free(text);
    text = repeated("[", 1000000, "", "", &length);
    if (text)
        check_refused("1000000 brackets, never closed", text, length - 1, "nested deeper than 128");
    free(text);
}

/* ---- the callback, and files ------------------------------------------------------------ */

static void test_callback_stops_the_reading(void)
{
    struct seen seen = {.stop_at = 2};
    struct outcome outcome = parse("[1,2,3,4]", &seen);
    CHECK(outcome.status == 7 && seen.events == 2 && outcome.result.events == 2);
    CHECK(strcmp(seen.text, "1\n2\n") == 0);
}

/* A trace cut short and an empty one, as the reader gets them from load.c (the
 * file's own errors, a missing file or a directory, are input.c's: the
 * command's tests see them). */
static void test_cut_short_and_empty(void)
{
    static const char text[] = "[{\"name\":\"a\",\"ts\":1},\n{\"name\":\"b\",\"ts\":2},\n";
    struct seen seen = {0};
    struct nvs_trace_read result;
    char error[256];
    CHECK(nvs_trace_json_parse(text, sizeof text - 1, on_event, &seen, &result, error, sizeof error) == 0);
    CHECK(result.events == 2 && result.bare_array && result.cut_short && !result.last_incomplete);
    CHECK(strcmp(seen.text, "{\"name\":\"a\",\"ts\":1}\n{\"name\":\"b\",\"ts\":2}\n") == 0);
    CHECK(nvs_trace_json_parse("", 0, on_event, &seen, &result, error, sizeof error) == -1 &&
          strcmp(error, "empty file") == 0);
}

/* ---- the writing side: quoting and building text ------------------------------------------ */

static void test_quote_and_text(void)
{
    char out[64];
    const char *quoted = "\"a\\\"b\\\\c\\u000a\\u007f\xC3\xA9\\ufffd\"";
    CHECK(nvs_json_quote(out, sizeof out, "a\"b\\c\n\x7f\xC3\xA9\xFF") == strlen(quoted) &&
          strcmp(out, quoted) == 0);
    CHECK(nvs_json_quote(out, 5, "abcdef") == 5);
    CHECK(nvs_json_utf8_length("\xC3\xA9") == 2 && nvs_json_utf8_length("\xF0\x9F\x98\x80") == 4);
    CHECK(nvs_json_utf8_length("\xC0\x80") == 0 && nvs_json_utf8_length("\xED\xA0\x80") == 0 &&
          nvs_json_utf8_length("\xF4\x90\x80\x80") == 0 && nvs_json_utf8_length("\xC3(") == 0);

    struct nvs_json_text text = {0};
    nvs_json_text_add_string_member(&text, "category", "a\"b");
    nvs_json_text_add(&text, ",\"payload\":%d", 42);
    nvs_json_text_add_string_member(&text, "dst", "\xFF");
    CHECK(!text.failed && text.bytes &&
          strcmp(text.bytes, "\"category\":\"a\\\"b\",\"payload\":42,\"dst\":\"\\ufffd\"") == 0 &&
          text.length == strlen(text.bytes));
    text.length = 0;
    for (int i = 0; i < 1000; i++)
        nvs_json_text_add(&text, "%s%d", i ? "," : "", i);
    CHECK(!text.failed && text.length == strlen(text.bytes) && strncmp(text.bytes, "0,1,2,", 6) == 0 &&
          strcmp(text.bytes + text.length - 4, ",999") == 0);
    free(text.bytes);
}

int main(void)
{
    test_bare_array();
    test_trace_events_object();
    test_numbers_as_written();
    test_numbers_as_values();
    test_strings_and_escapes();
    test_nested_args();
    test_cut_short();
    test_garbage_refused();
    test_deep_nesting();
    test_callback_stops_the_reading();
    test_cut_short_and_empty();
    test_quote_and_text();
    return check_summary(NULL);
}
