/* The NVTX tool behind NVTXSHIM_TRACE: every NVTX instance in the process
 * (ours and the program's) finds this library through NVTX_INJECTION64_PATH
 * and calls InitializeInjectionNvtx2, where we fill its function table.
 *
 * This file turns NVTX calls into trace events: each thread's push/pop stack
 * and the start/end ranges, with NVTX's arguments (names, domains, categories,
 * registered strings) read by nvtx_args.c and the open start/end ranges kept
 * in open_ranges.c's table. An encoder (encode_json.c, or encode_pftrace.c for a .pftrace path)
 * makes the bytes and trace_writer.c takes them to the file. Push/pop ranges
 * nest on their thread: the JSON form writes each whole when it pops, and one
 * popped from under others still open (another domain's) would not nest, so it
 * goes out as an async pair instead; the protobuf form writes a begin and an
 * end, and names the end of one popped from under others. Its begin is
 * pending at the push: the pop writes begin and end together, and any other
 * event of the thread first writes the begins still pending under it, so the
 * thread's sequence stays in order. Start/end ranges, which may end on
 * another thread, are async pairs in both. */
#define _GNU_SOURCE
#include "record.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

#include "../clock.h"
#include "../config.h"
#include "../emit.h"
#include "../sys.h"
#include "trace.h"
#include "encode_pftrace.h"
#include "nvtx_args.h"
#include "open_ranges.h"
#include "record_calls.h"
#include "trace_writer.h"

/* The calling thread's stack of open push/pop ranges, in the writer's
 * per-thread memory: its head is zeroed whenever a thread takes it over. */
struct range_stack {
    int depth; /* may exceed NVS_TRACE_STACK_DEPTH: counted, not kept */
    /* Ranges from this level up may have a pending begin (NVS_BEGIN_PENDING);
     * none below it has. */
    int pending_from;
    uint32_t unused[14];
    struct nvs_trace_event ranges[NVS_TRACE_STACK_DEPTH];
};
_Static_assert(offsetof(struct range_stack, ranges) <= NVS_WRITER_PRIVATE_ZEROED,
               "the stack's head is zeroed when a thread takes the buffer over");

/* A push/pop range's begin (event->begun), for an encoder that writes one:
 * not written (lost), written, or pending; pending and the library's own (a
 * registered name and a payload of none or u64: the pop's fast way). */
enum { NVS_BEGIN_NONE, NVS_BEGIN_WRITTEN, NVS_BEGIN_PENDING, NVS_BEGIN_PENDING_OWN };

/* Whether this library is the process's NVTX tool, read at exit. */
static bool enabled NVS_ONCE_DATA;

static struct {
    pid_t pid;
    const struct nvs_trace_encoder *encoder;
    _Atomic uint64_t next_trace_id;
} state;

static uint64_t now_ns(void)
{
    return nvs_clock_ns();
}

/* ---- events ------------------------------------------------------------------ */

/* The part of SOURCE that is set: the text only when the name is inline. */
static void copy_event(struct nvs_trace_event *target, const struct nvs_trace_event *source)
{
    memcpy(target, source, offsetof(struct nvs_trace_event, text));
    if (!source->registered)
        memcpy(target->text, source->text, source->text_length + 1);
}

/* ENCODE_CALL writes one event at out_, THREAD's room for it (none: the
 * event is dropped, counted by the writer); whether it reached the buffer. */
#define WRITTEN_EVENT_NOW(thread, encode_call)                                                     \
    __extension__({                                                                                \
        char *out_ = nvs_writer_begin(thread);                                                     \
        if (out_)                                                                                  \
            nvs_writer_commit((thread), encode_call);                                              \
        out_ != NULL;                                                                              \
    })
/* The same after the begins still pending on THREAD (settle, below). */
#define WRITTEN_EVENT(thread, encode_call)                                                         \
    __extension__({                                                                                \
        settle(thread);                                                                            \
        WRITTEN_EVENT_NOW(thread, encode_call);                                                    \
    })
#define WRITE_EVENT(thread, encode_call) ((void)WRITTEN_EVENT(thread, encode_call))

static inline struct range_stack *stack_of(struct nvs_writer_thread *thread)
{
    return nvs_writer_private(thread);
}

/* The ranges of a stack DEPTH deep that it keeps (deeper ones were counted at
 * their push). */
static inline int kept_depth(int depth)
{
    return depth < 0 ? 0 : depth < NVS_TRACE_STACK_DEPTH ? depth : NVS_TRACE_STACK_DEPTH;
}

