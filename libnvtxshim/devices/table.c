/* The device files the program holds open (table.h): which descriptors
 * they are, and what kind of device each is. */
#define _GNU_SOURCE
#include "table.h"

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../hook.h"
#include "../log.h"
#include "../sys.h"

struct nvs_device nvs_devices[NVS_DEVICE_SLOTS];
_Atomic unsigned char nvs_fd_slots[NVS_FD_DIRECT];
_Atomic unsigned nvs_fd_far_count;
_Atomic unsigned nvs_device_fds;
_Atomic bool nvs_device_globs;

/* Descriptors at NVS_FD_DIRECT and above: fd + 1 (0: free) and the slot. */
#define FAR_FDS 64
static struct {
    _Atomic int fd_plus_one;
    _Atomic unsigned char slot;
} far_fds[FAR_FDS];

static _Atomic uint32_t next_uid;

/* A number for a new open, for its ranges' name keys: 22 bits, above the
 * 32 of a name's own number in hook.h's 54. */
static uint32_t new_uid(void)
{
    return (atomic_fetch_add(&next_uid, 1) + 1) & 0x3fffffu;
}

/* The process whose table this is. A vfork child shares our memory until it
 * execs: the descriptors it closes are its own copies, so it must leave the
 * table alone (a forked child has its own table, and the atfork handler
 * makes it the owner). */
static _Atomic pid_t owner;

static void owner_after_fork(void)
{
    atomic_store(&owner, nvs_sys_getpid());
}

static bool owns_table(void)
{
    return nvs_sys_is_process(atomic_load_explicit(&owner, memory_order_relaxed));
}

static void become_owner(void)
{
    static _Atomic bool registered;
    if (!atomic_exchange(&registered, true)) {
        atomic_store(&owner, nvs_sys_getpid());
        pthread_atfork(NULL, NULL, owner_after_fork);
    }
}
static _Atomic uint64_t losses[NVS_DEVICE_LOSS_KINDS];

void nvs_device_count_loss(enum nvs_device_loss loss)
{
    atomic_fetch_add_explicit(&losses[loss], 1, memory_order_relaxed);
}

unsigned nvs_fd_slot_far(int fd)
{
    for (int i = 0; i < FAR_FDS; i++)
        if (atomic_load_explicit(&far_fds[i].fd_plus_one, memory_order_acquire) == fd + 1)
            return atomic_load_explicit(&far_fds[i].slot, memory_order_relaxed);
    return 0;
}

/* ---- globs ------------------------------------------------------------------ */

/* One bracket expression at PATTERN (after its '['): whether C is in it; the
 * pattern after it in *REST. A '[' without its ']' is a plain character. */
static bool bracket_match(const char *pattern, char c, const char **rest, bool *valid)
{
    const char *p = pattern;
    bool negate = *p == '!' || *p == '^', found = false;
    if (negate)
        p++;
    for (bool first = true; *p && (first || *p != ']'); first = false) {
        char low = *p, high = low;
        if (p[1] == '-' && p[2] && p[2] != ']') {
            high = p[2];
            p += 3;
        } else {
            p++;
        }
        if (low <= c && c <= high)
            found = true;
    }
    *valid = *p == ']';
    *rest = *valid ? p + 1 : pattern;
    return found != negate;
}

bool nvs_glob_match(const char *pattern, const char *text)
{
    const char *star = NULL, *resume = NULL;
    while (*text) {
        const char *rest;
        bool valid;
        if (*pattern == '*') {
            star = ++pattern;
            resume = text;
            continue;
        }
        if (*pattern == '[' && *text != '/') {
            bool in = bracket_match(pattern + 1, *text, &rest, &valid);
            if (valid && in) {
                pattern = rest;
                text++;
                continue;
            }
            if (!valid && *text == '[') {
                pattern++;
                text++;
                continue;
            }
        } else if ((*pattern == '?' && *text != '/') || (*pattern && *pattern == *text)) {
            pattern++;
            text++;
            continue;
        }
        /* A '*' matches any run without a '/': take one more character into it. */
        if (star && *resume != '/') {
            pattern = star;
            text = ++resume;
            continue;
        }
        return false;
    }
    while (*pattern == '*')
        pattern++;
    return *pattern == '\0';
}

/* Whether PATH matches one of the comma-separated globs in LIST. */
static bool listed(const char *list, const char *path)
{
    char glob[NVS_PATH_MAX];
    for (const char *item = list; *item;) {
        const char *comma = strchr(item, ',');
        size_t length = comma ? (size_t)(comma - item) : strlen(item);
        if (length < sizeof glob) {
            memcpy(glob, item, length);
            glob[length] = '\0';
            if (nvs_glob_match(glob, path))
                return true;
        }
        if (!comma)
            break;
        item = comma + 1;
    }
    return false;
}

