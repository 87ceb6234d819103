/* emuv4l2: an emulated V4L2 capture device, as an LD_PRELOAD library (a test double).
 *
 * This machine's kernel has no V4L2, so the library answers for one video node inside the
 * process instead: open() of the node's path returns a real descriptor (an eventfd in
 * semaphore mode whose count is the number of buffers ready to dequeue, so poll, select and
 * epoll work on it natively), the ioctls, mmap and read() of that descriptor are answered
 * here, and stat-like calls on the path or the descriptor describe a character device
 * (major 81). Everything else passes through to the next definition (dlsym RTLD_NEXT), so
 * the library may stand anywhere in LD_PRELOAD; the library's own system calls (the log,
 * the buffers' memory, waits) go straight to the kernel with syscall(2), so that a profiler
 * loaded in front of it sees the program's calls alone.
 *
 * Environment (read once, at load):
 *   EMUV4L2_DEVICE    the path emulated (default /dev/video0; it need not exist). Only this
 *                     exact string matches (relative paths and other spellings do not).
 *   EMUV4L2_MINOR     the node's minor number (default 0): st_rdev = makedev(81, minor).
 *   EMUV4L2_FORMAT    FOURCC:WIDTHxHEIGHT, the format at open (default YUYV:640x480).
 *                     FOURCC is YUYV, GREY or RGB3 (also spelled RGB24); all three are
 *                     enumerated, at that one frame size.
 *   EMUV4L2_FPS       frames per second, an integer (default 30): the only frame interval.
 *   EMUV4L2_DELAY_MS  comma list of delays in milliseconds (decimals allowed): frame of
 *                     sequence s becomes ready to dequeue at its capture timestamp plus
 *                     entry s mod len (default 0). Frames become ready in the order of those
 *                     moments, so a long delay followed by a short one reorders them.
 *   EMUV4L2_DROP      comma list of sequence numbers the camera drops: no buffer is used
 *                     and the next frame's sequence number skips it, as a driver's does.
 *   EMUV4L2_NOBUF     what the camera does with a frame that comes while the program has no
 *                     buffer queued: drop (the default, as a driver does: logged as a drop,
 *                     reason nobuf) or wait: the camera's clock stops until a buffer is
 *                     queued, and the frame and those after it come that much later (their
 *                     timestamps too). For clients whose checks fail on a gap that only a
 *                     client slower than the camera makes (v4l2-compliance), wherever they run.
 *   EMUV4L2_LOG       a file the library appends one line to, with one write(2), per event
 *                     (times are CLOCK_MONOTONIC nanoseconds):
 *       dqbuf seq=S index=I timestamp_ns=T due_ns=U ready_ns=R waited_ns=W dq_ns=D bytes=B
 *       read seq=S index=I timestamp_ns=T due_ns=U ready_ns=R waited_ns=W dq_ns=D bytes=B
 *       drop seq=S reason=config|nobuf timestamp_ns=T
 *     dqbuf: a buffer handed out by VIDIOC_DQBUF; read: a frame handed out by read() (its
 *     first bytes); T is the capture timestamp the program sees (a whole microsecond:
 *     struct timeval), U = T + the configured delay, R the moment the buffer was made ready
 *     (measured), W how much of the time before R went to the scheduler since the producer
 *     thread last went to sleep (or the stream started): the producer's time runnable but
 *     waiting for a CPU (the run_delay of /proc/thread-self/schedstat; 0 where the kernel
 *     does not keep it), and the time the program's threads holding the camera's lock spent
 *     off their CPU meanwhile (the producer waits for that lock). R - U - W is the camera's
 *     own lateness; W is as long as CPU-bound processes beside the program make it. D the
 *     moment it was handed out. drop: config when EMUV4L2_DROP named it,
 *     nobuf when no buffer was queued when the frame came (its buffer is claimed and filled
 *     min(3 ms, half a period) before the timestamp, so that filling never delays readiness).
 *
 * The device: one input (a camera), no controls, no TV standards; the capture queue takes
 * MMAP (memory from a memfd, so that the program's munmap works natively; orphaned buffers
 * are fine) and USERPTR buffers, and read() when no buffers are allocated. A producer
 * thread, started by STREAMON, captures frame s at start + s * period, fills it with a
 * pattern of s (the first 8 bytes: s and ~s, little-endian; then byte (x, y) =
 * x + 2y + 5s, mod 256) and makes it ready at its due moment (absolute CLOCK_MONOTONIC
 * deadlines, never relative sleeps). The queue belongs to the open file that allocated it
 * (EBUSY for the others), priorities are kept per open file as the kernel does, and the
 * usual errors come back (EINVAL, EBUSY, EAGAIN for O_NONBLOCK, ENOTTY for what a camera
 * without controls or standards lacks). A blocking DQBUF waits in ppoll and returns EINTR
 * when a signal arrives.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define FDMAX 65536
#define MAXBUF 32
#define READ_BUFFERS 4
#define MAXLIST 256
#define MAXMAPS 128

enum { B_DEQUEUED, B_QUEUED, B_ACTIVE, B_DONE };

struct ofile {               /* one open file description (open(), shared by its dups) */
    int refs;                /* descriptors pointing at it */
    int fd;                  /* one of them, for the producer's eventfd writes */
    enum v4l2_priority prio;
};

struct buffer {
    int state;
    uint32_t seq, bytesused;
    uint64_t ts_ns, due_ns, ready_ns, waited_ns;
    unsigned long userptr;   /* USERPTR: where the program's memory is */
    uint32_t ulength;
    int mapped;              /* mappings of it alive in the program */
};

struct mapping { uintptr_t addr; size_t len; int index; };

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* the producer's deadline waits (CLOCK_MONOTONIC) */
    /* configuration */
    char path[4096];
    unsigned minor, fps;
    uint32_t pixfmt, width, height;
    double delays_ms[MAXLIST]; int ndelays;
    uint32_t drops[MAXLIST]; int ndrops;
    int logfd;
    char logpath[4096];
    /* state */
    int prio_count[4];
    struct ofile *owner;     /* the open file the queue belongs to */
    int memory;              /* 0 (none), V4L2_MEMORY_MMAP or V4L2_MEMORY_USERPTR */
    unsigned nbufs;
    struct buffer bufs[MAXBUF];
    size_t buflen;           /* page-aligned size of one MMAP buffer (its m.offset stride) */
    int memfd; uint8_t *mem; /* MMAP buffers, and the library's own view of them */
    int queued[MAXBUF], nqueued;  /* FIFO of QBUF order */
    int done[MAXBUF], ndone;      /* FIFO of ready order */
    int streaming, reading;
    int restart;             /* a forked child: its producer starts at its first camera call */
    int rd_index; uint32_t rd_pos; /* read(): the frame being read, and how far */
    uint32_t next_seq; uint64_t start_ns;
    uint64_t held_off_cpu_ns;  /* camera_unlock: the program's threads' time off CPU holding mu */
    int nobuf_wait;            /* EMUV4L2_NOBUF=wait */
    int starved;               /* nobuf_wait: the producer waits for a buffer, its clock stopped */
    pthread_t thread; int thread_alive, stop;
    int wakefd;              /* kicks blocked DQBUF/read waiters at STREAMOFF and close */
    struct mapping maps[MAXMAPS]; int nmaps;
} D = { .mu = PTHREAD_MUTEX_INITIALIZER, .logfd = -1, .memfd = -1, .wakefd = -1, .rd_index = -1 };

static struct ofile *_Atomic fdtab[FDMAX];
static atomic_int nmaps_alive;
static atomic_int initialised;

/* ---- the next definitions ---- */

