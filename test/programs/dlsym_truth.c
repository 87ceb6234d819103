/* Asks dlsym for hooked names through every global form (RTLD_DEFAULT,
 * RTLD_NEXT, dlopen(NULL)) and prints, per name and form, whether it was
 * found, whether dlerror said why not, and which object the answer lies in:
 * the shim must answer as without it (test_dlsym.py).
 *   dlsym_truth [LIBRARY...]   LIBRARY dlopen'ed RTLD_GLOBAL first
 *   dlsym_truth --libc         execve, which libc has under a symbol version,
 *                              through each form and through dlvsym with that
 *                              version (the hooked names above have none, so
 *                              their dlvsym lookups find nothing either way) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static const char *const names[] = {
    "libusb_bulk_transfer", "libusb_submit_transfer", "eglSwapBuffers", "glXSwapBuffers",
    "XFlush", "xcb_flush", "cuMemcpyHtoD_v2", "cudaMemcpy", "cuGetProcAddress",
};

static const char *object_of(void *symbol)
{
    Dl_info info;
    if (!dladdr(symbol, &info) || !info.dli_fname)
        return "?";
    const char *slash = strrchr(info.dli_fname, '/');
    return slash ? slash + 1 : info.dli_fname;
}

static void report(const char *name, const char *form, void *symbol)
{
    const char *error = dlerror();
    if (symbol)
        printf("%s %s: found in %s\n", name, form, object_of(symbol));
    else
        printf("%s %s: NULL, dlerror %s\n", name, form, error ? "set" : "empty");
}

/* libc's base symbol version, which its execve has. */
#if defined(__x86_64__)
#define LIBC_BASE_VERSION "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define LIBC_BASE_VERSION "GLIBC_2.17"
#elif defined(__i386__)
#define LIBC_BASE_VERSION "GLIBC_2.0"
#endif

static int ask_libc(void)
{
#ifdef LIBC_BASE_VERSION
    void *self = dlopen(NULL, RTLD_NOW);
    dlerror();
    report("execve", "RTLD_DEFAULT", dlsym(RTLD_DEFAULT, "execve"));
    report("execve", "RTLD_NEXT", dlsym(RTLD_NEXT, "execve"));
    report("execve", "dlopen(NULL)", dlsym(self, "execve"));
    report("execve", "dlvsym", dlvsym(RTLD_DEFAULT, "execve", LIBC_BASE_VERSION));
    report("execve", "dlvsym RTLD_NEXT", dlvsym(RTLD_NEXT, "execve", LIBC_BASE_VERSION));
    return 0;
#else
    printf("no libc base version known for this machine\n");
    return 3;
#endif
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--libc"))
        return ask_libc();
    for (int i = 1; i < argc; i++)
        if (!dlopen(argv[i], RTLD_NOW | RTLD_GLOBAL))
            printf("cannot load %s\n", argv[i]);
    void *self = dlopen(NULL, RTLD_NOW);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        dlerror();
        report(names[i], "RTLD_DEFAULT", dlsym(RTLD_DEFAULT, names[i]));
        report(names[i], "RTLD_NEXT", dlsym(RTLD_NEXT, names[i]));
        report(names[i], "dlopen(NULL)", dlsym(self, names[i]));
        report(names[i], "dlvsym", dlvsym(RTLD_DEFAULT, names[i], "LIBUSB_1.0"));
    }
    return 0;
}
