/* NVTX's arguments as the recorder's (nvtx_args.h). Domains and category
 * names are set-up calls, made under one lock; registered strings go on a
 * list without one. */
#include "nvtx_args.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static struct {
    const struct nvs_trace_encoder *encoder;
    pthread_mutex_t lock; /* domains and category names: set-up calls, not events */
    struct nvs_trace_domain *domains;
    uint32_t domain_count;
    _Atomic(struct nvs_trace_string *) strings;
} args = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

/* Named at enable: a zero-initialised object costs no page at load. */
struct nvs_trace_domain nvs_args_default_domain;

void nvs_args_enable(const struct nvs_trace_encoder *encoder)
{
    args.encoder = encoder;
    memcpy(nvs_args_default_domain.name, "default", sizeof "default");
    encoder->prepare_domain(&nvs_args_default_domain);
}

/* TEXT into OUT (SIZE with the NUL), cut at a character boundary. */
uint32_t nvs_args_copy_text(char *out, size_t size, const char *text)
{
    size_t length = text ? strnlen(text, size - 1) : 0;
    if (text && text[length] != '\0')
        while (length > 0 && ((unsigned char)text[length] & 0xc0) == 0x80)
            length--;
    if (length)
        memcpy(out, text, length);
    out[length] = '\0';
    return (uint32_t)length;
}

/* wchar_t is UTF-32 on Linux; NVTX's W functions take it. */
void nvs_args_wide_to_utf8(char *out, size_t size, const wchar_t *text)
{
    size_t used = 0;
    for (; text && *text; text++) {
        uint32_t c = (uint32_t)*text;
        unsigned char bytes[4];
        size_t length;
        if (c < 0x80) {
            bytes[0] = (unsigned char)c;
            length = 1;
        } else if (c < 0x800) {
            bytes[0] = 0xc0 | (c >> 6);
            bytes[1] = 0x80 | (c & 0x3f);
            length = 2;
        } else if (c < 0x10000) {
            bytes[0] = 0xe0 | (c >> 12);
            bytes[1] = 0x80 | ((c >> 6) & 0x3f);
            bytes[2] = 0x80 | (c & 0x3f);
            length = 3;
        } else {
            bytes[0] = 0xf0 | (c >> 18);
            bytes[1] = 0x80 | ((c >> 12) & 0x3f);
            bytes[2] = 0x80 | ((c >> 6) & 0x3f);
            bytes[3] = 0x80 | (c & 0x3f);
            length = 4;
        }
        if (used + length + 1 > size)
            break;
        memcpy(out + used, bytes, length);
        used += length;
    }
    out[used] = '\0';
}

/* ---- domains, categories, strings --------------------------------------------- */

struct nvs_trace_domain *nvs_args_domain_create(const char *name)
{
    char text[NVS_TRACE_TEXT_MAX];
    nvs_args_copy_text(text, sizeof text, name);
    pthread_mutex_lock(&args.lock);
    struct nvs_trace_domain *domain = args.domains;
    while (domain && strcmp(domain->name, text))
        domain = domain->next;
    if (!domain && (domain = calloc(1, sizeof *domain))) {
        memcpy(domain->name, text, strlen(text) + 1);
        domain->index = ++args.domain_count;
        args.encoder->prepare_domain(domain);
        domain->next = args.domains;
        args.domains = domain;
    }
    pthread_mutex_unlock(&args.lock);
    return domain;
}

/* The first name given to a category is the one written. */
void nvs_args_name_category(struct nvs_trace_domain *domain, uint32_t number, const char *name)
{
    if (number >= NVS_TRACE_CATEGORIES)
        return;
    pthread_mutex_lock(&args.lock);
    uint64_t named = atomic_load_explicit(&domain->named_categories, memory_order_relaxed);
    if (!(named >> number & 1)) {
        args.encoder->prepare_category(domain, number, name ? name : "");
        atomic_fetch_or_explicit(&domain->named_categories, 1ull << number, memory_order_release);
    }
    pthread_mutex_unlock(&args.lock);
}

/* NVTX has no call that releases a registered string: each stays, on a list,
 * for the life of the process (reachable, for leak checkers). */
struct nvs_trace_string *nvs_args_register_string(const char *text)
{
    struct nvs_trace_string *string = calloc(1, sizeof *string);
    if (!string)
        return NULL;
    string->length = nvs_args_copy_text(string->text, sizeof string->text, text);
    args.encoder->prepare_string(string);
    string->next = atomic_load(&args.strings);
    while (!atomic_compare_exchange_weak(&args.strings, &string->next, string))
        continue;
    return string;
}

/* ---- events ------------------------------------------------------------------ */

static enum nvs_trace_payload payload_type(int32_t nvtx)
{
    switch (nvtx) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: return NVS_PAYLOAD_U64;
    case NVTX_PAYLOAD_TYPE_INT64: return NVS_PAYLOAD_I64;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: return NVS_PAYLOAD_U32;
    case NVTX_PAYLOAD_TYPE_INT32: return NVS_PAYLOAD_I32;
    case NVTX_PAYLOAD_TYPE_DOUBLE: return NVS_PAYLOAD_DOUBLE;
    case NVTX_PAYLOAD_TYPE_FLOAT: return NVS_PAYLOAD_FLOAT;
    default: return NVS_PAYLOAD_NONE;
    }
}

void nvs_args_capture(struct nvs_trace_event *event, struct nvs_trace_domain *domain,
                      const nvtxEventAttributes_t *attributes)
{
    event->domain = domain ? domain : &nvs_args_default_domain;
    event->registered = NULL;
    event->category = 0;
    event->color = 0;
    event->payload_type = NVS_PAYLOAD_NONE;
    event->payload = 0;
    event->text_length = 0;
    event->text[0] = '\0';
    if (!attributes)
        return;
    event->category = attributes->category;
    event->color = attributes->colorType == NVTX_COLOR_ARGB ? attributes->color & 0xffffffu : 0;
    event->payload_type = payload_type(attributes->payloadType);
    event->payload = attributes->payload.ullValue;
    switch (attributes->messageType) {
    case NVTX_MESSAGE_TYPE_REGISTERED:
        event->registered = (struct nvs_trace_string *)attributes->message.registered;
        break;
    case NVTX_MESSAGE_TYPE_ASCII:
        event->text_length = nvs_args_copy_text(event->text, sizeof event->text,
                                                attributes->message.ascii);
        break;
    case NVTX_MESSAGE_TYPE_UNICODE:
        nvs_args_wide_to_utf8(event->text, sizeof event->text, attributes->message.unicode);
        event->text_length = (uint32_t)strlen(event->text);
        break;
    default: break;
    }
}

void nvs_args_capture_text(struct nvs_trace_event *event, const char *text)
{
    nvs_args_capture(event, NULL, NULL);
    event->text_length = nvs_args_copy_text(event->text, sizeof event->text, text);
}

void nvs_args_fork_prepare(void)
{
    pthread_mutex_lock(&args.lock);
}

void nvs_args_fork_parent(void)
{
    pthread_mutex_unlock(&args.lock);
}

void nvs_args_fork_child(void)
{
    pthread_mutex_init(&args.lock, NULL);
}