static int (*next_open)(const char *, int, ...);
static int (*next_open64)(const char *, int, ...);
static int (*next_openat)(int, const char *, int, ...);
static int (*next_openat64)(int, const char *, int, ...);
static int (*next___open_2)(const char *, int);
static int (*next___open64_2)(const char *, int);
static int (*next___openat_2)(int, const char *, int);
static int (*next___openat64_2)(int, const char *, int);
static FILE *(*next_fopen)(const char *, const char *);
static FILE *(*next_fopen64)(const char *, const char *);
static int (*next_fclose)(FILE *);
static int (*next_close)(int);
static int (*next_dup)(int);
static int (*next_dup2)(int, int);
static int (*next_dup3)(int, int, int);
static int (*next_fcntl)(int, int, ...);
static int (*next_fcntl64)(int, int, ...);
static int (*next_ioctl)(int, unsigned long, ...);
static ssize_t (*next_read)(int, void *, size_t);
static ssize_t (*next___read_chk)(int, void *, size_t, size_t);
static int (*next_poll)(struct pollfd *, nfds_t, int);
static int (*next_ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
static int (*next_select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
static int (*next_pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
                           const sigset_t *);
static void *(*next_mmap)(void *, size_t, int, int, int, off_t);
static void *(*next_mmap64)(void *, size_t, int, int, int, off_t);
static int (*next_munmap)(void *, size_t);
static int (*next_stat)(const char *, struct stat *);
static int (*next_stat64)(const char *, struct stat64 *);
static int (*next_lstat)(const char *, struct stat *);
static int (*next_lstat64)(const char *, struct stat64 *);
static int (*next_fstat)(int, struct stat *);
static int (*next_fstat64)(int, struct stat64 *);
static int (*next___fstat64)(int, struct stat64 *);
static int (*next_fstatat)(int, const char *, struct stat *, int);
static int (*next_fstatat64)(int, const char *, struct stat64 *, int);
static int (*next_statx)(int, const char *, int, unsigned, struct statx *);
static int (*next___xstat)(int, const char *, struct stat *);
static int (*next___xstat64)(int, const char *, struct stat *);
static int (*next___lxstat)(int, const char *, struct stat *);
static int (*next___lxstat64)(int, const char *, struct stat *);
static int (*next___fxstat)(int, int, struct stat *);
static int (*next___fxstat64)(int, int, struct stat *);
static int (*next___fxstatat)(int, int, const char *, struct stat *, int);
static int (*next___fxstatat64)(int, int, const char *, struct stat *, int);
static int (*next_access)(const char *, int);
static int (*next_faccessat)(int, const char *, int, int);
static int (*next_euidaccess)(const char *, int);
static int (*next_eaccess)(const char *, int);

#define RESOLVE(name) (next_##name = (__typeof__(next_##name))dlsym(RTLD_NEXT, #name))

static void parse_config(void);

static void resolve_all(void)
{
    RESOLVE(open); RESOLVE(open64); RESOLVE(openat); RESOLVE(openat64);
    RESOLVE(__open_2); RESOLVE(__open64_2); RESOLVE(__openat_2); RESOLVE(__openat64_2);
    RESOLVE(fopen); RESOLVE(fopen64); RESOLVE(fclose); RESOLVE(close);
    RESOLVE(dup); RESOLVE(dup2); RESOLVE(dup3); RESOLVE(fcntl); RESOLVE(fcntl64);
    RESOLVE(ioctl); RESOLVE(read); RESOLVE(__read_chk);
    RESOLVE(poll); RESOLVE(ppoll); RESOLVE(select); RESOLVE(pselect);
    RESOLVE(mmap); RESOLVE(mmap64); RESOLVE(munmap);
    RESOLVE(stat); RESOLVE(stat64); RESOLVE(lstat); RESOLVE(lstat64);
    RESOLVE(fstat); RESOLVE(fstat64); RESOLVE(__fstat64); RESOLVE(fstatat); RESOLVE(fstatat64);
    RESOLVE(statx); RESOLVE(__xstat); RESOLVE(__xstat64); RESOLVE(__lxstat); RESOLVE(__lxstat64);
    RESOLVE(__fxstat); RESOLVE(__fxstat64); RESOLVE(__fxstatat); RESOLVE(__fxstatat64);
    RESOLVE(access); RESOLVE(faccessat); RESOLVE(euidaccess); RESOLVE(eaccess);
}

/* The camera's lock, as the program's threads take it (the producer takes D.mu itself). A
 * holder accounts the time it spent off its CPU while holding it - preempted by busier
 * processes, or blocked in a system call - in D.held_off_cpu_ns, which the producer adds to a
 * frame's waited_ns when it had to wait for the lock to make the frame ready. */
static __thread uint64_t hold_wall_ns, hold_cpu_ns;
static uint64_t now_ns(void);
static int start_producer(void);

static uint64_t thread_cpu_ns(void)
{
    struct timespec t;
    if (syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &t) != 0)
        return 0;
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void camera_lock(void)
{
    pthread_mutex_lock(&D.mu);
    hold_wall_ns = now_ns();
    hold_cpu_ns = thread_cpu_ns();
    if (D.restart) {
        D.restart = 0;
        if (D.streaming && start_producer() < 0)
            D.streaming = 0;
    }
}

static void camera_unlock(void)
{
    uint64_t wall = now_ns() - hold_wall_ns, cpu = thread_cpu_ns() - hold_cpu_ns;
    if (hold_cpu_ns && wall > cpu)
        D.held_off_cpu_ns += wall - cpu;
    pthread_mutex_unlock(&D.mu);
}

/* fork: the state is taken whole (the lock held across it). The child has no producer
 * thread (threads do not cross a fork), but the stream a driver keeps is the device's, not a
 * process's: a streaming child gets a producer of its own at its first camera call (a blocking
 * DQBUF there waited for good before), and a child that never touches the camera starts none,
 * so it writes nothing into the buffers the parent reads. */
static void before_fork(void) { pthread_mutex_lock(&D.mu); }
static void after_fork_parent(void) { pthread_mutex_unlock(&D.mu); }
static void after_fork_child(void)
{
    D.restart = D.thread_alive;
    D.thread_alive = 0;
    pthread_mutex_init(&D.mu, NULL);
}

/* Another library's constructor may call in before ours ran: every hook makes sure. */
static void init(void)
{
    int expected = 0;
    if (atomic_load_explicit(&initialised, memory_order_acquire) == 2)
        return;
    if (atomic_compare_exchange_strong(&initialised, &expected, 1)) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&D.cv, &ca);
        pthread_condattr_destroy(&ca);
        pthread_atfork(before_fork, after_fork_parent, after_fork_child);
        resolve_all();
        parse_config();
        atomic_store_explicit(&initialised, 2, memory_order_release);
    } else {
        while (atomic_load_explicit(&initialised, memory_order_acquire) != 2)
            ;  /* another thread is resolving: dlsym takes microseconds */
    }
}

/* The configuration again, from the environment as it is once constructors run:
 * a hook called earlier (ASan's runtime opens files before the program's
 * environment is in place) read it too soon. Not once the device was opened. */
__attribute__((constructor)) static void emuv4l2_load(void)
{
    init();
    camera_lock();
    if (D.wakefd < 0)
        parse_config();
    camera_unlock();
}

/* ---- small helpers ---- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct ofile *lookup(int fd)
{
    if (fd < 0 || fd >= FDMAX)
        return NULL;
    return atomic_load_explicit(&fdtab[fd], memory_order_acquire);
}

static int is_device_path(const char *path)
{
    return path && D.path[0] && strcmp(path, D.path) == 0;
}

/* /sys/dev/char/81:MINOR/uevent, which v4l-utils read to learn what the node is. */
static int is_uevent_path(const char *path)
{
    char want[64];
    if (!path || strncmp(path, "/sys/dev/char/81:", 17))
        return 0;
    snprintf(want, sizeof want, "/sys/dev/char/81:%u/uevent", D.minor);
    return strcmp(path, want) == 0;
}

/* A private copy of that file's text, as a memfd: a regular file the program reads and
 * closes natively. */
static int uevent_open(int flags)
{
    char text[128];
    const char *name = strrchr(D.path, '/');
    int n = snprintf(text, sizeof text, "MAJOR=81\nMINOR=%u\nDEVNAME=%s\n", D.minor, name ? name + 1 : D.path);
    long fd = syscall(SYS_memfd_create, "uevent", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
    if (fd < 0)
        return -1;
    syscall(SYS_write, fd, text, (size_t)n);
    syscall(SYS_lseek, fd, 0L, SEEK_SET);
    return (int)fd;
}

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...)
{
    char line[256];
    va_list ap;
    int n;
    if (D.logfd < 0)
        return;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof line - 1)
        return;
    line[n++] = '\n';
    syscall(SYS_write, D.logfd, line, (size_t)n);
}

