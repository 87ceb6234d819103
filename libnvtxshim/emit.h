/* NVTX output: domains, cached registered names, colours, payloads (which
 * ones: schema.h). Every function here is cheap after warm-up: no
 * allocation, lock or system call. */
#ifndef NVS_EMIT_H
#define NVS_EMIT_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <nvtx3/nvToolsExt.h>

#include "hidden.h"
#include "schema.h"

/* A range or mark message: a registered string when the tool gave one,
 * otherwise the text itself. */
struct nvs_name {
    nvtxStringHandle_t registered;
    const char *text;
};

/* True once NVTX has a tool attached (nsys, or our recorder). The first call
 * initialises NVTX in this module. */
bool nvs_emit_active(void);

/* The cached name for KEY (unique per hook and formatted parameters) in
 * DOMAIN; on a miss .registered is NULL and the caller formats and calls
 * nvs_name_store. Inline (below): most calls find it at the first probe. */
static inline struct nvs_name nvs_name_lookup(enum nvs_domain domain, uint64_t key);
struct nvs_name nvs_name_store(enum nvs_domain domain, uint64_t key, const char *text);

/* Looks NAME up by KEY, formatting it into BUFFER on the first use. */
#define NVS_NAME(variable, domain, key, buffer, ...)                                               \
    do {                                                                                           \
        (variable) = nvs_name_lookup((domain), (key));                                             \
        if (!(variable).registered) {                                                              \
            snprintf((buffer), sizeof(buffer), __VA_ARGS__);                                       \
            (variable) = nvs_name_store((domain), (key), (buffer));                                \
        }                                                                                          \
    } while (0)

/* A range or mark the library makes: NVTX's event attributes, which go to any
 * NVTX tool as they are (nothing is copied or converted on the way: the
 * wrapper fills them once, as a hand-written range does), and the library's
 * domain they go to. Made with NVS_ATTRIBUTES or NVS_ATTRIBUTES_PAYLOAD; the
 * name set with nvs_attributes_name (or left for the call's hook name). */
struct nvs_attributes {
    nvtxEventAttributes_t event;
    enum nvs_domain domain;
};

/* The library's range whose NVTX attributes EVENT are: what the library's
 * NVTX instance hands its tool is always one (the direct tool's push). */
_Static_assert(__builtin_offsetof(struct nvs_attributes, event) == 0, "event first");
static inline const struct nvs_attributes *nvs_attributes_of(const nvtxEventAttributes_t *event)
{
    return (const struct nvs_attributes *)(const void *)event;
}

/* Attributes in DOMAIN, CATEGORY and COLOR (0xRRGGBB), with no payload; or
 * with PAYLOAD, an unsigned 64-bit number (the bytes a call moves). */
#define NVS_ATTRIBUTES(domain_, category_, color_)                                                 \
    NVS_ATTRIBUTES_OF(domain_, category_, color_, NVTX_PAYLOAD_UNKNOWN, 0)
#define NVS_ATTRIBUTES_PAYLOAD(domain_, category_, color_, payload_)                               \
    NVS_ATTRIBUTES_OF(domain_, category_, color_, NVTX_PAYLOAD_TYPE_UNSIGNED_INT64, payload_)
#define NVS_ATTRIBUTES_OF(domain_, category_, color_, payload_type_, payload_)                     \
    ((struct nvs_attributes){ .event = { .version = NVTX_VERSION,                                  \
                                         .size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,                    \
                                         .category = (category_),                                  \
                                         .colorType = NVTX_COLOR_ARGB,                             \
                                         .color = (color_),                                        \
                                         .payloadType = (payload_type_),                           \
                                         .payload.ullValue = (payload_) },                         \
                              .domain = (domain_) })

static inline void nvs_attributes_payload(struct nvs_attributes *attributes, uint64_t payload)
{
    attributes->event.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    attributes->event.payload.ullValue = payload;
}

/* HANDLE, a registered string, as the message. */
static inline void nvs_attributes_registered_name(struct nvs_attributes *attributes,
                                                  nvtxStringHandle_t handle)
{
    attributes->event.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attributes->event.message.registered = handle;
}

/* NAME as the message: registered, or its text (none: no name yet). */
static inline void nvs_attributes_name(struct nvs_attributes *attributes, struct nvs_name name)
{
    if (name.registered) {
        nvs_attributes_registered_name(attributes, name.registered);
    } else {
        attributes->event.messageType = name.text ? NVTX_MESSAGE_TYPE_ASCII : NVTX_MESSAGE_UNKNOWN;
        attributes->event.message.ascii = name.text;
    }
}

