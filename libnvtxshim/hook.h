/* The call path every wrapper takes (ARCHITECTURE.md, "The way of a call"):
 *
 *   nvs_call_begins(group)      false (untraced or nested): tail-call the real
 *                               function; true: a program-level call of a
 *                               traced library begins
 *   nvs_call_open(...)          its range, described by the wrapper, pushed; the
 *                               call dispatched to the kernel probe, capture
 *                               triggers and frames; errno kept
 *   ... the real function ...
 *   nvs_call_close(domain)      the range popped, the call left (errno kept)
 *
 * The per-library files (hooks/) only describe a call: its range's
 * attributes and the frame marker it counts as. */
#ifndef NVS_HOOK_H
#define NVS_HOOK_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hidden.h"
#include "capture.h"
#include "config.h"
#include "emit.h"
#include "registry/registry.h"
#include "resolve.h"

/* ---- is this call traced? ------------------------------------------------------ */

/* Depth of hooked calls on this thread: only depth 0 is the program's own
 * call; libusb's sync functions calling its async ones, the CUDA runtime
 * calling the driver, run deeper and pass straight through. Its top bit
 * (NVS_DEPTH_AFTER_WORK) says the program-level call under way must be
 * followed by more work when it ends (capture.h): the call's end finds it in
 * the sign of the depth it leaves, with no load of its own. */
extern NVS_HIDDEN __thread unsigned nvs_hook_depth __attribute__((tls_model("initial-exec")));
#define NVS_DEPTH_AFTER_WORK (1u << 31)

#define NVS_GROUPS_READY (1u << 31)
extern NVS_HIDDEN _Atomic unsigned nvs_traced_groups_state;
unsigned nvs_traced_groups_init(void);

/* What exit does before the trace is completed, for exec and _exit too: the
 * open frame ends (and with it a capture window that holds it). */
void nvs_end_frames(void);

/* The enum nvs_hook_set bits of libraries whose calls are traced now: the
 * hook is on and an NVTX tool is attached (or a capture trigger counts calls). */
static inline unsigned nvs_traced_groups(void)
{
    unsigned groups = atomic_load_explicit(&nvs_traced_groups_state, memory_order_acquire);
    return (groups & NVS_GROUPS_READY) ? groups : nvs_traced_groups_init();
}

/* True when a call of GROUP surely goes straight to the real function (the
 * library is ready and the group untraced, or the call is nested). Wrappers
 * test it first and tail-call the real function: nothing else is on the way,
 * so the compiler saves no register and moves no argument for it. */
static inline bool nvs_call_passes(unsigned group)
{
    unsigned groups = atomic_load_explicit(&nvs_traced_groups_state, memory_order_acquire);
    return __builtin_expect((groups & NVS_GROUPS_READY) && (!(groups & group) || nvs_hook_depth),
                            1);
}

/* True when this is a program-level call of a traced library: the wrapper
 * then opens its range, calls the real function and closes the range. */
static inline bool nvs_call_enter(unsigned group)
{
    if (nvs_hook_depth || !(nvs_traced_groups() & group))
        return false;
    nvs_hook_depth++;
    return true;
}

/* The wrappers' test, nvs_call_passes and nvs_call_enter in one: true when
 * a program-level call of traced GROUP begins (entered); false when the
 * wrapper tail-calls the real function. */
static inline bool nvs_call_begins(unsigned group)
{
    unsigned groups = atomic_load_explicit(&nvs_traced_groups_state, memory_order_acquire);
    if (__builtin_expect(!(groups & NVS_GROUPS_READY), 0))
        return nvs_call_enter(group);
    if (__builtin_expect(!(groups & group) || nvs_hook_depth, 1))
        return false;
    nvs_hook_depth++;
    return true;
}

/* The program-level call under way on this thread (entered: the depth is
 * at least 1, so the bit never stands alone) must be followed by
 * nvs_capture_after_call when it ends. */
static inline void nvs_call_after_work(void)
{
    nvs_hook_depth |= NVS_DEPTH_AFTER_WORK;
}
void nvs_call_do_after_work(void);
/* In a forked child: the parent's capture is not the child's. */
static inline void nvs_call_forget_after_work(void)
{
    nvs_hook_depth &= ~NVS_DEPTH_AFTER_WORK;
}

/* The program-level call entered has returned. */
static inline void nvs_call_leave(void)
{
    if (__builtin_expect((int)--nvs_hook_depth < 0, 0))
        nvs_call_do_after_work();
}

/* ---- the call's range ------------------------------------------------------------ */

