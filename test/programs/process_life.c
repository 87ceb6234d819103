/* process_life: the emulated device's protocol across the events of a
 * process's life — fork, exec, posix_spawn, vfork, threads, dlclose and
 * re-dlopen of libusb, and every way of ending — printing only what does not
 * depend on timing or addresses, so runs with and without the shim can be
 * compared byte for byte.
 *
 *     process_life frames START COUNT ACTION
 *         COUNT frames from frame index START; ACTION is the action in force
 *         (the device's a(START-1)); what the other modes start as a child
 *     process_life fork N M K
 *         N frames; libusb closed; fork: the child opens libusb itself, runs M
 *         frames and exits; the parent waits, reopens, runs K more
 *     process_life exec VARIANT N M
 *         a named "watcher" thread reads the status 3 times and stays blocked;
 *         N frames; then, with libusb still open, VARIANT (execv, execvp, execl,
 *         execlp, execle, execve, fexecve, execveat) runs "frames N M ACTION".
 *         With LIFE_NEXT_TRACE set, NVTXSHIM_TRACE is set to it for the new image
 *     process_life spawn N M K
 *         N frames; posix_spawn "frames N M ACTION" with libusb left open; wait; K more
 *     process_life vfork N M K
 *         N frames; a vfork child whose exec fails (_exit 127); then a vfork
 *         child that execs "frames N M ACTION"; wait; K more
 *     process_life threads N T R
 *         N frames; after each of the first R, T threads named "worker R.T" read
 *         the status 2 times each and are joined
 *     process_life end HOW N
 *         the watcher thread as in exec; N frames; then the process ends by HOW:
 *         return, exit, thread-exit (exit() from another thread while main
 *         waits in pthread_join), _exit, _Exit, abort, segv (raise SIGSEGV),
 *         kill (raise SIGKILL)
 *     process_life dlreopen N [moved]
 *         (process_life_dl, built without -lusb-1.0) libusb through dlopen and
 *         dlsym: N frames, libusb_exit, dlclose (checked to unload it); with
 *         "moved", the old address range is taken so the library cannot come
 *         back there; dlopen again, N more frames
 *
 * Frame i: control OUT (req 0x01, wValue i, wIndex the action), the command on
 * bulk OUT 0x02, the frame on bulk IN 0x81, the status on interrupt IN 0x83,
 * whose third byte is the next action. A process that resumes after another
 * ran frames reads the status once first. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libusb.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define TIMEOUT_MS 2000
#define FRAME_BYTES (64 * 48 * 3)
#define LIBUSB_SONAME "libusb-1.0.so.0"

extern char **environ;

/* The libusb functions used, through pointers: the linked ones, or (in
 * process_life_dl) those dlsym finds in a dlopen'ed libusb. */
struct usb_api {
    int (*init)(libusb_context **);
    void (*exit)(libusb_context *);
    libusb_device_handle *(*open)(libusb_context *, uint16_t, uint16_t);
    int (*claim)(libusb_device_handle *, int);
    int (*release)(libusb_device_handle *, int);
    void (*close)(libusb_device_handle *);
    int (*control)(libusb_device_handle *, uint8_t, uint8_t, uint16_t, uint16_t, unsigned char *,
                   uint16_t, unsigned int);
    int (*bulk)(libusb_device_handle *, unsigned char, unsigned char *, int, int *, unsigned int);
    int (*interrupt)(libusb_device_handle *, unsigned char, unsigned char *, int, int *,
                     unsigned int);
};

static struct usb_api usb;
static libusb_context *context;
static libusb_device_handle *handle;
static const char *self;  /* this program's path, for the children it starts */

static void die(const char *what)
{
    printf("process_life: %s failed\n", what);
    fflush(stdout);
    _exit(1);
}

#ifdef LIFE_DLOPEN
static void *usb_library; /* the dlopen handle */

static void *symbol(const char *name)
{
    void *found = dlsym(usb_library, name);
    if (!found)
        die(name);
    return found;
}