/* True once a name is set. */
static inline bool nvs_attributes_named(const struct nvs_attributes *attributes)
{
    return attributes->event.messageType != NVTX_MESSAGE_UNKNOWN;
}

/* The text of a name that is not registered, or NULL. */
static inline const char *nvs_attributes_text(const struct nvs_attributes *attributes)
{
    return attributes->event.messageType == NVTX_MESSAGE_TYPE_ASCII
        ? attributes->event.message.ascii
        : NULL;
}

/* nvs_range_push and nvs_range_pop: inline, below. */

/* Sets the payload of DOMAIN's innermost open push/pop range on this thread,
 * where the tool writes a range when it ends (the recorder): true. False
 * where the tool took the payload with the push (nsys, any other NVTX tool):
 * the range keeps the one it was pushed with. */
bool nvs_range_set_payload(enum nvs_domain domain, uint64_t payload);
nvtxRangeId_t nvs_range_start(const struct nvs_attributes *attributes);
void nvs_range_end(enum nvs_domain domain, nvtxRangeId_t id);
/* The same at times given (nvs_now_ns): for a range whose length something else
 * says too (a frame and its over-budget mark), so that both come from the same
 * two clock reads. NVTX takes its own times: under nsys the range begins and
 * ends when these are called. */
nvtxRangeId_t nvs_range_start_at(const struct nvs_attributes *attributes, uint64_t start_ns);
void nvs_range_end_at(enum nvs_domain domain, nvtxRangeId_t id, uint64_t end_ns);
void nvs_mark(const struct nvs_attributes *attributes);
/* A range from START_NS (CLOCK_MONOTONIC, in the past: a camera frame's
 * capture timestamp) to now. The recorder draws it from START_NS; NVTX has no
 * way to begin a range in the past, so any other tool (nsys) gets a start/end
 * range at now, and only the payload tells how long ago it began. */
void nvs_range_span(const struct nvs_attributes *attributes, uint64_t start_ns, uint64_t end_ns);
/* What NVTX cannot express, for the recorder alone (nothing under any other
 * tool): ARGS for the open start/end range ID, written at its end (a frame's
 * kernel figures); and a range of thread TID (not the caller) at times given,
 * with args (the kernel probe's off-CPU intervals). */
void nvs_range_args(nvtxRangeId_t id, const struct nvs_trace_args *args);
void nvs_interval(enum nvs_domain domain, const char *name, uint32_t tid, uint64_t start_ns,
                  uint64_t end_ns, const struct nvs_trace_args *args);

/* A range whose domain and message are named at run time (the capture
 * range): the domain is created, the message registered, once. */
struct nvs_named_range {
    nvtxDomainHandle_t domain;
    nvtxStringHandle_t message;
};
bool nvs_named_range_prepare(struct nvs_named_range *range, const char *domain,
                             const char *message);
nvtxRangeId_t nvs_named_range_start(const struct nvs_named_range *range, uint32_t color);
void nvs_named_range_end(const struct nvs_named_range *range, nvtxRangeId_t id);

/* A tool in this library that takes the library's own ranges directly (the
 * recorder); FLUSH is told when a frame ends, so its events reach the file.
 * DOMAIN is the library's NVTX handle for ATTRIBUTES->domain. PUSH and POP
 * are NVTX's own functions for the library's NVTX instance: emit.c puts them
 * in its slots, where nvs_range_push and nvs_range_pop find any tool's, so
 * that every push has one way to its tool. That instance takes the library's
 * ranges alone, so the attributes PUSH gets are always the event of a struct
 * nvs_attributes (nvs_attributes_of). */
struct nvs_emit_direct {
    nvtxDomainRangePushEx_impl_fntype push;
    nvtxDomainRangePop_impl_fntype pop;
    void (*set_payload)(nvtxDomainHandle_t domain, uint64_t payload);
    nvtxRangeId_t (*start)(nvtxDomainHandle_t domain, const struct nvs_attributes *attributes,
                           uint64_t start_ns);
    void (*end)(nvtxDomainHandle_t domain, nvtxRangeId_t id, uint64_t end_ns);
    /* A range that began in the past (nvs_range_span). */
    void (*span)(nvtxDomainHandle_t domain, const struct nvs_attributes *attributes,
                 uint64_t start_ns, uint64_t end_ns);
    /* nvs_range_args and nvs_interval, which only this tool can record. */
    void (*range_args)(nvtxRangeId_t id, const struct nvs_trace_args *args);
    void (*interval)(nvtxDomainHandle_t domain, const char *name, uint32_t tid, uint64_t start_ns,
                     uint64_t end_ns, const struct nvs_trace_args *args);
    void (*flush)(void);
};
void nvs_emit_set_direct(const struct nvs_emit_direct *tool);

