/* Moves to another directory before its first NVTX event (test_settings.py): a
 * relative NVTXSHIM_TRACE names a file in the directory the process started in.
 *   chdir_record DIRECTORY */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 2 || chdir(argv[1]) != 0)
        return 2;
    nvtxRangePushA("after chdir");
    nvtxRangePop();
    puts("recorded");
    return 0;
}
