/* The trace file and the per-thread buffers (see trace_writer.h).
 *
 * Why it is built this way - each choice answers a way the host could be hurt:
 * - No mapping of the file: a file truncated under a mapping, or a disk that
 *   fills under one, is a SIGBUS in the host. Buffers are private memory and
 *   reach the file with pwritev, whose failure is a return value.
 * - No event crosses a page of the file: the kernel cuts a write short only
 *   between pages (a SIGKILL, a full disk), so blank padding before an event
 *   that would cross makes every cut fall between two whole events.
 * - One lock for the file, which records its holder: a signal handler never
 *   waits for its own thread. The finish, from a handler that interrupted its
 *   thread inside the lock, goes on without it and writes that thread's
 *   pending events itself - at the same offset, with the same layout, so a
 *   write the interrupted thread already made is made again byte for byte.
 *   It waits for other threads a bounded time, and never for appends: an
 *   owner appends past what it has published, and everything published is
 *   whole events.
 * - The file is a regular file (or /dev/null), locked with flock while in use;
 *   a process that finds it locked writes NAME.PID.EXT instead of truncating
 *   the other's file. Its descriptor sits high, and before each write it must
 *   still be the file opened (device and inode): a program that closed it and
 *   got its number back for a file of its own never sees our bytes.
 * - A file opened again by its path (the program closed our descriptor, and
 *   our lock with it) is written only once it proves to be what this run
 *   wrote: the same device and inode, locked again, at least as long as what
 *   we wrote, and beginning with our header and the run's mark (a random
 *   number). Meanwhile another run may have truncated it and written its own,
 *   longer than ours, or the inode may be a new file's. Otherwise the rest
 *   goes to NAME.PID.EXT, and every thread starts its sequence again there.
 * - The library's own system calls go to the kernel (sys.h), never through
 *   the wrappers it exports for the program. */
#define _GNU_SOURCE
#include "trace_writer.h"
#include "pages.h"
#include "trace_file.h"
#include "../clock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../config.h"
#include "../log.h"
#include "../sys.h"

/* A buffer spans at most ROOM / PAGE + 2 pages of the file: two pieces each. */
_Static_assert(2 * (NVS_WRITER_ROOM / NVS_FILE_PAGE + 2) <= NVS_WRITE_PIECES,
               "pieces for a whole buffer");
#define FINISH_WAIT_NS 2000000000ull
#define HEADER_MAX (2 * NVS_TRACE_EVENT_MAX) /* the header, then the run's mark */
#define COMPARED 256u                        /* bytes of the header read back at once */

enum file_state { FILE_OFF, FILE_PENDING, FILE_OPEN, FILE_STOPPED, FILE_REFUSED };

static struct {
    const struct nvs_trace_encoder *encoder;
    size_t private_bytes;
    _Atomic int file; /* enum file_state */
    _Atomic bool finished;
    _Atomic long lock_holder; /* the file lock: its holder's nvs_thread_identity, 0 when free */
    _Atomic(struct nvs_writer_thread *) threads;
    _Atomic uint32_t stale; /* claimed buffers that are stale: not ready meanwhile */
    pid_t pid;
    void (*restarted)(struct nvs_writer_thread *thread);
    /* Under the file lock: */
    int fd;
    dev_t device;
    ino_t inode;
    uint64_t file_end;
    uint64_t end_before_tail;
    uint64_t closing_from;    /* the finish's: where the caller's last events begin */
    uint64_t taken_back_from; /* where a resume cuts the file (end_before_tail: the tail) */
    int finish_lock;          /* enum lock_result of the finish */
    /* A step that changes the file's end and a thread's buffer together (a
     * write of its events, the buffer emptied), while it is under way: the
     * thread and what both held before it. A handler that ends the process
     * from inside it puts them back (nvs_writer_finish_start) and writes the
     * same events again at the same place: the step's stores are not one. */
    struct {
        struct nvs_writer_thread *thread;
        uint64_t file_end;
        uint32_t flushed_bytes, flushed_events, published;
    } step;
    bool tail_written;
    bool forked_child;
    uint32_t header_length;
    char header[HEADER_MAX]; /* as written at the file's start, with the run's mark */
    char path_template[NVS_PATH_MAX];
    char path[NVS_PATH_MAX];
    char
        padding[2 * NVS_FILE_PAGE]; /* a gap shorter than the encoder's pad_min takes a page more */
    _Atomic uint32_t sequences;     /* sequence ids given to buffers: 2, 3, ... */
    char note[2 * NVS_PATH_MAX + 128];
} state; /* zero-initialised: no page of it is read at load */

static pthread_key_t thread_key;
__thread struct nvs_writer_thread *nvs_writer_current __attribute__((tls_model("initial-exec")));
#define my_thread nvs_writer_current
/* Events go straight into the calling thread's buffer while this is set: the
 * file is open and not finished. */
_Atomic bool nvs_writer_ready;
static __thread long cached_tid __attribute__((tls_model("initial-exec")));