/* A frame ended: a direct tool's buffered events go to its file. */
void nvs_emit_frame_ended(void);

/* The direct tool once NVTX has handed it the calls (else NULL), and the
 * library's domains: set once, before any hook traces a call. */
extern NVS_HIDDEN const struct nvs_emit_direct *nvs_emit_direct_tool;
extern NVS_HIDDEN nvtxDomainHandle_t nvs_emit_domains[NVS_DOMAIN_COUNT];

/* NVTX's slots for its tool's domain push and pop, in the one NVTX instance
 * of the library (emit.c): nsys's functions, any other tool's, or the
 * recorder's direct ones (struct nvs_emit_direct). A wrapper reads the
 * slot at each call, as NVTX's own inline functions do (a tool may fill it
 * again), and calls the tool with no function of ours between: what a
 * hand-written pair does. NULL in a slot: no tool takes the call. */
extern NVS_HIDDEN nvtxDomainRangePushEx_impl_fntype nvs_nvtx_push;
extern NVS_HIDDEN nvtxDomainRangePop_impl_fntype nvs_nvtx_pop;

/* The calling thread's errno, without a call of libc's __errno_location
 * (whose call, PLT jump and return cost each push and pop 5 instructions):
 * errno is a thread-local variable of libc, which is always loaded with the
 * program, so it lies in the static TLS block at the same distance from the
 * thread pointer in every thread of the process (glibc and musl; x86-64's
 * and aarch64's TLS layouts alike). hook.c measures that distance before any
 * call can be traced (nvs_traced_groups_init, before the groups are published
 * with release). Were it read as 0, the address would be the thread's control
 * block, whose word the push and pop only read and store back unchanged. */
extern NVS_HIDDEN _Atomic intptr_t nvs_errno_offset;
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define NVS_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define NVS_SANITIZED 1
#endif
#if defined(__x86_64__) && defined(__SEG_FS) && !defined(NVS_SANITIZED)
/* On x86-64 the thread pointer is the fs segment's base, so the distance is
 * itself errno's address in that segment (GCC's __seg_fs): a read or a store
 * of it is one instruction with no add of the thread pointer before it, one
 * instruction less at each push and pop (callgrind, make bench). Not in a
 * sanitizer's build: GCC's ThreadSanitizer checks such an access at the
 * segment's offset as if it were an address, and faults (make test's TSan
 * stress test found it). */
#define NVS_ERRNO_SPACE __seg_fs
static inline int __seg_fs *nvs_errno_address(void)
{
    return (int __seg_fs *)atomic_load_explicit(&nvs_errno_offset, memory_order_relaxed);
}
#else
#define NVS_ERRNO_SPACE
static inline int *nvs_errno_address(void)
{
    return (int *)(void *)((char *)__builtin_thread_pointer() +
                           atomic_load_explicit(&nvs_errno_offset, memory_order_relaxed));
}
#endif

/* Opens a push/pop range on this thread (nvs_range_push_in: ATTRIBUTES's
 * domain known to the caller, DOMAIN); nvs_range_pop closes DOMAIN's
 * innermost one. Both keep errno: any NVTX tool may change it (nsys makes
 * system calls). Inline: every traced call makes both. They do what a
 * hand-written pair does, errno kept around it: the tool's function from
 * NVTX's slot (nsys's, any other tool's, or the recorder's direct one) called
 * with the attributes the wrapper filled, as they are. */
static inline void nvs_range_push_in(enum nvs_domain domain,
                                     const struct nvs_attributes *attributes)
{
    nvtxDomainRangePushEx_impl_fntype push = nvs_nvtx_push;
    if (push) {
        int NVS_ERRNO_SPACE *error = nvs_errno_address();
        int saved_errno = *error;
        push(nvs_emit_domains[domain], &attributes->event);
        *error = saved_errno;
    }
}

static inline void nvs_range_push(const struct nvs_attributes *attributes)
{
    nvs_range_push_in(attributes->domain, attributes);
}

static inline void nvs_range_pop(enum nvs_domain domain)
{
    nvtxDomainRangePop_impl_fntype pop = nvs_nvtx_pop;
    if (pop) {
        int NVS_ERRNO_SPACE *error = nvs_errno_address();
        int saved_errno = *error;
        pop(nvs_emit_domains[domain]);
        *error = saved_errno;
    }
}

