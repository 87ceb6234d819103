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

#define DESCRIPTOR_FLOOR 200 /* the trace's descriptor: above the numbers programs reuse */
#define SUFFIX_TRIES 100

bool nvs_file_is_dev_null(const struct stat *status)
{
    return S_ISCHR(status->st_mode) && status->st_rdev == makedev(1, 3);
}

static const char *kind_of(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
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
        if (!out[0]) /* no room for the suffix: the path as it was */
            memcpy(out, expanded, used + 1);
    }
}

static enum nvs_candidate refuse_kind(const char *path, mode_t mode)
{
    SAY("NVTXSHIM_TRACE=", path, ": not a regular file (", kind_of(mode),
        "); no trace is recorded");
    return NVS_CANDIDATE_REFUSED;
}

static enum nvs_candidate refuse(const char *what, const char *path, int error)
{
    SAY("NVTXSHIM_TRACE: cannot ", what, " ", path, ": ",
        error == ELOOP ? "it is a symbolic link" : nvs_log_error_text(error),
        "; no trace is recorded");
    return NVS_CANDIDATE_REFUSED;
}

/* The kernel's own file systems, whose regular files are the kernel's
 * settings and switches (a sysfs attribute, /proc/self/comm, an EFI
 * variable): a write there is an act, not a trace. Their name in NAME, or
 * NULL; the errno where the kernel does not say which file system it is. */
static int kernel_file_system(int fd, const char **name)
{
    static const struct {
        unsigned long magic;
        const char *name;
    } kinds[] = {
        { PROC_SUPER_MAGIC, "proc" },
        { SYSFS_MAGIC, "sysfs" },
        { DEBUGFS_MAGIC, "debugfs" },
        { TRACEFS_MAGIC, "tracefs" },
        { CGROUP_SUPER_MAGIC, "cgroup" },
        { CGROUP2_SUPER_MAGIC, "cgroup2" },
        { SECURITYFS_MAGIC, "securityfs" },
        { SELINUX_MAGIC, "selinuxfs" },
        { SMACK_MAGIC, "smackfs" },
        { EFIVARFS_MAGIC, "efivarfs" },
        { BPF_FS_MAGIC, "bpf" },
        { PSTOREFS_MAGIC, "pstore" },
        { 0x62656570, "configfs" },
        { 0x65735543, "fusectl" }, /* not in linux/magic.h */
    };
    struct statfs about;
    *name = NULL;
    if (NVS_RETRY_EINTR(fstatfs(fd, &about)) != 0)
        return errno;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if ((unsigned long)about.f_type == kinds[i].magic)
            *name = kinds[i].name;
    return 0;
}

/* PATH, which this process made as FD (O_EXCL) and does not use, is removed:
 * while the name still leads to FD's file, and, where FD holds no lock, only
 * while that file is empty (one that another process opened since, locked
 * and wrote is that process's). Where the kernel does not say, the file was
 * made a moment ago and is removed. */
static void remove_made(const char *path, int fd, bool locked)
{
    struct stat mine, named;
    bool known = NVS_RETRY_EINTR(fstat(fd, &mine)) == 0 &&
        NVS_RETRY_EINTR(lstat(path, &named)) == 0;
    if (known &&
        !(mine.st_dev == named.st_dev && mine.st_ino == named.st_ino &&
          (locked || mine.st_size == 0)))
        return;
    if (NVS_RETRY_EINTR(nvs_sys_unlink(path)) != 0)
        SAY("NVTXSHIM_TRACE: ", path, ", made by this process and not used, could not be removed (",
            nvs_log_error_text(errno), ")");
}

void nvs_file_give_up(struct nvs_trace_candidate *candidate, bool locked)
{
    if (candidate->fd < 0)
        return;
    if (candidate->made)
        remove_made(candidate->name, candidate->fd, locked);
    nvs_sys_close(candidate->fd);
    candidate->fd = -1;
}

/* Where a candidate that this process made cannot be locked. */
enum { CANDIDATE_MADE_IN_USE = NVS_CANDIDATE_REFUSED + 1, CANDIDATE_LOCKS_REFUSED };

/* Opens OUT's name for writing without disturbing anything that is not ours
 * to write: what is there and is not a regular file is never opened (opening
 * a serial device can reset the board behind it), a regular file of the
 * kernel's own file systems is closed unwritten, and a regular file is
 * locked before it is truncated. A file this process makes is made with
 * O_EXCL, so that it is known to be its own, and removed where it is not
 * used. OURS_BY_NAME: the name holds this process's id, so no other process
 * wants it. CANDIDATE_MADE_IN_USE: made here and locked by another process
 * that opened it since, or the kernel refuses locks; OUT stays open. */
