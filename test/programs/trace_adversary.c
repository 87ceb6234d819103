/* trace_adversary: a program that uses NVTX itself (header-only nvtx3, no
 * libusb) in the ways that hurt a trace writer: another process writing the
 * same path, a full disk, its descriptors closed under it, exit from a signal
 * handler, a kill at any moment, NVTX ranges that never end or nest too deep.
 * What it prints does not depend on timing, pids or the shim, so runs with and
 * without the shim can be compared byte for byte (test/test_trace_safety.py).
 *
 * One iteration: push "work", start "span", mark "tick", end "span", pop.
 *
 *     trace_adversary loop N
 *         N iterations; "loop N done"
 *     trace_adversary pause N
 *         N iterations; "ready"; reads a number M from stdin; M iterations; "done"
 *     trace_adversary system N M
 *         N iterations; system() runs "trace_adversary loop M" (this program,
 *         which inherits LD_PRELOAD and NVTXSHIM_TRACE); N more iterations
 *     trace_adversary fdreuse PATH close_range|loop
 *         N iterations; every descriptor from 3 up closed (the close_range
 *         system call, or close() on each up to the limit), as daemons do;
 *         PATH opened, 64 blocks of known text written to it with 100
 *         iterations after each; PATH closed; 100 more iterations
 *     trace_adversary closepause N
 *         N iterations; every descriptor from 3 up closed (close_range), so
 *         the trace file's lock goes with its descriptor; "ready"; reads M
 *         from stdin; M iterations; "done" (another run may take the path
 *         meanwhile)
 *     trace_adversary sigloop default|exit|_exit
 *         with exit or _exit, a SIGTERM handler that calls exit(3) or _exit(3);
 *         then two threads loop on iterations (and a range whose name needs
 *         escapes) until the process ends; "looping" once both are looping
 *     trace_adversary unended N M
 *         N start ranges "open I" that never end, then M start/end pairs "pair I"
 *     trace_adversary deep N
 *         N push ranges "depth I" nested on one thread, then N pops
 *     trace_adversary short N
 *         N push/pop pairs of one registered name in a domain: the smallest events
 *         an encoder writes (the binary form's begin and end are 12 to 16 bytes)
 *     trace_adversary exitinside N [M]
 *         one iteration; with M, a second thread pushes M ranges "beside I"
 *         and waits; then N push ranges "inside I" nested on the main thread,
 *         and exit(0) inside them
 *     trace_adversary execinside N
 *         one iteration, then N push ranges "inside I" nested on the main thread,
 *         an exec of a program that does not exist inside them (it fails, and
 *         the trace goes on), then their N pops
 *     trace_adversary handlers N H
 *         iterations on the main thread, each with a CUDA copy of 4 KiB when
 *         libcuda.so.1 loads (the stand-in driver), while a second thread sends
 *         SIGUSR1 to it as fast as it can; the handler makes a push "handler"
 *         with a mark "tick" in it, so it interrupts the recorder anywhere in
 *         a push, a pop, a mark or a copy's range. At least N iterations, and
 *         on until the handler has run H times (how soon is the scheduler's:
 *         the second thread may wait for a processor) or 15 s have passed;
 *         "handlers N H done", then "handler ran R times in I iterations"
 *     trace_adversary forkbusy N
 *         two threads loop on iterations (ten, then a pause of 50 us) while the
 *         main thread forks N
 *         children, one at a time, inside a range of its own; each child makes
 *         100 iterations and leaves by exit(0) or _exit(0) in turn; a child
 *         that has not ended 10 s after it was forked hangs (killed, said,
 *         exit 1); the two threads then finish the iteration they are in and
 *         are joined; "forkbusy N done"
 *     trace_adversary threads N K
 *         NVTX set up on the main thread (nvtxInitialize), then N rounds of K
 *         threads at once, each named "worker R.T" with nvtxNameOsThread and
 *         making 20 iterations, then joined (the next round's threads take
 *         over their buffers); "threads N K done"
 *     trace_adversary errno N
 *         N rounds of NVTX calls of every kind (mark, push, pop, start, end,
 *         a domain's registered string, push and pop, a category and the
 *         thread named), errno set to 1234 before each and looked at after it,
 *         as a program that marks between a failed call and its look at errno
 *         does; "errno kept" or "errno changed to E by CALL" (exit 1) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void iteration(void)
{
    nvtxRangePushA("work");
    nvtxRangeId_t span = nvtxRangeStartA("span");
    nvtxMarkA("tick");
    nvtxRangeEnd(span);
    nvtxRangePop();
}

static void iterations(long count)
{
    for (long i = 0; i < count; i++)
        iteration();
}

static long number(const char *text)
{
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno || *end || value < 0) {
        fprintf(stderr, "trace_adversary: not a count: %s\n", text);
        exit(2);
    }
    return value;
}

static int loop(long count)
{
    iterations(count);
    printf("loop %ld done\n", count);
    return 0;
}

static int pause_for_count(long count)
{
    iterations(count);
    printf("ready\n");
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof line, stdin)) {
        fprintf(stderr, "trace_adversary: no count on stdin\n");
        return 2;
    }
    line[strcspn(line, "\n")] = '\0';
    long more = number(line);
    iterations(more);
    printf("done\n");
    return 0;
}

static int run_itself(long before, long child)
{
    char self[4096];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    if (length < 0 || memchr(self, '\'', (size_t)length)) {
        fprintf(stderr, "trace_adversary: cannot name this program for sh\n");
        return 2;
    }
    self[length] = '\0';
    char command[4200];
    snprintf(command, sizeof command, "'%s' loop %ld", self, child);
    iterations(before);
    printf("parent: %ld iterations\n", before);
    fflush(stdout);
    int status = system(command);
    iterations(before);
    printf("parent: child exited %d; %ld more iterations\n",
           WIFEXITED(status) ? WEXITSTATUS(status) : -1, before);
    return 0;
}

static void close_from_3(const char *how)
{
    if (!strcmp(how, "close_range")) {
#ifdef SYS_close_range
        if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0)
            return;
#endif
        fprintf(stderr, "trace_adversary: no close_range here\n");
        exit(2);
    }
    long limit = sysconf(_SC_OPEN_MAX);
    if (limit < 0 || limit > (1L << 20))
        limit = 1L << 20;
    for (long fd = 3; fd < limit; fd++)
        close((int)fd);
}

static int reuse_descriptors(const char *path, const char *how)
{
    iterations(200);
    close_from_3(how);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        return 2;
    }
    size_t written = 0;
    char block[16384];
    for (int b = 0; b < 64; b++) {
        size_t used = 0;
        for (int line = 0; used + 64 < sizeof block; line++)
            used += (size_t)snprintf(block + used, sizeof block - used,
                                     "block %02d line %03d: the program's own data\n", b, line);
        for (size_t done = 0; done < used;) {
            ssize_t n = write(fd, block + done, used - done);
            if (n < 0) {
                perror("write");
                return 2;
            }
            done += (size_t)n;
        }
        written += used;
        iterations(100);
    }
    if (close(fd) != 0) {
        perror("close");
        return 2;
    }
    iterations(100);
    printf("wrote %zu bytes to the program's file\n", written);
    return 0;
}

/* The trace file's descriptor goes, and its lock with it, while the program
 * waits: another run may truncate and rewrite the file before this one
 * records again. */