static uint32_t parse_fourcc(const char *s, size_t n)
{
    if (n == 4 && !strncmp(s, "YUYV", 4)) return V4L2_PIX_FMT_YUYV;
    if (n == 4 && !strncmp(s, "GREY", 4)) return V4L2_PIX_FMT_GREY;
    if ((n == 4 && !strncmp(s, "RGB3", 4)) || (n == 5 && !strncmp(s, "RGB24", 5))) return V4L2_PIX_FMT_RGB24;
    return 0;
}

static const uint32_t formats[] = { V4L2_PIX_FMT_YUYV, V4L2_PIX_FMT_GREY, V4L2_PIX_FMT_RGB24 };
static const char *const format_names[] = { "YUYV 4:2:2", "8-bit Greyscale", "24-bit RGB 8-8-8" };
#define NFORMATS 3

static int format_known(uint32_t f)
{
    for (int i = 0; i < NFORMATS; i++)
        if (formats[i] == f)
            return 1;
    return 0;
}

static uint32_t bytes_per_pixel(uint32_t f)
{
    return f == V4L2_PIX_FMT_GREY ? 1 : f == V4L2_PIX_FMT_RGB24 ? 3 : 2;
}

static uint32_t sizeimage(void) { return D.width * bytes_per_pixel(D.pixfmt) * D.height; }

static int parse_list(const char *s, int doubles, void *out)
{
    int n = 0;
    while (s && *s && n < MAXLIST) {
        char *end;
        if (doubles) {
            double v = strtod(s, &end);
            if (end == s || v < 0) break;
            ((double *)out)[n++] = v;
        } else {
            unsigned long v = strtoul(s, &end, 10);
            if (end == s) break;
            ((uint32_t *)out)[n++] = (uint32_t)v;
        }
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') break;
    }
    return n;
}

static void parse_config(void)
{
    const char *v;
    v = getenv("EMUV4L2_DEVICE");
    snprintf(D.path, sizeof D.path, "%s", v && *v ? v : "/dev/video0");
    v = getenv("EMUV4L2_MINOR");
    D.minor = v ? (unsigned)strtoul(v, NULL, 10) : 0;
    v = getenv("EMUV4L2_FPS");
    D.fps = v ? (unsigned)strtoul(v, NULL, 10) : 30;
    if (D.fps == 0 || D.fps > 1000)
        D.fps = 30;
    D.pixfmt = V4L2_PIX_FMT_YUYV; D.width = 640; D.height = 480;
    v = getenv("EMUV4L2_FORMAT");
    if (v) {
        const char *colon = strchr(v, ':');
        unsigned w = 0, h = 0;
        uint32_t f = parse_fourcc(v, colon ? (size_t)(colon - v) : strlen(v));
        if (f)
            D.pixfmt = f;
        if (colon && sscanf(colon + 1, "%ux%u", &w, &h) == 2 && w >= 2 && h >= 1 && w <= 8192 && h <= 8192) {
            D.width = w & ~1u; D.height = h;
        }
    }
    D.ndelays = parse_list(getenv("EMUV4L2_DELAY_MS"), 1, D.delays_ms);
    D.ndrops = parse_list(getenv("EMUV4L2_DROP"), 0, D.drops);
    v = getenv("EMUV4L2_NOBUF");
    D.nobuf_wait = v && !strcmp(v, "wait");
    v = getenv("EMUV4L2_LOG");
    if (v && *v)
        snprintf(D.logpath, sizeof D.logpath, "%s", v);
}

/* The log and the wake descriptor are opened at the device's first open, not at load: a
 * process that never opens the device gets no descriptor of ours. */
static void device_first_open(void)
{
    if (D.logfd < 0 && D.logpath[0])
        D.logfd = (int)syscall(SYS_openat, AT_FDCWD, D.logpath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (D.wakefd < 0)
        D.wakefd = (int)syscall(SYS_eventfd2, 0, EFD_CLOEXEC | EFD_NONBLOCK);
}

static uint64_t capture_time(uint32_t seq)
{
    /* whole microseconds, so that the program's struct timeval is the exact timestamp */
    return D.start_ns + ((uint64_t)seq * 1000000ull / D.fps) * 1000ull;
}

/* A buffer is claimed (and filled) this long before the frame's timestamp, so that filling
 * it never makes the frame late: readiness is then only the wake-up's latency after its
 * due moment. Like a sensor's readout that starts into the buffer before the frame's
 * start of exposure is stamped. */
static uint64_t claim_lead(void)
{
    uint64_t half_period = 500000000ull / D.fps;
    return half_period < 3000000ull ? half_period : 3000000ull;
}

static uint64_t delay_ns(uint32_t seq)
{
    if (!D.ndelays)
        return 0;
    return (uint64_t)(D.delays_ms[seq % (uint32_t)D.ndelays] * 1e6 + 0.5);
}

static int dropped_by_config(uint32_t seq)
{
    for (int i = 0; i < D.ndrops; i++)
        if (D.drops[i] == seq)
            return 1;
    return 0;
}

/* Byte (x, y) of frame s is x + 2y + 5s mod 256: each row is a slice of one ramp, so a
 * frame costs a memcpy per row and the buffer is ready well within the microseconds the
 * timing tests allow. */
static void fill_frame(uint8_t *p, uint32_t seq)
{
    static uint8_t ramp[8192 * 3 + 256];
    static int ramp_made;
    uint32_t bpl = D.width * bytes_per_pixel(D.pixfmt);
    if (!ramp_made) {
        for (size_t k = 0; k < sizeof ramp; k++)
            ramp[k] = (uint8_t)k;
        ramp_made = 1;
    }
    for (uint32_t y = 0; y < D.height; y++)
        memcpy(p + (size_t)y * bpl, ramp + (uint8_t)(2 * y + 5 * seq), bpl);
    if (bpl * D.height >= 8) {
        uint32_t s = seq, ns = ~seq;
        for (int i = 0; i < 4; i++) {
            p[i] = (uint8_t)(s >> (8 * i));
            p[4 + i] = (uint8_t)(ns >> (8 * i));
        }
    }
}

static uint8_t *buffer_memory(int i)
{
    if (D.memory == V4L2_MEMORY_USERPTR)
        return (uint8_t *)D.bufs[i].userptr;
    return D.mem + (size_t)i * D.buflen;
}

static void evfd_add(int fd)
{
    uint64_t one = 1;
    if (fd >= 0)
        syscall(SYS_write, fd, &one, sizeof one);
}

static void evfd_take(int fd)
{
    uint64_t v;
    /* the count is positive (the buffer it counts is on the done list): no wait */
    if (fd >= 0)
        syscall(SYS_read, fd, &v, sizeof v);
}

/* ---- the producer ---- */

static void capture(uint32_t seq)
{
    uint64_t ts = capture_time(seq);
    if (dropped_by_config(seq)) {
        log_line("drop seq=%u reason=config timestamp_ns=%llu", seq, (unsigned long long)ts);
        return;
    }
    if (!D.nqueued) {
        log_line("drop seq=%u reason=nobuf timestamp_ns=%llu", seq, (unsigned long long)ts);
        return;
    }
    int i = D.queued[0];
    memmove(D.queued, D.queued + 1, sizeof D.queued[0] * (size_t)--D.nqueued);
    struct buffer *b = &D.bufs[i];
    b->state = B_ACTIVE;
    b->seq = seq;
    b->ts_ns = ts;
    b->due_ns = ts + delay_ns(seq);
    b->bytesused = sizeimage();
    fill_frame(buffer_memory(i), seq);
}

static int earliest_active(void)
{
    int best = -1;
    for (unsigned i = 0; i < D.nbufs; i++)
        if (D.bufs[i].state == B_ACTIVE && (best < 0 || D.bufs[i].due_ns < D.bufs[best].due_ns))
            best = (int)i;
    return best;
}

/* The calling thread's time runnable but waiting for a CPU, in ns (the second figure of
 * /proc/thread-self/schedstat, read through FD); 0 when it cannot be read. */
static uint64_t run_delay_ns(int fd)
{
    char text[128];
    long n = fd < 0 ? -1 : syscall(SYS_pread64, fd, text, sizeof text - 1, 0L);
    unsigned long long on_cpu, waiting;
    if (n <= 0)
        return 0;
    text[n] = '\0';
    return sscanf(text, "%llu %llu", &on_cpu, &waiting) == 2 ? waiting : 0;
}

static void *producer(void *arg)
{
    (void)arg;
    prctl(PR_SET_TIMERSLACK, 1UL);  /* wake at the deadline, not up to 50 us after it */
    int schedstat = (int)syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/schedstat",
                                 O_RDONLY | O_CLOEXEC);
    pthread_mutex_lock(&D.mu);
    /* The stream starts when its producer runs, not when STREAMON made it: the thread may
     * wait longer than the first frame's lead to run, or for the lock STREAMON holds, where
     * CPU-bound processes are beside the program. */
    D.start_ns = ((now_ns() + claim_lead()) / 1000 + 1) * 1000;
    D.starved = 0;
    /* As the last sleep began: the producer's run_delay, and the holders' time off CPU. */
    uint64_t waited_before = run_delay_ns(schedstat) + D.held_off_cpu_ns;
    while (!D.stop) {
        uint64_t now = now_ns();
        int a = earliest_active();
        if (a >= 0 && D.bufs[a].due_ns <= now) {
            struct buffer *b = &D.bufs[a];
            b->state = B_DONE;
            b->ready_ns = now_ns();
            b->waited_ns = run_delay_ns(schedstat) + D.held_off_cpu_ns - waited_before;
            D.done[D.ndone++] = a;
            evfd_add(D.owner ? D.owner->fd : -1);
            continue;
        }
        uint64_t claim = capture_time(D.next_seq) - claim_lead();
        if (claim <= now && D.nobuf_wait && !D.nqueued && !dropped_by_config(D.next_seq)) {
            D.starved = 1;   /* EMUV4L2_NOBUF=wait: the camera's clock stops for a buffer */
        } else if (D.starved) {
            D.starved = 0;   /* one came: the clock goes on from now, in whole microseconds */
            D.start_ns += (now - claim) / 1000 * 1000;
            claim = capture_time(D.next_seq) - claim_lead();
        }
        if (claim <= now && !D.starved) {
            capture(D.next_seq++);
            continue;
        }
        uint64_t deadline = D.starved ? UINT64_MAX : claim;
        if (a >= 0 && D.bufs[a].due_ns < deadline)
            deadline = D.bufs[a].due_ns;
        struct timespec ts = { (time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull) };
        waited_before = run_delay_ns(schedstat) + D.held_off_cpu_ns;
        if (deadline == UINT64_MAX)
            pthread_cond_wait(&D.cv, &D.mu);   /* until a buffer is queued, or the stream stops */
        else
            pthread_cond_timedwait(&D.cv, &D.mu, &ts);
    }
    pthread_mutex_unlock(&D.mu);
    if (schedstat >= 0)
        syscall(SYS_close, schedstat);
    return NULL;
}