/* ---- what kind of device ---------------------------------------------------- */

/* Device files no rig is made of: not even looked at (no system call), unless
 * NVTXSHIM_DEVICES names them. */
static bool never_a_rig(const char *path)
{
    static const char *const exact[] = {
        "/dev/null", "/dev/zero",    "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
        "/dev/ptmx", "/dev/console", "/dev/kmsg", "/dev/log",    "/dev/kvm",     "/dev/fuse",
    };
    static const char *const prefixes[] = {
        "/dev/pts/", "/dev/shm/",    "/dev/fd/",        "/dev/std",  "/dev/dri/",  "/dev/nvidia",
        "/dev/snd/", "/dev/mqueue/", "/dev/hugepages/", "/dev/net/", "/dev/vhost",
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (!strcmp(path, exact[i]))
            return true;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(path, prefixes[i], strlen(prefixes[i])))
            return true;
    return false;
}

/* Terminals that are not a rig's: consoles, virtual terminals, pseudo-terminals. */
static bool terminal_major(unsigned major)
{
    return major == 4 || major == 5 || (major >= 136 && major <= 143);
}

/* The kinds, from init.c (nvs_devices_set_kinds): set at load, read on every open and close after. */
static const struct nvs_device_kind *const *kinds NVS_ONCE_DATA;

NVS_ONCE void nvs_devices_set_kinds(const struct nvs_device_kind *const *list)
{
    kinds = list;
}

/* The kind of the character device MAJOR:MINOR, by its number where the
 * number is fixed (Linux's devices.txt) and by its sysfs class otherwise
 * (hidraw's major is given out at boot); NULL for none. */
static const struct nvs_device_kind *kind_of(unsigned major, unsigned minor)
{
    for (const struct nvs_device_kind *const *kind = kinds; kind && *kind; kind++)
        for (size_t i = 0;
             i < sizeof(*kind)->majors / sizeof(*kind)->majors[0] && (*kind)->majors[i]; i++)
            if ((*kind)->majors[i] == major)
                return *kind;
    if (terminal_major(major) || major == 1 || major == 10)
        return NULL;
    char link[40], target[512];
    snprintf(link, sizeof link, "/sys/dev/char/%u:%u", major, minor);
    ssize_t length = readlink(link, target, sizeof target - 1);
    if (length <= 0)
        return NULL;
    target[length] = '\0';
    for (const struct nvs_device_kind *const *kind = kinds; kind && *kind; kind++)
        if ((*kind)->sysfs_class && strstr(target, (*kind)->sysfs_class) &&
            (!(*kind)->sysfs_also || strstr(target, (*kind)->sysfs_also)))
            return *kind;
    return NULL;
}

/* The kind of the device FD, opened at PATH: its fstat, or where that is not
 * a device of a rig, the path's stat (a device emulated in user space, such
 * as umockdev's, answers stat for it but gives a socket or a pty). */
static const struct nvs_device_kind *kind_of_file(int fd, const char *path)
{
    struct stat status;
    if (fstat(fd, &status) == 0 && S_ISCHR(status.st_mode) &&
        !terminal_major(major(status.st_rdev)))
        return kind_of(major(status.st_rdev), minor(status.st_rdev));
    if (path[0] != '/' || stat(path, &status) != 0 || !S_ISCHR(status.st_mode))
        return NULL;
    return kind_of(major(status.st_rdev), minor(status.st_rdev));
}

/* The kind a path NVTXSHIM_DEVICES names is, when no kind claims it. */
static const struct nvs_device_kind *listed_kind(void)
{
    for (const struct nvs_device_kind *const *kind = kinds; kind && *kind; kind++)
        if ((*kind)->listed)
            return *kind;
    return NULL;
}

/* ---- the table ---------------------------------------------------------------- */

static unsigned claim_slot(void)
{
    for (unsigned slot = 1; slot < NVS_DEVICE_SLOTS; slot++) {
        unsigned expected = 0;
        if (atomic_compare_exchange_strong(&nvs_devices[slot].refs, &expected, 1))
            return slot;
    }
    nvs_device_count_loss(NVS_DEVICE_LOSS_SLOTS);
    return 0;
}

static void release_slot(unsigned slot)
{
    struct nvs_device *device = &nvs_devices[slot];
    if (atomic_fetch_sub(&device->refs, 1) != 1)
        return;
    if (!device->watcher && device->kind->last_close)
        device->kind->last_close(slot);
}

/* ---- names and warnings ----------------------------------------------------------- */