/* The calling thread's id, for its track in the trace. Where gettid is
 * denied, the process's id: the thread's events are drawn on the main
 * thread's track rather than lost. */
static long current_tid(void)
{
    if (!cached_tid) {
        long tid = syscall(SYS_gettid);
        if (tid <= 0)
            return state.pid;
        cached_tid = tid;
    }
    return cached_tid;
}

/* Ready only while a buffer can take an event as it stands: no stale buffer,
 * whose owner must start its sequence again first (nvs_writer_begin_slow does).
 * It becomes true under the file lock only. */
static void update_ready(void)
{
    atomic_store(&nvs_writer_ready,
                 atomic_load(&state.file) == FILE_OPEN && !atomic_load(&state.finished) &&
                     !atomic_load(&state.stale));
}

static void set_file(int file)
{
    atomic_store(&state.file, file);
    update_ready();
}

static bool set_finished(bool finished)
{
    bool was = atomic_exchange(&state.finished, finished);
    update_ready();
    return was;
}

/* ---- the file lock ------------------------------------------------------------- */

enum lock_result { LOCK_TAKEN, LOCK_HELD_HERE, LOCK_TIMED_OUT };

/* Takes the file lock. LOCK_HELD_HERE: this thread holds it already - a
 * signal handler interrupted it inside - and must not wait for itself.
 * BOUNDED gives up after a while (the finish, where a holder may be stopped
 * by a debugger). */
static enum lock_result lock_file(bool bounded)
{
    long me = nvs_thread_identity(), expected = 0;
    uint64_t deadline = 0;
    while (!atomic_compare_exchange_weak_explicit(&state.lock_holder, &expected, me,
                                                  memory_order_acquire, memory_order_relaxed)) {
        if (expected == me)
            return LOCK_HELD_HERE;
        expected = 0;
        if (bounded) {
            uint64_t ns = nvs_clock_read(CLOCK_MONOTONIC);
            if (!deadline)
                deadline = ns + FINISH_WAIT_NS;
            else if (ns > deadline)
                return LOCK_TIMED_OUT;
        }
        sched_yield();
    }
    return LOCK_TAKEN;
}

static void unlock_file(void)
{
    atomic_store_explicit(&state.lock_holder, 0, memory_order_release);
}

/* ---- opening ------------------------------------------------------------------ */

/* Bytes that may be written at OFFSET under the process's file size limit
 * (RLIMIT_FSIZE: `ulimit -f`, systemd's LimitFSIZE=, a batch system's). A
 * write past it raises SIGXFSZ, which kills a program that never asked for a
 * trace: the writer stops short of it instead, as at a full disk (EFBIG). Read
 * at each write, a system call against a write of up to 32 KiB: the program
 * may change its limit. */
static uint64_t room_under_limit(uint64_t offset)
{
    /* The last limit the kernel gave stands where it will not give it now. */
    static _Atomic rlim_t last_limit = RLIM_INFINITY;
    struct rlimit limit;
    int saved_errno = errno;
    if (getrlimit(RLIMIT_FSIZE, &limit) == 0)
        atomic_store_explicit(&last_limit, limit.rlim_cur, memory_order_relaxed);
    errno = saved_errno;
    rlim_t current = atomic_load_explicit(&last_limit, memory_order_relaxed);
    if (current == RLIM_INFINITY)
        return UINT64_MAX;
    return current > offset ? current - offset : 0;
}

/* All of DATA at OFFSET, or nothing past the file size limit (EFBIG). */
static bool write_all(const char *data, size_t length, uint64_t offset)
{
    if (length > room_under_limit(offset)) {
        errno = EFBIG;
        return false;
    }
    while (length > 0) {
        ssize_t written = NVS_RETRY_EINTR(pwrite(state.fd, data, length, (off_t)offset));
        if (written == 0)
            errno = ENOSPC; /* nothing taken, nothing said: as a full disk */
        if (written <= 0)
            return false;
        data += written;
        offset += (uint64_t)written;
        length -= (size_t)written;
    }
    return true;
}

/* A number no other run picks: what tells this run's file from one another
 * run wrote at the same path, on the same inode, as long or longer. */
static uint64_t run_mark(void)
{
    uint64_t mark = 0;
    if (syscall(SYS_getrandom, &mark, sizeof mark, GRND_NONBLOCK) != (long)sizeof mark)
        mark = nvs_clock_read(CLOCK_REALTIME) ^ (uint64_t)state.pid << 40 ^ (uintptr_t)&mark;
    return mark;
}

/* FILE, open and locked, becomes the trace file: emptied, moved up, its
 * header and the run's mark written and kept (descriptor_is_ours reads them
 * back). False, said with THEN, when it cannot be written: then it is closed,
 * and removed where this process made it. */
