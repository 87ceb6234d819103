/* Unit tests of the JSON trace encoder (libnvtxshim/recorder/encode_json.c), run alone:
 * each event is encoded into a buffer and compared with the text a reader
 * must see. The encoder is pure, so no file and no NVTX are involved.
 *   test_trace_json        every case below but the next
 *   test_trace_json utf8   names that are not UTF-8 (test_trace_encoder.py
 *                          expects these to fail until the encoder makes UTF-8
 *                          of them) */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "recorder/trace.h"

/* OUT..END as text must equal WANTED. */
static void check_text(const char *what, const char *out, const char *end, const char *wanted)
{
    size_t length = (size_t)(end - out);
    if (length == strlen(wanted) && memcmp(out, wanted, length) == 0) {
        passed++;
        return;
    }
    failed++;
    printf("FAIL %s:\n  got    %.*s\n  wanted %s\n", what, (int)length, out, wanted);
}

/* TEXT..END with bytes past ASCII, and newlines, as \xNN. */
static void print_escaped(const char *text, const char *end)
{
    for (const char *c = text; c < end; c++)
        printf((unsigned char)*c < 0x80 && *c != '\n' ? "%c" : "\\x%02x", (unsigned char)*c);
    printf("\n");
}

/* Strict UTF-8: no stray continuation byte, no overlong form, no surrogate, nothing past
 * U+10FFFF, no sequence cut short. */
static bool valid_utf8(const unsigned char *text, size_t length)
{
    for (size_t i = 0; i < length;) {
        unsigned char c = text[i];
        size_t more;
        uint32_t code, least;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xc2 && c <= 0xdf) { more = 1; code = c & 0x1f; least = 0x80; }
        else if (c >= 0xe0 && c <= 0xef) { more = 2; code = c & 0x0f; least = 0x800; }
        else if (c >= 0xf0 && c <= 0xf4) { more = 3; code = c & 0x07; least = 0x10000; }
        else return false;
        if (i + more >= length)
            return false;
        for (size_t k = 1; k <= more; k++) {
            if ((text[i + k] & 0xc0) != 0x80)
                return false;
            code = code << 6 | (text[i + k] & 0x3f);
        }
        if (code < least || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
            return false;
        i += more + 1;
    }
    return true;
}

static void check_utf8(const char *what, const char *encoded, const char *end)
{
    if (valid_utf8((const unsigned char *)encoded, (size_t)(end - encoded))) {
        passed++;
        return;
    }
    failed++;
    printf("FAIL %s: not UTF-8:\n  ", what);
    print_escaped(encoded, end);
}

static struct nvs_trace_domain usb = { .index = 1, .name = "usb" };
static struct nvs_trace_domain odd = { .index = 2, .name = "a \"quoted\"\\domain" };
static struct nvs_trace_thread_ids thread = { .pid = 42, .tid = 43 };
static char out[NVS_TRACE_EVENT_MAX + 256];

static struct nvs_trace_event event_named(const char *text, struct nvs_trace_domain *domain)
{
    struct nvs_trace_event event = { .start_ns = 1234567891, .domain = domain };
    event.text_length = (uint32_t)strlen(text);
    memcpy(event.text, text, event.text_length + 1);
    return event;
}

static void test_header_and_thread_names(void)
{
    check_text("header", out, nvs_trace_json.header(out, 42, "prog\"ram"),
               "[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":42,\"tid\":42,"
               "\"args\":{\"name\":\"prog\\\"ram\"}},\n");
    check_text("thread name", out, nvs_trace_json.thread_name(out, &thread, "cam\tera"),
               "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":42,\"tid\":43,"
               "\"args\":{\"name\":\"cam\\u0009era\"}},\n");
}

static void test_complete_inline_name(void)
{
    struct nvs_trace_event event = event_named("libusb_bulk_transfer ep=0x81 IN 9216B", &usb);
    event.payload_type = NVS_PAYLOAD_U64;
    event.payload = 9216;
    event.category = 1;
    check_text("complete, inline", out, nvs_trace_json.complete(out, &thread, &event, 1234568891),
               "{\"name\":\"libusb_bulk_transfer ep=0x81 IN 9216B\",\"cat\":\"usb\",\"ph\":\"X\","
               "\"ts\":1234567.891,\"dur\":1.000,\"pid\":42,\"tid\":43,"
               "\"args\":{\"payload\":9216,\"category\":1}},\n");
}