/* Room for a range's name that has to be formatted: the wrapper keeps it
 * until the range is open. */
#define NVS_CALL_TEXT_MAX 192

/* What a call must be dispatched to beyond its range (hook.c sets it once,
 * when the library becomes active): frames, capture triggers that count
 * calls, time or signals, the kernel probe's thread list, a capture waiting
 * for a thread with a CUDA context. Read relaxed: a plain load. */
extern NVS_HIDDEN _Atomic unsigned nvs_call_work;
void nvs_call_dispatch(enum nvs_hook_id id, enum nvs_frame_marker marker, int endpoint,
                       enum nvs_domain domain);
/* The registered name of each hook's range, by id (hook.c): no hashing on
 * the way in; registered on first use. */
extern NVS_HIDDEN _Atomic(nvtxStringHandle_t) nvs_call_hook_names[NVS_HOOK_COUNT];
struct nvs_name nvs_call_register_hook_name(enum nvs_domain domain, enum nvs_hook_id id);

static inline struct nvs_name nvs_call_hook_name(enum nvs_domain domain, enum nvs_hook_id id)
{
    struct nvs_name name = { atomic_load_explicit(&nvs_call_hook_names[id], memory_order_acquire),
                             NULL };
    return name.registered ? name : nvs_call_register_hook_name(domain, id);
}

/* RANGE named after hook ID: its registered name once there is one. */
static inline void nvs_call_name_after_hook(struct nvs_attributes *range, enum nvs_hook_id id)
{
    nvtxStringHandle_t handle = atomic_load_explicit(&nvs_call_hook_names[id],
                                                     memory_order_acquire);
    if (__builtin_expect(handle != NULL, 1))
        nvs_attributes_registered_name(range, handle);
    else
        nvs_attributes_name(range, nvs_call_register_hook_name(range->domain, id));
}

/* Opens RANGE, the range of a program-level call of hook ID, and dispatches
 * the call (MARKER: the kind of frame marker it is; ENDPOINT: its USB endpoint
 * or -1). A RANGE without a name is named after the hook. errno is left as it
 * was, without being read here: everything this calls keeps it (the dispatch
 * and the name's registration save it themselves, nvs_range_push keeps it, and
 * so does nvs_name_store when the wrapper builds RANGE). Inline, with the
 * dispatch out of line: every traced call makes it. */
static inline void nvs_call_name_and_dispatch(enum nvs_hook_id id, enum nvs_frame_marker marker,
                                              int endpoint, struct nvs_attributes *range)
{
    if (!nvs_attributes_named(range))
        nvs_call_name_after_hook(range, id);
    if (__builtin_expect(atomic_load_explicit(&nvs_call_work, memory_order_relaxed) != 0, 0))
        nvs_call_dispatch(id, marker, endpoint, range->domain);
}

static inline void nvs_call_open(enum nvs_hook_id id, enum nvs_frame_marker marker, int endpoint,
                                 struct nvs_attributes *range)
{
    nvs_call_name_and_dispatch(id, marker, endpoint, range);
    nvs_range_push(range);
}

/* Whether calls must be dispatched now (nvs_call_dispatch): one relaxed load.
 * A family whose frame marker takes work to find tests this, then dispatches
 * out of line, so that the marker is not worked out on the way when nothing
 * wants it (the compiler would hoist a cheap one above the test). */
static inline bool nvs_call_has_work(void)
{
    return __builtin_expect(atomic_load_explicit(&nvs_call_work, memory_order_relaxed) != 0, 0);
}

/* Opens RANGE, DOMAIN's, built once for every call of its shape (the hook's
 * constant range below, or emit.h's nvs_range_lookup), and dispatches the
 * call, as nvs_call_open: no attribute is written at the call. */
static inline __attribute__((always_inline)) void nvs_call_open_built(
    enum nvs_hook_id id, enum nvs_frame_marker marker, int endpoint, enum nvs_domain domain,
    const struct nvs_attributes *range)
{
    if (nvs_call_has_work())
        nvs_call_dispatch(id, marker, endpoint, domain);
    nvs_range_push_in(domain, range);
}

/* The range of a call of hook ID that is the same at every call: named after
 * the hook, in DOMAIN, CATEGORY and COLOR, no payload. Built and published
 * once, with the hook's registered name (hook.c). NVTX tools take the
 * attributes as const: every call hands the tool the same ones, as a program
 * that keeps its attributes in a static does. */
