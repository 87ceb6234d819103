/* Cases where a wrapper could harm its host (test_harmless.py):
 *
 *   harmless handler _exit|write|close
 *       A thread loops in the dynamic loader (dlopen, dlsym, dlclose); after a
 *       random few milliseconds the main thread sends it SIGUSR1, whose handler
 *       makes the process's first call of FUNCTION, then _exit(3). A wrapper
 *       that looked its real function up then would wait for the loader's lock
 *       its own thread holds: the process would never end.
 *
 *   harmless bad-pointers PATH
 *       Opens PATH (a device the library follows), then hands poll, ppoll,
 *       select, pselect, readv and writev pointers the kernel refuses (EFAULT),
 *       and poll a count it refuses (EINVAL). Prints each result and errno.
 *
 *   harmless reused PATH FILE
 *       For each way a program gets a new descriptor (open of a regular file,
 *       pipe, socketpair, eventfd, a descriptor received with SCM_RIGHTS,
 *       freopen, fopen, accept), opens PATH (a followed device), writes one
 *       byte to it, closes it with a raw system call (so the library does not
 *       see it), gets the new descriptor (the same number), writes to it and
 *       closes it. Prints the numbers. Only the writes to PATH are the
 *       device's.
 *
 *   harmless stderr PATH
 *       Makes PATH (a followed device) its descriptor 2, writes a line of its
 *       own there, then opens PATH again, which with NVTXSHIM_LOG=debug makes
 *       the library write a line of its own there too: the library's, which
 *       is not the program's write and must not be drawn as one. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* ---- handler ---------------------------------------------------------------- */

static const char *function;

static void handler(int number)
{
    (void)number;
    if (!strcmp(function, "write"))
        write(-1, "x", 1);
    else if (!strcmp(function, "close"))
        close(-1);
    _exit(3);
}

static void *in_the_loader(void *unused)
{
    (void)unused;
    for (;;) {
        void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
        if (libc) {
            dlsym(libc, "printf");
            dlclose(libc);
        }
        dlsym(RTLD_NEXT, "puts");
    }
    return NULL;
}

static int handler_case(void)
{
    struct sigaction action = { .sa_handler = handler };
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR1, &action, NULL);
    pthread_t thread;
    if (pthread_create(&thread, NULL, in_the_loader, NULL))
        return 2;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    srand((unsigned)(now.tv_nsec ^ getpid()));
    struct timespec pause = { 0, (long)(rand() % 5000) * 1000 };
    nanosleep(&pause, NULL);
    pthread_kill(thread, SIGUSR1);
    pthread_join(thread, NULL);
    return 4;
}

/* ---- bad pointers --------------------------------------------------------------- */

static void report(const char *call, long result)
{
    printf("%s = %ld (%s)\n", call, result, result < 0 ? strerrorname_np(errno) : "-");
}

static int bad_pointers(const char *path)
{
    int fd = open(path, O_RDWR | O_NONBLOCK);
    if (fd < 0) {
        perror(path);
        return 2;
    }
    /* Through volatiles: the compiler would refuse the calls it can see are wrong. */
    static void *volatile bad_address = (void *)8;
    static volatile nfds_t too_many = INT_MAX;
    void *bad = bad_address;
    struct timespec zero = { 0, 0 };
    struct timeval zero_tv = { 0, 0 };
    struct pollfd good = { .fd = fd, .events = POLLIN };
    report("poll", poll(bad, 1, 0));
    report("poll INT_MAX", poll(&good, too_many, 0));
    report("ppoll", ppoll(bad, 1, &zero, NULL));
    report("ppoll INT_MAX", ppoll(&good, too_many, &zero, NULL));
    report("select", select(fd + 1, bad, NULL, NULL, &zero_tv));
    report("select write", select(fd + 1, NULL, bad, NULL, &zero_tv));
    report("pselect", pselect(fd + 1, bad, NULL, NULL, &zero, NULL));
    report("readv", readv(fd, bad, 1));
    report("writev", writev(fd, bad, 1));
    struct iovec vector = { bad, 16 };
    report("writev data", writev(fd, &vector, 1));
    report("poll ok", poll(&good, 1, 0));
    close(fd);
    return 0;
}

/* ---- descriptors reused ---------------------------------------------------------- */

/* The device at PATH, written once, then closed where the library cannot see. */
static int device_closed_behind(const char *path)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0 || write(fd, "d", 1) != 1) {
        perror(path);
        exit(2);
    }
    syscall(SYS_close, fd);
    return fd;
}