/* The begins still pending on THREAD, innermost last: before any other event
 * of the thread, so that its sequence keeps time order and a slice's begin
 * comes before what happens inside it. A slot whose push a signal handler
 * interrupted is not pending yet and is left to its pop.
 *
 * Each begin is looked at once the room for it is taken: from then on a
 * handler on this thread writes nothing (it finds the buffer taken), so a
 * begin a handler wrote was written before, and none is written twice. A
 * handler that interrupted the thread's own write leaves the begins pending,
 * for the thread or their pops: they are not lost, and not counted. FINAL
 * (the finish): with the finish's room, which waits for no lock; what finds
 * none is counted. Where taking the room started the thread's sequence again
 * (the writer moved to another file), the begins written before it are
 * pending again (sequence_restarted): the loop goes round again for them. */
static __attribute__((noinline)) void write_pending_begins(struct nvs_writer_thread *thread,
                                                           struct range_stack *stack, bool final)
{
    if (nvs_writer_busy(thread))
        return;
    uint32_t restarts;
again:
    restarts = nvs_writer_restarts(thread);
    int depth = stack->depth;
    int kept = depth < NVS_TRACE_STACK_DEPTH ? depth : NVS_TRACE_STACK_DEPTH;
    for (int i = stack->pending_from; i < kept; i++) {
        struct nvs_trace_event *event = &stack->ranges[i];
        if (event->begun < NVS_BEGIN_PENDING)
            continue;
        char *out = final ? nvs_writer_begin_final(thread) : nvs_writer_begin(thread);
        if (!out) {
            if (final) {
                uint64_t left = 0;
                for (; i < kept; i++)
                    left += stack->ranges[i].begun >= NVS_BEGIN_PENDING;
                nvs_writer_count_final(NVS_LOSS_OPEN_AT_END, left);
                return;
            }
            event->begun = NVS_BEGIN_NONE; /* dropped, counted by the writer */
            continue;
        }
        if (event->begun < NVS_BEGIN_PENDING) {
            nvs_writer_abandon(thread); /* a handler wrote it before the room was taken */
            continue;
        }
        event->begun = NVS_BEGIN_NONE;
        atomic_signal_fence(memory_order_seq_cst);
        nvs_writer_commit(thread, state.encoder->push(out, nvs_writer_ids(thread), event));
        event->begun = NVS_BEGIN_WRITTEN;
    }
    if (nvs_writer_restarts(thread) != restarts)
        goto again;
    stack->pending_from = depth;
}

/* The innermost range, EVENT, ends at END_NS: its end, after its begin where
 * that is still pending, both in one reservation (an event is below half the
 * room past a buffer's bytes). The begin is looked at once the room is
 * taken, as above: written once, by a handler or here. */
static void write_own_range(struct nvs_writer_thread *thread, struct nvs_trace_event *event,
                            uint64_t end_ns)
{
    char *out = nvs_writer_begin(thread);
    if (!out) {
        event->begun = NVS_BEGIN_NONE; /* dropped, counted by the writer */
        return;
    }
    struct nvs_trace_thread_ids *ids = nvs_writer_ids(thread);
    uint8_t begun = event->begun;
    if (begun >= NVS_BEGIN_PENDING) {
        event->begun = NVS_BEGIN_NONE;
        atomic_signal_fence(memory_order_seq_cst);
        out = state.encoder->push(out, ids, event);
    } else if (begun != NVS_BEGIN_WRITTEN) {
        nvs_writer_abandon(thread); /* its begin was dropped: its end goes too */
        return;
    }
    nvs_writer_commit(thread, state.encoder->complete(out, ids, event, end_ns));
}

static inline void settle(struct nvs_writer_thread *thread)
{
    struct range_stack *stack = stack_of(thread);
    if (__builtin_expect(stack->pending_from < stack->depth, 0))
        write_pending_begins(thread, stack, false);
}

/* Ids for an event about thread TID written in THREAD's sequence. */
static struct nvs_trace_thread_ids ids_for(struct nvs_writer_thread *thread, uint32_t tid)
{
    struct nvs_trace_thread_ids ids = {
        .pid = state.pid,
        .tid = tid,
        .sequence_id = nvs_writer_ids(thread)->sequence_id,
        .sequence = nvs_writer_ids(thread)->sequence,
    };
    state.encoder->prepare_thread(&ids);
    return ids;
}

void nvs_record_mark(const struct nvs_trace_event *event)
{
    struct nvs_writer_thread *thread = nvs_writer_thread();
    if (thread)
        WRITE_EVENT(thread, state.encoder->mark(out_, nvs_writer_ids(thread), event));
}

/* A range from START to END written as an async pair on THREAD's ids. */
static void write_pair(struct nvs_writer_thread *thread, struct nvs_trace_thread_ids *ids,
                       const struct nvs_trace_event *event, uint64_t end_ns,
                       const struct nvs_trace_args *args)
{
    uint64_t id = atomic_fetch_add_explicit(&state.next_trace_id, 1, memory_order_relaxed) + 1;
    WRITE_EVENT(thread, state.encoder->begin(out_, ids, event, id));
    WRITE_EVENT(thread, state.encoder->end(out_, ids, event, id, end_ns, args, false));
}

