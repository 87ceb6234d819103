/* NVTX emission. NVTX itself is header-only here: this module's NVTX instance
 * loads whatever tool NVTX_INJECTION64_PATH names (nsys, or this library's own
 * recorder) on first use, and is all no-ops when there is none. */
/* The one file with NVTX's implementation (the build sets NVTX_NO_IMPL for the
 * others, which only need its types). */
#undef NVTX_NO_IMPL
/* NVTX's implementation finds its tool's entry point with dlsym: glibc's, not
 * this library's export, which is for the program. */
#include <dlfcn.h>

#include "resolve.h"
#define dlsym nvs_dlsym
#include "emit.h"
#undef dlsym
#include "clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

nvtxDomainHandle_t nvs_emit_domains[NVS_DOMAIN_COUNT];
static bool active;
/* Set at load, before any NVTX call: the recorder, when it is the tool. */
static const struct nvs_emit_direct *registered_direct;
/* ... and once NVTX has handed it the calls: pushes and pops go to it directly. */
const struct nvs_emit_direct *nvs_emit_direct_tool;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_emit(void)
{
    int saved_errno = errno;
    for (int d = 0; d < NVS_DOMAIN_COUNT; d++)
        nvs_emit_domains[d] = nvtxDomainCreateA(nvs_domain_name((enum nvs_domain)d));
    /* nvtxDomainCreateA returns NULL only when no tool took the call. */
    active = nvs_emit_domains[NVS_DOMAIN_SHIM] != NULL;
    nvs_emit_direct_tool = active ? registered_direct : NULL;
    /* The recorder is NVTX's tool: the library's pushes and pops go to its
     * direct functions through the slots every push reads (emit.h). This NVTX
     * instance is the library's alone: nothing else pushes through it. */
    if (nvs_emit_direct_tool) {
        NVTX_VERSIONED_IDENTIFIER(nvtxGlobals).nvtxDomainRangePushEx_impl_fnptr =
            nvs_emit_direct_tool->push;
        NVTX_VERSIONED_IDENTIFIER(nvtxGlobals).nvtxDomainRangePop_impl_fnptr =
            nvs_emit_direct_tool->pop;
    }
    if (active) {
        for (int d = 0; d < NVS_DOMAIN_COUNT; d++)
            for (uint32_t c = 1; c < NVS_CATEGORY_LIMIT; c++) {
                const char *name = nvs_category_name((enum nvs_domain)d, c);
                if (name)
                    nvtxDomainNameCategoryA(nvs_emit_domains[d], c, name);
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
    if (nvs_emit_direct_tool)
        nvs_emit_direct_tool->flush();
}

bool nvs_emit_active(void)
{
    pthread_once(&init_once, init_emit);
    return active;
}

/* Registered names, keyed by hook and parameters: open addressing, insert-only,
 * lock-free (emit.h looks them up). A full table only means later names go
 * out as plain text. */
struct nvs_name_slot nvs_names[NVS_DOMAIN_COUNT][NVS_NAME_SLOTS];
/* The ranges built for slots of each domain's table, one at most a slot. */
static struct nvs_attributes built_ranges[NVS_DOMAIN_COUNT][NVS_NAME_SLOTS];
static _Atomic uint32_t built_count[NVS_DOMAIN_COUNT];

/* The slot of KEY in DOMAIN's table after SLOT, or NULL. */
static struct nvs_name_slot *probe_slots(enum nvs_domain domain, uint64_t key, uint32_t slot)
{
    for (uint32_t probe = 1; probe < NVS_NAME_PROBES; probe++) {
        struct nvs_name_slot *entry = &nvs_names[domain][(slot + probe) & (NVS_NAME_SLOTS - 1)];
        uint64_t found = atomic_load_explicit(&entry->key, memory_order_acquire);
        if (found == key)
            return entry;
        if (found == 0)
            break;
    }
    return NULL;
}

struct nvs_name nvs_name_lookup_probing(enum nvs_domain domain, uint64_t key, uint32_t slot)
{
    struct nvs_name_slot *entry = probe_slots(domain, key, slot);
    struct nvs_name name = { entry ? atomic_load_explicit(&entry->handle, memory_order_acquire)
                                   : NULL,
                             NULL };
    return name;
}

const struct nvs_attributes *nvs_range_find(enum nvs_domain domain, uint64_t key)
{
    uint32_t slot = nvs_name_slot_of(key);
    struct nvs_name_slot *entry = &nvs_names[domain][slot];
    uint64_t first = atomic_load_explicit(&entry->key, memory_order_acquire);
    if (first != key)
        entry = first ? probe_slots(domain, key, slot) : NULL;
    return entry ? atomic_load_explicit(&entry->range, memory_order_acquire) : NULL;
}

/* KEY's slot in DOMAIN's table, claimed for it now (*CLAIMED) or by a call
 * before; NULL when its probes are all another's. */
static struct nvs_name_slot *claim_slot(enum nvs_domain domain, uint64_t key, bool *claimed)
{
    uint32_t slot = nvs_name_slot_of(key);
    for (uint32_t probe = 0; probe < NVS_NAME_PROBES; probe++) {
        struct nvs_name_slot *entry = &nvs_names[domain][(slot + probe) & (NVS_NAME_SLOTS - 1)];
        uint64_t expected = 0;
        *claimed = atomic_compare_exchange_strong(&entry->key, &expected, key);
        if (*claimed || expected == key)
            return entry;
    }
    return NULL;
}

nvtxStringHandle_t nvs_name_register(enum nvs_domain domain, const char *text)
{
    int saved_errno = errno;
    nvtxStringHandle_t handle = nvtxDomainRegisterStringA(nvs_emit_domains[domain], text);
    errno = saved_errno;
    return handle;
}

struct nvs_name nvs_name_store(enum nvs_domain domain, uint64_t key, const char *text)
{
    /* A string is registered only for a slot of its own: once the table is full
     * (or the key's probes are), the name goes out as plain text. Registering
     * first would register the same text again on every call of a name that
     * finds no slot - a control transfer whose wValue counts frames does that
     * after 8192 frames - and each registration is kept by the tool for good. */
    struct nvs_name name = { NULL, text };
    bool claimed;
    struct nvs_name_slot *entry = claim_slot(domain, key, &claimed);
    if (entry && claimed) {
        name.registered = nvs_name_register(domain, text);
        atomic_store_explicit(&entry->handle, name.registered, memory_order_release);
    } else if (entry) {
        /* Another thread has the slot; until it publishes, plain text. */
        name.registered = atomic_load_explicit(&entry->handle, memory_order_acquire);
    }
    return name;
}

const struct nvs_attributes *nvs_range_store(struct nvs_attributes *range, uint64_t key,
                                             const char *text)
{
    bool claimed;
    struct nvs_name_slot *entry = claim_slot(range->domain, key, &claimed);
    if (entry && claimed) {
        nvtxStringHandle_t handle = nvs_name_register(range->domain, text);
        nvs_attributes_name(range, (struct nvs_name){ handle, text });
        if (handle) {
            /* Only the thread that claimed the slot builds its range, once:
             * below the table's size, since each slot takes one at most. */
            uint32_t at = atomic_fetch_add_explicit(&built_count[range->domain], 1,
                                                    memory_order_relaxed);
            struct nvs_attributes *built = &built_ranges[range->domain][at];
            *built = *range;
            atomic_store_explicit(&entry->range, built, memory_order_release);
            atomic_store_explicit(&entry->built_key, key, memory_order_release);
            range = built;
        }
        atomic_store_explicit(&entry->handle, handle, memory_order_release);
        return range;
    }
    const struct nvs_attributes *built = entry
        ? atomic_load_explicit(&entry->range, memory_order_acquire)
        : NULL;
    if (built)
        return built;
    /* Another thread is building it, or no slot: this call's own, by the name's handle or text. */
    nvs_attributes_name(
        range,
        (struct nvs_name){
            entry ? atomic_load_explicit(&entry->handle, memory_order_acquire) : NULL, text });
    return range;
}

/* nvs_nvtx_push and nvs_nvtx_pop (emit.h): NVTX's two slots in its table of
 * this instance, named as symbols of their own, so that a wrapper reads one
 * with one load (a pointer to it, kept here, cost a load more at each push
 * and pop). The assembler sets each at the table's address plus the slot's
 * offset, both from NVTX's own header; the table is defined in this file
 * alone (the others are built with NVTX_NO_IMPL). */
#define NVS_QUOTE(x) #x
#define NVS_NAME_OF(x) NVS_QUOTE(x)
__attribute__((used)) static void slot_symbols(void)
{
    __asm__(".globl nvs_nvtx_push\n\t.hidden nvs_nvtx_push\n\t"
            ".set nvs_nvtx_push, " NVS_NAME_OF(NVTX_VERSIONED_IDENTIFIER(
                nvtxGlobals)) " + %c0\n\t"
                              ".globl nvs_nvtx_pop\n\t.hidden nvs_nvtx_pop\n\t"
                              ".set nvs_nvtx_pop, " NVS_NAME_OF(
                                  NVTX_VERSIONED_IDENTIFIER(nvtxGlobals)) " + %c1"
            :
            : "i"(offsetof(nvtxGlobals_t, nvtxDomainRangePushEx_impl_fnptr)),
              "i"(offsetof(nvtxGlobals_t, nvtxDomainRangePop_impl_fnptr)));
}

bool nvs_range_set_payload(enum nvs_domain domain, uint64_t payload)
{
    if (!nvs_emit_direct_tool)
        return false;
    nvs_emit_direct_tool->set_payload(nvs_emit_domains[domain], payload);
    return true;
}

nvtxRangeId_t nvs_range_start_at(const struct nvs_attributes *attributes, uint64_t start_ns)
{
    if (nvs_emit_direct_tool)
        return nvs_emit_direct_tool->start(nvs_emit_domains[attributes->domain], attributes,
                                           start_ns);
    return nvtxDomainRangeStartEx(nvs_emit_domains[attributes->domain], &attributes->event);
}

nvtxRangeId_t nvs_range_start(const struct nvs_attributes *attributes)
{
    return nvs_range_start_at(attributes, nvs_emit_direct_tool ? nvs_clock_ns() : 0);
}

void nvs_range_end_at(enum nvs_domain domain, nvtxRangeId_t id, uint64_t end_ns)
{
    if (nvs_emit_direct_tool) {
        nvs_emit_direct_tool->end(nvs_emit_domains[domain], id, end_ns);
        return;
    }
    nvtxDomainRangeEnd(nvs_emit_domains[domain], id);
}

void nvs_range_end(enum nvs_domain domain, nvtxRangeId_t id)
{
    nvs_range_end_at(domain, id, nvs_emit_direct_tool ? nvs_clock_ns() : 0);
}

/* Both on the probe's own thread, which may come before any hooked call: the
 * tool is looked at once NVTX has been set up. */
void nvs_range_args(nvtxRangeId_t id, const struct nvs_trace_args *args)
{
    if (nvs_emit_active() && nvs_emit_direct_tool)
        nvs_emit_direct_tool->range_args(id, args);
}

void nvs_interval(enum nvs_domain domain, const char *name, uint32_t tid, uint64_t start_ns,
                  uint64_t end_ns, const struct nvs_trace_args *args)
{
    if (nvs_emit_active() && nvs_emit_direct_tool)
        nvs_emit_direct_tool->interval(nvs_emit_domains[domain], name, tid, start_ns, end_ns, args);
}

void nvs_range_span(const struct nvs_attributes *attributes, uint64_t start_ns, uint64_t end_ns)
{
    if (nvs_emit_direct_tool) {
        nvs_emit_direct_tool->span(nvs_emit_domains[attributes->domain], attributes, start_ns,
                                   end_ns);
        return;
    }
    nvtxDomainRangeEnd(
        nvs_emit_domains[attributes->domain],
        nvtxDomainRangeStartEx(nvs_emit_domains[attributes->domain], &attributes->event));
}

void nvs_mark(const struct nvs_attributes *attributes)
{
    nvtxDomainMarkEx(nvs_emit_domains[attributes->domain], &attributes->event);
}

bool nvs_named_range_prepare(struct nvs_named_range *range, const char *domain, const char *message)
{
    if (!nvs_emit_active())
        return false;
    int saved_errno = errno;
    range->domain = NULL;
    for (int d = 0; d < NVS_DOMAIN_COUNT; d++)
        if (!strcmp(domain, nvs_domain_name((enum nvs_domain)d)))
            range->domain = nvs_emit_domains[d];
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

/* The recorder's clock (clock.h): the times of frames, spans and triggers
 * agree with its ranges'. */
uint64_t nvs_now_ns(void)
{
    return nvs_clock_ns();
}