static void test_complete_registered_name_is_the_same_text(void)
{
    static struct nvs_trace_string string;
    const char *text = "XFlush";
    string.length = (uint32_t)strlen(text);
    memcpy(string.text, text, string.length + 1);
    nvs_trace_json.prepare_string(&string);
    struct nvs_trace_event event = { .start_ns = 98765432109876ull, .domain = &usb,
                                     .registered = &string, .category = 2 };
    const char *wanted = "{\"name\":\"XFlush\",\"cat\":\"usb\",\"ph\":\"X\",\"ts\":98765432109.876,"
                         "\"dur\":12345.678,\"pid\":42,\"tid\":43,\"args\":{\"category\":\"events\"}},\n";
    /* Twice: the first makes the cached shape, the second copies it; a third
     * after the timestamp's high digits change. */
    for (int round = 0; round < 2; round++)
        check_text("complete, registered", out,
                   nvs_trace_json.complete(out, &thread, &event, event.start_ns + 12345678), wanted);
    event.start_ns += 20000000000ull;
    event.payload_type = NVS_PAYLOAD_U64;
    event.payload = 7;
    check_text("complete, registered, later, payload", out,
               nvs_trace_json.complete(out, &thread, &event, event.start_ns + 5),
               "{\"name\":\"XFlush\",\"cat\":\"usb\",\"ph\":\"X\",\"ts\":98785432109.876,"
               "\"dur\":0.005,\"pid\":42,\"tid\":43,\"args\":{\"category\":\"events\",\"payload\":7}},\n");
}

static void test_async_pair_of_a_registered_name(void)
{
    static struct nvs_trace_string string;
    const char *text = "libusb_submit_transfer ep=0x81 BULK IN 9216B";
    string.length = (uint32_t)strlen(text);
    memcpy(string.text, text, string.length + 1);
    nvs_trace_json.prepare_string(&string);
    struct nvs_trace_event event = { .start_ns = 5000000000ull, .domain = &usb,
                                     .registered = &string, .category = 1,
                                     .payload_type = NVS_PAYLOAD_U64, .payload = 9216 };
    /* The first makes the cached text, the others copy it with their phase. */
    check_text("complete, to make the shape", out,
               nvs_trace_json.complete(out, &thread, &event, 5000000100ull),
               "{\"name\":\"libusb_submit_transfer ep=0x81 BULK IN 9216B\",\"cat\":\"usb\","
               "\"ph\":\"X\",\"ts\":5000000.000,\"dur\":0.100,\"pid\":42,\"tid\":43,"
               "\"args\":{\"category\":1,\"payload\":9216}},\n");
    check_text("begin, registered", out, nvs_trace_json.begin(out, &thread, &event, 77),
               "{\"name\":\"libusb_submit_transfer ep=0x81 BULK IN 9216B\",\"cat\":\"usb\","
               "\"ph\":\"b\",\"ts\":5000000.000,\"pid\":42,\"tid\":43,\"id\":77,"
               "\"args\":{\"category\":1,\"payload\":9216}},\n");
    check_text("end, registered", out, nvs_trace_json.end(out, &thread, &event, 77, 5000002000ull, NULL, false),
               "{\"name\":\"libusb_submit_transfer ep=0x81 BULK IN 9216B\",\"cat\":\"usb\","
               "\"ph\":\"e\",\"ts\":5000002.000,\"pid\":42,\"tid\":43,\"id\":77},\n");
}

static void test_async_pair(void)
{
    struct nvs_trace_event event = event_named("frame 7", &usb);
    event.payload_type = NVS_PAYLOAD_U64;
    event.payload = 7;
    const struct nvs_trace_args figures = { 2, { { "offcpu_blocked_ns", 12 }, { "usb_urbs", 0 } } };
    const struct nvs_trace_args none = { 0 };
    check_text("begin", out, nvs_trace_json.begin(out, &thread, &event, 5),
               "{\"name\":\"frame 7\",\"cat\":\"usb\",\"ph\":\"b\",\"ts\":1234567.891,\"pid\":42,"
               "\"tid\":43,\"id\":5,\"args\":{\"payload\":7}},\n");
    check_text("end with args", out,
               nvs_trace_json.end(out, &thread, &event, 5, 2234567891, &figures, false),
               "{\"name\":\"frame 7\",\"cat\":\"usb\",\"ph\":\"e\",\"ts\":2234567.891,\"pid\":42,"
               "\"tid\":43,\"id\":5,\"args\":{\"offcpu_blocked_ns\":12,\"usb_urbs\":0}},\n");
    check_text("end without args", out, nvs_trace_json.end(out, &thread, &event, 5, 2234567891, &none, false),
               "{\"name\":\"frame 7\",\"cat\":\"usb\",\"ph\":\"e\",\"ts\":2234567.891,\"pid\":42,"
               "\"tid\":43,\"id\":5},\n");
}