static int close_and_pause(long count)
{
    iterations(count);
    close_from_3("close_range");
    return pause_for_count(0);
}

static volatile sig_atomic_t underscore_exit;
static atomic_int second_looping;

static void on_term(int signal_number)
{
    (void)signal_number;
    if (underscore_exit)
        _exit(3);
    exit(3);
}

static void spin(void)
{
    for (;;) {
        iteration();
        nvtxRangePushA("needs \"escapes\" \\ \t here");
        nvtxMarkA("inner tick");
        nvtxRangePop();
    }
}

static void *second_thread(void *unused)
{
    (void)unused;
    iteration();
    atomic_store(&second_looping, 1);
    spin();
    return NULL;
}

static int signal_loop(const char *mode)
{
    if (strcmp(mode, "default")) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = on_term;
        sigemptyset(&action.sa_mask);
        if (!strcmp(mode, "_exit"))
            underscore_exit = 1;
        else if (strcmp(mode, "exit")) {
            fprintf(stderr, "trace_adversary: sigloop default|exit|_exit\n");
            return 2;
        }
        sigaction(SIGTERM, &action, NULL);
    }
    pthread_t thread;
    if (pthread_create(&thread, NULL, second_thread, NULL) != 0) {
        fprintf(stderr, "trace_adversary: no thread\n");
        return 2;
    }
    iteration();
    while (!atomic_load(&second_looping))
        iteration();
    /* Written past stdio: the handler's exit(3) flushes stdout, and a flush it interrupted
     * (the line written, the buffer not yet emptied) would write the line again. */
    static const char line[] = "looping\n";
    if (write(STDOUT_FILENO, line, sizeof line - 1) != (ssize_t)(sizeof line - 1))
        return 2;
    spin();
    return 0;
}