static void load_usb(void)
{
    usb_library = dlopen(LIBUSB_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!usb_library)
        die("dlopen " LIBUSB_SONAME);
    usb.init = symbol("libusb_init");
    usb.exit = symbol("libusb_exit");
    usb.open = symbol("libusb_open_device_with_vid_pid");
    usb.claim = symbol("libusb_claim_interface");
    usb.release = symbol("libusb_release_interface");
    usb.close = symbol("libusb_close");
    usb.control = symbol("libusb_control_transfer");
    usb.bulk = symbol("libusb_bulk_transfer");
    usb.interrupt = symbol("libusb_interrupt_transfer");
}
#else
static void load_usb(void)
{
    usb = (struct usb_api){ libusb_init, libusb_exit, libusb_open_device_with_vid_pid,
                            libusb_claim_interface, libusb_release_interface, libusb_close,
                            libusb_control_transfer, libusb_bulk_transfer,
                            libusb_interrupt_transfer };
}
#endif

static void open_device(void)
{
    if (usb.init(&context) < 0)
        die("libusb_init");
    handle = usb.open(context, 0x1209, 0x0001);
    if (!handle)
        die("opening 1209:0001");
    usb.claim(handle, 0);
}

static void close_device(void)
{
    usb.release(handle, 0);
    usb.close(handle);
    usb.exit(context);
    handle = NULL;
    context = NULL;
}

/* The status word's action byte; -1 when the read failed. */
static int read_status(void)
{
    unsigned char status[8];
    int moved = 0;
    if (usb.interrupt(handle, 0x83, status, sizeof status, &moved, TIMEOUT_MS) < 0 || moved != 8)
        return -1;
    return status[2];
}

/* COUNT frames from index START; returns the action in force after them. */
static int run_frames(const char *who, int start, int count, int action, int *errors)
{
    static unsigned char frame[FRAME_BYTES];
    for (int i = start; i < start + count; i++) {
        unsigned char command[8] = { 0xA5, (unsigned char)action, (unsigned char)(i & 0xff),
                                     (unsigned char)(i >> 8), 0, 0, 0, 0x5A };
        int moved = 0;
        *errors += usb.control(handle, 0x40, 0x01, (uint16_t)i, (uint16_t)action, NULL, 0,
                               TIMEOUT_MS) < 0;
        *errors += usb.bulk(handle, 0x02, command, sizeof command, &moved, TIMEOUT_MS) < 0;
        *errors += usb.bulk(handle, 0x81, frame, sizeof frame, &moved, TIMEOUT_MS) < 0 ||
                   moved != FRAME_BYTES;
        int next = read_status();
        if (next < 0)
            ++*errors;
        else
            action = next;
    }
    printf("%s: frames %d..%d errors=%d action=%d\n", who, start, start + count - 1, *errors,
           action);
    fflush(stdout);
    return action;
}

/* "frames START COUNT ACTION" for a child, in BUFFERS. */
static char **child_arguments(char buffers[3][16], int start, int count, int action)
{
    static char *argv[6];
    snprintf(buffers[0], 16, "%d", start);
    snprintf(buffers[1], 16, "%d", count);
    snprintf(buffers[2], 16, "%d", action);
    argv[0] = (char *)"process_life";
    argv[1] = (char *)"frames";
    argv[2] = buffers[0];
    argv[3] = buffers[1];
    argv[4] = buffers[2];
    argv[5] = NULL;
    return argv;
}

static int wait_for(pid_t pid, const char *who)
{
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            die("waitpid");
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    printf("%s exited %d\n", who, code);
    fflush(stdout);
    return code;
}

/* ---- the watcher: a named thread with events in its buffer, then blocked ---- */

static pthread_mutex_t watcher_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watcher_ready = PTHREAD_COND_INITIALIZER;
static bool watcher_done;
static int block_pipe[2];