static void test_mark_keeps_its_colour_and_payload_kinds(void)
{
    struct nvs_trace_event event = event_named("short transfer", &odd);
    event.color = 0xd50000;
    event.payload_type = NVS_PAYLOAD_DOUBLE;
    double value = 1.0 / 0.0;
    memcpy(&event.payload, &value, sizeof value);
    check_text("mark", out, nvs_trace_json.mark(out, &thread, &event),
               "{\"name\":\"short transfer\",\"cat\":\"a \\\"quoted\\\"\\\\domain\",\"ph\":\"i\","
               "\"s\":\"t\",\"ts\":1234567.891,\"pid\":42,\"tid\":43,"
               "\"args\":{\"payload\":\"inf\",\"color\":\"#d50000\"}},\n");
    event.payload_type = NVS_PAYLOAD_I32;
    event.payload = (uint32_t)-5;
    event.color = 0;
    check_text("mark, int32", out, nvs_trace_json.mark(out, &thread, &event),
               "{\"name\":\"short transfer\",\"cat\":\"a \\\"quoted\\\"\\\\domain\",\"ph\":\"i\","
               "\"s\":\"t\",\"ts\":1234567.891,\"pid\":42,\"tid\":43,\"args\":{\"payload\":-5}},\n");
}

static void test_control_characters_and_long_names(void)
{
    struct nvs_trace_event event = event_named("a\nb", &usb);
    check_text("newline escaped", out, nvs_trace_json.mark(out, &thread, &event),
               "{\"name\":\"a\\u000ab\",\"cat\":\"usb\",\"ph\":\"i\",\"s\":\"t\",\"ts\":1234567.891,"
               "\"pid\":42,\"tid\":43,\"args\":{}},\n");
    /* The longest name, all escapes: the event stays within NVS_TRACE_EVENT_MAX
     * and has exactly one newline, its last byte (the writer's event boundary). */
    memset(event.text, '"', NVS_TRACE_TEXT_MAX - 1);
    event.text[NVS_TRACE_TEXT_MAX - 1] = '\0';
    event.text_length = NVS_TRACE_TEXT_MAX - 1;
    /* ... with the most args, the longest keys and the largest numbers. */
    static char key[NVS_TRACE_KEY_MAX];
    memset(key, 'k', sizeof key - 1);
    struct nvs_trace_args most = { .count = NVS_TRACE_ARGS_MAX };
    for (unsigned i = 0; i < NVS_TRACE_ARGS_MAX; i++)
        most.member[i].key = key, most.member[i].value = UINT64_MAX;
    char *end = nvs_trace_json.end(out, &thread, &event, 1, 1, &most, false);
    CHECK((size_t)(end - out) <= NVS_TRACE_EVENT_MAX);
    CHECK(memchr(out, '\n', (size_t)(end - out)) == end - 1);
}

/* ---- names: every byte a reader needs escaped, and the rest as it is -------------- */

static void test_names_are_escaped(void)
{
    /* A quote, a backslash, a slash (left alone), control bytes at both ends of the range,
     * DEL (allowed in JSON), and UTF-8 of two, three and four bytes, kept as they are. */
    struct nvs_trace_event event = event_named("q\"b\\s/\x01\x1f\x7f \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", &usb);
    char *end = nvs_trace_json.mark(out, &thread, &event);
    check_utf8("mark, escapes", out, end);  /* and the UTF-8 check itself knows UTF-8 */
    CHECK(!valid_utf8((const unsigned char *)"\xc3", 1) && !valid_utf8((const unsigned char *)"\xe0\x80\x80", 3));
    check_text("mark, escapes", out, end,
               "{\"name\":\"q\\\"b\\\\s/\\u0001\\u001f\x7f \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\","
               "\"cat\":\"usb\",\"ph\":\"i\",\"s\":\"t\",\"ts\":1234567.891,\"pid\":42,\"tid\":43,"
               "\"args\":{}},\n");
    /* Every control byte is \u00XX, lower-case hex. */
    char text[32], wanted[32 * 6 + 1];
    size_t used = 0;
    for (int c = 1; c < 0x20; c++) {
        text[c - 1] = (char)c;
        used += (size_t)snprintf(wanted + used, sizeof wanted - used, "\\u%04x", c);
    }
    text[0x1f] = '\0';
    event = event_named(text, &usb);
    end = nvs_trace_json.complete(out, &thread, &event, event.start_ns);
    const char *name = out + strlen("{\"name\":\"");
    CHECK(end > name && (size_t)(end - name) > used && memcmp(name, wanted, used) == 0 &&
          name[used] == '"');
}

