/* Counts malloc/calloc/realloc calls made from inside libnvtxshim.so, by the
 * caller's return address, and prints the count at exit to the file named by
 * NVS_MALLOC_COUNT. Preloaded before the shim, so its calls land here first. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static atomic_long from_shim;

static void count(void *caller)
{
    Dl_info info;
    if (dladdr(caller, &info) && info.dli_fname && strstr(info.dli_fname, "libnvtxshim"))
        atomic_fetch_add(&from_shim, 1);
}

void *malloc(size_t size) { count(__builtin_return_address(0)); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { count(__builtin_return_address(0)); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { count(__builtin_return_address(0)); return __libc_realloc(p, size); }

__attribute__((destructor)) static void report(void)
{
    const char *path = getenv("NVS_MALLOC_COUNT");
    FILE *out = path ? fopen(path, "w") : NULL;
    if (out) {
        fprintf(out, "%ld\n", atomic_load(&from_shim));
        fclose(out);
    }
}
