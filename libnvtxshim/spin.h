/* A lock for the few places that change shared state at frame or capture
 * rate. It records its holder so that it never waits for itself: a signal
 * handler that interrupted its thread inside (and calls exit or _exit, which
 * end the open frame) gets false and leaves the work, instead of spinning
 * forever on a lock its own thread holds. */
#ifndef NVS_SPIN_H
#define NVS_SPIN_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "sys.h"

struct nvs_spin {
    _Atomic long holder; /* the holding thread's nvs_thread_identity, 0 when free */
};

/* Where a test holds a thread on its way into the lock (test/unit/test_capture.c
 * builds capture.c with -DNVS_SPIN_SEAM=its function); nothing in the library. */
#ifdef NVS_SPIN_SEAM
void NVS_SPIN_SEAM(void);
#else
#define NVS_SPIN_SEAM() ((void)0)
#endif

static inline bool nvs_spin_lock(struct nvs_spin *lock)
{
    NVS_SPIN_SEAM();
    long me = nvs_thread_identity(), expected = 0;
    while (!atomic_compare_exchange_weak_explicit(&lock->holder, &expected, me,
                                                  memory_order_acquire, memory_order_relaxed)) {
        if (expected == me)
            return false;
        expected = 0;
        sched_yield();
    }
    return true;
}

static inline void nvs_spin_unlock(struct nvs_spin *lock)
{
    atomic_store_explicit(&lock->holder, 0, memory_order_release);
}

/* In a forked child: the holder, if any, was another thread of the parent. */
static inline void nvs_spin_reset(struct nvs_spin *lock)
{
    atomic_store_explicit(&lock->holder, 0, memory_order_relaxed);
}

#endif