/* A registered name is escaped once, when registered, and every event of it carries that. */
static void test_registered_names_are_escaped(void)
{
    static struct nvs_trace_string string;
    const char *text = "say \"hi\"\\\n";
    string.length = (uint32_t)strlen(text);
    memcpy(string.text, text, string.length + 1);
    nvs_trace_json.prepare_string(&string);
    struct nvs_trace_event event = { .start_ns = 3000000000ull, .domain = &usb, .registered = &string };
    for (int round = 0; round < 2; round++)
        check_text("complete, registered, escaped", out,
                   nvs_trace_json.complete(out, &thread, &event, 3000000250ull),
                   "{\"name\":\"say \\\"hi\\\"\\\\\\u000a\",\"cat\":\"usb\",\"ph\":\"X\","
                   "\"ts\":3000000.000,\"dur\":0.250,\"pid\":42,\"tid\":43,\"args\":{}},\n");
    check_text("begin, registered, escaped", out, nvs_trace_json.begin(out, &thread, &event, 9),
               "{\"name\":\"say \\\"hi\\\"\\\\\\u000a\",\"cat\":\"usb\",\"ph\":\"b\","
               "\"ts\":3000000.000,\"pid\":42,\"tid\":43,\"id\":9,\"args\":{}},\n");
    check_text("mark, registered, escaped", out, nvs_trace_json.mark(out, &thread, &event),
               "{\"name\":\"say \\\"hi\\\"\\\\\\u000a\",\"cat\":\"usb\",\"ph\":\"i\",\"s\":\"t\","
               "\"ts\":3000000.000,\"pid\":42,\"tid\":43,\"args\":{}},\n");
}

/* The longest name, all control bytes: cut at a whole escape (85 of them fill 510 of the
 * 512 bytes a name may take), never in the middle of one. */
static void test_a_long_name_is_cut_between_escapes(void)
{
    struct nvs_trace_event event = event_named("", &usb);
    memset(event.text, '\x01', NVS_TRACE_TEXT_MAX - 1);
    event.text[NVS_TRACE_TEXT_MAX - 1] = '\0';
    event.text_length = NVS_TRACE_TEXT_MAX - 1;
    char *end = nvs_trace_json.mark(out, &thread, &event);
    const char *name = out + strlen("{\"name\":\"");
    size_t length = (size_t)((const char *)memchr(name, '"', (size_t)(end - name)) - name);
    CHECK(length == 85 * 6);
    for (size_t at = 0; at + 6 <= length; at += 6)
        if (memcmp(name + at, "\\u0001", 6)) {
            CHECK(!"an escape cut or changed");
            break;
        }
}

/* ---- categories ------------------------------------------------------------------ */

static void test_category_names(void)
{
    static struct nvs_trace_domain domain = { .index = 3, .name = "cats" };
    nvs_trace_json.prepare_domain(&domain);
    nvs_trace_json.prepare_category(&domain, 5, "a \"b\"\\c");
    atomic_fetch_or(&domain.named_categories, 1ull << 5);
    struct nvs_trace_event event = event_named("step", &domain);
    event.category = 5;
    check_text("category name escaped", out, nvs_trace_json.mark(out, &thread, &event),
               "{\"name\":\"step\",\"cat\":\"cats\",\"ph\":\"i\",\"s\":\"t\",\"ts\":1234567.891,"
               "\"pid\":42,\"tid\":43,\"args\":{\"category\":\"a \\\"b\\\"\\\\c\"}},\n");
    /* Past the categories a domain can name: the number. */
    event.category = 100;
    check_text("category past the named ones", out, nvs_trace_json.mark(out, &thread, &event),
               "{\"name\":\"step\",\"cat\":\"cats\",\"ph\":\"i\",\"s\":\"t\",\"ts\":1234567.891,"
               "\"pid\":42,\"tid\":43,\"args\":{\"category\":100}},\n");

    /* A registered name's cached text made while its category had no name is made again
     * once the category is named. */
    static struct nvs_trace_string string;
    string.length = 4;
    memcpy(string.text, "late", 5);
    nvs_trace_json.prepare_string(&string);
    struct nvs_trace_event late = { .start_ns = 4000000000ull, .domain = &domain,
                                     .registered = &string, .category = 7 };
    check_text("registered, category unnamed", out,
               nvs_trace_json.complete(out, &thread, &late, 4000001000ull),
               "{\"name\":\"late\",\"cat\":\"cats\",\"ph\":\"X\",\"ts\":4000000.000,\"dur\":1.000,"
               "\"pid\":42,\"tid\":43,\"args\":{\"category\":7}},\n");
    nvs_trace_json.prepare_category(&domain, 7, "named later");
    atomic_fetch_or(&domain.named_categories, 1ull << 7);
    for (int round = 0; round < 2; round++)
        check_text("registered, category named since", out,
                   nvs_trace_json.complete(out, &thread, &late, 4000001000ull),
                   "{\"name\":\"late\",\"cat\":\"cats\",\"ph\":\"X\",\"ts\":4000000.000,\"dur\":1.000,"
                   "\"pid\":42,\"tid\":43,\"args\":{\"category\":\"named later\"}},\n");
    /* The same string with another category, colour or domain than its cached text: the
     * event says what it is, not what the cache holds. */
    late.category = 5;
    late.color = 0x123456;
    check_text("registered, other attributes", out,
               nvs_trace_json.complete(out, &thread, &late, 4000001000ull),
               "{\"name\":\"late\",\"cat\":\"cats\",\"ph\":\"X\",\"ts\":4000000.000,\"dur\":1.000,"
               "\"pid\":42,\"tid\":43,\"args\":{\"category\":\"a \\\"b\\\"\\\\c\"}},\n");
    late.domain = &usb;
    late.category = 0;
    check_text("registered, other domain", out,
               nvs_trace_json.complete(out, &thread, &late, 4000001000ull),
               "{\"name\":\"late\",\"cat\":\"usb\",\"ph\":\"X\",\"ts\":4000000.000,\"dur\":1.000,"
               "\"pid\":42,\"tid\":43,\"args\":{}},\n");
}