static void check(const char *how, int expected, int fd)
{
    printf("%s: device was %d, new descriptor %d\n", how, expected, fd);
    if (fd != expected) {
        fprintf(stderr, "%s: the new descriptor did not get the device's number\n", how);
        exit(2);
    }
    if (write(fd, "0123456789", 10) < 0 && errno != EBADF && errno != EINVAL) {
        fprintf(stderr, "%s: write: %s\n", how, strerror(errno));
        exit(2);
    }
}

static int reused(const char *path, const char *file)
{
    int fds[2], fd, number;

    number = device_closed_behind(path);
    check("open", number, fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600));
    close(fd);

    number = device_closed_behind(path);
    if (pipe(fds))
        return 2;
    check("pipe", number, fds[1] == number ? fds[1] : fds[0]);
    close(fds[0]);
    close(fds[1]);

    number = device_closed_behind(path);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds))
        return 2;
    check("socketpair", number, fds[0]);
    close(fds[0]);
    close(fds[1]);

    number = device_closed_behind(path);
    check("eventfd", number, fd = eventfd(0, 0));
    /* An eventfd takes only 8-byte writes: one more that counts. */
    uint64_t one = 1;
    if (write(fd, &one, sizeof one) != sizeof one)
        return 2;
    close(fd);

    /* SCM_RIGHTS: the pair first, so the received descriptor takes the device's number. */
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds))
        return 2;
    int passed = open(file, O_WRONLY | O_APPEND);
    char control[CMSG_SPACE(sizeof(int))] = { 0 };
    char byte = 'p';
    struct iovec vector = { &byte, 1 };
    struct msghdr message = { .msg_iov = &vector, .msg_iovlen = 1,
                              .msg_control = control, .msg_controllen = sizeof control };
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &passed, sizeof passed);
    if (sendmsg(fds[0], &message, 0) != 1)
        return 2;
    close(passed);
    number = device_closed_behind(path);
    memset(control, 0, sizeof control);
    message.msg_controllen = sizeof control;
    if (recvmsg(fds[1], &message, 0) != 1)
        return 2;
    header = CMSG_FIRSTHDR(&message);
    memcpy(&fd, CMSG_DATA(header), sizeof fd);
    check("SCM_RIGHTS", number, fd);
    close(fd);
    close(fds[0]);
    close(fds[1]);

    /* freopen closes the stream's descriptor inside libc, then opens at that number. */
    fd = open(path, O_WRONLY);
    if (fd < 0 || write(fd, "d", 1) != 1)
        return 2;
    FILE *stream = fdopen(fd, "w");
    if (!stream || !freopen(file, "w", stream))
        return 2;
    check("freopen", fd, fileno(stream));
    fclose(stream);

    number = device_closed_behind(path);
    stream = fopen(file, "a");
    check("fopen", number, stream ? fileno(stream) : -1);
    fclose(stream);

    /* accept: a listening socket first, then the device's number for the connection. */
    int listener = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    snprintf(address.sun_path, sizeof address.sun_path, "%s.sock", file);
    unlink(address.sun_path);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) || listen(listener, 1))
        return 2;
    int client = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(client, (struct sockaddr *)&address, sizeof address))
        return 2;
    number = device_closed_behind(path);
    check("accept", number, fd = accept(listener, NULL, NULL));
    close(fd);
    close(client);
    close(listener);
    unlink(address.sun_path);
    return 0;
}

static int stderr_case(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0 || dup2(fd, STDERR_FILENO) != STDERR_FILENO)
        return 2;
    close(fd);
    static const char line[] = "the program's line\n";
    if (write(STDERR_FILENO, line, sizeof line - 1) != sizeof line - 1)
        return 2;
    fd = open(path, O_WRONLY | O_APPEND);
    if (fd < 0)
        return 2;
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "handler")) {
        function = argv[2];
        return handler_case();
    }
    if (argc == 3 && !strcmp(argv[1], "bad-pointers"))
        return bad_pointers(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "stderr"))
        return stderr_case(argv[2]);
    if (argc == 4 && !strcmp(argv[1], "reused"))
        return reused(argv[2], argv[3]);
    fprintf(stderr, "usage: harmless handler _exit|write|close | bad-pointers PATH | "
                    "reused PATH FILE | stderr PATH\n");
    return 2;
}
