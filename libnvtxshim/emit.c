/* NVTX emission. NVTX itself is header-only here: this module's NVTX instance
 * loads whatever tool NVTX_INJECTION64_PATH names (nsys, or this library's own
 * recorder) on first use, and is all no-ops when there is none. */
/* The one file with NVTX's implementation (the build sets NVTX_NO_IMPL for the
 * others, which only need its types). */
#undef NVTX_NO_IMPL
#include "emit.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>


static nvtxDomainHandle_t domains[NVS_DOMAIN_COUNT];
static bool active;
/* Set at load, before any NVTX call: the recorder, when it is the tool. */
static const struct nvs_emit_direct *registered_direct;
/* ... and once NVTX has handed it the calls: pushes and pops go to it directly. */
static const struct nvs_emit_direct *direct;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_emit(void)
{
    int saved_errno = errno;
    for (int d = 0; d < NVS_DOMAIN_COUNT; d++)
        domains[d] = nvtxDomainCreateA(nvs_domain_name((enum nvs_domain)d));
    /* nvtxDomainCreateA returns NULL only when no tool took the call. */
    active = domains[NVS_DOMAIN_SHIM] != NULL;
    direct = active ? registered_direct : NULL;
    if (active) {
        for (int d = 0; d < NVS_DOMAIN_COUNT; d++)
            for (uint32_t c = 1; c < NVS_CATEGORY_LIMIT; c++) {
                const char *name = nvs_category_name((enum nvs_domain)d, c);
                if (name)
                    nvtxDomainNameCategoryA(domains[d], c, name);
            }
    }
    errno = saved_errno;
}

void nvs_emit_set_direct(const struct nvs_emit_direct *tool)
{
    registered_direct = tool;
}

void nvs_emit_frame_ended(void)
{
    if (direct)
        direct->flush();
}

bool nvs_emit_active(void)
{
    pthread_once(&init_once, init_emit);
    return active;
}

/* Registered names, keyed by hook and parameters: open addressing, insert-only,
 * lock-free. A full table only means later names go out as plain text. */
#define NAME_SLOTS 8192u
#define NAME_PROBES 32u

struct name_slot {
    _Atomic uint64_t key;
    _Atomic(nvtxStringHandle_t) handle;
};

static struct name_slot names[NAME_SLOTS];

static uint64_t full_key(enum nvs_domain domain, uint64_t key)
{
    return key ^ ((uint64_t)(domain + 1) << 60);
}

static uint32_t slot_of(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (uint32_t)key & (NAME_SLOTS - 1);
}

struct nvs_name nvs_name_lookup(enum nvs_domain domain, uint64_t key)
{
    struct nvs_name name = { NULL, NULL };
    key = full_key(domain, key);
    uint32_t slot = slot_of(key);
    for (uint32_t probe = 0; probe < NAME_PROBES; probe++) {
        struct name_slot *entry = &names[(slot + probe) & (NAME_SLOTS - 1)];
        uint64_t found = atomic_load_explicit(&entry->key, memory_order_acquire);
        if (found == key) {
            name.registered = atomic_load_explicit(&entry->handle, memory_order_acquire);
            return name;
        }
        if (found == 0)
            break;
    }
    return name;
}

struct nvs_name nvs_name_store(enum nvs_domain domain, uint64_t key, const char *text)
{
    /* A string is registered only for a slot of its own: once the table is full
     * (or the key's probes are), the name goes out as plain text. Registering
     * first would register the same text again on every call of a name that
     * finds no slot - a control transfer whose wValue counts frames does that
     * after 8192 frames - and each registration is kept by the tool for good. */
    struct nvs_name name = { NULL, text };
    key = full_key(domain, key);
    uint32_t slot = slot_of(key);
    for (uint32_t probe = 0; probe < NAME_PROBES; probe++) {
        struct name_slot *entry = &names[(slot + probe) & (NAME_SLOTS - 1)];
        uint64_t expected = 0;
        if (atomic_compare_exchange_strong(&entry->key, &expected, key)) {
            int saved_errno = errno;
            nvtxStringHandle_t handle = nvtxDomainRegisterStringA(domains[domain], text);
            errno = saved_errno;
            atomic_store_explicit(&entry->handle, handle, memory_order_release);
            name.registered = handle;
            return name;
        }
        if (expected == key) {
            /* Another thread has the slot; until it publishes, plain text. */
            name.registered = atomic_load_explicit(&entry->handle, memory_order_acquire);
            return name;
        }
    }
    return name;
}