/* ---- payloads ---------------------------------------------------------------------- */

static void check_payload(enum nvs_trace_payload type, uint64_t bits, const char *wanted_value)
{
    char wanted[256];
    snprintf(wanted, sizeof wanted,
             "{\"name\":\"p\",\"cat\":\"usb\",\"ph\":\"i\",\"s\":\"t\",\"ts\":1234567.891,"
             "\"pid\":42,\"tid\":43,\"args\":{\"payload\":%s}},\n", wanted_value);
    struct nvs_trace_event event = event_named("p", &usb);
    event.payload_type = type;
    event.payload = bits;
    check_text(wanted_value, out, nvs_trace_json.mark(out, &thread, &event), wanted);
}

static uint64_t double_bits(double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

static uint64_t float_bits(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits | 0xdead000000000000ull;    /* the upper half is not the float's */
}

static void test_payload_types(void)
{
    check_payload(NVS_PAYLOAD_U64, 18446744073709551615ull, "18446744073709551615");
    check_payload(NVS_PAYLOAD_U64, 0, "0");
    check_payload(NVS_PAYLOAD_I64, (uint64_t)INT64_MIN, "-9223372036854775808");
    check_payload(NVS_PAYLOAD_I64, 42, "42");
    check_payload(NVS_PAYLOAD_U32, 0xffffffff00000007ull, "7");     /* the low 32 bits */
    check_payload(NVS_PAYLOAD_U32, 0xffffffffull, "4294967295");
    check_payload(NVS_PAYLOAD_I32, 0x80000000ull, "-2147483648");
    check_payload(NVS_PAYLOAD_I32, 0xffffffff0000002aull, "42");
    check_payload(NVS_PAYLOAD_DOUBLE, double_bits(0.1), "0.10000000000000001");
    check_payload(NVS_PAYLOAD_DOUBLE, double_bits(-2.5e-300), "-2.5e-300");
    check_payload(NVS_PAYLOAD_DOUBLE, double_bits(1e300), "1.0000000000000001e+300");
    /* JSON has no inf or nan: strings. */
    check_payload(NVS_PAYLOAD_DOUBLE, double_bits(-1.0 / 0.0), "\"-inf\"");
    check_payload(NVS_PAYLOAD_DOUBLE, double_bits(__builtin_nan("")), "\"nan\"");
    check_payload(NVS_PAYLOAD_FLOAT, float_bits(1.5f), "1.5");
    check_payload(NVS_PAYLOAD_FLOAT, float_bits(0.1f), "0.100000001");
    check_payload(NVS_PAYLOAD_FLOAT, float_bits(__builtin_inff()), "\"inf\"");
}

/* A registered name's cached text with each kind of payload after it. */
static void test_payloads_of_registered_names(void)
{
    static struct nvs_trace_string string;
    string.length = 3;
    memcpy(string.text, "reg", 4);
    nvs_trace_json.prepare_string(&string);
    struct nvs_trace_event event = { .start_ns = 6000000000ull, .domain = &usb,
                                     .registered = &string, .category = 2 };
    event.payload_type = NVS_PAYLOAD_DOUBLE;
    event.payload = double_bits(0.5);
    check_text("complete, registered, double", out,
               nvs_trace_json.complete(out, &thread, &event, 6000000001ull),
               "{\"name\":\"reg\",\"cat\":\"usb\",\"ph\":\"X\",\"ts\":6000000.000,\"dur\":0.001,"
               "\"pid\":42,\"tid\":43,\"args\":{\"category\":\"events\",\"payload\":0.5}},\n");
    event.payload_type = NVS_PAYLOAD_I64;
    event.payload = (uint64_t)-3;
    check_text("begin, registered, int64", out, nvs_trace_json.begin(out, &thread, &event, 11),
               "{\"name\":\"reg\",\"cat\":\"usb\",\"ph\":\"b\",\"ts\":6000000.000,\"pid\":42,"
               "\"tid\":43,\"id\":11,\"args\":{\"category\":\"events\",\"payload\":-3}},\n");
    /* Without a category the cached args are empty: no comma before the payload. */
    event.category = 0;
    event.payload_type = NVS_PAYLOAD_U32;
    event.payload = 5;
    for (int round = 0; round < 2; round++)
        check_text("complete, registered, no category, uint32", out,
                   nvs_trace_json.complete(out, &thread, &event, 6000000001ull),
                   "{\"name\":\"reg\",\"cat\":\"usb\",\"ph\":\"X\",\"ts\":6000000.000,\"dur\":0.001,"
                   "\"pid\":42,\"tid\":43,\"args\":{\"payload\":5}},\n");
}

/* ---- times ------------------------------------------------------------------------- */

static void test_durations_of_every_width(void)
{
    static const struct { uint64_t ns; const char *text; } cases[] = {
        { 0, "0.000" }, { 999, "0.999" }, { 12345, "12.345" }, { 123456, "123.456" },
        { 1234567, "1234.567" }, { 9999999, "9999.999" }, { 10000000, "10000.000" },
        { 123456789012ull, "123456789.012" },
    };
    static struct nvs_trace_string string;
    string.length = 1;
    memcpy(string.text, "d", 2);
    nvs_trace_json.prepare_string(&string);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char wanted[256];
        snprintf(wanted, sizeof wanted, "{\"name\":\"d\",\"cat\":\"usb\",\"ph\":\"X\",\"ts\":1234567.891,"
                 "\"dur\":%s,\"pid\":42,\"tid\":43,\"args\":{}},\n", cases[i].text);
        /* Inline, then registered (the cached way writes durations on its own). */
        struct nvs_trace_event event = event_named("d", &usb);
        check_text(cases[i].text, out,
                   nvs_trace_json.complete(out, &thread, &event, event.start_ns + cases[i].ns), wanted);
        event.registered = &string;
        check_text(cases[i].text, out,
                   nvs_trace_json.complete(out, &thread, &event, event.start_ns + cases[i].ns), wanted);
    }
    /* An end before the start (clocks of two threads): no negative duration. */
    struct nvs_trace_event event = event_named("d", &usb);
    check_text("end before start", out, nvs_trace_json.complete(out, &thread, &event, event.start_ns - 5),
               "{\"name\":\"d\",\"cat\":\"usb\",\"ph\":\"X\",\"ts\":1234567.891,\"dur\":0.000,"
               "\"pid\":42,\"tid\":43,\"args\":{}},\n");
}

