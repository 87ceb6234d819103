/* Finding and opening the trace file (trace_file.h): its name from the
 * template, each candidate refused or opened and locked, the first one free,
 * the descriptor moved up. Async-signal-safe: the writer opens the file at
 * the first event, which a signal handler may make. */
#define _GNU_SOURCE
#include "trace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/file.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../config.h"
#include "../log.h"
#include "../sys.h"

#define DESCRIPTOR_FLOOR 200        /* the trace's descriptor: above the numbers programs reuse */
#define SUFFIX_TRIES 100

bool nvs_file_is_dev_null(const struct stat *status)
{
    return S_ISCHR(status->st_mode) && status->st_rdev == makedev(1, 3);
}

static const char *kind_of(mode_t mode)
{
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    return "not a regular file";
}

/* PATH with SUFFIX before its extension: NAME.EXT -> NAME.SUFFIX.EXT. */
static void with_suffix(char *out, size_t size, const char *path, const char *suffix)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    size_t length = strlen(path);
    size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - path) : length;
    if (length + strlen(suffix) + 2 >= size) {
        out[0] = '\0';
        return;
    }
    memcpy(out, path, stem);
    out[stem] = '.';
    memcpy(out + stem + 1, suffix, strlen(suffix));
    memcpy(out + stem + 1 + strlen(suffix), path + stem, length - stem + 1);
}

/* %p -> pid, %% -> %; a forked child without %p writes NAME.PID.EXT. */
void nvs_file_expand_path(char *out, size_t size, const char *template, pid_t pid, bool child)
{
    size_t used = 0;
    bool had_pid = false;
    char number[24];
    for (const char *c = template; *c && used + 24 < size; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            nvs_log_number(number, (unsigned long long)pid);
            memcpy(out + used, number, strlen(number));
            used += strlen(number);
            had_pid = true;
            c++;
        } else if (c[0] == '%' && c[1] == '%') {
            out[used++] = '%';
            c++;
        } else {
            out[used++] = *c;
        }
    }
    out[used] = '\0';
    if (child && !had_pid && used < NVS_PATH_MAX) {
        char expanded[NVS_PATH_MAX];
        memcpy(expanded, out, used + 1);
        with_suffix(out, size, expanded, nvs_log_number(number, (unsigned long long)pid));
        if (!out[0])            /* no room for the suffix: the path as it was */
            memcpy(out, expanded, used + 1);
    }
}

static enum nvs_candidate refuse_kind(const char *path, mode_t mode)
{
    SAY("NVTXSHIM_TRACE=", path, ": not a regular file (", kind_of(mode), "); no trace is recorded");
    return NVS_CANDIDATE_REFUSED;
}

/* The kernel's own file systems, whose regular files are the kernel's
 * settings and switches (a sysfs attribute, /proc/self/comm, an EFI
 * variable): a write there is an act, not a trace. Their name, or NULL. */
static const char *kernel_file_system(int fd)
{
    static const struct {
        unsigned long magic;
        const char *name;
    } kinds[] = {
        { PROC_SUPER_MAGIC, "proc" }, { SYSFS_MAGIC, "sysfs" }, { DEBUGFS_MAGIC, "debugfs" },
        { TRACEFS_MAGIC, "tracefs" }, { CGROUP_SUPER_MAGIC, "cgroup" },
        { CGROUP2_SUPER_MAGIC, "cgroup2" }, { SECURITYFS_MAGIC, "securityfs" },
        { SELINUX_MAGIC, "selinuxfs" }, { SMACK_MAGIC, "smackfs" }, { EFIVARFS_MAGIC, "efivarfs" },
        { BPF_FS_MAGIC, "bpf" }, { PSTOREFS_MAGIC, "pstore" },
        { 0x62656570, "configfs" }, { 0x65735543, "fusectl" },   /* not in linux/magic.h */
    };
    struct statfs about;
    if (fstatfs(fd, &about) != 0)
        return NULL;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if ((unsigned long)about.f_type == kinds[i].magic)
            return kinds[i].name;
    return NULL;
}

/* Opens PATH for writing without disturbing anything that is not ours to
 * write: what is there and is not a regular file is never opened (opening a
 * serial device can reset the board behind it), a regular file of the
 * kernel's own file systems is closed unwritten, and a regular file is locked
 * before it is truncated. */
static enum nvs_candidate open_candidate(const char *path, int *fd_out, struct stat *status)
{
    if (lstat(path, status) == 0 && !S_ISREG(status->st_mode) && !S_ISLNK(status->st_mode) &&
        !nvs_file_is_dev_null(status)) {
        return refuse_kind(path, status->st_mode);
    }
    int fd = nvs_sys_open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0666);
    if (fd < 0) {
        SAY("NVTXSHIM_TRACE: cannot write ", path, ": ",
            errno == ELOOP ? "it is a symbolic link" : nvs_log_error_text(errno), "; no trace is recorded");
        return NVS_CANDIDATE_REFUSED;
    }
    if (fstat(fd, status) != 0 || !(S_ISREG(status->st_mode) || nvs_file_is_dev_null(status))) {
        nvs_sys_close(fd);
        return refuse_kind(path, status->st_mode);
    }
    const char *kernel = S_ISREG(status->st_mode) ? kernel_file_system(fd) : NULL;
    if (kernel) {
        nvs_sys_close(fd);
        SAY("NVTXSHIM_TRACE=", path, ": a file of the kernel's (", kernel,
            "), not for a trace; no trace is recorded");
        return NVS_CANDIDATE_REFUSED;
    }
    if (S_ISREG(status->st_mode) && flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int error = errno;
        nvs_sys_close(fd);
        if (error == EWOULDBLOCK)
            return NVS_CANDIDATE_IN_USE;
        SAY("NVTXSHIM_TRACE: cannot lock ", path, ": ", nvs_log_error_text(error), "; no trace is recorded");
        return NVS_CANDIDATE_REFUSED;
    }
    *fd_out = fd;
    return NVS_CANDIDATE_OPEN;
}

int nvs_file_move_up(int fd)
{
    int high = nvs_sys_fcntl(fd, F_DUPFD_CLOEXEC, DESCRIPTOR_FLOOR);
    if (high < 0)
        return fd;
    nvs_sys_close(fd);
    return high;
}

/* The first of WANTED, NAME.PID.EXT, NAME.PID.1.EXT, ... from the FIRST on,
 * passing over SKIP, that opens (NVS_CANDIDATE_OPEN: its name in CANDIDATE, FD
 * and STATUS set); NVS_CANDIDATE_IN_USE when all are in use. */
enum nvs_candidate nvs_file_open_first_free(const char *wanted, int first, const char *skip, pid_t pid,
                                            char *candidate, int *fd, struct stat *status)
{
    char suffix[48];
    enum nvs_candidate result = NVS_CANDIDATE_IN_USE;
    for (int attempt = first; attempt < SUFFIX_TRIES && result == NVS_CANDIDATE_IN_USE; attempt++) {
        if (attempt == 0) {
            memcpy(candidate, wanted, strlen(wanted) + 1);
        } else {
            nvs_log_number(suffix, (unsigned long long)pid);
            if (attempt > 1) {
                size_t length = strlen(suffix);
                suffix[length] = '.';
                nvs_log_number(suffix + length + 1, (unsigned long long)(attempt - 1));
            }
            with_suffix(candidate, NVS_PATH_MAX, wanted, suffix);
            if (!candidate[0])
                break;
        }
        if (skip && strcmp(candidate, skip) == 0)
            continue;
        result = open_candidate(candidate, fd, status);
    }
    return result;
}
