/* Prints whether the preloaded probe's dlsym(RTLD_NEXT, "getpid") and
 * dlsym(RTLD_NEXT, "close") found libc's, then closes a descriptor through the
 * probe's close. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
    void *(*probe)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "probe_next_getpid");
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    void *real = libc ? dlsym(libc, "getpid") : NULL;
    if (!probe || !real) {
        printf("setup failed\n");
        return 2;
    }
    void *found = probe();
    if (found == real)
        printf("RTLD_NEXT found libc getpid\n");
    else
        printf("RTLD_NEXT found %p, not libc's %p\n", found, real);
    void *(*probe_close)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "probe_next_close");
    void *real_close = dlsym(libc, "close");
    void *found_close = probe_close ? probe_close() : NULL;
    if (found_close == real_close)
        printf("RTLD_NEXT found libc close\n");
    else
        printf("RTLD_NEXT found %p, not libc's close %p\n", found_close, real_close);
    fflush(stdout);
    int closed = close(dup(1));
    printf("close %s\n", closed == 0 ? "returned" : "failed");
    return found == real && found_close == real_close && closed == 0 ? 0 : 1;
}