static int short_events(long count)
{
    nvtxDomainHandle_t domain = nvtxDomainCreateA("s");
    nvtxEventAttributes_t attributes = {0};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attributes.message.registered = nvtxDomainRegisterStringA(domain, "w");
    for (long i = 0; i < count; i++) {
        nvtxDomainRangePushEx(domain, &attributes);
        nvtxDomainRangePop(domain);
    }
    printf("%ld short ranges\n", count);
    return 0;
}

static int unended(long open_count, long pairs)
{
    char name[64];
    for (long i = 0; i < open_count; i++) {
        snprintf(name, sizeof name, "open %ld", i);
        nvtxRangeStartA(name);
    }
    for (long i = 0; i < pairs; i++) {
        snprintf(name, sizeof name, "pair %ld", i);
        nvtxRangeEnd(nvtxRangeStartA(name));
    }
    printf("%ld ranges left open, %ld ended\n", open_count, pairs);
    return 0;
}

static int deep(long depth)
{
    char name[64];
    for (long i = 0; i < depth; i++) {
        snprintf(name, sizeof name, "depth %ld", i);
        nvtxRangePushA(name);
    }
    for (long i = 0; i < depth; i++)
        nvtxRangePop();
    printf("%ld ranges nested and ended\n", depth);
    return 0;
}

static atomic_long beside_pushed;

static void *push_beside(void *count)
{
    char name[64];
    for (long i = 0; i < *(long *)count; i++) {
        snprintf(name, sizeof name, "beside %ld", i);
        nvtxRangePushA(name);
    }
    atomic_store(&beside_pushed, 1);
    for (;;)
        pause();
    return NULL;
}

static int exit_inside(long depth, long beside)
{
    char name[64];
    iteration();
    if (beside) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, push_beside, &beside) != 0) {
            fprintf(stderr, "trace_adversary: no thread\n");
            return 2;
        }
        while (!atomic_load(&beside_pushed))
            sched_yield();
    }
    for (long i = 0; i < depth; i++) {
        snprintf(name, sizeof name, "inside %ld", i);
        nvtxRangePushA(name);
    }
    if (beside)
        printf("exiting inside %ld ranges, %ld beside\n", depth, beside);
    else
        printf("exiting inside %ld ranges\n", depth);
    exit(0);
}

static int exec_inside(long depth)
{
    char name[64];
    iteration();
    for (long i = 0; i < depth; i++) {
        snprintf(name, sizeof name, "inside %ld", i);
        nvtxRangePushA(name);
    }
    char *const argv[] = { "/nonexistent/program", NULL };
    execv(argv[0], argv);
    int error = errno;
    for (long i = 0; i < depth; i++)
        nvtxRangePop();
    printf("exec failed inside %ld ranges (%s)\n", depth, strerror(error));
    return 0;
}

static atomic_long handled;
static atomic_int kicking;

static void on_usr1(int signal_number)
{
    (void)signal_number;
    int saved = errno;
    atomic_fetch_add(&handled, 1);
    nvtxRangePushA("handler");
    nvtxMarkA("tick");
    nvtxRangePop();
    errno = saved;
}

static void *kicker(void *target)
{
    pthread_t main_thread = *(pthread_t *)target;
    unsigned seed = 12345;
    while (atomic_load(&kicking)) {
        pthread_kill(main_thread, SIGUSR1);
        /* a varying pause: the next signal lands somewhere else in an iteration */
        seed = seed * 1103515245u + 12345u;
        for (volatile unsigned i = 0; i < (seed >> 16) % 1500; i++)
            ;
    }
    return NULL;
}

static atomic_int busy_stop;

/* Ten iterations, a pause of 50 us, again: the writer's lock is taken often
 * (each thread's buffer fills every few hundred iterations), the file stays
 * small enough to check. Until told to stop, between two iterations. */