extern NVS_HIDDEN _Atomic(const struct nvs_attributes *) nvs_call_hook_ranges[NVS_HOOK_COUNT];
/* The call's range before it is published (or where no name can be
 * registered): made for this call and pushed (the call is dispatched). */
void nvs_call_push_first(enum nvs_hook_id id, enum nvs_domain domain, uint32_t category,
                         uint32_t color);

/* Opens the range of hook ID that is the same at every call (above) and
 * dispatches the call, as nvs_call_open: no attribute is written at the call. */
static inline __attribute__((always_inline)) void nvs_call_open_constant(
    enum nvs_hook_id id, enum nvs_frame_marker marker, enum nvs_domain domain, uint32_t category,
    uint32_t color)
{
    /* The dispatch first: the range's pointer then goes straight to the push,
     * with no register kept for it across the dispatch's call. */
    if (__builtin_expect(atomic_load_explicit(&nvs_call_work, memory_order_relaxed) != 0, 0))
        nvs_call_dispatch(id, marker, -1, domain);
    const struct nvs_attributes *range = atomic_load_explicit(&nvs_call_hook_ranges[id],
                                                              memory_order_acquire);
    if (__builtin_expect(range == NULL, 0))
        nvs_call_push_first(id, domain, category, color);
    else
        nvs_range_push_in(domain, range);
}

/* The same for an asynchronous call whose range ends elsewhere (a USB
 * submission, ended by its completion): returns the range's id. */
static inline uint64_t nvs_call_open_async(enum nvs_hook_id id, enum nvs_frame_marker marker,
                                           int endpoint, struct nvs_attributes *range)
{
    int NVS_ERRNO_SPACE *error = nvs_errno_address();
    int saved_errno = *error;
    nvs_call_name_and_dispatch(id, marker, endpoint, range);
    uint64_t started = nvs_range_start(range);
    *error = saved_errno;
    return started;
}

/* The range of a program-level call drawn once it has returned, from BEGAN
 * (nvs_now_ns before the call): for calls whose description lies in the
 * program's memory, which the library reads only after the kernel accepted it
 * (a bad pointer is the kernel's EFAULT, never a fault of ours), or that are
 * drawn only when they found something. The recorder gets the range with its
 * real start; NVTX, which cannot begin one in the past, a range at the return
 * (nvs_range_span). errno is kept. */
static inline void nvs_call_drawn(enum nvs_hook_id id, enum nvs_frame_marker marker, int endpoint,
                                  struct nvs_attributes *range, uint64_t began)
{
    int NVS_ERRNO_SPACE *error = nvs_errno_address();
    int saved_errno = *error;
    nvs_call_name_and_dispatch(id, marker, endpoint, range);
    nvs_range_span(range, began, nvs_now_ns());
    *error = saved_errno;
}

/* Pops the call's range in DOMAIN and leaves the call; errno is left as it
 * was (nvs_range_pop and the after-work keep it). Inline: it is two calls, and
 * every traced call makes it. */
static inline void nvs_call_close(enum nvs_domain domain)
{
    nvs_range_pop(domain);
    nvs_call_leave();
}

/* The key of a registered name for the range of hook ID with these
 * PARAMETERS (emit.h's tables, one a domain): the hook above bit 54, the
 * parameters below it, as many as the name says, none lost. Bit 53 marks a
 * second name of the same call (a short transfer's mark, a transfer's
 * callback): those calls' parameters fit in 53 bits. */
#define NVS_KEY_PARAMETER_BITS 54
#define NVS_KEY_VARIANT (1ull << 53)
_Static_assert(NVS_HOOK_COUNT < (1u << (64 - NVS_KEY_PARAMETER_BITS)) - 1, "hook ids fit the key");
static inline uint64_t nvs_call_name_key(enum nvs_hook_id id, uint64_t parameters)
{
    return ((uint64_t)(id + 1) << NVS_KEY_PARAMETER_BITS) |
        (parameters & ((1ull << NVS_KEY_PARAMETER_BITS) - 1));
}

/* ---- not a call of its own -------------------------------------------------------- */

/* An asynchronous USB transfer completed (on the thread libusb chose): only
 * frames count it. */
void nvs_call_completed(enum nvs_hook_id id, enum nvs_frame_marker marker, int endpoint);

/* ---- wrapper bodies ------------------------------------------------------------------ */

/* What every exported wrapper is marked with. */
#define NVS_EXPORT __attribute__((visibility("default")))

/* Whether CALL (an expression, not evaluated) is of type void; its value for
 * NVS_TRACED_CALL's RESULT, 0 when it has none. */