/* ---- push/pop ------------------------------------------------------------------ */

/* The slot at LEVEL (the depth, below NVS_TRACE_STACK_DEPTH), taken before it
 * is filled: a signal handler that pushes meanwhile takes the next one, and
 * one that writes passes over it (not pending yet). */
static inline struct nvs_trace_event *take_slot(struct range_stack *stack, int level)
{
    struct nvs_trace_event *event = &stack->ranges[level];
    event->begun = NVS_BEGIN_NONE;
    atomic_signal_fence(memory_order_seq_cst);
    stack->depth = level + 1;
    atomic_signal_fence(memory_order_seq_cst);
    return event;
}

/* EVENT, taken at LEVEL and filled, is pending (STATE) from now on: marked
 * last, and pending_from lowered where a handler's write passed over it. */
static inline void mark_pending(struct range_stack *stack, struct nvs_trace_event *event, int level,
                                uint8_t state_now)
{
    atomic_signal_fence(memory_order_seq_cst);
    event->begun = state_now;
    atomic_signal_fence(memory_order_seq_cst);
    if (__builtin_expect(stack->pending_from > level, 0))
        stack->pending_from = level;
}

/* The calling thread's next stack slot, its level in *LEVEL (-1 while not
 * recording), its buffer in *THREAD; NULL when deeper than the stack keeps
 * (the level still counts, for the pop). The slot is taken before it is
 * filled, and is not pending until pushed() says so: a signal handler that
 * pushes meanwhile takes the next one, and leaves this one be. */
static inline struct nvs_trace_event *next_stack_slot(int *level, struct nvs_writer_thread **out)
{
    struct nvs_writer_thread *thread = *out = nvs_writer_thread();
    if (!thread) {
        *level = -1;
        return NULL;
    }
    struct range_stack *stack = stack_of(thread);
    *level = stack->depth;
    if (*level < NVS_TRACE_STACK_DEPTH)
        return take_slot(stack, *level);
    stack->depth = *level + 1;
    nvs_writer_count(NVS_LOSS_TOO_DEEP, 1);
    return NULL;
}

/* EVENT, filled at LEVEL of THREAD's stack: an encoder that writes a
 * range's begin (the protobuf one) has it pending, written with the end or
 * before the thread's next other event. */
static inline void pushed(struct nvs_writer_thread *thread, struct nvs_trace_event *event,
                          int level)
{
    struct range_stack *stack = stack_of(thread);
    if (!state.encoder->push) {
        /* No begin to write: "written" says the slot is filled, for the finish */
        atomic_signal_fence(memory_order_seq_cst);
        event->begun = NVS_BEGIN_WRITTEN;
        stack->pending_from = stack->depth; /* nothing ever pending: settle stays one test */
        return;
    }
    mark_pending(stack, event, level, NVS_BEGIN_PENDING);
}

int nvs_record_push(struct nvs_trace_domain *domain, const nvtxEventAttributes_t *attributes,
                    const char *text)
{
    int level;
    struct nvs_writer_thread *thread;
    struct nvs_trace_event *event = next_stack_slot(&level, &thread);
    if (event) {
        if (text)
            nvs_args_capture_text(event, text);
        else
            nvs_args_capture(event, domain, attributes);
        event->start_ns = now_ns(); /* last: the range holds as little of ours as can be */
        pushed(thread, event, level);
    }
    return level;
}

/* The stack is LEVEL deep again (nothing pending above it). */
static inline int popped(struct range_stack *stack, int level)
{
    stack->depth = level;
    if (stack->pending_from > level)
        stack->pending_from = level;
    return level;
}

