/* Feeds files to the libFuzzer target without libFuzzer: each FILE argument, or
 * every file in each DIRECTORY argument, once. Built with gcc and ASan+UBSan for
 * make test (test/test_bad_input.py), so the corpus is checked on every run. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *file = fopen(path, "rb");
    if (!file) {
        perror(path);
        return -1;
    }
    size_t capacity = 4096, size = 0;
    uint8_t *data = malloc(capacity);
    size_t got;
    while (data && (got = fread(data + size, 1, capacity - size, file)) > 0) {
        size += got;
        if (size == capacity) {
            uint8_t *bigger = realloc(data, capacity * 2);
            if (!bigger) {
                free(data);
                data = NULL;
                break;
            }
            data = bigger;
            capacity *= 2;
        }
    }
    fclose(file);
    if (!data) {
        fprintf(stderr, "%s: out of memory\n", path);
        return -1;
    }
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0, failures = 0;
    for (int i = 1; i < argc; i++) {
        struct stat status;
        if (stat(argv[i], &status) != 0) {
            perror(argv[i]);
            failures++;
            continue;
        }
        if (!S_ISDIR(status.st_mode)) {
            failures += replay_file(argv[i]) != 0;
            files++;
            continue;
        }
        DIR *directory = opendir(argv[i]);
        if (!directory) {
            perror(argv[i]);
            failures++;
            continue;
        }
        struct dirent *entry;
        while ((entry = readdir(directory))) {
            if (entry->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], entry->d_name);
            failures += replay_file(path) != 0;
            files++;
        }
        closedir(directory);
    }
    printf("replayed %d inputs, %d unreadable\n", files, failures);
    return failures ? 1 : 0;
}