#define NVS_IS_VOID(call) __builtin_types_compatible_p(__typeof__(call), void)
#define NVS_VALUE(call) __builtin_choose_expr(NVS_IS_VOID(call), ((call), 0), (call))

/* The traced call of NAME itself, its real function found and the call
 * entered: OPEN (which calls nvs_call_open), the real call with ARGUMENTS,
 * CLOSE (nvs_call_close), and its value returned. RESULT holds the real
 * call's value inside CLOSE (0 for a void function). The real function is
 * loaded after OPEN (nvs_resolved): no register is kept for it across the
 * tool's push. */
#define NVS_TRACED_CALL(name, arguments, open, close)                                              \
    open;                                                                                          \
    __typeof__(&name) real = (__typeof__(&name))nvs_resolved(NVS_HOOK_ID(name));                   \
    __typeof__(NVS_VALUE(real arguments)) result = NVS_VALUE(real arguments);                      \
    close;                                                                                         \
    return __builtin_choose_expr(NVS_IS_VOID(real arguments), (void)0, result)

/* A wrapper of TYPE NAME PARAMETERS in three parts. The exported one passes
 * ARGUMENTS straight to the real function when that is known and the call
 * untraced: two loads, two tests and a jump, nothing kept for the traced path
 * (GCC still copies arguments passed on the stack, past the sixth, back to
 * where they were). When the call is traced it raises the thread's depth and
 * jumps, the arguments where they are, to the traced part, out of line,
 * which runs TRACED (statements that return the call's value; they load the
 * real function with no test, nvs_resolved: it is found by then). Before the real function is known or the
 * traced groups are, the cold first part finds it (MISSING where none is),
 * asks nvs_call_begins, and goes on like the exported one. Against a body in
 * the exported function, an untraced call costs 10 instructions less for a
 * CUDA wait and 19 less for a launch, whose eleven parameters put five on the
 * stack (callgrind, make bench). Declared first: cuda.h declares the
 * per-thread-default-stream twins (_ptds, _ptsz) only for programs built with
 * --default-stream per-thread. */
#define NVS_SPLIT_WRAPPER_TRACED(group, type, name, parameters, arguments, find, missing, traced)  \
    extern type name parameters;                                                                   \
    static __attribute__((noinline)) type nvs_traced_##name parameters                             \
    {                                                                                              \
        traced;                                                                                    \
    }                                                                                              \
    static __attribute__((noinline, cold)) type nvs_first_##name parameters                        \
    {                                                                                              \
        __typeof__(&name) real = (__typeof__(&name))find(NVS_HOOK_ID(name));                       \
        if (!real)                                                                                 \
            return missing;                                                                        \
        if (!nvs_call_begins(group))                                                               \
            return real arguments;                                                                 \
        return nvs_traced_##name arguments;                                                        \
    }                                                                                              \
    NVS_EXPORT type name parameters                                                                \
    {                                                                                              \
        __typeof__(&name) real = (__typeof__(&name))atomic_load_explicit(                          \
            &nvs_real_functions[NVS_HOOK_ID(name)], memory_order_acquire);                         \
        unsigned groups = atomic_load_explicit(&nvs_traced_groups_state, memory_order_acquire);    \
        if (__builtin_expect(!real || !(groups & NVS_GROUPS_READY), 0))                            \
            return nvs_first_##name arguments;                                                     \
        if (__builtin_expect(!(groups & (group)) || nvs_hook_depth, 1))                            \
            return real arguments;                                                                 \
        nvs_hook_depth++;                                                                          \
        return nvs_traced_##name arguments;                                                        \
    }

/* The usual split wrapper: its traced part is NVS_TRACED_CALL(ARGUMENTS, OPEN,
 * CLOSE), one range around the real call. */
#define NVS_SPLIT_WRAPPER(group, type, name, parameters, arguments, find, missing, open, close)    \
    NVS_SPLIT_WRAPPER_TRACED(group, type, name, parameters, arguments, find, missing,              \
                             NVS_TRACED_CALL(name, arguments, open, close))

/* The body of a wrapper that calls the real function, then does AFTER (which
 * may read RESULT): entry-point lookups, allocations that empty a cache. */
#define NVS_PASS_THEN(name, missing, arguments, after)                                             \
    __typeof__(&name) real = NVS_REAL(name);                                                       \
    if (!real)                                                                                     \
        return missing;                                                                            \
    __typeof__(real arguments) result = real arguments;                                            \
    after;                                                                                         \
    return result

#endif