/* Pops the innermost range of DOMAIN on this thread at END_NS. */
static int pop_at(const struct nvs_trace_domain *domain, uint64_t end_ns)
{
    struct nvs_writer_thread *thread = nvs_writer_thread();
    if (!thread)
        return -1;
    struct range_stack *stack = stack_of(thread);
    int top = stack->depth - 1;
    /* The usual case first: the innermost range is DOMAIN's. */
    if (__builtin_expect(
            top >= 0 && top < NVS_TRACE_STACK_DEPTH && stack->ranges[top].domain == domain, 1)) {
        struct nvs_trace_event *event = &stack->ranges[top];
        if (!state.encoder->push) {
            /* Nothing is ever pending: pending_from may stay above the depth.
             * The range is this pop's from here on: a handler that ends the
             * process meanwhile does not write it again (nvs_record_finish). */
            event->begun = NVS_BEGIN_NONE;
            atomic_signal_fence(memory_order_seq_cst);
            (void)WRITTEN_EVENT_NOW(
                thread, state.encoder->complete(out_, nvs_writer_ids(thread), event, end_ns));
            return stack->depth = top;
        } else {
            /* Its begin may still be pending (one a handler's write passed
             * over included): those under it first, then its own with its end. */
            if (event->begun >= NVS_BEGIN_PENDING && stack->pending_from > top)
                stack->pending_from = top;
            if (stack->pending_from < top)
                settle(thread);
            write_own_range(thread, event, end_ns);
        }
        return popped(stack, top);
    }
    if (stack->depth == 0)
        return -1;
    if (stack->depth > NVS_TRACE_STACK_DEPTH)
        return popped(stack, stack->depth - 1); /* deeper than we keep: counted at its push */
    /* DOMAIN's innermost range lies under others still open (another domain's):
     * as a complete event it would cross them, so it goes out as a pair. */
    for (int i = stack->depth - 2; i >= 0; i--) {
        struct nvs_trace_event *event = &stack->ranges[i];
        if (event->domain != domain)
            continue;
        if (!state.encoder->close_under) {
            event->begun = NVS_BEGIN_NONE; /* this pop's, as above */
            atomic_signal_fence(memory_order_seq_cst);
            write_pair(thread, nvs_writer_ids(thread), event, end_ns, NULL);
        } else {
            settle(thread);
            /* The room first, then the look, as in write_own_range: taking it
             * may start the sequence again, its begin pending once more. */
            char *out = nvs_writer_begin(thread);
            struct nvs_trace_thread_ids *ids = nvs_writer_ids(thread);
            if (!out) {
                if (event->begun >= NVS_BEGIN_PENDING) {
                    /* a handler inside this thread's write: its range is lost */
                    event->begun = NVS_BEGIN_NONE;
                    nvs_writer_count(NVS_LOSS_IN_HANDLER, 1);
                }
            } else if (event->begun >= NVS_BEGIN_PENDING) {
                event->begun = NVS_BEGIN_NONE;
                atomic_signal_fence(memory_order_seq_cst);
                out = state.encoder->push(out, ids, event);
                nvs_writer_commit(thread, state.encoder->close_under(out, ids, event, end_ns));
            } else if (event->begun == NVS_BEGIN_WRITTEN) {
                nvs_writer_commit(thread, state.encoder->close_under(out, ids, event, end_ns));
            } else {
                nvs_writer_abandon(thread); /* its begin was dropped: its end goes too */
            }
        }
        memmove(&stack->ranges[i], &stack->ranges[i + 1],
                (size_t)(stack->depth - 1 - i) * sizeof stack->ranges[0]);
        return popped(stack, stack->depth - 1);
    }
    return -1;
}

int nvs_record_pop(const struct nvs_trace_domain *domain)
{
    return pop_at(domain, now_ns());
}

/* The payload type of the library's own attributes, which have a u64 or none
 * (emit.h's NVS_ATTRIBUTES and nvs_attributes_payload): NVTX's numbers are the
 * trace model's for those two, so the type is taken as it is. */
_Static_assert((int)NVTX_PAYLOAD_UNKNOWN == (int)NVS_PAYLOAD_NONE &&
                   (int)NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 == (int)NVS_PAYLOAD_U64,
               "the library's payload types are NVTX's");
static inline enum nvs_trace_payload own_payload_type(const struct nvs_attributes *attributes)
{
    return (enum nvs_trace_payload)attributes->event.payloadType;
}

/* EVENT as the library's own call describes it (its direct push and start). */
static inline void describe_own(struct nvs_trace_event *event, nvtxDomainHandle_t domain,
                                const struct nvs_attributes *attributes)
{
    event->domain = (struct nvs_trace_domain *)domain; /* one of the library's, never NULL */
    event->category = attributes->event.category;
    event->color = attributes->event.color & 0xffffffu;
    event->payload_type = own_payload_type(attributes);
    event->payload = attributes->event.payload.ullValue;
    if (__builtin_expect(attributes->event.messageType == NVTX_MESSAGE_TYPE_REGISTERED, 1)) {
        event->registered = (struct nvs_trace_string *)attributes->event.message.registered;
        event->text_length = 0;
    } else {
        event->registered = NULL;
        event->text_length = nvs_args_copy_text(event->text, sizeof event->text,
                                                nvs_attributes_text(attributes));
    }
}

/* The library's own ranges when this recorder is its NVTX tool: NVTX's push
 * and pop for the library's own NVTX instance (emit.c puts them in its slots),
 * which hands over the event of a struct nvs_attributes alone. */