/* The producer thread, for a stream that is on. Called locked. */
static int start_producer(void)
{
    sigset_t all, old;
    D.stop = 0;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);  /* the program's signals are not ours */
    int err = pthread_create(&D.thread, NULL, producer, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err)
        return -ENOMEM;
    D.thread_alive = 1;
    return 0;
}

/* Called locked; returns locked. */
static int start_streaming(void)
{
    uint64_t v;
    while (D.wakefd >= 0 && syscall(SYS_read, D.wakefd, &v, sizeof v) > 0)
        ;
    D.next_seq = 0;
    D.streaming = 1;
    int err = start_producer();
    if (err)
        D.streaming = 0;
    return err;
}

/* Called locked; returns locked (the lock is let go while the producer ends). Every
 * buffer goes back to the program, the ready count to zero. */
static void stop_streaming(void)
{
    if (D.thread_alive) {
        pthread_t t = D.thread;
        D.stop = 1;
        D.thread_alive = 0;
        pthread_cond_broadcast(&D.cv);
        camera_unlock();
        pthread_join(t, NULL);
        camera_lock();
    }
    for (int k = 0; k < D.ndone; k++)
        evfd_take(D.owner ? D.owner->fd : -1);
    D.ndone = 0;
    D.nqueued = 0;
    for (unsigned i = 0; i < D.nbufs; i++)
        D.bufs[i].state = B_DEQUEUED;
    D.streaming = 0;
    D.rd_index = -1;
    evfd_add(D.wakefd);
}

static void free_buffers(void)
{
    if (D.mem) {
        syscall(SYS_munmap, D.mem, D.buflen * D.nbufs);
        D.mem = NULL;
    }
    if (D.memfd >= 0) {
        syscall(SYS_close, D.memfd);
        D.memfd = -1;
    }
    memset(D.bufs, 0, sizeof D.bufs);
    /* The queue goes with its buffers: entries left from QBUFs before a REQBUFS (as
     * v4l2-compliance makes) would put one buffer in the queue twice, and a producer ahead
     * of the program would capture into a buffer it had made ready and not handed out. */
    D.nqueued = 0;
    D.nbufs = 0;
    D.memory = 0;
    D.nmaps = 0;  /* the program's mappings stay valid (memfd): orphaned */
    atomic_store(&nmaps_alive, 0);
}

static int alloc_buffers(unsigned count, int memory)
{
    D.memory = memory;
    D.nbufs = count;
    if (memory == V4L2_MEMORY_MMAP) {
        long page = sysconf(_SC_PAGESIZE);
        D.buflen = ((size_t)sizeimage() + (size_t)page - 1) & ~((size_t)page - 1);
        D.memfd = (int)syscall(SYS_memfd_create, "emuv4l2", MFD_CLOEXEC);
        if (D.memfd < 0 || syscall(SYS_ftruncate, D.memfd, (off_t)(D.buflen * count)) < 0)
            goto fail;
        long m = syscall(SYS_mmap, NULL, D.buflen * count, PROT_READ | PROT_WRITE, MAP_SHARED, D.memfd, 0);
        if (m == -1)
            goto fail;
        D.mem = (uint8_t *)m;
    }
    return 0;
fail:
    free_buffers();
    return -ENOMEM;
}

/* ---- open files ---- */

static void register_fd(int fd, struct ofile *of)
{
    of->refs++;
    atomic_store_explicit(&fdtab[fd], of, memory_order_release);
}

static int prio_max(void)
{
    for (int p = V4L2_PRIORITY_RECORD; p >= V4L2_PRIORITY_BACKGROUND; p--)
        if (D.prio_count[p])
            return p;
    return V4L2_PRIORITY_UNSET;
}

static int prio_check(struct ofile *of)
{
    return (int)of->prio < prio_max() ? -EBUSY : 0;
}

/* Called locked; returns locked. FD no longer names OF. */
static void unregister_fd(int fd, struct ofile *of)
{
    atomic_store_explicit(&fdtab[fd], NULL, memory_order_release);
    if (--of->refs > 0) {
        if (of->fd == fd)
            for (int k = 0; k < FDMAX; k++)
                if (atomic_load_explicit(&fdtab[k], memory_order_relaxed) == of) {
                    of->fd = k;
                    break;
                }
        return;
    }
    if (D.owner == of) {
        stop_streaming();
        free_buffers();
        D.owner = NULL;
        D.reading = 0;
    }
    D.prio_count[of->prio]--;
    free(of);
}

static int device_open(int flags)
{
    if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)) {
        errno = EEXIST;
        return -1;
    }
    if (flags & O_DIRECTORY) {
        errno = ENOTDIR;
        return -1;
    }
    struct ofile *of = calloc(1, sizeof *of);
    if (!of) {
        errno = ENOMEM;
        return -1;
    }
    int efl = EFD_SEMAPHORE | (flags & O_NONBLOCK ? EFD_NONBLOCK : 0) | (flags & O_CLOEXEC ? EFD_CLOEXEC : 0);
    long fd = syscall(SYS_eventfd2, 0, efl);
    if (fd < 0) {
        free(of);
        return -1;
    }
    if (fd >= FDMAX) {
        syscall(SYS_close, fd);
        free(of);
        errno = EMFILE;
        return -1;
    }
    camera_lock();
    device_first_open();
    of->fd = (int)fd;
    of->prio = V4L2_PRIORITY_DEFAULT;
    D.prio_count[of->prio]++;
    register_fd((int)fd, of);
    camera_unlock();
    return (int)fd;
}