/* A thread keeps the high digits of its last timestamp: they follow when time moves on or
 * back, each thread has its own, and a thread whose ids change (after fork) starts again. */
static void test_timestamps_as_time_moves(void)
{
    static struct nvs_trace_thread_ids other = { .pid = 7, .tid = 8 };
    nvs_trace_json.prepare_thread(&other);
    static const struct { uint64_t ns; const char *ts; } times[] = {
        { 5000, "5.000" },                      /* under 10 ms: no high digits */
        { 25000000001ull, "25000000.001" },
        { 25009999999ull, "25009999.999" },     /* the same high digits */
        { 25010000000ull, "25010000.000" },     /* the next */
        { 7000000123ull, "7000000.123" },       /* back */
        { 9999999ull, "9999.999" },
        { 18446744073709551615ull, "18446744073709551.615" },
    };
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        for (int which = 0; which < 2; which++) {
            struct nvs_trace_thread_ids *ids = which ? &other : &thread;
            struct nvs_trace_event event = event_named("t", &usb);
            event.start_ns = times[i].ns;
            char wanted[256];
            snprintf(wanted, sizeof wanted, "{\"name\":\"t\",\"cat\":\"usb\",\"ph\":\"i\",\"s\":\"t\","
                     "\"ts\":%s,\"pid\":%d,\"tid\":%u,\"args\":{}},\n", times[i].ts, ids->pid, ids->tid);
            check_text(times[i].ts, out, nvs_trace_json.mark(out, ids, &event), wanted);
        }
    }
    other.pid = 70;
    other.tid = 80;
    nvs_trace_json.prepare_thread(&other);
    struct nvs_trace_event event = event_named("t", &usb);
    event.start_ns = 18446744073709551615ull;
    check_text("new ids", out, nvs_trace_json.mark(out, &other, &event),
               "{\"name\":\"t\",\"cat\":\"usb\",\"ph\":\"i\",\"s\":\"t\",\"ts\":18446744073709551.615,"
               "\"pid\":70,\"tid\":80,\"args\":{}},\n");
}

