/* Unit tests of the JSON trace encoder (libnvtxshim/trace_json.c), run alone:
 * each event is encoded into a buffer and compared with the text a reader
 * must see. The encoder is pure, so no file and no NVTX are involved. */
#include <stdio.h>
#include <string.h>

#include "trace.h"

static int passed, failed;

#define CHECK(condition)                                                                \
    do {                                                                                \
        if (condition) passed++;                                                        \
        else { failed++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #condition); }  \
    } while (0)

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
    check_text("end, registered", out, nvs_trace_json.end(out, &thread, &event, 77, 5000002000ull, NULL),
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
               nvs_trace_json.end(out, &thread, &event, 5, 2234567891, &figures),
               "{\"name\":\"frame 7\",\"cat\":\"usb\",\"ph\":\"e\",\"ts\":2234567.891,\"pid\":42,"
               "\"tid\":43,\"id\":5,\"args\":{\"offcpu_blocked_ns\":12,\"usb_urbs\":0}},\n");
    check_text("end without args", out, nvs_trace_json.end(out, &thread, &event, 5, 2234567891, &none),
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
    char *end = nvs_trace_json.end(out, &thread, &event, 1, 1, &most);
    CHECK((size_t)(end - out) <= NVS_TRACE_EVENT_MAX);
    CHECK(memchr(out, '\n', (size_t)(end - out)) == end - 1);
}

static void test_tail(void)
{
    CHECK(nvs_trace_json.tail_overlap == 2);
    CHECK(strcmp(nvs_trace_json.tail_undo, ",\n") == 0);
    char padding[8];
    nvs_trace_json.pad(padding, sizeof padding);
    CHECK(memcmp(padding, "        ", 8) == 0);
}

int main(void)
{
    nvs_trace_json.prepare_domain(&usb);
    nvs_trace_json.prepare_domain(&odd);
    nvs_trace_json.prepare_category(&usb, 2, "events");
    atomic_fetch_or(&usb.named_categories, 1ull << 2);
    nvs_trace_json.prepare_thread(&thread);
    test_header_and_thread_names();
    test_complete_inline_name();
    test_complete_registered_name_is_the_same_text();
    test_async_pair();
    test_async_pair_of_a_registered_name();
    test_mark_keeps_its_colour_and_payload_kinds();
    test_control_characters_and_long_names();
    test_tail();
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