/* ---- ioctls ---- */

static uint32_t kernel_version(void)
{
    struct utsname u;
    unsigned a = 0, b = 0, c = 0;
    if (uname(&u) == 0)
        sscanf(u.release, "%u.%u.%u", &a, &b, &c);
    return (a << 16) | (b << 8) | (c > 255 ? 255 : c);
}

static void fill_pix(struct v4l2_format *f)
{
    memset(&f->fmt, 0, sizeof f->fmt);
    struct v4l2_pix_format *p = &f->fmt.pix;
    p->width = D.width;
    p->height = D.height;
    p->pixelformat = D.pixfmt;
    p->field = V4L2_FIELD_NONE;
    p->bytesperline = D.width * bytes_per_pixel(D.pixfmt);
    p->sizeimage = sizeimage();
    p->colorspace = V4L2_COLORSPACE_SRGB;
    p->priv = V4L2_PIX_FMT_PRIV_MAGIC;
}

static void fill_buffer(struct v4l2_buffer *vb, int i)
{
    struct buffer *b = &D.bufs[i];
    memset(vb, 0, sizeof *vb);
    vb->index = (uint32_t)i;
    vb->type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    vb->memory = (uint32_t)D.memory;
    vb->bytesused = b->bytesused;
    vb->field = V4L2_FIELD_NONE;
    vb->flags = V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC | V4L2_BUF_FLAG_TSTAMP_SRC_SOE;
    if (b->state == B_QUEUED || b->state == B_ACTIVE)
        vb->flags |= V4L2_BUF_FLAG_QUEUED;
    else if (b->state == B_DONE)
        vb->flags |= V4L2_BUF_FLAG_DONE;
    if (b->mapped)
        vb->flags |= V4L2_BUF_FLAG_MAPPED;
    vb->timestamp.tv_sec = (time_t)(b->ts_ns / 1000000000ull);
    vb->timestamp.tv_usec = (suseconds_t)(b->ts_ns % 1000000000ull / 1000);
    vb->sequence = b->seq;
    if (D.memory == V4L2_MEMORY_MMAP) {
        vb->m.offset = (uint32_t)((size_t)i * D.buflen);
        vb->length = sizeimage();
    } else {
        vb->m.userptr = b->userptr;
        vb->length = b->ulength ? b->ulength : sizeimage();
    }
}

static int queue_busy_for(struct ofile *of)
{
    return D.owner && D.owner != of;
}

/* Waits, unlocked, for the owner's eventfd or the wake descriptor. Called locked. */
static int wait_ready(struct ofile *of)
{
    struct pollfd p[2] = { { of->fd, POLLIN, 0 }, { D.wakefd, POLLIN, 0 } };
    camera_unlock();
    long r = syscall(SYS_ppoll, p, 2, NULL, NULL, (size_t)8);
    int err = r < 0 ? errno : 0;
    camera_lock();
    return err == EINTR ? -EINTR : 0;
}

static int nonblocking(int fd)
{
    long fl = syscall(SYS_fcntl, fd, F_GETFL);
    return fl >= 0 && (fl & O_NONBLOCK);
}

/* Takes the next ready buffer, waiting unless FD is non-blocking. Called locked. */
static int take_done(int fd, struct ofile *of)
{
    for (;;) {
        if (!D.streaming)
            return -EINVAL;
        if (D.ndone) {
            int i = D.done[0];
            memmove(D.done, D.done + 1, sizeof D.done[0] * (size_t)--D.ndone);
            evfd_take(of->fd);
            D.bufs[i].state = B_DEQUEUED;
            return i;
        }
        if (nonblocking(fd))
            return -EAGAIN;
        int r = wait_ready(of);
        if (r < 0)
            return r;
        if (D.owner != of)
            return -EINVAL;
    }
}

static void log_handout(const char *what, int i)
{
    struct buffer *b = &D.bufs[i];
    log_line("%s seq=%u index=%d timestamp_ns=%llu due_ns=%llu ready_ns=%llu waited_ns=%llu dq_ns=%llu "
             "bytes=%u", what, b->seq, i, (unsigned long long)b->ts_ns, (unsigned long long)b->due_ns,
             (unsigned long long)b->ready_ns, (unsigned long long)b->waited_ns,
             (unsigned long long)now_ns(), b->bytesused);
}

static int do_reqbufs(struct ofile *of, struct v4l2_requestbuffers *rb)
{
    if (rb->type != V4L2_BUF_TYPE_VIDEO_CAPTURE ||
        (rb->memory != V4L2_MEMORY_MMAP && rb->memory != V4L2_MEMORY_USERPTR))
        return -EINVAL;
    rb->capabilities = V4L2_BUF_CAP_SUPPORTS_MMAP | V4L2_BUF_CAP_SUPPORTS_USERPTR | V4L2_BUF_CAP_SUPPORTS_ORPHANED_BUFS;
    rb->flags = 0;
    memset(rb->reserved, 0, sizeof rb->reserved);
    if (prio_check(of))
        return -EBUSY;
    if (queue_busy_for(of) || D.streaming || D.reading)
        return -EBUSY;
    free_buffers();
    D.owner = NULL;
    if (rb->count == 0)
        return 0;
    unsigned n = rb->count > MAXBUF ? MAXBUF : rb->count;
    if (alloc_buffers(n, (int)rb->memory) < 0)
        return -ENOMEM;
    D.owner = of;
    rb->count = n;
    return 0;
}

/* Whether [ADDR, ADDR + LEN) is mapped in the process (mincore fails on a hole). */
static int user_memory_mapped(unsigned long addr, size_t len)
{
    static unsigned char vec[(8192 * 8192 * 3) / 4096 + 2];
    unsigned long page = (unsigned long)sysconf(_SC_PAGESIZE);
    unsigned long start = addr & ~(page - 1);
    size_t span = addr + len - start;
    if (addr + len < addr || span / page + 1 > sizeof vec)
        return 0;
    return syscall(SYS_mincore, start, span, vec) == 0;
}

static int do_qbuf(struct ofile *of, struct v4l2_buffer *vb)
{
    if (vb->type != V4L2_BUF_TYPE_VIDEO_CAPTURE)
        return -EINVAL;
    if (queue_busy_for(of) || D.reading)
        return -EBUSY;
    if (!D.nbufs || vb->memory != (uint32_t)D.memory || vb->index >= D.nbufs)
        return -EINVAL;
    struct buffer *b = &D.bufs[vb->index];
    if (b->state != B_DEQUEUED)
        return -EINVAL;
    if (D.memory == V4L2_MEMORY_USERPTR) {
        if (!vb->m.userptr || vb->length < sizeimage())
            return -EINVAL;
        if (!user_memory_mapped(vb->m.userptr, vb->length))
            return -EFAULT;  /* the kernel could not pin it */
        b->userptr = vb->m.userptr;
        b->ulength = vb->length;
    }
    b->state = B_QUEUED;
    D.queued[D.nqueued++] = (int)vb->index;
    if (D.starved)
        pthread_cond_signal(&D.cv);
    fill_buffer(vb, (int)vb->index);
    return 0;
}

static int do_dqbuf(int fd, struct ofile *of, struct v4l2_buffer *vb)
{
    if (vb->type != V4L2_BUF_TYPE_VIDEO_CAPTURE)
        return -EINVAL;
    if (queue_busy_for(of) || D.reading)
        return -EBUSY;
    if (!D.nbufs || vb->memory != (uint32_t)D.memory)
        return -EINVAL;
    int i = take_done(fd, of);
    if (i < 0)
        return i;
    fill_buffer(vb, i);
    log_handout("dqbuf", i);
    return 0;
}