static int NVTX_API direct_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *own)
{
    const struct nvs_attributes *attributes = nvs_attributes_of(own);
    int saved_errno = errno; /* a buffer claimed, a file opened or written */
    int level;
    struct nvs_writer_thread *thread;
    struct nvs_trace_event *event = next_stack_slot(&level, &thread);
    if (event) {
        describe_own(event, domain, attributes);
        event->start_ns = now_ns();
        pushed(thread, event, level);
    }
    errno = saved_errno;
    return 0;
}

static int NVTX_API direct_pop(nvtxDomainHandle_t domain)
{
    int saved_errno = errno;
    nvs_record_pop((const struct nvs_trace_domain *)domain);
    errno = saved_errno;
    return 0;
}

/* The same for the protobuf form, where nearly every range the library makes
 * is a registered name pushed on a thread with a stack slot and a clock line
 * (clock.h): the push only fills the slot, with its begin pending, and calls
 * nothing; the pop then writes begin and end in one reservation of the
 * buffer, from the name's cached shape (encode_pftrace.h). Each condition is
 * checked before anything is changed; where one fails, the general way above
 * does it all. */
static int NVTX_API direct_push_pftrace(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *own)
{
    const struct nvs_attributes *attributes = nvs_attributes_of(own);
    struct nvs_writer_thread *thread = nvs_writer_current;
    /* a registered name's handle is never NULL */
    if (__builtin_expect(!thread || attributes->event.messageType != NVTX_MESSAGE_TYPE_REGISTERED,
                         0))
        goto general;
    const struct nvs_trace_string *name = (const struct nvs_trace_string *)
                                              attributes->event.message.registered;
    struct range_stack *stack = stack_of(thread);
    int level = stack->depth;
    if (__builtin_expect(level >= NVS_TRACE_STACK_DEPTH, 0))
        goto general;
    bool fast;
    uint64_t start_ns = nvs_clock_try(&fast);
    if (__builtin_expect(!fast, 0))
        goto general;
    struct nvs_trace_event *event = take_slot(stack, level);
    /* describe_own's, for a registered name; color only the JSON form writes */
    event->domain = (struct nvs_trace_domain *)domain;
    event->registered = (struct nvs_trace_string *)name;
    event->category = attributes->event.category;
    event->payload_type = own_payload_type(attributes);
    event->payload = attributes->event.payload.ullValue;
    event->start_ns = start_ns;
    mark_pending(stack, event, level, NVS_BEGIN_PENDING_OWN);
    return 0;
general:
    return direct_push(domain, own);
}

static int NVTX_API direct_pop_pftrace(nvtxDomainHandle_t handle)
{
    const struct nvs_trace_domain *domain = (const struct nvs_trace_domain *)handle;
    struct nvs_writer_thread *thread = nvs_writer_current;
    if (__builtin_expect(!thread, 0))
        goto general;
    struct range_stack *stack = stack_of(thread);
    unsigned top = (unsigned)stack->depth - 1; /* none open: above the stack */
    if (__builtin_expect(top >= NVS_TRACE_STACK_DEPTH, 0))
        goto general;
    struct nvs_trace_event *event = &stack->ranges[top];
    if (__builtin_expect(event->domain != domain, 0))
        goto general;
    /* The room first: from here on a signal handler on this thread writes
     * nothing (it finds the buffer taken), so the begin's state read below
     * stays as read. One that ran before took what it wrote. */
    char *out = nvs_writer_try_begin(thread);
    if (__builtin_expect(!out, 0))
        goto general;
    struct pf_sequence *sequence = pf_sequence_of(thread->ids.sequence);
    const struct pf_string *shape = NULL;
    if (__builtin_expect((unsigned)stack->pending_from == top, 1)) {
        /* The one pending begin is its own (set_payload keeps a u64), and its
         * name's shape is ready */
        if (__builtin_expect(event->begun != NVS_BEGIN_PENDING_OWN, 0))
            goto abandon;
        shape = pf_shape_ready(sequence, event->registered, domain, event->category);
        if (__builtin_expect(!shape, 0))
            goto abandon;
    } else if (__builtin_expect((unsigned)stack->pending_from != top + 1 ||
                                    event->begun != NVS_BEGIN_WRITTEN ||
                                    event->payload_type > NVS_PAYLOAD_U64,
                                0)) {
        goto abandon; /* begins pending under it, its own not written, a payload to format */
    }
    bool fast;
    uint64_t end_ns = nvs_clock_try(&fast);
    if (__builtin_expect(!fast, 0))
        goto abandon;
    if (shape)
        out = pf_put_begin(out, sequence, shape, event->start_ns, true);
    event->begun = NVS_BEGIN_NONE; /* a handler from here on leaves it be */
    nvs_writer_commit(thread, pf_pop_end_own(out, sequence, event, end_ns));
    stack->depth = (int)top;
    stack->pending_from = (int)top;
    return 0;
abandon:
    nvs_writer_abandon(thread);
general:
    return direct_pop(handle);
}