/* The registered names' tables (emit.c), one a domain, so that keys of two
 * domains never meet (a hook's key says the hook, hook.h's
 * nvs_call_name_key, but a device hook's domain is its device's): open
 * addressing, insert-only. A slot whose name is a call's whole range
 * (nvs_range_store) holds that range too, built once: every call of that
 * shape hands its tool the same attributes, as a program that keeps its
 * attributes in a static does. */
#define NVS_NAME_SLOTS 8192u
#define NVS_NAME_PROBES 32u

struct nvs_name_slot {
    _Atomic uint64_t key;
    _Atomic(nvtxStringHandle_t) handle;
    /* The range once it is built (in emit.c's store of them, filled in order:
     * the pages it touches grow with the ranges, not the table), else NULL */
    _Atomic(const struct nvs_attributes *) range;
    /* KEY again once range is published (else 0): what nvs_range_lookup
     * compares, so that a match needs no test of range */
    _Atomic uint64_t built_key;
};
_Static_assert(sizeof(struct nvs_name_slot) == 32, "a slot is found with a shift");
extern NVS_HIDDEN struct nvs_name_slot nvs_names[NVS_DOMAIN_COUNT][NVS_NAME_SLOTS];
struct nvs_name nvs_name_lookup_probing(enum nvs_domain domain, uint64_t key, uint32_t slot);
/* The range built for KEY in DOMAIN wherever its slot lies, or NULL: none
 * built yet (or none can be). */
const struct nvs_attributes *nvs_range_find(enum nvs_domain domain, uint64_t key);

/* Fibonacci hashing: the top BITS of KEY times 2^64 over the golden ratio,
 * which every bit of KEY reaches (a multiply and a shift). */
static inline uint32_t nvs_hash_slot(uint64_t key, unsigned bits)
{
    return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

#define NVS_NAME_SLOT_BITS 13
_Static_assert(NVS_NAME_SLOTS == 1u << NVS_NAME_SLOT_BITS, "the table's size in bits");
static inline uint32_t nvs_name_slot_of(uint64_t key)
{
    return nvs_hash_slot(key, NVS_NAME_SLOT_BITS);
}

static inline struct nvs_name nvs_name_lookup(enum nvs_domain domain, uint64_t key)
{
    uint32_t slot = nvs_name_slot_of(key);
    struct nvs_name_slot *entry = &nvs_names[domain][slot];
    uint64_t found = atomic_load_explicit(&entry->key, memory_order_acquire);
    if (__builtin_expect(found == key, 1)) {
        struct nvs_name name = { atomic_load_explicit(&entry->handle, memory_order_acquire), NULL };
        return name;
    }
    if (found == 0) {
        struct nvs_name none = { NULL, NULL };
        return none;
    }
    return nvs_name_lookup_probing(domain, key, slot);
}

/* The range of a call named by KEY in DOMAIN, built by nvs_range_store, where
 * it is found at the first probe (nearly every call after the first of its
 * shape: a multiply, a shift, one compare), else NULL: the caller's way out of
 * line then asks nvs_range_find, and describes the call and stores it when
 * that finds none. A match needs no test of the range: it is published before
 * built_key. */
static inline const struct nvs_attributes *nvs_range_lookup(enum nvs_domain domain, uint64_t key)
{
    struct nvs_name_slot *entry = &nvs_names[domain][nvs_name_slot_of(key)];
    if (__builtin_expect(atomic_load_explicit(&entry->built_key, memory_order_acquire) != key, 0))
        return NULL;
    const struct nvs_attributes *range = atomic_load_explicit(&entry->range, memory_order_relaxed);
    if (range == NULL)
        __builtin_unreachable();
    return range;
}

/* TEXT registered in DOMAIN, errno kept; NULL where no tool registers
 * strings. For a name kept by a table of the caller's, which bounds how
 * many are registered (every other name goes through the table here). */
nvtxStringHandle_t nvs_name_register(enum nvs_domain domain, const char *text);

/* RANGE (its domain's, KEY's range: the same attributes at every call with
 * KEY) named TEXT, registered: the range built for KEY, from now on what
 * nvs_range_lookup finds; where none can be built (no slot, no registered
 * name), RANGE itself, named by nvs_name_store. */
const struct nvs_attributes *nvs_range_store(struct nvs_attributes *range, uint64_t key,
                                             const char *text);

/* Names the calling OS thread in the timeline (not for the OS). */
void nvs_name_thread(const char *name);

/* Monotonic nanoseconds (vDSO, no system call). */
uint64_t nvs_now_ns(void);

#endif