static int implemented(unsigned long req)
{
    switch (req) {
    case VIDIOC_QUERYCAP: case VIDIOC_ENUM_FMT: case VIDIOC_G_FMT: case VIDIOC_S_FMT: case VIDIOC_TRY_FMT:
    case VIDIOC_ENUM_FRAMESIZES: case VIDIOC_ENUM_FRAMEINTERVALS: case VIDIOC_G_PARM: case VIDIOC_S_PARM:
    case VIDIOC_ENUMINPUT: case VIDIOC_G_INPUT: case VIDIOC_S_INPUT: case VIDIOC_G_PRIORITY:
    case VIDIOC_S_PRIORITY: case VIDIOC_REQBUFS: case VIDIOC_QUERYBUF: case VIDIOC_QBUF: case VIDIOC_DQBUF:
    case VIDIOC_STREAMON: case VIDIOC_STREAMOFF:
        return 1;
    default:
        /* controls, events, TV standards, DV timings, tuners, audio, crop/selection,
         * EXPBUF, CREATE_BUFS, PREPARE_BUF and anything unknown: ENOTTY, as the kernel
         * answers for a driver without them */
        return 0;
    }
}

static int do_ioctl(int fd, struct ofile *of, unsigned long req, void *arg)
{
    switch (req) {
    case VIDIOC_QUERYCAP: {
        struct v4l2_capability *c = arg;
        memset(c, 0, sizeof *c);
        snprintf((char *)c->driver, sizeof c->driver, "emuv4l2");
        snprintf((char *)c->card, sizeof c->card, "Emulated Camera (emuv4l2)");
        snprintf((char *)c->bus_info, sizeof c->bus_info, "usb-emuv4l2-1");
        c->version = kernel_version();
        c->device_caps = V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING | V4L2_CAP_READWRITE | V4L2_CAP_EXT_PIX_FORMAT;
        c->capabilities = c->device_caps | V4L2_CAP_DEVICE_CAPS;
        return 0;
    }
    case VIDIOC_ENUM_FMT: {
        struct v4l2_fmtdesc *f = arg;
        if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || f->index >= NFORMATS)
            return -EINVAL;
        uint32_t index = f->index;
        memset(f, 0, sizeof *f);
        f->index = index;
        f->type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        f->pixelformat = formats[index];
        snprintf((char *)f->description, sizeof f->description, "%s", format_names[index]);
        return 0;
    }
    case VIDIOC_G_FMT: {
        struct v4l2_format *f = arg;
        if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE)
            return -EINVAL;
        fill_pix(f);
        return 0;
    }
    case VIDIOC_TRY_FMT:
    case VIDIOC_S_FMT: {
        struct v4l2_format *f = arg;
        if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE)
            return -EINVAL;
        uint32_t want = f->fmt.pix.pixelformat, old = D.pixfmt;
        if (req == VIDIOC_S_FMT) {
            if (prio_check(of))
                return -EBUSY;
            if (D.nbufs || D.streaming || D.reading)
                return -EBUSY;
        }
        D.pixfmt = format_known(want) ? want : old;
        fill_pix(f);
        if (req == VIDIOC_TRY_FMT)
            D.pixfmt = old;
        return 0;
    }
    case VIDIOC_ENUM_FRAMESIZES: {
        struct v4l2_frmsizeenum *s = arg;
        if (!format_known(s->pixel_format) || s->index != 0)
            return -EINVAL;
        uint32_t pf = s->pixel_format;
        memset(s, 0, sizeof *s);
        s->pixel_format = pf;
        s->type = V4L2_FRMSIZE_TYPE_DISCRETE;
        s->discrete.width = D.width;
        s->discrete.height = D.height;
        return 0;
    }
    case VIDIOC_ENUM_FRAMEINTERVALS: {
        struct v4l2_frmivalenum *v = arg;
        if (!format_known(v->pixel_format) || v->index != 0 || v->width != D.width || v->height != D.height)
            return -EINVAL;
        uint32_t pf = v->pixel_format;
        memset(v, 0, sizeof *v);
        v->pixel_format = pf;
        v->width = D.width;
        v->height = D.height;
        v->type = V4L2_FRMIVAL_TYPE_DISCRETE;
        v->discrete.numerator = 1;
        v->discrete.denominator = D.fps;
        return 0;
    }
    case VIDIOC_S_PARM:
    case VIDIOC_G_PARM: {
        struct v4l2_streamparm *p = arg;
        if (p->type != V4L2_BUF_TYPE_VIDEO_CAPTURE)
            return -EINVAL;
        if (req == VIDIOC_S_PARM && prio_check(of))
            return -EBUSY;
        memset(&p->parm, 0, sizeof p->parm);
        p->parm.capture.capability = V4L2_CAP_TIMEPERFRAME;
        p->parm.capture.timeperframe.numerator = 1;
        p->parm.capture.timeperframe.denominator = D.fps;
        p->parm.capture.readbuffers = READ_BUFFERS;
        return 0;
    }
    case VIDIOC_ENUMINPUT: {
        struct v4l2_input *in = arg;
        if (in->index != 0)
            return -EINVAL;
        memset(in, 0, sizeof *in);
        snprintf((char *)in->name, sizeof in->name, "Camera 1");
        in->type = V4L2_INPUT_TYPE_CAMERA;
        return 0;
    }
    case VIDIOC_G_INPUT:
        *(int *)arg = 0;
        return 0;
    case VIDIOC_S_INPUT:
        if (prio_check(of))
            return -EBUSY;
        return *(int *)arg == 0 ? 0 : -EINVAL;
    case VIDIOC_G_PRIORITY:
        *(uint32_t *)arg = (uint32_t)prio_max();  /* the device's, as the kernel answers */
        return 0;
    case VIDIOC_S_PRIORITY: {
        uint32_t p = *(uint32_t *)arg;
        if (prio_check(of))
            return -EBUSY;
        if (p < V4L2_PRIORITY_BACKGROUND || p > V4L2_PRIORITY_RECORD)
            return -EINVAL;
        D.prio_count[of->prio]--;
        of->prio = p;
        D.prio_count[p]++;
        return 0;
    }
    case VIDIOC_REQBUFS:
        return do_reqbufs(of, arg);
    case VIDIOC_QUERYBUF: {
        struct v4l2_buffer *vb = arg;
        if (vb->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || vb->index >= D.nbufs)
            return -EINVAL;
        fill_buffer(vb, (int)vb->index);
        return 0;
    }
    case VIDIOC_QBUF:
        return do_qbuf(of, arg);
    case VIDIOC_DQBUF:
        return do_dqbuf(fd, of, arg);
    case VIDIOC_STREAMON:
    case VIDIOC_STREAMOFF: {
        if (*(int *)arg != V4L2_BUF_TYPE_VIDEO_CAPTURE)
            return -EINVAL;
        if (prio_check(of))
            return -EBUSY;
        if (queue_busy_for(of) || D.reading)
            return -EBUSY;
        if (req == VIDIOC_STREAMOFF) {
            stop_streaming();
            return 0;
        }
        if (!D.nbufs)
            return -EINVAL;
        return D.streaming ? 0 : start_streaming();
    }
    default:
        return -ENOTTY;
    }
}

/* read() I/O begins: the driver's own buffers, all queued, and the stream on, for OF.
 * Called locked; 0, or a negative errno. */
static int start_reading(struct ofile *of)
{
    if (alloc_buffers(READ_BUFFERS, V4L2_MEMORY_MMAP) < 0)
        return -ENOMEM;
    D.owner = of;
    D.reading = 1;
    for (int i = 0; i < READ_BUFFERS; i++) {
        D.bufs[i].state = B_QUEUED;
        D.queued[D.nqueued++] = i;
    }
    if (start_streaming() < 0) {
        free_buffers();
        D.owner = NULL;
        D.reading = 0;
        return -ENOMEM;
    }
    return 0;
}

static ssize_t device_read(int fd, struct ofile *of, void *dst, size_t n)
{
    ssize_t ret;
    camera_lock();
    if (queue_busy_for(of) || (D.nbufs && !D.reading)) {
        ret = -EBUSY;
        goto out;
    }
    if (!D.reading && (ret = start_reading(of)) < 0)
        goto out;
    if (D.rd_index < 0) {
        int i = take_done(fd, of);
        if (i < 0) {
            ret = i;
            goto out;
        }
        log_handout("read", i);
        D.rd_index = i;
        D.rd_pos = 0;
    }
    struct buffer *b = &D.bufs[D.rd_index];
    size_t left = b->bytesused - D.rd_pos;
    if (n > left)
        n = left;
    memcpy(dst, buffer_memory(D.rd_index) + D.rd_pos, n);
    D.rd_pos += (uint32_t)n;
    if (D.rd_pos >= b->bytesused) {
        b->state = B_QUEUED;
        D.queued[D.nqueued++] = D.rd_index;
        if (D.starved)
            pthread_cond_signal(&D.cv);
        D.rd_index = -1;
    }
    ret = (ssize_t)n;
out:
    camera_unlock();
    if (ret < 0) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}