struct nvs_name nvs_device_name(const struct nvs_device *device, enum nvs_hook_id id,
                                uint32_t parameter, const char *format, ...)
{
    uint64_t key = nvs_call_name_key(id, ((uint64_t)device->uid << 32) | parameter);
    struct nvs_name name = nvs_name_lookup(device->domain, key);
    if (name.registered)
        return name;
    char text[NVS_CALL_TEXT_MAX];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    return nvs_name_store(device->domain, key, text);
}

void nvs_device_warn(const struct nvs_device *device, const char *what, int error)
{
    char text[NVS_CALL_TEXT_MAX];
    const char *name = nvs_log_error_name(error);
    if (name)
        snprintf(text, sizeof text, "%s failed: %s", what, name);
    else
        snprintf(text, sizeof text, "%s failed: error %d", what, error);
    struct nvs_attributes mark = NVS_ATTRIBUTES(device->domain, device->kind->warning_category,
                                                NVS_COLOR_ERROR);
    nvs_attributes_name(&mark, (struct nvs_name){ NULL, text });
    nvs_mark(&mark);
}

/* FD now names SLOT (whose reference the caller holds). */
static void enter(int fd, unsigned slot)
{
    if ((unsigned)fd < NVS_FD_DIRECT) {
        unsigned old = atomic_exchange_explicit(&nvs_fd_slots[fd], (unsigned char)slot,
                                                memory_order_release);
        atomic_fetch_add_explicit(&nvs_device_fds, 1, memory_order_relaxed);
        if (old) { /* closed behind our back (a raw system call) */
            atomic_fetch_sub_explicit(&nvs_device_fds, 1, memory_order_relaxed);
            release_slot(old);
        }
        return;
    }
    for (int i = 0; i < FAR_FDS; i++) {
        int expected = 0;
        if (atomic_compare_exchange_strong(&far_fds[i].fd_plus_one, &expected, -1)) {
            atomic_store(&far_fds[i].slot, (unsigned char)slot);
            atomic_store_explicit(&far_fds[i].fd_plus_one, fd + 1, memory_order_release);
            atomic_fetch_add(&nvs_fd_far_count, 1);
            atomic_fetch_add_explicit(&nvs_device_fds, 1, memory_order_relaxed);
            return;
        }
    }
    nvs_device_count_loss(NVS_DEVICE_LOSS_SLOTS);
    release_slot(slot);
}

/* Takes FD out of the table; its slot, 0 when it had none. */
static unsigned take_out(int fd)
{
    unsigned slot = 0;
    if ((unsigned)fd < NVS_FD_DIRECT) {
        slot = atomic_exchange_explicit(&nvs_fd_slots[fd], 0, memory_order_relaxed);
    } else if (fd >= 0 && atomic_load(&nvs_fd_far_count)) {
        for (int i = 0; i < FAR_FDS; i++) {
            int expected = fd + 1;
            if (atomic_load(&far_fds[i].fd_plus_one) == expected) {
                slot = atomic_load(&far_fds[i].slot);
                if (!atomic_compare_exchange_strong(&far_fds[i].fd_plus_one, &expected, 0))
                    slot = 0;
                else
                    atomic_fetch_sub(&nvs_fd_far_count, 1);
                break;
            }
        }
    }
    if (slot)
        atomic_fetch_sub_explicit(&nvs_device_fds, 1, memory_order_relaxed);
    return slot;
}

static void copy_path(char *out, const char *path)
{
    size_t length = strlen(path);
    if (length < NVS_DEVICE_PATH_MAX) {
        memcpy(out, path, length + 1);
        return;
    }
    /* The end of a long path tells devices apart: "...by-id/usb-Acme_Cam-video-index0". */
    memcpy(out, "...", 3);
    memcpy(out + 3, path + length - (NVS_DEVICE_PATH_MAX - 4), NVS_DEVICE_PATH_MAX - 4 + 1);
}

/* The frame marker a call on this device is, in or out, given NVTXSHIM_FRAME. */
static void set_markers(struct nvs_device *device, const struct nvs_config *config)
{
    enum nvs_frame_marker in = device->kind->in_marker, out = device->kind->out_marker;
    bool this_device = !config->frame_device[0] ||
        nvs_glob_match(config->frame_device, device->path);
    device->in_marker = (this_device && in != NVS_FRAME_OFF && config->frame == in) ? in
                                                                                    : NVS_FRAME_OFF;
    device->out_marker = (this_device && out != NVS_FRAME_OFF && config->frame == out)
        ? out
        : NVS_FRAME_OFF;
}