/* ---- async pairs --------------------------------------------------------------------- */

/* Begin and end of one range: the same name, domain and id (a reader pairs them by pid, cat
 * and id), the begin with the attributes, the end with the extra args alone; a mark's colour
 * is written, a range's is not. */
static void test_async_pair_with_a_named_category(void)
{
    struct nvs_trace_event event = event_named("frame \"9\"", &usb);
    event.category = 2;
    event.color = 0x00ff00;
    check_text("begin, named category", out, nvs_trace_json.begin(out, &thread, &event, 18446744073709551615ull),
               "{\"name\":\"frame \\\"9\\\"\",\"cat\":\"usb\",\"ph\":\"b\",\"ts\":1234567.891,\"pid\":42,"
               "\"tid\":43,\"id\":18446744073709551615,\"args\":{\"category\":\"events\"}},\n");
    check_text("end, other thread", out,
               nvs_trace_json.end(out, &thread, &event, 18446744073709551615ull, 1234567891, NULL, false),
               "{\"name\":\"frame \\\"9\\\"\",\"cat\":\"usb\",\"ph\":\"e\",\"ts\":1234567.891,\"pid\":42,"
               "\"tid\":43,\"id\":18446744073709551615},\n");
    check_text("complete, no colour", out, nvs_trace_json.complete(out, &thread, &event, 1234567891),
               "{\"name\":\"frame \\\"9\\\"\",\"cat\":\"usb\",\"ph\":\"X\",\"ts\":1234567.891,\"dur\":0.000,"
               "\"pid\":42,\"tid\":43,\"args\":{\"category\":\"events\"}},\n");
    check_text("mark, colour and category", out, nvs_trace_json.mark(out, &thread, &event),
               "{\"name\":\"frame \\\"9\\\"\",\"cat\":\"usb\",\"ph\":\"i\",\"s\":\"t\",\"ts\":1234567.891,"
               "\"pid\":42,\"tid\":43,\"args\":{\"color\":\"#00ff00\",\"category\":\"events\"}},\n");
}

/* ---- the file ------------------------------------------------------------------------ */

/* A whole file as the writer makes one: the header, events one a line, blank padding
 * between two of them, then the tail written over the last event's separator; a resume
 * after a failed exec puts the separator back and the file goes on. */
static void test_a_whole_file_and_its_tail(void)
{
    static char file[4 * NVS_TRACE_EVENT_MAX];
    char *at = nvs_trace_json.header(file, 42, "prog");
    at = nvs_trace_json.thread_name(at, &thread, "main");
    struct nvs_trace_event event = event_named("a", &usb);
    at = nvs_trace_json.complete(at, &thread, &event, event.start_ns + 1000);
    nvs_trace_json.pad(at, 5);
    at += 5;
    at = nvs_trace_json.mark(at, &thread, &event);
    const char *body =
        "[\n"
        "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":42,\"tid\":42,\"args\":{\"name\":\"prog\"}},\n"
        "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":42,\"tid\":43,\"args\":{\"name\":\"main\"}},\n"
        "{\"name\":\"a\",\"cat\":\"usb\",\"ph\":\"X\",\"ts\":1234567.891,\"dur\":1.000,\"pid\":42,"
        "\"tid\":43,\"args\":{}},\n"
        "     "
        "{\"name\":\"a\",\"cat\":\"usb\",\"ph\":\"i\",\"s\":\"t\",\"ts\":1234567.891,\"pid\":42,"
        "\"tid\":43,\"args\":{}},\n";
    check_text("a file cut short: every event followed by a comma", file, at, body);
    /* Finished: the last ",\n" becomes " \n" and the array closes, strict JSON. */
    size_t overlap = nvs_trace_json.tail_overlap, tail = strlen(nvs_trace_json.tail);
    char *end = at - overlap;
    memcpy(end, nvs_trace_json.tail, tail);
    end += tail;
    char finished[sizeof file];
    snprintf(finished, sizeof finished, "%.*s \n]\n", (int)(strlen(body) - 2), body);
    check_text("a finished file", file, end, finished);
    /* Resumed: the tail undone, then more events. */
    memcpy(at - overlap, nvs_trace_json.tail_undo, overlap);
    check_text("a resumed file", file, at, body);
}

