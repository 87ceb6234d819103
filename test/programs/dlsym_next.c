/* Prints whether the preloaded probe's dlsym(RTLD_NEXT, "getpid") found libc's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

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
    return found == real ? 0 : 1;
}
