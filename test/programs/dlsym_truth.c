/* Asks dlsym for hooked names through every global form (RTLD_DEFAULT,
 * RTLD_NEXT, dlopen(NULL)) and prints, per name and form, whether it was
 * found, whether dlerror said why not, and which object the answer lies in:
 * the shim must answer as without it (test_dlsym.py).
 *   dlsym_truth [LIBRARY...]   LIBRARY dlopen'ed RTLD_GLOBAL first */
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

int main(int argc, char **argv)
{
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