/* ---- the exported hooks ---- */

#define OPEN_MODE(flags, mode)                                                  \
    do {                                                                        \
        if ((flags) & (O_CREAT | __O_TMPFILE)) {                                \
            va_list ap;                                                         \
            va_start(ap, flags);                                                \
            mode = va_arg(ap, int);                                             \
            va_end(ap);                                                         \
        }                                                                       \
    } while (0)

EXPORT int open(const char *path, int flags, ...)
{
    int mode = 0;
    OPEN_MODE(flags, mode);
    init();
    if (is_device_path(path))
        return device_open(flags);
    if (is_uevent_path(path))
        return uevent_open(flags);
    return next_open(path, flags, mode);
}

EXPORT int open64(const char *path, int flags, ...)
{
    int mode = 0;
    OPEN_MODE(flags, mode);
    init();
    if (is_device_path(path))
        return device_open(flags);
    if (is_uevent_path(path))
        return uevent_open(flags);
    return next_open64(path, flags, mode);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    int mode = 0;
    OPEN_MODE(flags, mode);
    init();
    if (is_device_path(path))
        return device_open(flags);
    if (is_uevent_path(path))
        return uevent_open(flags);
    return next_openat(dirfd, path, flags, mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    int mode = 0;
    OPEN_MODE(flags, mode);
    init();
    if (is_device_path(path))
        return device_open(flags);
    if (is_uevent_path(path))
        return uevent_open(flags);
    return next_openat64(dirfd, path, flags, mode);
}

EXPORT int __open_2(const char *path, int flags)
{
    init();
    return is_device_path(path) ? device_open(flags) : is_uevent_path(path) ? uevent_open(flags) : next___open_2(path, flags);
}

EXPORT int __open64_2(const char *path, int flags)
{
    init();
    return is_device_path(path) ? device_open(flags) : is_uevent_path(path) ? uevent_open(flags) : next___open64_2(path, flags);
}

EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    init();
    return is_device_path(path) ? device_open(flags) : is_uevent_path(path) ? uevent_open(flags) : next___openat_2(dirfd, path, flags);
}

EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
    init();
    return is_device_path(path) ? device_open(flags) : is_uevent_path(path) ? uevent_open(flags) : next___openat64_2(dirfd, path, flags);
}

static FILE *device_fopen(const char *mode, int uevent)
{
    int flags = strchr(mode, '+') ? O_RDWR : mode[0] == 'r' ? O_RDONLY : O_WRONLY;
    if (strchr(mode, 'e'))
        flags |= O_CLOEXEC;
    int fd = uevent ? uevent_open(flags) : device_open(flags);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, mode);
    if (!f)
        close(fd);
    return f;
}

EXPORT FILE *fopen(const char *path, const char *mode)
{
    init();
    if (is_device_path(path) || is_uevent_path(path))
        return device_fopen(mode, is_uevent_path(path));
    return next_fopen(path, mode);
}

EXPORT FILE *fopen64(const char *path, const char *mode)
{
    init();
    if (is_device_path(path) || is_uevent_path(path))
        return device_fopen(mode, is_uevent_path(path));
    return next_fopen64(path, mode);
}

/* Forgets FD if it is the device's, before the next close of it. */
static void forget(int fd)
{
    struct ofile *of = lookup(fd);
    if (!of)
        return;
    camera_lock();
    if (lookup(fd) == of)
        unregister_fd(fd, of);
    camera_unlock();
}

EXPORT int fclose(FILE *f)
{
    init();
    if (f)
        forget(fileno(f));
    return next_fclose(f);
}

EXPORT int close(int fd)
{
    init();
    forget(fd);
    return next_close(fd);
}

static int copied(int old, int fd)
{
    struct ofile *of;
    if (fd >= 0 && (of = lookup(old))) {
        camera_lock();
        if (fd < FDMAX && lookup(old) == of)
            register_fd(fd, of);
        camera_unlock();
    }
    return fd;
}

EXPORT int dup(int old)
{
    init();
    return copied(old, next_dup(old));
}

/* dup2 and dup3 close FD first when OLD is open: so does the library's record of it. */
EXPORT int dup2(int old, int fd)
{
    init();
    if (old == fd)
        return next_dup2(old, fd);
    if (syscall(SYS_fcntl, old, F_GETFD) >= 0)
        forget(fd);
    return copied(old, next_dup2(old, fd));
}

EXPORT int dup3(int old, int fd, int flags)
{
    init();
    if (old != fd && syscall(SYS_fcntl, old, F_GETFD) >= 0)
        forget(fd);
    return copied(old, next_dup3(old, fd, flags));
}

static int fcntl_common(int (*next)(int, int, ...), int fd, int cmd, void *arg)
{
    int r = next(fd, cmd, arg);
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
        return copied(fd, r);
    return r;
}

EXPORT int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    init();
    return fcntl_common(next_fcntl, fd, cmd, arg);
}

EXPORT int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    init();
    return fcntl_common(next_fcntl64 ? next_fcntl64 : next_fcntl, fd, cmd, arg);
}

EXPORT int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    struct ofile *of = lookup(fd);
    /* the file-level ioctls the kernel answers before any driver: the eventfd's own */
    if (!of || req == FIONBIO || req == FIOCLEX || req == FIONCLEX || req == FIOASYNC) {
        init();
        return next_ioctl(fd, req, arg);
    }
    /* As the kernel does (video_usercopy), the driver works on an aligned copy of
     * the argument: a program may pass any buffer (Python's fcntl.ioctl does). */
    union {
        max_align_t align;
        unsigned char bytes[1024];
    } copy;
    size_t size = _IOC_SIZE(req);
    void *work = arg;
    if (arg && size <= sizeof copy.bytes && (_IOC_DIR(req) & (_IOC_READ | _IOC_WRITE))) {
        memcpy(copy.bytes, arg, size);
        work = copy.bytes;
    }
    camera_lock();
    int r = lookup(fd) != of ? -EBADF : !implemented(req) ? -ENOTTY : !arg ? -EFAULT : do_ioctl(fd, of, req, work);
    camera_unlock();
    if (work != arg && (_IOC_DIR(req) & _IOC_READ))
        memcpy(arg, work, size);
    if (r < 0) {
        errno = -r;
        return -1;
    }
    return r;
}

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    struct ofile *of = lookup(fd);
    if (of)
        return device_read(fd, of, buf, n);
    init();
    return next_read(fd, buf, n);
}

EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    struct ofile *of = lookup(fd);
    if (of) {
        if (n > buflen)
            abort();  /* what the fortified read does */
        return device_read(fd, of, buf, n);
    }
    init();
    return next___read_chk(fd, buf, n, buflen);
}

/* A wait for a camera's frame: as a driver's poll does for read() I/O (vb2_poll), a
 * camera with no buffers and no stream starts capturing for read() when the program waits
 * to read from it, so a select() before the first read() wakes with the first frame, not at
 * its timeout. */
static void waiting_to_read(int fd)
{
    struct ofile *of = lookup(fd);
    if (!of)
        return;
    camera_lock();
    if (!queue_busy_for(of) && !D.nbufs && !D.streaming && !D.reading)
        start_reading(of);
    camera_unlock();
}

static void polling(const struct pollfd *fds, nfds_t count)
{
    for (nfds_t i = 0; fds && i < count && i < FDMAX; i++)
        if (fds[i].events & (POLLIN | POLLRDNORM))
            waiting_to_read(fds[i].fd);
}

static void selecting(int count, const fd_set *read_set)
{
    for (int fd = 0; read_set && fd < count && fd < FD_SETSIZE; fd++)
        if (FD_ISSET(fd, read_set))
            waiting_to_read(fd);
}