static void *busy_thread(void *unused)
{
    (void)unused;
    struct timespec pause = { 0, 50000 };
    while (!atomic_load(&busy_stop)) {
        iterations(10);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static int fork_while_busy(long count)
{
    pthread_t threads[2];
    for (int t = 0; t < 2; t++)
        if (pthread_create(&threads[t], NULL, busy_thread, NULL) != 0) {
            fprintf(stderr, "trace_adversary: no thread\n");
            return 2;
        }
    for (long i = 0; i < count; i++) {
        nvtxRangePushA("forking");
        fflush(stdout);
        pid_t child = fork();
        if (child < 0) {
            perror("fork");
            return 2;
        }
        if (child == 0) {
            iterations(100);
            if (i % 2)
                _exit(0);
            exit(0);
        }
        nvtxRangePop();
        struct timespec start, now, pause = { 0, 1000000 };
        clock_gettime(CLOCK_MONOTONIC, &start);
        int status = 0;
        for (;;) {
            pid_t done = waitpid(child, &status, WNOHANG);
            if (done == child)
                break;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec - start.tv_sec >= 10) {
                kill(child, SIGKILL);
                waitpid(child, &status, 0);
                printf("child %ld hung\n", i);
                return 1;
            }
            nanosleep(&pause, NULL);
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            printf("child %ld ended with status %#x\n", i, status);
            return 1;
        }
        iteration();
    }
    /* Every iteration whole when the process ends: an exit while the threads
     * are between a start and its end would leave a begin without an end. */
    atomic_store(&busy_stop, 1);
    for (int t = 0; t < 2; t++)
        pthread_join(threads[t], NULL);
    printf("forkbusy %ld done\n", count);
    fflush(stdout);
    exit(0);
}

struct churn_worker {
    pthread_t thread;
    char name[64];
};

static void *churn_work(void *argument)
{
    struct churn_worker *worker = argument;
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), worker->name);
    iterations(20);
    return NULL;
}

static int thread_churn(long rounds, long at_once)
{
    struct churn_worker workers[64];
    if (at_once < 1 || at_once > 64) {
        fprintf(stderr, "trace_adversary: 1 to 64 threads at once\n");
        return 2;
    }
    /* NVTX's set-up, once, before any thread can race it: the threads that lose
     * that race wait with sched_yield, a system call of the program's own, and
     * test_seccomp.py's program must make none (under load one did). */
    nvtxInitialize(NULL);
    for (long r = 0; r < rounds; r++) {
        for (long t = 0; t < at_once; t++) {
            snprintf(workers[t].name, sizeof workers[t].name, "worker %ld.%ld", r, t);
            if (pthread_create(&workers[t].thread, NULL, churn_work, &workers[t]) != 0) {
                fprintf(stderr, "trace_adversary: no thread\n");
                return 2;
            }
        }
        for (long t = 0; t < at_once; t++)
            pthread_join(workers[t].thread, NULL);
        iteration();
    }
    printf("threads %ld %ld done\n", rounds, at_once);
    return 0;
}