/* ---- names that are not UTF-8 ---------------------------------------------------------
 * A trace file is JSON, which is UTF-8: whatever bytes a program gives as a name (Latin-1
 * text, a buffer cut anywhere), each event must come out as UTF-8. Run apart (test_trace_json
 * utf8): the encoder copies such bytes as they are today. */

static void test_names_that_are_not_utf8(void)
{
    static const char *const names[] = {
        "caf\xe9 (Latin-1)", "\xff\xfe", "cut \xc3", "overlong \xc0\xaf", "surrogate \xed\xa0\x80",
        "past U+10FFFF \xf4\x90\x80\x80", "stray \x80 continuation",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        struct nvs_trace_event event = event_named(names[i], &usb);
        check_utf8("mark", out, nvs_trace_json.mark(out, &thread, &event));
        check_utf8("begin", out, nvs_trace_json.begin(out, &thread, &event, 1));
        static struct nvs_trace_string string;
        memset(&string, 0, sizeof string);
        string.length = (uint32_t)strlen(names[i]);
        memcpy(string.text, names[i], string.length + 1);
        nvs_trace_json.prepare_string(&string);
        struct nvs_trace_event registered = { .start_ns = 1, .domain = &usb, .registered = &string };
        check_utf8("registered", out, nvs_trace_json.complete(out, &thread, &registered, 2));
        check_utf8("process name", out, nvs_trace_json.header(out, 42, names[i]));
        check_utf8("thread name", out, nvs_trace_json.thread_name(out, &thread, names[i]));
    }
    static struct nvs_trace_domain latin1 = { .index = 9, .name = "dom\xe4ne" };
    nvs_trace_json.prepare_domain(&latin1);
    nvs_trace_json.prepare_category(&latin1, 1, "cat\xe9gorie");
    atomic_fetch_or(&latin1.named_categories, 1ull << 1);
    struct nvs_trace_event event = event_named("x", &latin1);
    event.category = 1;
    check_utf8("domain and category", out, nvs_trace_json.mark(out, &thread, &event));
}

/* A UTF-8 name whose escaped form is cut at the 512 bytes a name may take: the cut falls
 * between characters, never inside one. */
static void test_a_long_name_is_cut_between_characters(void)
{
    struct nvs_trace_event event = event_named("", &usb);
    memset(event.text, '\x01', 84);         /* 84 escapes: 504 bytes */
    for (int k = 0; k < 57; k++)            /* then the euro sign, 3 bytes each */
        memcpy(event.text + 84 + 3 * k, "\xe2\x82\xac", 3);
    event.text_length = 84 + 57 * 3;
    event.text[event.text_length] = '\0';
    check_utf8("a long name cut", out, nvs_trace_json.mark(out, &thread, &event));
}

static void test_tail(void)
{
    CHECK(nvs_trace_json.tail_overlap == 2);
    CHECK(strcmp(nvs_trace_json.tail_undo, ",\n") == 0);
    char padding[8];
    nvs_trace_json.pad(padding, sizeof padding);
    CHECK(memcmp(padding, "        ", 8) == 0);
}

int main(int argc, char **argv)
{
    nvs_trace_json.prepare_domain(&usb);
    nvs_trace_json.prepare_domain(&odd);
    nvs_trace_json.prepare_category(&usb, 2, "events");
    atomic_fetch_or(&usb.named_categories, 1ull << 2);
    nvs_trace_json.prepare_thread(&thread);
    if (argc > 1 && !strcmp(argv[1], "utf8")) {
        test_names_that_are_not_utf8();
        test_a_long_name_is_cut_between_characters();
        return check_summary(NULL);
    }
    test_header_and_thread_names();
    test_complete_inline_name();
    test_complete_registered_name_is_the_same_text();
    test_async_pair();
    test_async_pair_of_a_registered_name();
    test_mark_keeps_its_colour_and_payload_kinds();
    test_control_characters_and_long_names();
    test_names_are_escaped();
    test_registered_names_are_escaped();
    test_a_long_name_is_cut_between_escapes();
    test_category_names();
    test_payload_types();
    test_payloads_of_registered_names();
    test_durations_of_every_width();
    test_timestamps_as_time_moves();
    test_async_pair_with_a_named_category();
    test_a_whole_file_and_its_tail();
    test_tail();
    return check_summary(NULL);
}