static void fill(nvtxEventAttributes_t *event, const struct nvs_attributes *attributes)
{
    memset(event, 0, sizeof *event);
    event->version = NVTX_VERSION;
    event->size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    event->category = attributes->category;
    event->colorType = NVTX_COLOR_ARGB;
    event->color = attributes->color;
    if (attributes->has_payload) {
        event->payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
        event->payload.ullValue = attributes->payload;
    }
    if (attributes->name.registered) {
        event->messageType = NVTX_MESSAGE_TYPE_REGISTERED;
        event->message.registered = attributes->name.registered;
    } else {
        event->messageType = NVTX_MESSAGE_TYPE_ASCII;
        event->message.ascii = attributes->name.text;
    }
}

void nvs_range_push(const struct nvs_attributes *attributes)
{
    if (direct) {
        direct->push(domains[attributes->domain], attributes->name.registered,
                     attributes->name.text, attributes->category, attributes->color,
                     attributes->has_payload, attributes->payload);
        return;
    }
    nvtxEventAttributes_t event;
    fill(&event, attributes);
    nvtxDomainRangePushEx(domains[attributes->domain], &event);
}

void nvs_range_pop(enum nvs_domain domain)
{
    if (direct) {
        direct->pop(domains[domain]);
        return;
    }
    nvtxDomainRangePop(domains[domain]);
}

bool nvs_range_set_payload(enum nvs_domain domain, uint64_t payload)
{
    if (!direct)
        return false;
    direct->set_payload(domains[domain], payload);
    return true;
}

nvtxRangeId_t nvs_range_start(const struct nvs_attributes *attributes)
{
    if (direct)
        return direct->start(domains[attributes->domain], attributes->name.registered,
                             attributes->name.text, attributes->category, attributes->color,
                             attributes->has_payload, attributes->payload);
    nvtxEventAttributes_t event;
    fill(&event, attributes);
    return nvtxDomainRangeStartEx(domains[attributes->domain], &event);
}

void nvs_range_end(enum nvs_domain domain, nvtxRangeId_t id)
{
    if (direct) {
        direct->end(domains[domain], id);
        return;
    }
    nvtxDomainRangeEnd(domains[domain], id);
}

void nvs_range_span(const struct nvs_attributes *attributes, uint64_t start_ns, uint64_t end_ns)
{
    if (direct) {
        direct->span(domains[attributes->domain], attributes->name.registered,
                     attributes->name.text, attributes->category, attributes->color,
                     attributes->payload, start_ns, end_ns);
        return;
    }
    nvtxEventAttributes_t event;
    fill(&event, attributes);
    nvtxDomainRangeEnd(domains[attributes->domain],
                       nvtxDomainRangeStartEx(domains[attributes->domain], &event));
}

void nvs_mark(const struct nvs_attributes *attributes)
{
    nvtxEventAttributes_t event;
    fill(&event, attributes);
    nvtxDomainMarkEx(domains[attributes->domain], &event);
}

bool nvs_named_range_prepare(struct nvs_named_range *range, const char *domain,
                             const char *message)
{
    if (!nvs_emit_active())
        return false;
    int saved_errno = errno;
    range->domain = NULL;
    for (int d = 0; d < NVS_DOMAIN_COUNT; d++)
        if (!strcmp(domain, nvs_domain_name((enum nvs_domain)d)))
            range->domain = domains[d];
    if (!range->domain)
        range->domain = nvtxDomainCreateA(domain);
    range->message = range->domain ? nvtxDomainRegisterStringA(range->domain, message) : NULL;
    errno = saved_errno;
    return range->message != NULL;
}

nvtxRangeId_t nvs_named_range_start(const struct nvs_named_range *range, uint32_t color)
{
    nvtxEventAttributes_t event;
    memset(&event, 0, sizeof event);
    event.version = NVTX_VERSION;
    event.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    event.colorType = NVTX_COLOR_ARGB;
    event.color = color;
    event.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    event.message.registered = range->message;
    return nvtxDomainRangeStartEx(range->domain, &event);
}

void nvs_named_range_end(const struct nvs_named_range *range, nvtxRangeId_t id)
{
    nvtxDomainRangeEnd(range->domain, id);
}

void nvs_name_thread(const char *name)
{
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), name);
}

uint64_t nvs_now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}
