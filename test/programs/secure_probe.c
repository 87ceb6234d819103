/* Loads the library given as argv[1] with dlopen (in secure execution the
 * loader ignores LD_PRELOAD paths) and makes NVTX ranges, as a set-user-ID
 * program that uses NVTX would; then says what it is. */
#include <dlfcn.h>
#include <stdio.h>
#include <sys/auxv.h>

#include <nvtx3/nvToolsExt.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: secure_probe LIBRARY\n");
        return 2;
    }
    if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
        fprintf(stderr, "secure_probe: %s\n", dlerror());
        return 1;
    }
    for (int i = 0; i < 3; i++) {
        nvtxRangePushA("secure step");
        nvtxRangePop();
    }
    printf("secure_probe done, secure=%lu\n", getauxval(AT_SECURE));
    return 0;
}