static bool start_file(struct nvs_trace_candidate *file, const char *then)
{
    const char *path = file->name;
    memcpy(state.path, path, strlen(path) + 1);
    if (S_ISREG(file->status.st_mode) && NVS_RETRY_EINTR(ftruncate(file->fd, 0)) != 0) {
        SAY("NVTXSHIM_TRACE: cannot write ", path, ": ", nvs_log_error_text(errno), then);
        nvs_file_give_up(file, true);
        return false;
    }
    file->fd = nvs_file_move_up(file->fd);
    state.fd = file->fd;
    state.device = file->status.st_dev;
    state.inode = file->status.st_ino;
    state.file_end = 0;
    state.tail_written = false;
    state.closing_from = UINT64_MAX; /* a finish under way wrote its last events elsewhere */
    char *end = state.encoder->header(state.header, state.pid, program_invocation_short_name);
    end = state.encoder->stamp(end, state.pid, run_mark());
    state.header_length = (uint32_t)(end - state.header);
    if (!write_all(state.header, state.header_length, 0)) {
        SAY("NVTXSHIM_TRACE=", path, ": write failed (", nvs_log_error_text(errno), ")", then);
        nvs_file_give_up(file, true);
        state.fd = -1;
        return false;
    }
    state.file_end = state.header_length;
    return true;
}

/* At the first event, with the file lock held. */
static void open_file(void)
{
    char wanted[NVS_PATH_MAX];
    struct nvs_trace_candidate candidate;
    nvs_file_expand_path(wanted, sizeof wanted, state.path_template, state.pid, state.forked_child);
    enum nvs_candidate result = nvs_file_open_first_free(wanted, 0, NULL, state.pid, &candidate);
    if (result != NVS_CANDIDATE_OPEN) {
        if (result == NVS_CANDIDATE_IN_USE)
            SAY("NVTXSHIM_TRACE=", wanted,
                ": it and the names made from it by adding the process id "
                "are in use by other processes; no trace is recorded");
        set_file(FILE_REFUSED);
        return;
    }
    if (strcmp(candidate.name, wanted) != 0)
        SAY("NVTXSHIM_TRACE=", wanted, " is in use by another process; this process writes ",
            candidate.name);
    if (!start_file(&candidate, "; no trace is recorded")) {
        set_file(FILE_REFUSED);
        return;
    }
    set_file(FILE_OPEN);
    if (state.note[0])
        SAY(state.note);
}

static void stop(void)
{
    set_file(FILE_STOPPED);
}

/* Whether the file open at FD (STATUS) still holds what this run wrote there:
 * at least as long, and, with READ, beginning with the header and mark this
 * run wrote (read back through FD). The tail may have replaced the header's
 * last bytes. A read the kernel refuses sets ERROR: not known to be ours. */
static bool holds_our_writing(int fd, const struct stat *status, bool read, int *error)
{
    if (!S_ISREG(status->st_mode))
        return true; /* /dev/null */
    if ((uint64_t)status->st_size < state.file_end)
        return false;
    if (!read)
        return true;
    size_t length = state.header_length - state.encoder->tail_overlap;
    char seen[COMPARED];
    for (size_t at = 0; at < length;) {
        size_t want = length - at < COMPARED ? length - at : COMPARED;
        ssize_t got = NVS_RETRY_EINTR(pread(fd, seen, want, (off_t)at));
        if (got < 0)
            *error = errno;
        if (got <= 0 || memcmp(seen, state.header + at, (size_t)got) != 0)
            return false;
        at += (size_t)got;
    }
    return true;
}

/* The file is no longer this run's: the rest goes to NAME.PID.EXT (or
 * NAME.PID.N.EXT), named as when the path is in use at the start, and the file
 * left behind is never written again. WHY is said, in one line with the new
 * name. Every claimed buffer is stale: its sequence was made for the file
 * left behind, so its owner starts it again before it writes (make_room). */
static bool move_elsewhere(const char *why, int error)
{
    char wanted[NVS_PATH_MAX];
    struct nvs_trace_candidate candidate;
    nvs_file_expand_path(wanted, sizeof wanted, state.path_template, state.pid, state.forked_child);
    const char *before = error ? " (" : "", *text = error ? nvs_log_error_text(error) : "",
               *after = error ? ")" : "";
    if (nvs_file_open_first_free(wanted, 1, state.path, state.pid, &candidate) !=
        NVS_CANDIDATE_OPEN) {
        SAY("NVTXSHIM_TRACE=", state.path, ": ", why, before, text, after,
            "; no other file could be "
            "opened, recording stopped");
        stop();
        return false;
    }
    SAY("NVTXSHIM_TRACE=", state.path, ": ", why, before, text, after,
        "; this process writes the rest to ", candidate.name);
    if (!start_file(&candidate, "; recording stopped")) {
        stop();
        return false;
    }
    for (struct nvs_writer_thread *thread = atomic_load(&state.threads); thread;
         thread = thread->next)
        if (atomic_load(&thread->claimed) && !atomic_exchange(&thread->stale, true))
            atomic_fetch_add(&state.stale, 1);
    update_ready();
    return true;
}

/* Whether the descriptor is still the file we opened, and still as we left
 * it. If the program closed it (and perhaps got its number back for a file of
 * its own), the file is opened again by its path and written only if it
 * proves to be ours (holds_our_writing); otherwise the rest goes to another
 * file (move_elsewhere), or recording stops. The old number is the program's
 * now: never closed, never written. */