EXPORT int poll(struct pollfd *fds, nfds_t count, int timeout)
{
    init();
    polling(fds, count);
    return next_poll(fds, count, timeout);
}

EXPORT int ppoll(struct pollfd *fds, nfds_t count, const struct timespec *timeout,
                 const sigset_t *mask)
{
    init();
    polling(fds, count);
    return next_ppoll(fds, count, timeout, mask);
}

EXPORT int select(int count, fd_set *read_set, fd_set *write_set, fd_set *except_set,
                  struct timeval *timeout)
{
    init();
    selecting(count, read_set);
    return next_select(count, read_set, write_set, except_set, timeout);
}

EXPORT int pselect(int count, fd_set *read_set, fd_set *write_set, fd_set *except_set,
                   const struct timespec *timeout, const sigset_t *mask)
{
    init();
    selecting(count, read_set);
    return next_pselect(count, read_set, write_set, except_set, timeout, mask);
}

static void *device_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    long r = -EINVAL;
    camera_lock();
    if (D.memory != V4L2_MEMORY_MMAP || D.reading || !D.buflen || off < 0 || off % (off_t)D.buflen ||
        (size_t)off / D.buflen >= D.nbufs || len == 0 || len > D.buflen || !(flags & MAP_SHARED) ||
        !(prot & PROT_READ))
        goto out;
    r = syscall(SYS_mmap, addr, len, prot, flags, D.memfd, off);
    if (r == -1) {
        r = -errno;
        goto out;
    }
    int index = (int)((size_t)off / D.buflen);
    D.bufs[index].mapped++;
    if (D.nmaps < MAXMAPS) {
        D.maps[D.nmaps++] = (struct mapping){ (uintptr_t)r, len, index };
        atomic_store(&nmaps_alive, D.nmaps);
    }
out:
    camera_unlock();
    (void)fd;
    if (r < 0 && r > -4096) {
        errno = (int)-r;
        return MAP_FAILED;
    }
    return (void *)r;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (lookup(fd))
        return device_mmap(addr, len, prot, flags, fd, off);
    init();
    return next_mmap(addr, len, prot, flags, fd, off);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (lookup(fd))
        return device_mmap(addr, len, prot, flags, fd, off);
    init();
    return (next_mmap64 ? next_mmap64 : next_mmap)(addr, len, prot, flags, fd, off);
}

EXPORT int munmap(void *addr, size_t len)
{
    if (atomic_load_explicit(&nmaps_alive, memory_order_relaxed)) {
        uintptr_t a = (uintptr_t)addr;
        camera_lock();
        for (int k = 0; k < D.nmaps; k++) {
            struct mapping *m = &D.maps[k];
            if (a < m->addr + m->len && m->addr < a + len) {
                if (m->index < (int)D.nbufs && D.bufs[m->index].mapped)
                    D.bufs[m->index].mapped--;
                D.maps[k--] = D.maps[--D.nmaps];
            }
        }
        atomic_store(&nmaps_alive, D.nmaps);
        camera_unlock();
    }
    init();
    return next_munmap(addr, len);
}

/* ---- metadata ---- */

static void fake_stat(struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_dev = makedev(0, 5);
    st->st_ino = 0x7e0000 + D.minor;
    st->st_mode = S_IFCHR | 0660;
    st->st_nlink = 1;
    st->st_rdev = makedev(81, D.minor);
    st->st_blksize = 4096;
}

static void fake_statx(struct statx *sx)
{
    struct stat st;
    fake_stat(&st);
    memset(sx, 0, sizeof *sx);
    sx->stx_mask = STATX_BASIC_STATS;
    sx->stx_blksize = (uint32_t)st.st_blksize;
    sx->stx_nlink = (uint32_t)st.st_nlink;
    sx->stx_mode = (uint16_t)st.st_mode;
    sx->stx_ino = st.st_ino;
    sx->stx_rdev_major = 81;
    sx->stx_rdev_minor = D.minor;
    sx->stx_dev_major = 0;
    sx->stx_dev_minor = 5;
}

/* Whether (DIRFD, PATH, FLAGS) of an *at call names the device. */
static int at_names_device(int dirfd, const char *path, int flags)
{
    if (is_device_path(path))
        return 1;
    return path && !path[0] && (flags & AT_EMPTY_PATH) && lookup(dirfd);
}

/* x86_64 and aarch64: struct stat64 is struct stat */
_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "struct stat64 differs from struct stat");

#define FAKED(cond, st) do { if (cond) { fake_stat(st); return 0; } } while (0)

EXPORT int stat(const char *p, struct stat *st) { init(); FAKED(is_device_path(p), st); return next_stat(p, st); }
EXPORT int stat64(const char *p, struct stat64 *st) { init(); FAKED(is_device_path(p), (struct stat *)st); return next_stat64(p, st); }
EXPORT int lstat(const char *p, struct stat *st) { init(); FAKED(is_device_path(p), st); return next_lstat(p, st); }
EXPORT int lstat64(const char *p, struct stat64 *st) { init(); FAKED(is_device_path(p), (struct stat *)st); return next_lstat64(p, st); }
EXPORT int fstat(int fd, struct stat *st) { init(); FAKED(lookup(fd), st); return next_fstat(fd, st); }
EXPORT int fstat64(int fd, struct stat64 *st) { init(); FAKED(lookup(fd), (struct stat *)st); return next_fstat64(fd, st); }
EXPORT int __fstat64(int fd, struct stat64 *st)
{
    init();
    FAKED(lookup(fd), (struct stat *)st);
    return (next___fstat64 ? next___fstat64 : next_fstat64)(fd, st);
}
EXPORT int fstatat(int d, const char *p, struct stat *st, int fl)
{
    init();
    FAKED(at_names_device(d, p, fl), st);
    return next_fstatat(d, p, st, fl);
}
EXPORT int fstatat64(int d, const char *p, struct stat64 *st, int fl)
{
    init();
    FAKED(at_names_device(d, p, fl), (struct stat *)st);
    return next_fstatat64(d, p, st, fl);
}
EXPORT int __xstat(int v, const char *p, struct stat *st) { init(); FAKED(is_device_path(p), st); return next___xstat(v, p, st); }
EXPORT int __xstat64(int v, const char *p, struct stat *st) { init(); FAKED(is_device_path(p), st); return next___xstat64(v, p, st); }
EXPORT int __lxstat(int v, const char *p, struct stat *st) { init(); FAKED(is_device_path(p), st); return next___lxstat(v, p, st); }
EXPORT int __lxstat64(int v, const char *p, struct stat *st) { init(); FAKED(is_device_path(p), st); return next___lxstat64(v, p, st); }
EXPORT int __fxstat(int v, int fd, struct stat *st) { init(); FAKED(lookup(fd), st); return next___fxstat(v, fd, st); }
EXPORT int __fxstat64(int v, int fd, struct stat *st) { init(); FAKED(lookup(fd), st); return next___fxstat64(v, fd, st); }
EXPORT int __fxstatat(int v, int d, const char *p, struct stat *st, int fl)
{
    init();
    FAKED(at_names_device(d, p, fl), st);
    return next___fxstatat(v, d, p, st, fl);
}
EXPORT int __fxstatat64(int v, int d, const char *p, struct stat *st, int fl)
{
    init();
    FAKED(at_names_device(d, p, fl), st);
    return next___fxstatat64(v, d, p, st, fl);
}

EXPORT int statx(int d, const char *p, int fl, unsigned mask, struct statx *sx)
{
    init();
    if (at_names_device(d, p, fl)) {
        fake_statx(sx);
        return 0;
    }
    return next_statx(d, p, fl, mask, sx);
}

EXPORT int access(const char *p, int mode) { init(); return is_device_path(p) ? 0 : next_access(p, mode); }
EXPORT int euidaccess(const char *p, int mode) { init(); return is_device_path(p) ? 0 : next_euidaccess(p, mode); }
EXPORT int eaccess(const char *p, int mode) { init(); return is_device_path(p) ? 0 : next_eaccess(p, mode); }
EXPORT int faccessat(int d, const char *p, int mode, int fl)
{
    init();
    return is_device_path(p) ? 0 : next_faccessat(d, p, mode, fl);
}
