/* Whether a run wrote a trace (run_trace.h): the files a template can name,
 * found with glob(3) and told apart by what stat says of them. */
#define _GNU_SOURCE
#include "commands/run_trace.h"

#include <glob.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct seen_file {
    char *path;
    dev_t device;
    ino_t inode;
    off_t size;
    struct timespec modified, changed;
};

struct nvs_trace_files {
    struct seen_file *files;
    size_t count;
};

/* TEMPLATE as a glob(3) pattern: its own characters escaped, %p any process
 * id, %% a '%'; with SUFFIXED, ".*" before the extension of the last
 * component, where the library puts ".PID" (NAME.EXT -> NAME.PID.EXT, or
 * NAME.PID without one). NULL when out of memory. */
static char *pattern_of(const char *template, bool suffixed)
{
    size_t used = 0, extension = SIZE_MAX;
    char *pattern = malloc(2 * strlen(template) + 3);
    if (!pattern)
        return NULL;
    for (const char *c = template; *c; c++) {
        if (c[0] == '%' && (c[1] == 'p' || c[1] == '%')) {
            pattern[used++] = c[1] == 'p' ? '*' : '%';
            c++;
            continue;
        }
        if (*c == '/')
            extension = SIZE_MAX;
        else if (*c == '.')
            extension = used;
        if (strchr("\\*?[", *c))
            pattern[used++] = '\\';
        pattern[used++] = *c;
    }
    pattern[used] = '\0';
    if (suffixed) {
        size_t at = extension == SIZE_MAX ? used : extension;
        memmove(pattern + at + 2, pattern + at, used - at + 1);
        memcpy(pattern + at, ".*", 2);
    }
    return pattern;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const struct seen_file *)a)->path, ((const struct seen_file *)b)->path);
}

void nvs_trace_files_free(struct nvs_trace_files *files)
{
    if (!files)
        return;
    for (size_t i = 0; i < files->count; i++)
        free(files->files[i].path);
    free(files->files);
    free(files);
}

/* The regular files among MATCHES, added to FILES; false when out of memory.
 * The library never writes through a symbolic link, so lstat. */
static bool add_regular(struct nvs_trace_files *files, const glob_t *matches)
{
    struct seen_file *grown = realloc(files->files,
                                      (files->count + matches->gl_pathc + 1) * sizeof *grown);
    if (!grown)
        return false;
    files->files = grown;
    for (size_t i = 0; i < matches->gl_pathc; i++) {
        struct stat st;
        if (lstat(matches->gl_pathv[i], &st) || !S_ISREG(st.st_mode))
            continue;
        char *path = strdup(matches->gl_pathv[i]);
        if (!path)
            return false;
        files->files[files->count++] = (struct seen_file){ path,       st.st_dev,  st.st_ino,
                                                           st.st_size, st.st_mtim, st.st_ctim };
    }
    return true;
}

struct nvs_trace_files *nvs_trace_files_look(const char *template)
{
    struct nvs_trace_files *files = calloc(1, sizeof *files);
    if (!files)
        return NULL;
    for (int suffixed = 0; suffixed < 2; suffixed++) {
        char *pattern = pattern_of(template, suffixed);
        glob_t matches = { 0 };
        int found = pattern ? glob(pattern, GLOB_PERIOD, NULL, &matches) : GLOB_NOSPACE;
        bool added = found == GLOB_NOMATCH || (found == 0 && add_regular(files, &matches));
        if (found == 0)
            globfree(&matches);
        free(pattern);
        if (!added) {
            nvs_trace_files_free(files);
            return NULL;
        }
    }
    /* A name can match both patterns (rig.1.json for rig.json and rig.%p.json). */
    if (files->count)
        qsort(files->files, files->count, sizeof *files->files, by_path);
    size_t kept = 0;
    for (size_t i = 0; i < files->count; i++) {
        if (kept && !strcmp(files->files[kept - 1].path, files->files[i].path))
            free(files->files[i].path);
        else
            files->files[kept++] = files->files[i];
    }
    files->count = kept;
    return files;
}

static bool same_time(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

bool nvs_trace_files_written(const struct nvs_trace_files *before, const char *template)
{
    struct nvs_trace_files *after = nvs_trace_files_look(template);
    if (!after)
        return true; /* cannot tell: nothing is said */
    bool written = false;
    for (size_t i = 0; i < after->count && !written; i++) {
        const struct seen_file *now = &after->files[i];
        const struct seen_file *then = before->count
            ? bsearch(now, before->files, before->count, sizeof *before->files, by_path)
            : NULL;
        written = !then || then->device != now->device || then->inode != now->inode ||
            then->size != now->size || !same_time(then->modified, now->modified) ||
            !same_time(then->changed, now->changed);
    }
    nvs_trace_files_free(after);
    return written;
}