static int open_candidate(bool ours_by_name, struct nvs_trace_candidate *out)
{
    const char *path = out->name;
    struct stat *status = &out->status;
    const int flags = O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
    out->made = false;
    out->fd = -1;
    if (NVS_RETRY_EINTR(lstat(path, status)) == 0) {
        if (!S_ISREG(status->st_mode) && !S_ISLNK(status->st_mode) && !nvs_file_is_dev_null(status))
            return refuse_kind(path, status->st_mode);
    } else if (errno != ENOENT) {
        return refuse("write", path, errno); /* what is there is not known: never opened */
    } else {
        out->fd = NVS_RETRY_EINTR(nvs_sys_open(path, flags | O_CREAT | O_EXCL, 0666));
        out->made = out->fd >= 0;
        if (out->fd < 0 && errno != EEXIST)
            return refuse("write", path, errno);
    }
    if (out->fd < 0) /* there already, or made by another process since */
        out->fd = NVS_RETRY_EINTR(nvs_sys_open(path, flags | O_CREAT, 0666));
    if (out->fd < 0)
        return refuse("write", path, errno);
    if (NVS_RETRY_EINTR(fstat(out->fd, status)) != 0) {
        int error = errno;
        nvs_file_give_up(out, false);
        return refuse("examine", path, error);
    }
    if (!(S_ISREG(status->st_mode) || nvs_file_is_dev_null(status))) {
        mode_t mode = status->st_mode;
        nvs_file_give_up(out, false);
        return refuse_kind(path, mode);
    }
    if (!S_ISREG(status->st_mode))
        return NVS_CANDIDATE_OPEN; /* /dev/null */
    const char *kernel;
    int error = kernel_file_system(out->fd, &kernel);
    if (error || kernel) {
        nvs_file_give_up(out, false);
        if (error)
            return refuse("examine the file system of", path, error);
        SAY("NVTXSHIM_TRACE=", path, ": a file of the kernel's (", kernel,
            "), not for a trace; no trace is recorded");
        return NVS_CANDIDATE_REFUSED;
    }
    int locked = NVS_RETRY_EINTR(flock(out->fd, LOCK_EX | LOCK_NB));
    /* Made here a moment ago: held by a process that opened it since, or the
     * kernel answered EWOULDBLOCK once (asked again) or always. */
    if (locked != 0 && errno == EWOULDBLOCK && out->made)
        locked = NVS_RETRY_EINTR(flock(out->fd, LOCK_EX | LOCK_NB));
    if (locked == 0)
        return NVS_CANDIDATE_OPEN;
    error = errno;
    if (error == EWOULDBLOCK && out->made && !ours_by_name)
        return CANDIDATE_MADE_IN_USE;
    if (error == EWOULDBLOCK && !out->made) {
        nvs_sys_close(out->fd);
        out->fd = -1;
        return NVS_CANDIDATE_IN_USE;
    }
    nvs_file_give_up(out, false);
    if (error == EWOULDBLOCK) {
        /* A name of this process's own, made here and still not lockable: the
         * kernel refuses every lock, and no other name will do better. */
        SAY("NVTXSHIM_TRACE: cannot lock ", path, ", a file this process had just made (",
            nvs_log_error_text(error), "); no trace is recorded");
        return CANDIDATE_LOCKS_REFUSED;
    }
    return refuse("lock", path, error);
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
 * passing over SKIP, that opens (NVS_CANDIDATE_OPEN: OUT set);
 * NVS_CANDIDATE_IN_USE when all are in use. WANTED made here and locked by
 * another process at once is that process's; made here where the kernel
 * refuses every lock, it is removed. */
enum nvs_candidate nvs_file_open_first_free(const char *wanted, int first, const char *skip,
                                            pid_t pid, struct nvs_trace_candidate *out)
{
    char suffix[48];
    int result = NVS_CANDIDATE_IN_USE, made_wanted = -1;
    for (int attempt = first; attempt < SUFFIX_TRIES && result == NVS_CANDIDATE_IN_USE; attempt++) {
        if (attempt == 0) {
            memcpy(out->name, wanted, strlen(wanted) + 1);
        } else {
            nvs_log_number(suffix, (unsigned long long)pid);
            if (attempt > 1) {
                size_t length = strlen(suffix);
                suffix[length] = '.';
                nvs_log_number(suffix + length + 1, (unsigned long long)(attempt - 1));
            }
            with_suffix(out->name, NVS_PATH_MAX, wanted, suffix);
            if (!out->name[0])
                break;
        }
        if (skip && strcmp(out->name, skip) == 0)
            continue;
        result = open_candidate(attempt > 0, out);
        if (result == CANDIDATE_MADE_IN_USE) {
            made_wanted = out->fd;
            result = NVS_CANDIDATE_IN_USE;
        }
    }
    if (made_wanted >= 0) {
        if (result == CANDIDATE_LOCKS_REFUSED)
            remove_made(wanted, made_wanted, false);
        nvs_sys_close(made_wanted);
    }
    if (result == CANDIDATE_LOCKS_REFUSED)
        result = NVS_CANDIDATE_REFUSED;
    return (enum nvs_candidate)result;
}