/* The payload of DOMAIN's innermost range on this thread, before its pop
 * writes it (a transfer's bytes moved, known only when it returns). Nothing
 * when that range is deeper than the stack keeps. */
static void direct_set_payload(nvtxDomainHandle_t domain, uint64_t payload)
{
    struct nvs_writer_thread *thread = nvs_writer_thread();
    if (!thread)
        return;
    struct range_stack *stack = stack_of(thread);
    if (stack->depth > NVS_TRACE_STACK_DEPTH)
        return;
    for (int i = stack->depth - 1; i >= 0; i--) {
        struct nvs_trace_event *event = &stack->ranges[i];
        if (event->domain == (const struct nvs_trace_domain *)domain) {
            event->payload_type = NVS_PAYLOAD_U64;
            event->payload = payload;
            return;
        }
    }
}

/* The writer moved to another file (the first stopped being this run's) and
 * THREAD's sequence starts again there: the begins it wrote stayed with the
 * file left behind, so they are pending again, for the new one, each written
 * with its start time. None is left to the pop's fast way, which gives a begin
 * the sequence's latest time at least. Runs on THREAD, inside its taking of
 * room (nvs_writer_begin): callers look at a begin after that. */
static void sequence_restarted(struct nvs_writer_thread *thread)
{
    if (!state.encoder->push)
        return;
    struct range_stack *stack = stack_of(thread);
    for (int i = kept_depth(stack->depth) - 1; i >= 0; i--) {
        struct nvs_trace_event *event = &stack->ranges[i];
        if (event->begun == NVS_BEGIN_WRITTEN || event->begun == NVS_BEGIN_PENDING_OWN) {
            event->begun = NVS_BEGIN_PENDING;
            if (stack->pending_from > i)
                stack->pending_from = i;
        }
    }
}

/* SLOT, claimed at INDEX and its event filled, opens: its begin goes out. */
static nvtxRangeId_t started(struct nvs_writer_thread *thread, struct nvs_open_range *slot,
                             uint32_t index)
{
    slot->generation++;
    slot->trace_id = atomic_fetch_add_explicit(&state.next_trace_id, 1, memory_order_relaxed) + 1;
    slot->args.count = 0;
    WRITE_EVENT(thread,
                state.encoder->begin(out_, nvs_writer_ids(thread), &slot->event, slot->trace_id));
    /* After the write, which may have started the sequence again; no one has
     * the id to end it before this returns */
    slot->begun_on = thread;
    slot->begun_restarts = nvs_writer_restarts(thread);
    return ((uint64_t)slot->generation << 32) | (index + 1);
}

/* A slot for a range that starts now on THREAD, or NULL (counted). */
static struct nvs_open_range *starting_slot(struct nvs_writer_thread *thread, uint32_t *index)
{
    if (!thread)
        return NULL;
    int saved_errno = errno; /* a chunk of the table mapped, or refused: not the program's */
    struct nvs_open_range *slot = nvs_open_claim(index);
    if (!slot)
        nvs_writer_count_error(NVS_LOSS_NO_MEMORY, 1, errno);
    errno = saved_errno;
    return slot;
}

nvtxRangeId_t nvs_record_start(const struct nvs_trace_event *event)
{
    struct nvs_writer_thread *thread = nvs_writer_thread();
    uint32_t index;
    struct nvs_open_range *slot = starting_slot(thread, &index);
    if (!slot)
        return 0;
    copy_event(&slot->event, event);
    return started(thread, slot, index);
}

/* The library's own start/end ranges (asynchronous submissions, frames), as
 * its pushes: straight into the range's slot, without NVTX attributes. */
static nvtxRangeId_t direct_start(nvtxDomainHandle_t domain,
                                  const struct nvs_attributes *attributes, uint64_t start_ns)
{
    struct nvs_writer_thread *thread = nvs_writer_thread();
    uint32_t index;
    struct nvs_open_range *slot = starting_slot(thread, &index);
    if (!slot)
        return 0;
    struct nvs_trace_event *event = &slot->event;
    describe_own(event, domain, attributes);
    event->start_ns = start_ns;
    return started(thread, slot, index);
}

/* Whether SLOT's begin is on a sequence other than THREAD's as it stands:
 * another buffer's, or this one's before it started again in another file. */
static inline bool begun_elsewhere(const struct nvs_open_range *slot,
                                   struct nvs_writer_thread *thread)
{
    return slot->begun_on != thread || slot->begun_restarts != nvs_writer_restarts(thread);
}

