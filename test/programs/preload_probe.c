/* A second interposer, as umockdev or nsys preload one: it wraps getpid and
 * close and finds the real ones with dlsym(RTLD_NEXT). Whatever our dlsym
 * does, this must find libc's, wherever the two sit in LD_PRELOAD: close is a
 * name the library hooks too, and an answer given from the library's place
 * in the chain (this close itself, when this library comes after it) made
 * every close a loop that never returned. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/types.h>
#include <unistd.h>

void *probe_next_getpid(void);
void *probe_next_close(void);

/* Not a tail call: glibc resolves RTLD_NEXT from the return address, and a
 * tail call here would make the caller's object the reference point. */
__attribute__((optimize("no-optimize-sibling-calls")))
void *probe_next_getpid(void)
{
    void *volatile found = dlsym(RTLD_NEXT, "getpid");
    return found;
}

__attribute__((optimize("no-optimize-sibling-calls")))
void *probe_next_close(void)
{
    void *volatile found = dlsym(RTLD_NEXT, "close");
    return found;
}

int close(int fd)
{
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "close");
    return real ? real(fd) : -1;
}

pid_t getpid(void)
{
    pid_t (*real)(void) = (pid_t (*)(void))dlsym(RTLD_NEXT, "getpid");
    return real ? real() : -1;
}
