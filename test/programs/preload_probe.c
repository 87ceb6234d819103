/* A second interposer, as umockdev or nsys preload one: it wraps getpid and
 * finds the real one with dlsym(RTLD_NEXT). Whatever our dlsym does, this
 * must find libc's getpid, wherever the two sit in LD_PRELOAD. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/types.h>
#include <unistd.h>

void *probe_next_getpid(void);

/* Not a tail call: glibc resolves RTLD_NEXT from the return address, and a
 * tail call here would make the caller's object the reference point. */
__attribute__((optimize("no-optimize-sibling-calls")))
void *probe_next_getpid(void)
{
    void *volatile found = dlsym(RTLD_NEXT, "getpid");
    return found;
}

pid_t getpid(void)
{
    pid_t (*real)(void) = (pid_t (*)(void))dlsym(RTLD_NEXT, "getpid");
    return real ? real() : -1;
}