static void end_at(nvtxRangeId_t id, uint64_t end_ns)
{
    struct nvs_open_range *slot = nvs_open_ending(id);
    if (!slot)
        return;
    struct nvs_writer_thread *thread = nvs_writer_thread();
    /* begun_elsewhere is read in the encoder's call, after the room was taken:
     * taking it may start this thread's sequence again in another file. */
    if (thread)
        WRITE_EVENT(thread,
                    state.encoder->end(out_, nvs_writer_ids(thread), &slot->event, slot->trace_id,
                                       end_ns, &slot->args, begun_elsewhere(slot, thread)));
    nvs_open_free(slot);
}

void nvs_record_end(nvtxRangeId_t id)
{
    end_at(id, now_ns());
}

static void direct_end(nvtxDomainHandle_t domain, nvtxRangeId_t id, uint64_t end_ns)
{
    (void)domain;
    end_at(id, end_ns);
}

/* A range of the library's that began in the past (a camera frame's age):
 * written whole, as an async pair, since it may overlap anything on the thread. */
static void direct_span(nvtxDomainHandle_t domain, const struct nvs_attributes *attributes,
                        uint64_t start_ns, uint64_t end_ns)
{
    struct nvs_writer_thread *thread = nvs_writer_thread();
    if (!thread)
        return;
    struct nvs_trace_event event;
    describe_own(&event, domain, attributes);
    event.start_ns = start_ns;
    struct nvs_trace_args args = { .count = 0 };
    write_pair(thread, nvs_writer_ids(thread), &event, end_ns, &args);
}

static void direct_range_args(nvtxRangeId_t id, const struct nvs_trace_args *args)
{
    struct nvs_open_range *slot = enabled ? nvs_open_find(id) : NULL;
    if (slot && atomic_load(&slot->state) == NVS_OPEN_USED)
        slot->args = *args;
}

/* A range of thread TID at times given, on the calling thread's sequence. */
static void direct_interval(nvtxDomainHandle_t domain, const char *name, uint32_t tid,
                            uint64_t start_ns, uint64_t end_ns, const struct nvs_trace_args *args)
{
    struct nvs_writer_thread *thread = enabled ? nvs_writer_thread() : NULL;
    if (!thread)
        return;
    struct nvs_trace_event event;
    nvs_args_capture_text(&event, name);
    event.domain = (struct nvs_trace_domain *)domain; /* one of the library's */
    event.start_ns = start_ns;
    struct nvs_trace_thread_ids ids = ids_for(thread, tid);
    write_pair(thread, &ids, &event, end_ns, args);
}

static void flush(void)
{
    nvs_writer_flush();
}

/* NVTX's domain push, pop, start and end (nvtx_tool.c attaches them): here, where the
 * recorder's push, pop and end inline into them, as the hand-written pairs of
 * NVTX calls make them most. */
int NVTX_API nvs_record_domain_push(nvtxDomainHandle_t domain,
                                    const nvtxEventAttributes_t *attributes)
{
    return nvs_record_push(nvs_args_domain(domain), attributes, NULL);
}

int NVTX_API nvs_record_domain_pop(nvtxDomainHandle_t domain)
{
    return nvs_record_pop(nvs_args_domain(domain));
}

nvtxRangeId_t NVTX_API nvs_record_domain_start(nvtxDomainHandle_t domain,
                                               const nvtxEventAttributes_t *attributes)
{
    struct nvs_trace_event event;
    nvs_args_capture(&event, nvs_args_domain(domain), attributes);
    event.start_ns = now_ns();
    return nvs_record_start(&event);
}

void NVTX_API nvs_record_domain_end(nvtxDomainHandle_t domain, nvtxRangeId_t id)
{
    (void)domain;
    nvs_record_end(id);
}

/* The NVTX tool's thread name (nvtx_tool.c): an event of the calling thread's. */
void nvs_record_name_thread(uint32_t tid, const char *name)
{
    struct nvs_writer_thread *thread = enabled ? nvs_writer_thread() : NULL;
    if (!thread)
        return;
    struct nvs_trace_thread_ids ids = ids_for(thread, tid);
    WRITE_EVENT(thread, state.encoder->thread_name(out_, &ids, name ? name : ""));
}

bool nvs_record_is_tool(void)
{
    return enabled;
}

/* ---- life cycle ------------------------------------------------------------------ */

static const struct nvs_emit_direct direct_tool = {
    .push = direct_push,
    .pop = direct_pop,
    .set_payload = direct_set_payload,
    .start = direct_start,
    .end = direct_end,
    .span = direct_span,
    .range_args = direct_range_args,
    .interval = direct_interval,
    .flush = flush,
}, direct_tool_pftrace = {
    .push = direct_push_pftrace,
    .pop = direct_pop_pftrace,
    .set_payload = direct_set_payload,
    .start = direct_start,
    .end = direct_end,
    .span = direct_span,
    .range_args = direct_range_args,
    .interval = direct_interval,
    .flush = flush,
};