static bool descriptor_is_ours(void)
{
    struct stat status;
    /* Asked twice: once answered wrong is not yet the kernel's word. */
    int examined = NVS_RETRY_EINTR(fstat(state.fd, &status));
    if (examined != 0)
        examined = NVS_RETRY_EINTR(fstat(state.fd, &status));
    if (examined != 0 && (errno != EBADF || nvs_sys_fcntl(state.fd, F_GETFD, 0) >= 0)) {
        /* Open, but the kernel will not say what it is now: it may be a file
         * of the program's that took the number. Nothing more goes to it. */
        SAY("NVTXSHIM_TRACE=", state.path, ": cannot examine the trace file's descriptor (",
            nvs_log_error_text(errno),
            "); recording stopped, the file ends at its last whole event");
        stop();
        return false;
    }
    if (examined == 0 && status.st_dev == state.device && status.st_ino == state.inode) {
        int unused = 0;
        if (holds_our_writing(state.fd, &status, false, &unused))
            return true;
        /* Cut shorter than we wrote under our lock: not by a run of ours */
        nvs_sys_close(state.fd);
        state.fd = -1;
        return move_elsewhere("the file was cut short by another writer", 0);
    }
    /* Read and write: the mark is read back. ERROR: the first call refused on the way. */
    int fd = NVS_RETRY_EINTR(
        nvs_sys_open(state.path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0));
    int error = fd < 0 && errno != ENOENT ? errno : 0;
    bool ours = false;
    if (fd >= 0 && NVS_RETRY_EINTR(fstat(fd, &status)) != 0)
        error = errno;
    else if (fd >= 0 && status.st_dev == state.device && status.st_ino == state.inode) {
        if (!S_ISREG(status.st_mode))
            ours = true; /* /dev/null */
        else if (NVS_RETRY_EINTR(flock(fd, LOCK_EX | LOCK_NB)) != 0)
            error = errno == EWOULDBLOCK ? 0 : errno; /* locked: another run's now */
        else
            ours = holds_our_writing(fd, &status, true, &error);
    }
    if (ours) {
        state.fd = nvs_file_move_up(fd);
        SAY("NVTXSHIM_TRACE=", state.path,
            ": the program closed or reused the trace file's "
            "descriptor; the file is opened again");
        return true;
    }
    if (fd >= 0)
        nvs_sys_close(fd);
    state.fd = -1;
    if (error)
        return move_elsewhere("the program closed or reused the trace file's descriptor, and the "
                              "file could not be opened again to check that it is still this "
                              "process's",
                              error);
    return move_elsewhere("the program closed or reused the trace file's descriptor, and the file "
                          "is no longer this process's (another process took the path, or the file "
                          "was removed or rewritten)",
                          0);
}

/* ---- writing a thread's whole events ------------------------------------------- */

/* THREAD's published events up to USED (EVENTS of them) are taken as handled:
 * written, or counted as lost. */
static inline void flushed(struct nvs_writer_thread *thread, uint32_t used, uint32_t events)
{
    thread->flushed_bytes = used;
    thread->flushed_events = events;
}

/* PAGES written at the file's end, up to the file size limit: the pieces past
 * it are cut off, and the write ends as a short one at a full disk does. The
 * bytes that reached the file; *ERROR, why the rest did not (0: all did). */
static inline __attribute__((always_inline)) uint64_t write_pieces(struct nvs_pages *pages,
                                                                   int *error)
{
    uint64_t written = 0;
    struct iovec *next = pages->pieces;
    size_t left = pages->count;
    *error = 0;
    uint64_t room = room_under_limit(state.file_end);
    if (pages->bytes > room) {
        uint64_t kept = 0;
        for (left = 0; left < pages->count && kept + pages->pieces[left].iov_len <= room; left++)
            kept += pages->pieces[left].iov_len;
        if (left < pages->count && kept < room)
            pages->pieces[left++].iov_len = (size_t)(room - kept);
        *error = EFBIG;
    }
    while (left > 0) {
        ssize_t done = NVS_RETRY_EINTR(
            pwritev(state.fd, next, (int)left, (off_t)(state.file_end + written)));
        if (done <= 0) {
            *error = done < 0 ? errno : *error ? *error : ENOSPC;
            break;
        }
        written += (uint64_t)done;
        for (; left > 0 && (size_t)done >= next->iov_len; next++, left--)
            done -= (ssize_t)next->iov_len;
        if (left > 0) {
            next->iov_base = (char *)next->iov_base + done;
            next->iov_len -= (size_t)done;
        }
    }
    return written;
}

/* A write of THREAD's events [FIRST, EVENTS) reached WRITTEN bytes of PAGES and
 * failed with ERROR: the file keeps the whole events that reached it, and ends
 * there; the rest are counted and said, and recording stops. */