#define KEEPS_ERRNO(call)                                                              \
    do {                                                                               \
        errno = 1234;                                                                  \
        call;                                                                          \
        if (errno != 1234) {                                                           \
            printf("errno changed to %d by %s\n", errno, #call);                        \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

static int errno_kept(long rounds)
{
    for (long i = 0; i < rounds; i++) {
        KEEPS_ERRNO(nvtxMarkA("tick"));
        KEEPS_ERRNO(nvtxRangePushA("work"));
        nvtxRangeId_t span;
        KEEPS_ERRNO(span = nvtxRangeStartA("span"));
        KEEPS_ERRNO(nvtxRangeEnd(span));
        KEEPS_ERRNO(nvtxRangePop());
        nvtxDomainHandle_t domain;
        KEEPS_ERRNO(domain = nvtxDomainCreateA("errno"));
        nvtxEventAttributes_t attributes = {0};
        attributes.version = NVTX_VERSION;
        attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
        KEEPS_ERRNO(attributes.message.registered = nvtxDomainRegisterStringA(domain, "step"));
        KEEPS_ERRNO(nvtxDomainRangePushEx(domain, &attributes));
        KEEPS_ERRNO(nvtxDomainRangePop(domain));
        KEEPS_ERRNO(nvtxNameCategoryA(7, "seven"));
        KEEPS_ERRNO(nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "errno main"));
    }
    printf("errno kept\n");
    return 0;
}

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_alloc_fn)(unsigned long long *, size_t);
typedef int (*cu_htod_fn)(unsigned long long, const void *, size_t);

static double seconds_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

static int handlers(long count, long wanted)
{
    cu_htod_fn htod = NULL;
    unsigned long long device = 0;
    void *library = dlopen("libcuda.so.1", RTLD_NOW);
    if (library) {
        cu_init_fn init = (cu_init_fn)dlsym(library, "cuInit");
        cu_alloc_fn alloc = (cu_alloc_fn)dlsym(library, "cuMemAlloc_v2");
        htod = (cu_htod_fn)dlsym(library, "cuMemcpyHtoD_v2");
        if (!init || !alloc || !htod || init(0) != 0 || alloc(&device, 4096) != 0) {
            fprintf(stderr, "trace_adversary: libcuda.so.1 has no usable copy\n");
            return 2;
        }
    }
    static char host[4096];
    /* NVTX's headers initialise on the first call, once, and a second call
     * waits for the first to finish: a handler's push that interrupted the
     * first call (which loads the injection library) would wait for itself
     * forever, with or without this library. Real programs that call NVTX in
     * handlers meet that too; this one makes its first call before any
     * handler can run. */
    nvtxMarkA("before handlers");
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_usr1;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR1, &action, NULL);
    pthread_t self = pthread_self(), thread;
    atomic_store(&kicking, 1);
    if (pthread_create(&thread, NULL, kicker, &self) != 0) {
        fprintf(stderr, "trace_adversary: no thread\n");
        return 2;
    }
    /* The second thread may wait for a processor (two busy ones beside): the
     * loop goes on until its signals have landed often enough, not for a
     * fixed count. Past COUNT, 64 iterations that no signal landed in are
     * followed by a millisecond's sleep, which gives a processor this thread
     * held to the second one and keeps the file from growing meanwhile. */
    struct timespec start, nap = { 0, 1000000 };
    clock_gettime(CLOCK_MONOTONIC, &start);
    long i = 0, seen = 0;
    for (; i < count || (atomic_load(&handled) < wanted && seconds_since(&start) < 15); i++) {
        iteration();
        if (htod && htod(device, host, sizeof host) != 0) {
            fprintf(stderr, "trace_adversary: the copy failed\n");
            return 2;
        }
        if (i >= count && i % 64 == 0) {
            if (atomic_load(&handled) == seen)
                nanosleep(&nap, NULL);
            seen = atomic_load(&handled);
        }
    }
    atomic_store(&kicking, 0);
    pthread_join(thread, NULL);
    printf("handlers %ld %ld done\n", count, wanted);
    printf("handler ran %ld times in %ld iterations\n", atomic_load(&handled), i);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "loop") && argc == 3)
        return loop(number(argv[2]));
    if (!strcmp(mode, "pause") && argc == 3)
        return pause_for_count(number(argv[2]));
    if (!strcmp(mode, "system") && argc == 4)
        return run_itself(number(argv[2]), number(argv[3]));
    if (!strcmp(mode, "fdreuse") && argc == 4)
        return reuse_descriptors(argv[2], argv[3]);
    if (!strcmp(mode, "closepause") && argc == 3)
        return close_and_pause(number(argv[2]));
    if (!strcmp(mode, "sigloop") && argc == 3)
        return signal_loop(argv[2]);
    if (!strcmp(mode, "unended") && argc == 4)
        return unended(number(argv[2]), number(argv[3]));
    if (!strcmp(mode, "deep") && argc == 3)
        return deep(number(argv[2]));
    if (!strcmp(mode, "short") && argc == 3)
        return short_events(number(argv[2]));
    if (!strcmp(mode, "exitinside") && (argc == 3 || argc == 4))
        return exit_inside(number(argv[2]), argc == 4 ? number(argv[3]) : 0);
    if (!strcmp(mode, "execinside") && argc == 3)
        return exec_inside(number(argv[2]));
    if (!strcmp(mode, "handlers") && argc == 4)
        return handlers(number(argv[2]), number(argv[3]));
    if (!strcmp(mode, "forkbusy") && argc == 3)
        return fork_while_busy(number(argv[2]));
    if (!strcmp(mode, "threads") && argc == 4)
        return thread_churn(number(argv[2]), number(argv[3]));
    if (!strcmp(mode, "errno") && argc == 3)
        return errno_kept(number(argv[2]));
    fprintf(stderr, "usage: trace_adversary loop N | pause N | system N M | "
                    "fdreuse PATH close_range|loop | closepause N | sigloop default|exit|_exit | "
                    "unended N M | deep N | short N | exitinside N [M] | execinside N | handlers N H | "
                    "forkbusy N | "
                    "threads N K | errno N\n");
    return 2;
}