void nvs_device_opened(int fd, const char *path, int flags)
{
    int saved_errno = errno;
    const struct nvs_config *config = nvs_config();
    const struct nvs_device_kind *kind = NULL;
    /* A path NVTXSHIM_DEVICES names is of the kind its device number says
     * (an I2C node is one), else serial-like. */
    if (config->devices[0] && listed(config->devices, path)) {
        if (!(kind = kind_of_file(fd, path)))
            kind = listed_kind();
    } else if ((config->hooks & (NVS_HOOKS_DEVICE_FILES | NVS_HOOKS_USB)) && !never_a_rig(path) &&
               !strncmp(path, "/dev/", 5)) {
        kind = kind_of_file(fd, path);
    }
    unsigned group = kind ? kind->group : 0;
    /* Only what is traced now enters the table: nothing else pays for it. */
    if (!group || !(config->hooks & group) || !(nvs_traced_groups() & group)) {
        errno = saved_errno;
        return;
    }
    become_owner();
    if (!owns_table()) { /* a vfork child, before its exec */
        errno = saved_errno;
        return;
    }
    unsigned slot = claim_slot();
    if (slot) {
        struct nvs_device *device = &nvs_devices[slot];
        device->uid = new_uid();
        device->kind = kind;
        device->watcher = false;
        device->domain = kind->domain;
        device->group = group;
        copy_path(device->path, path);
        atomic_store(&device->nonblocking, (flags & O_NONBLOCK) != 0);
        if (kind->opened)
            kind->opened(device);
        set_markers(device, config);
        enter(fd, slot);
        nvs_log_debug("fd %d is %s device %s\n", fd, nvs_domain_name(device->domain), device->path);
    }
    errno = saved_errno;
}

void nvs_device_duplicated(unsigned slot, int new_fd)
{
    if (!slot || new_fd < 0 || !owns_table())
        return;
    atomic_fetch_add(&nvs_devices[slot].refs, 1);
    enter(new_fd, slot);
}

void nvs_device_closing(int fd)
{
    if (!owns_table())
        return;
    unsigned slot = take_out(fd);
    if (slot)
        release_slot(slot);
}

void nvs_device_closing_range(unsigned first, unsigned last)
{
    for (unsigned fd = first; fd <= last && fd < NVS_FD_DIRECT; fd++)
        if (atomic_load_explicit(&nvs_fd_slots[fd], memory_order_relaxed))
            nvs_device_closing((int)fd);
    if (last >= NVS_FD_DIRECT && atomic_load(&nvs_fd_far_count)) {
        for (int i = 0; i < FAR_FDS; i++) {
            int fd = atomic_load(&far_fds[i].fd_plus_one) - 1;
            if (fd >= 0 && (unsigned)fd >= first && (unsigned)fd <= last)
                nvs_device_closing(fd);
        }
    }
}

/* Whether FD is still open: asked of the kernel (a closed one is EBADF). */
static bool still_open(int fd)
{
    return nvs_sys_fcntl(fd, F_GETFD, 0) >= 0 || errno != EBADF;
}

void nvs_device_forget_closed(void)
{
    for (int fd = 0; fd < NVS_FD_DIRECT; fd++)
        if (atomic_load_explicit(&nvs_fd_slots[fd], memory_order_relaxed) && !still_open(fd))
            nvs_device_closing(fd);
    for (int i = 0; atomic_load(&nvs_fd_far_count) && i < FAR_FDS; i++) {
        int fd = atomic_load(&far_fds[i].fd_plus_one) - 1;
        if (fd >= 0 && !still_open(fd))
            nvs_device_closing(fd);
    }
}

void nvs_device_watched(int epfd, unsigned slot)
{
    if (nvs_fd_slot(epfd) || !owns_table())
        return; /* already watching a device: named after the first */
    unsigned epoll_slot = claim_slot();
    if (!epoll_slot)
        return;
    struct nvs_device *device = &nvs_devices[epoll_slot], *watched = &nvs_devices[slot];
    device->uid = new_uid();
    /* What kind of device it waits for decides the range's category. */
    device->kind = watched->kind;
    device->watcher = true;
    device->domain = watched->domain;
    device->group = watched->group;
    memcpy(device->path, watched->path, sizeof device->path);
    device->in_marker = device->out_marker = NVS_FRAME_OFF;
    enter(epfd, epoll_slot);
}

NVS_ONCE void nvs_devices_configure(const struct nvs_config *config)
{
    atomic_store_explicit(&nvs_device_globs, config->devices[0] != '\0', memory_order_relaxed);
}

NVS_ONCE void nvs_devices_report(void)
{
    uint64_t slots = atomic_load(&losses[NVS_DEVICE_LOSS_SLOTS]);
    uint64_t urbs = atomic_load(&losses[NVS_DEVICE_LOSS_URBS]);
    if (slots)
        nvs_log_info("%llu device file opens were not traced: more than %d device "
                     "descriptors open at once\n",
                     (unsigned long long)slots, NVS_DEVICE_SLOTS - 1);
    if (urbs)
        nvs_log_info("%llu usbfs URBs had no range: more in flight than the library follows\n",
                     (unsigned long long)urbs);
}