static void write_failed(struct nvs_writer_thread *thread, const struct nvs_pages *pages,
                         uint32_t first, uint32_t events, uint64_t written, int error)
{
    uint64_t kept;
    uint32_t whole = nvs_pages_whole_events(pages, thread->ends, first, events, written, &kept);
    state.file_end += kept;
    if (kept < written)
        (void)ftruncate(state.fd, (off_t)state.file_end);
    nvs_writer_count(NVS_LOSS_WRITE_FAILED, events - first - whole);
    char lost[24];
    nvs_log_number(lost, events - first - whole);
    SAY("NVTXSHIM_TRACE=", state.path, ": write failed (",
        nvs_log_error_text(error ? error : ENOSPC),
        error == EFBIG ? ": the process's file size limit, RLIMIT_FSIZE" : "", "): ", lost,
        " events of this thread not written; recording stopped, the file ends at its last "
        "whole event (the line at exit counts these with the events after them)");
    stop();
}

/* A step on THREAD and the file's end begins (state.step); step_done: it
 * is over. File lock held. */
static void step_begins(struct nvs_writer_thread *thread)
{
    state.step.file_end = state.file_end;
    state.step.flushed_bytes = thread->flushed_bytes;
    state.step.flushed_events = thread->flushed_events;
    state.step.published = atomic_load_explicit(&thread->published, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    state.step.thread = thread;
    atomic_signal_fence(memory_order_seq_cst);
}

static void step_done(void)
{
    atomic_signal_fence(memory_order_seq_cst);
    state.step.thread = NULL;
    atomic_signal_fence(memory_order_seq_cst);
}

/* THREAD's published events that are not in the file yet go to the end of
 * the file, none across a page. File lock held. */
static void write_pending(struct nvs_writer_thread *thread)
{
    uint32_t published = atomic_load_explicit(&thread->published, memory_order_acquire);
    uint32_t used = published & 0xffffu, events = published >> 16;
    if (used <= thread->flushed_bytes)
        return;
    uint32_t first = thread->flushed_events;
    if (atomic_load(&state.file) != FILE_OPEN || !descriptor_is_ours()) {
        /* A file refused was said once; a thread's name is no loss there. A file
         * still pending was never needed: an event opens it, so a buffer here
         * holds its thread's start alone (a forked child that recorded nothing,
         * a DataLoader worker: no file, no line). */
        int file = atomic_load(&state.file);
        if (file != FILE_REFUSED && file != FILE_PENDING)
            nvs_writer_count(NVS_LOSS_WRITE_FAILED, events - first);
        flushed(thread, used, events);
        return;
    }
    if (atomic_load(&thread->stale) && state.encoder->sequence_bytes) {
        /* Made for the file left behind, on a sequence that file had started:
         * read elsewhere they would name what was interned there. */
        nvs_writer_count(NVS_LOSS_MOVED, events - first);
        flushed(thread, used, events);
        return;
    }
    struct nvs_pages pages;
    nvs_pages_lay_out(&pages, thread->data, thread->ends, thread->flushed_bytes, used, first,
                      events, state.file_end, state.encoder, state.padding);
    step_begins(thread);
    int error;
    uint64_t written = write_pieces(&pages, &error);
    if (!error)
        state.file_end += written;
    else
        write_failed(thread, &pages, first, events, written, error);
    flushed(thread, used, events);
    step_done();
}

/* THREAD's buffer holds its sequence's start alone, with the thread's name:
 * its first event, there before any other. File lock held. */
static void start_buffer(struct nvs_writer_thread *thread)
{
    thread->flushed_bytes = thread->flushed_events = 0;
    char name[17] = "";
    syscall(SYS_prctl, PR_GET_NAME, name, 0, 0, 0); /* not through the library's prctl */
    uint64_t now_ns = nvs_clock_ns();
    uint32_t length = (uint32_t)(state.encoder->start(thread->data, &thread->ids, name, now_ns) -
                                 thread->data);
    thread->ends[0] = (uint16_t)length;
    atomic_store_explicit(&thread->published, 1u << 16 | length, memory_order_relaxed);
}

/* THREAD is not stale (any more). File lock held. */
static void fresh(struct nvs_writer_thread *thread)
{
    if (atomic_exchange(&thread->stale, false)) {
        atomic_fetch_sub(&state.stale, 1);
        update_ready();
    }
}

/* Everything published is out (or counted): THREAD's buffer starts again,
 * and so does its sequence where the writer moved to another file since it
 * began (the owner's stack hears of it). File lock held, on THREAD's owner. */
static void empty_buffer(struct nvs_writer_thread *thread)
{
    if (atomic_load(&thread->stale) && atomic_load(&state.file) == FILE_OPEN) {
        start_buffer(thread);
        thread->restarts++;
        fresh(thread);
        if (state.restarted)
            state.restarted(thread);
        return;
    }
    step_begins(thread);
    atomic_store_explicit(&thread->published, 0, memory_order_relaxed);
    thread->flushed_bytes = thread->flushed_events = 0;
    step_done();
}

/* The calling thread's buffer is full, or stale, or the file is not open yet.
 * False, the event counted, where a signal handler interrupted this thread
 * while it held the lock (a claim, a frame's flush). */
static bool make_room(struct nvs_writer_thread *thread)
{
    if (lock_file(false) != LOCK_TAKEN) {
        nvs_writer_count(NVS_LOSS_IN_HANDLER, 1);
        return false;
    }
    bool open = false;
    /* Finished while this thread waited: nothing more goes after the tail. */
    if (!atomic_load(&state.finished)) {
        if (atomic_load(&state.file) == FILE_PENDING)
            open_file();
        write_pending(thread);
        empty_buffer(thread);
        open = atomic_load(&state.file) == FILE_OPEN;
    }
    unlock_file();
    return open;
}

/* ---- per-thread buffers ----------------------------------------------------------- */

static size_t block_bytes(void)
{
    size_t bytes = sizeof(struct nvs_writer_thread) + state.private_bytes +
        state.encoder->sequence_bytes;
    return (bytes + NVS_FILE_PAGE - 1) & ~(size_t)(NVS_FILE_PAGE - 1);
}

/* Unclaimed under the lock where it can be taken, so that a move to another
 * file never marks stale a buffer no thread will start again. */
static void release_thread(void *opaque)
{
    struct nvs_writer_thread *thread = opaque;
    if (!thread->writing && lock_file(false) == LOCK_TAKEN) {
        if (!atomic_load(&state.finished))
            write_pending(thread);
        fresh(thread);
        atomic_store_explicit(&thread->claimed, false, memory_order_release);
        unlock_file();
    } else {
        atomic_store_explicit(&thread->claimed, false, memory_order_release);
    }
    my_thread = NULL;
}

static void reset_thread(struct nvs_writer_thread *thread)
{
    thread->writing = 0;
    thread->ids.pid = state.pid;
    thread->ids.tid = (uint32_t)current_tid();
    state.encoder->prepare_thread(&thread->ids);
    start_buffer(thread);
    fresh(thread);
    /* Only the head: the rest of a block costs memory once it is touched. */
    memset(thread->private, 0, NVS_WRITER_PRIVATE_ZEROED);
}

static struct nvs_writer_thread *claim(void)
{
    int file = atomic_load_explicit(&state.file, memory_order_relaxed);
    if (file == FILE_OFF || file == FILE_REFUSED)
        return NULL;
    struct nvs_writer_thread *thread;
    for (thread = atomic_load(&state.threads); thread; thread = thread->next) {
        bool expected = false;
        if (!atomic_load_explicit(&thread->claimed, memory_order_relaxed) &&
            atomic_compare_exchange_strong(&thread->claimed, &expected, true))
            break;
    }
    if (!thread) {
        void *block = mmap(NULL, block_bytes(), PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (block == MAP_FAILED) {
            nvs_writer_count_error(NVS_LOSS_NO_MEMORY, 1, errno);
            return NULL;
        }
        thread = block;
        atomic_store(&thread->claimed, true);
        thread->ids.sequence_id = 2 + atomic_fetch_add(&state.sequences, 1);
        thread->ids.sequence = thread->private + state.private_bytes;
        thread->next = atomic_load(&state.threads);
        while (!atomic_compare_exchange_weak(&state.threads, &thread->next, thread))
            continue;
    }
    /* A finish or a frame's flush may be reading a buffer a thread left. Held
     * here: a signal handler interrupted this thread's own claim (or another
     * time it held the lock), and what it records is lost, counted. */
    if (lock_file(false) != LOCK_TAKEN) {
        atomic_store(&thread->claimed, false);
        nvs_writer_count(NVS_LOSS_IN_HANDLER, 1);
        return NULL;
    }
    reset_thread(thread);
    unlock_file();
    pthread_setspecific(thread_key, thread);
    my_thread = thread;
    return thread;
}

/* The program's own NVTX calls come here too: errno is theirs (a mark between
 * a failed call and the program's look at errno). */
struct nvs_writer_thread *nvs_writer_claim(void)
{
    if (my_thread)
        return my_thread;
    int saved_errno = errno;
    struct nvs_writer_thread *thread = claim();
    errno = saved_errno;
    return thread;
}

/* Everything nvs_writer_begin does not do inline: a handler that interrupted
 * an event, the file to open, a full buffer, a stale one. */
static char *begin_slow(struct nvs_writer_thread *thread)
{
    thread->writing = 1;
    atomic_signal_fence(memory_order_seq_cst);
    if (atomic_load(&state.finished))
        goto drop;
    uint32_t published = atomic_load_explicit(&thread->published, memory_order_relaxed);
    if (atomic_load(&state.file) != FILE_OPEN || (published & 0xffffu) > NVS_WRITER_BYTES ||
        (published >> 16) >= NVS_WRITER_EVENTS - 1 || atomic_load(&thread->stale)) {
        int file = atomic_load(&state.file);
        bool room = file != FILE_REFUSED && file != FILE_STOPPED && make_room(thread);
        if (!room) {
            if (atomic_load(&state.file) == FILE_STOPPED)
                nvs_writer_count(NVS_LOSS_WRITE_FAILED, 1);
            goto drop;
        }
    }
    return thread->data + nvs_writer_used(thread);
drop:
    atomic_signal_fence(memory_order_seq_cst);
    thread->writing = 0;
    return NULL;
}

/* errno is kept, as in nvs_writer_claim: the file is opened (an lstat that
 * finds nothing, a flock that finds it in use) and written here. */
char *nvs_writer_begin_slow(struct nvs_writer_thread *thread)
{
    if (thread->writing) {
        nvs_writer_count(NVS_LOSS_IN_HANDLER, 1);
        return NULL;
    }
    int saved_errno = errno;
    char *out = begin_slow(thread);
    errno = saved_errno;
    return out;
}

void nvs_writer_flush(void)
{
    if (atomic_load_explicit(&state.file, memory_order_relaxed) != FILE_OPEN ||
        lock_file(false) != LOCK_TAKEN)
        return;
    if (!atomic_load(&state.finished))
        for (struct nvs_writer_thread *thread = atomic_load(&state.threads); thread;
             thread = thread->next)
            write_pending(thread);
    unlock_file();
}

/* ---- life cycle -------------------------------------------------------------------- */

void nvs_writer_enable(const char *path_template, const struct nvs_trace_encoder *encoder,
                       size_t private_bytes, void (*restarted)(struct nvs_writer_thread *thread))
{
    size_t length = strnlen(path_template, sizeof state.path_template - 1);
    memcpy(state.path_template, path_template, length);
    state.path_template[length] = '\0';
    state.encoder = encoder;
    state.restarted = restarted;
    state.private_bytes = (private_bytes + 63) & ~(size_t)63;
    if (state.private_bytes < NVS_WRITER_PRIVATE_ZEROED)
        state.private_bytes = NVS_WRITER_PRIVATE_ZEROED;
    state.pid = nvs_sys_getpid();
    state.fd = -1;
    encoder->pad(state.padding, sizeof state.padding);
    pthread_key_create(&thread_key, release_thread);
    set_file(FILE_PENDING);
}

void nvs_writer_note(const char *line)
{
    size_t length = strnlen(line, sizeof state.note - 1);
    memcpy(state.note, line, length);
    state.note[length] = '\0';
}

bool nvs_writer_enabled(void)
{
    return atomic_load_explicit(&state.file, memory_order_relaxed) != FILE_OFF;
}

struct nvs_writer_thread *nvs_writer_all(void)
{
    return atomic_load(&state.threads);
}

/* One line, each loss counted once: a failed write's own line names the events
 * of its thread that it took, and this one counts them again with the rest. */
bool nvs_writer_finish_start(void)
{
    if (atomic_load(&state.file) == FILE_OFF || set_finished(true))
        return false;
    int saved_errno = errno;
    enum lock_result lock = lock_file(true);
    if (lock == LOCK_TIMED_OUT) {
        SAY("NVTXSHIM_TRACE=", state.path,
            ": a thread kept the file past the finish; "
            "the file ends at its last whole event");
        errno = saved_errno;
        return false;
    }
    state.finish_lock = lock;
    if (lock == LOCK_HELD_HERE && state.step.thread) {
        /* A step interrupted between its stores: back to before it. */
        struct nvs_writer_thread *thread = state.step.thread;
        state.file_end = state.step.file_end;
        thread->flushed_bytes = state.step.flushed_bytes;
        thread->flushed_events = state.step.flushed_events;
        atomic_store_explicit(&thread->published, state.step.published, memory_order_relaxed);
        state.step.thread = NULL;
    }
    /* LOCK_HELD_HERE: this thread was inside the lock when a handler called
     * exit or _exit; what it was writing is written again, identically. A file
     * still pending is opened only if the last events need it: the buffers
     * keep their starts for it meanwhile. */
    if (atomic_load(&state.file) != FILE_PENDING)
        for (struct nvs_writer_thread *thread = atomic_load(&state.threads); thread;
             thread = thread->next)
            write_pending(thread);
    /* The finishing thread's sequence starts again now if it is stale, so
     * that its stack has heard of it before its last events are written. */
    if (my_thread && lock == LOCK_TAKEN && !my_thread->writing && atomic_load(&my_thread->stale))
        empty_buffer(my_thread);
    state.closing_from = state.file_end;
    errno = saved_errno;
    return true;
}

/* The finish's room: a file still pending is opened (the last events may be
 * its first), a full or stale buffer goes out first - but only under a lock
 * taken here: one this thread held when a handler ended the process guards a
 * write of its that may not be over, so only the room there is is used. */
char *nvs_writer_begin_final(struct nvs_writer_thread *thread)
{
    if (thread->writing)
        return NULL; /* a handler inside this thread's own event */
    int saved_errno = errno;
    bool taken = state.finish_lock == LOCK_TAKEN;
    if (taken && atomic_load(&state.file) == FILE_PENDING) {
        open_file();
        state.closing_from = state.file_end;
    }
    uint32_t published = atomic_load_explicit(&thread->published, memory_order_relaxed);
    bool full = (published & 0xffffu) > NVS_WRITER_BYTES ||
        (published >> 16) >= NVS_WRITER_EVENTS - 1;
    if (taken && atomic_load(&state.file) == FILE_OPEN && (full || atomic_load(&thread->stale))) {
        write_pending(thread);
        empty_buffer(thread);
        published = atomic_load_explicit(&thread->published, memory_order_relaxed);
        full = false;
    }
    errno = saved_errno;
    if (full || atomic_load(&thread->stale) || atomic_load(&state.file) != FILE_OPEN)
        return NULL;
    thread->writing = 1;
    atomic_signal_fence(memory_order_seq_cst);
    return thread->data + (published & 0xffffu);
}

void nvs_writer_count_final(enum nvs_writer_loss why, uint64_t events)
{
    int file = atomic_load(&state.file);
    if (file == FILE_STOPPED)
        nvs_writer_count(NVS_LOSS_WRITE_FAILED, events);
    else if (file == FILE_OPEN)
        nvs_writer_count(why, events);
    /* refused (said once) or never opened: no trace, no loss */
}

void nvs_writer_finish_end(bool taken_back)
{
    int saved_errno = errno;
    for (struct nvs_writer_thread *thread = atomic_load(&state.threads); thread;
         thread = thread->next)
        write_pending(thread);
    size_t overlap = state.encoder->tail_overlap, length = strlen(state.encoder->tail);
    bool ends = atomic_load(&state.file) == FILE_OPEN && state.file_end >= overlap &&
        descriptor_is_ours();
    if (ends && !write_all(state.encoder->tail, length, state.file_end - overlap)) {
        /* Each byte of the tail ends the file where a cut may: what is there reads */
        SAY("NVTXSHIM_TRACE=", state.path, ": the closing write failed (",
            nvs_log_error_text(errno),
            "): every event is in the file, which ends without its closing ] (a file cut short, "
            "which viewers read)");
    } else if (ends) {
        state.end_before_tail = state.file_end;
        /* closing_from is past the end where the file changed meanwhile */
        state.taken_back_from = taken_back && state.closing_from < state.file_end
            ? state.closing_from
            : state.end_before_tail;
        state.file_end = state.file_end - overlap + length;
        state.tail_written = true;
    }
    nvs_losses_say(state.path[0] ? state.path : state.path_template);
    if (state.finish_lock == LOCK_TAKEN)
        unlock_file();
    errno = saved_errno;
}

/* The tail comes off, and the finish's last events with it where they go
 * again (the JSON form's ranges ended at the finish: their pops write them
 * whole). Cut at the end of a whole event, the file needs no separator put
 * back; where it cannot be cut, the tail's overlap is undone instead. */
void nvs_writer_resume(void)
{
    if (atomic_load(&state.file) == FILE_OFF || !atomic_load(&state.finished))
        return;
    int saved_errno = errno;
    enum lock_result lock = lock_file(false);
    size_t overlap = state.encoder->tail_overlap;
    if (lock != LOCK_TIMED_OUT && state.tail_written && atomic_load(&state.file) == FILE_OPEN &&
        descriptor_is_ours() && state.tail_written) {
        if (state.taken_back_from < state.end_before_tail &&
            ftruncate(state.fd, (off_t)state.taken_back_from) == 0) {
            state.file_end = state.taken_back_from;
        } else {
            write_all(state.encoder->tail_undo, overlap, state.end_before_tail - overlap);
            (void)ftruncate(state.fd, (off_t)state.end_before_tail);
            state.file_end = state.end_before_tail;
        }
        state.tail_written = false;
    }
    set_finished(false);
    if (lock == LOCK_TAKEN)
        unlock_file();
    errno = saved_errno;
}

void nvs_writer_fork_child(void)
{
    atomic_store(&state.lock_holder, 0);
    state.step.thread = NULL; /* a step a handler's fork interrupted is the parent's */
    cached_tid = 0;           /* this thread's id is the child's now */
    if (atomic_load(&state.file) == FILE_OFF)
        return;
    struct stat status;
    if (state.fd >= 0 && fstat(state.fd, &status) == 0 && status.st_dev == state.device &&
        status.st_ino == state.inode)
        nvs_sys_close(state.fd); /* the parent's: its lock must not outlive the parent here */
    state.fd = -1;
    state.pid = nvs_sys_getpid();
    state.forked_child = true;
    state.file_end = 0;
    state.tail_written = false;
    state.path[0] = '\0';
    atomic_store(&state.stale, 0);
    set_finished(false);
    set_file(FILE_PENDING);
    nvs_losses_forget();
    for (struct nvs_writer_thread *thread = atomic_load(&state.threads); thread;
         thread = thread->next) {
        atomic_store(&thread->published, 0);
        thread->flushed_bytes = thread->flushed_events = 0;
        thread->writing = 0;
        atomic_store(&thread->stale, false);
        atomic_store(&thread->claimed, thread == my_thread);
    }
    if (my_thread)
        reset_thread(my_thread);
}