/* PATH names the binary form by its extension. */
static bool binary_path(const char *path)
{
    static const char extension[] = ".pftrace";
    size_t length = strlen(path);
    return length >= sizeof extension - 1 &&
        strcmp(path + length - (sizeof extension - 1), extension) == 0;
}

void nvs_record_enable(const char *path_template)
{
    state.encoder = binary_path(path_template) ? &nvs_trace_pftrace : &nvs_trace_json;
    state.pid = nvs_sys_getpid();
    nvs_clock_enable();
    nvs_args_enable(state.encoder);
    nvs_writer_enable(path_template, state.encoder, sizeof(struct range_stack), sequence_restarted);
    nvs_emit_set_direct(state.encoder == &nvs_trace_pftrace ? &direct_tool_pftrace : &direct_tool);
    enabled = true;
}

void nvs_record_note(const char *line)
{
    nvs_writer_note(line);
}

bool nvs_record_enabled(void)
{
    return enabled;
}

NVS_ONCE bool nvs_record_owns_process(void)
{
    return enabled && nvs_sys_is_process(state.pid);
}

/* The JSON form's ranges still open on THREAD, each a complete event ended
 * now and marked as one that did not end. A slot not filled yet (a push a
 * handler interrupted) or taken by its pop is left out: "written" is the
 * filled one's mark (pushed). */
static void write_unfinished(struct nvs_writer_thread *thread, struct range_stack *stack)
{
    int kept = kept_depth(stack->depth);
    uint64_t end_ns = 0;
    for (int i = 0; i < kept; i++) {
        struct nvs_trace_event *event = &stack->ranges[i];
        if (event->begun != NVS_BEGIN_WRITTEN)
            continue;
        if (!end_ns)
            end_ns = now_ns();
        char *out = nvs_writer_begin_final(thread);
        if (!out) {
            uint64_t left = 0;
            for (; i < kept; i++)
                left += stack->ranges[i].begun == NVS_BEGIN_WRITTEN;
            nvs_writer_count_final(NVS_LOSS_OPEN_AT_END, left);
            return;
        }
        nvs_writer_commit(thread,
                          state.encoder->unfinished(out, nvs_writer_ids(thread), event, end_ns));
    }
}

/* The process ends on THREAD (NULL: one that never recorded). Its push/pop
 * ranges still open - a call that never returned, ended by a handler that
 * exits - go into the file as ranges that did not end: the protobuf form
 * writes the begins still pending, so that they are slices without an end;
 * the JSON form, whose ranges are written whole at their pops, writes each as
 * a complete event up to now, marked so. Other threads' stacks are theirs to
 * change: their open ranges are counted (the depth alone is read), as are
 * this thread's where a handler interrupted its own write. */
static void end_open_ranges(struct nvs_writer_thread *thread)
{
    uint64_t left = 0;
    for (struct nvs_writer_thread *other = nvs_writer_all(); other; other = other->next)
        if (other != thread && atomic_load_explicit(&other->claimed, memory_order_relaxed))
            left += (uint64_t)kept_depth(
                __atomic_load_n(&stack_of(other)->depth, __ATOMIC_RELAXED));
    if (thread) {
        struct range_stack *stack = stack_of(thread);
        if (nvs_writer_busy(thread))
            left += (uint64_t)kept_depth(stack->depth);
        else if (state.encoder->push)
            write_pending_begins(thread, stack, true);
        else
            write_unfinished(thread, stack);
    }
    nvs_writer_count_final(NVS_LOSS_OPEN_AT_END, left);
}

/* At exit, _exit and exec, on the thread that ends the process, perhaps in a
 * signal handler: the writer's finish, with the ranges still open written or
 * counted between its two halves (under its lock, with room that waits for no
 * one). A failed exec takes the JSON form's back out of the file, since their
 * pops write them whole. */
void nvs_record_finish(void)
{
    if (!enabled)
        return;
    int saved_errno = errno;
    if (nvs_writer_finish_start()) {
        end_open_ranges(nvs_writer_current);
        nvs_writer_finish_end(state.encoder->push == NULL);
    }
    errno = saved_errno;
}

void nvs_record_resume(void)
{
    if (enabled)
        nvs_writer_resume();
}

/* The child starts clean: none of the parent's pending events or open
 * ranges, a file of its own. */
void nvs_record_fork_child(void)
{
    nvs_args_fork_child();
    if (!enabled)
        return;
    state.pid = nvs_sys_getpid();
    nvs_writer_fork_child();
    nvs_open_reset_after_fork();
}

/* Before a fork: this thread's events reach the file (the child starts
 * without them), and no domain is half made. */
void nvs_record_fork_prepare(void)
{
    if (enabled)
        nvs_writer_flush();
    nvs_args_fork_prepare();
}

void nvs_record_fork_parent(void)
{
    nvs_args_fork_parent();
}