static void *watch(void *unused)
{
    (void)unused;
    pthread_setname_np(pthread_self(), "watcher");
    int reads = 0;
    for (int i = 0; i < 3; i++)
        reads += read_status() >= 0;
    pthread_mutex_lock(&watcher_lock);
    watcher_done = true;
    pthread_cond_signal(&watcher_ready);
    pthread_mutex_unlock(&watcher_lock);
    char byte;
    while (read(block_pipe[0], &byte, 1) < 0 && errno == EINTR)
        continue; /* nobody writes: blocked until the process ends */
    return NULL;
}

static void start_watcher(void)
{
    pthread_t thread;
    if (pipe(block_pipe) != 0 || pthread_create(&thread, NULL, watch, NULL) != 0)
        die("starting the watcher");
    pthread_mutex_lock(&watcher_lock);
    while (!watcher_done)
        pthread_cond_wait(&watcher_ready, &watcher_lock);
    pthread_mutex_unlock(&watcher_lock);
    printf("watcher: 3 status reads, now blocked\n");
    fflush(stdout);
}

/* ---- modes ---------------------------------------------------------------- */

static int mode_frames(int start, int count, int action)
{
    int errors = 0;
    open_device();
    run_frames("frames", start, count, action, &errors);
    close_device();
    return errors ? 3 : 0;
}

static int mode_fork(int n, int m, int k)
{
    int errors = 0;
    open_device();
    int action = run_frames("parent", 0, n, 0, &errors);
    close_device();
    pid_t child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) {
        int child_errors = 0;
        open_device();
        run_frames("child", n, m, action, &child_errors);
        close_device();
        exit(child_errors ? 3 : 0);
    }
    if (wait_for(child, "child"))
        errors++;
    open_device();
    action = read_status();
    run_frames("parent", n + m, k, action, &errors);
    close_device();
    return errors ? 3 : 0;
}

static int execveat_self(const char *path, char *const argv[], char *const envp[])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    return execveat(fd, "", argv, envp, AT_EMPTY_PATH);
}

static int mode_exec(const char *variant, int n, int m)
{
    int errors = 0;
    open_device();
    start_watcher();
    int action = run_frames("before exec", 0, n, 0, &errors);
    char buffers[3][16];
    char **argv = child_arguments(buffers, n, m, action);
    const char *next = getenv("LIFE_NEXT_TRACE");
    if (next)
        setenv("NVTXSHIM_TRACE", next, 1);
    printf("exec: %s\n", variant);
    fflush(stdout);
    if (!strcmp(variant, "execv")) {
        execv(self, argv);
    } else if (!strcmp(variant, "execvp") || !strcmp(variant, "execlp")) {
        /* Found on PATH: the directory of this program first. */
        char directory[PATH_MAX], *slash;
        snprintf(directory, sizeof directory, "%s", self);
        slash = strrchr(directory, '/');
        if (slash)
            *slash = '\0';
        char *path = NULL;
        if (asprintf(&path, "%s:%s", directory, getenv("PATH") ? getenv("PATH") : "") < 0)
            die("asprintf");
        setenv("PATH", path, 1);
        if (!strcmp(variant, "execvp"))
            execvp("process_life", argv);
        else
            execlp("process_life", argv[0], argv[1], argv[2], argv[3], argv[4], (char *)NULL);
    } else if (!strcmp(variant, "execl")) {
        execl(self, argv[0], argv[1], argv[2], argv[3], argv[4], (char *)NULL);
    } else if (!strcmp(variant, "execle")) {
        execle(self, argv[0], argv[1], argv[2], argv[3], argv[4], (char *)NULL, environ);
    } else if (!strcmp(variant, "execve")) {
        execve(self, argv, environ);
    } else if (!strcmp(variant, "fexecve")) {
        int fd = open(self, O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
            fexecve(fd, argv, environ);
    } else if (!strcmp(variant, "execveat")) {
        execveat_self(self, argv, environ);
    } else {
        printf("process_life: unknown exec variant %s\n", variant);
        return 2;
    }
    printf("process_life: %s: %s\n", variant, strerror(errno));
    return 1;
}

static int mode_spawn(int n, int m, int k)
{
    int errors = 0;
    open_device();
    int action = run_frames("parent", 0, n, 0, &errors);
    char buffers[3][16];
    pid_t child;
    int result = posix_spawn(&child, self, NULL, NULL, child_arguments(buffers, n, m, action),
                             environ);
    if (result != 0)
        die("posix_spawn");
    if (wait_for(child, "spawned"))
        errors++;
    action = read_status();
    run_frames("parent", n + m, k, action, &errors);
    close_device();
    return errors ? 3 : 0;
}

static int mode_vfork(int n, int m, int k)
{
    int errors = 0;
    open_device();
    int action = run_frames("parent", 0, n, 0, &errors);
    char buffers[3][16];
    char **argv = child_arguments(buffers, n, m, action);
    pid_t child = vfork();
    if (child < 0)
        die("vfork");
    if (child == 0) {
        execv("/nonexistent/process_life", argv);
        _exit(127);
    }
    wait_for(child, "vfork child with a missing program");
    child = vfork();
    if (child < 0)
        die("vfork");
    if (child == 0) {
        execv(self, argv);
        _exit(127);
    }
    if (wait_for(child, "vfork child"))
        errors++;
    action = read_status();
    run_frames("parent", n + m, k, action, &errors);
    close_device();
    return errors ? 3 : 0;
}

struct worker {
    pthread_t thread;
    char name[16];
    int reads;
};

static void *work(void *argument)
{
    struct worker *worker = argument;
    pthread_setname_np(pthread_self(), worker->name);
    for (int i = 0; i < 2; i++)
        worker->reads += read_status() >= 0;
    return NULL;
}

static int mode_threads(int n, int threads, int rounds)
{
    int errors = 0, action = 0, reads = 0;
    if (threads > 16)
        threads = 16;
    open_device();
    for (int i = 0; i < n; i++) {
        action = run_frames("main", i, 1, action, &errors);
        if (i >= rounds)
            continue;
        struct worker workers[16];
        memset(workers, 0, sizeof workers);
        for (int t = 0; t < threads; t++) {
            snprintf(workers[t].name, sizeof workers[t].name, "worker %d.%d", i % 100, t % 100);
            if (pthread_create(&workers[t].thread, NULL, work, &workers[t]) != 0)
                die("pthread_create");
        }
        for (int t = 0; t < threads; t++) {
            pthread_join(workers[t].thread, NULL);
            reads += workers[t].reads;
        }
    }
    printf("threads: %d rounds of %d, %d status reads\n", rounds < n ? rounds : n, threads, reads);
    close_device();
    return errors ? 3 : 0;
}

static void *exit_from_thread(void *unused)
{
    (void)unused;
    exit(6);
}

static int mode_end(const char *how, int n)
{
    int errors = 0;
    open_device();
    start_watcher();
    run_frames("before the end", 0, n, 0, &errors);
    printf("ending: %s\n", how);
    fflush(stdout);
    if (!strcmp(how, "return"))
        return errors ? 3 : 0;
    if (!strcmp(how, "exit"))
        exit(5);
    if (!strcmp(how, "thread-exit")) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, exit_from_thread, NULL) != 0)
            die("pthread_create");
        pthread_join(thread, NULL);
    }
    if (!strcmp(how, "_exit"))
        _exit(7);
    if (!strcmp(how, "_Exit"))
        _Exit(8);
    if (!strcmp(how, "abort"))
        abort();
    if (!strcmp(how, "segv"))
        raise(SIGSEGV);
    if (!strcmp(how, "kill"))
        raise(SIGKILL);
    printf("process_life: unknown way to end: %s\n", how);
    return 2;
}

#ifdef LIFE_DLOPEN
/* The address range the dlopen'ed libusb occupies. */
struct extent {
    uintptr_t base, end;
};

static int find_extent(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct extent *extent = data;
    if (info->dlpi_addr != extent->base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        uintptr_t end = info->dlpi_addr + header->p_vaddr + header->p_memsz;
        if (header->p_type == PT_LOAD && end > extent->end)
            extent->end = end;
    }
    return 1;
}

static struct extent library_extent(void)
{
    struct link_map *map = NULL;
    struct extent extent = { 0, 0 };
    if (dlinfo(usb_library, RTLD_DI_LINKMAP, &map) != 0 || !map)
        die("dlinfo");
    extent.base = map->l_addr;
    dl_iterate_phdr(find_extent, &extent);
    return extent;
}

static int mode_dlreopen(int n, bool moved)
{
    int errors = 0;
    load_usb();
    open_device();
    int action = run_frames("first load", 0, n, 0, &errors);
    close_device();
    struct extent before = library_extent();
    dlclose(usb_library);
    void *still = dlopen(LIBUSB_SONAME, RTLD_NOW | RTLD_NOLOAD);
    printf("dlclose unloaded libusb: %s\n", still ? "no" : "yes");
    if (still)
        dlclose(still);
    if (moved) {
        long page = sysconf(_SC_PAGESIZE);
        uintptr_t start = before.base & ~(uintptr_t)(page - 1);
        void *taken = mmap((void *)start, before.end - start, PROT_NONE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        printf("old address range taken: %s\n", taken == (void *)start ? "yes" : "no");
    }
    load_usb();
    if (moved)
        printf("reloaded elsewhere: %s\n", library_extent().base != before.base ? "yes" : "no");
    fflush(stdout);
    open_device();
    action = read_status();
    run_frames("second load", n, n, action, &errors);
    close_device();
    dlclose(usb_library);
    return errors ? 3 : 0;
}
#endif

static int number(const char *text)
{
    char *end;
    long value = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || value < 0 || value > 100000) {
        fprintf(stderr, "process_life: not a count: %s\n", text);
        exit(2);
    }
    return (int)value;
}

static int usage(void)
{
    fprintf(stderr, "usage: process_life frames START COUNT ACTION | fork N M K | "
                    "exec VARIANT N M | spawn N M K | vfork N M K | threads N T R | "
                    "end HOW N | dlreopen N [moved]\n");
    return 2;
}

int main(int argc, char **argv)
{
    static char path[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    if (length <= 0)
        die("readlink /proc/self/exe");
    path[length] = '\0';
    self = path;
    if (argc < 2)
        return usage();
    const char *mode = argv[1];
#ifdef LIFE_DLOPEN
    if (!strcmp(mode, "dlreopen") && (argc == 3 || argc == 4))
        return mode_dlreopen(number(argv[2]), argc == 4 && !strcmp(argv[3], "moved"));
    return usage();
#else
    load_usb();
    if (!strcmp(mode, "frames") && argc == 5)
        return mode_frames(number(argv[2]), number(argv[3]), number(argv[4]));
    if (!strcmp(mode, "fork") && argc == 5)
        return mode_fork(number(argv[2]), number(argv[3]), number(argv[4]));
    if (!strcmp(mode, "exec") && argc == 5)
        return mode_exec(argv[2], number(argv[3]), number(argv[4]));
    if (!strcmp(mode, "spawn") && argc == 5)
        return mode_spawn(number(argv[2]), number(argv[3]), number(argv[4]));
    if (!strcmp(mode, "vfork") && argc == 5)
        return mode_vfork(number(argv[2]), number(argv[3]), number(argv[4]));
    if (!strcmp(mode, "threads") && argc == 5)
        return mode_threads(number(argv[2]), number(argv[3]), number(argv[4]));
    if (!strcmp(mode, "end") && argc == 4)
        return mode_end(argv[2], number(argv[3]));
    return usage();
#endif
}
