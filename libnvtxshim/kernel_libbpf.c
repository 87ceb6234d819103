/* libbpf, opened with dlopen only when NVTXSHIM_KERNEL=on asks for the probe.
 *
 * Linking libbpf would map it (and libelf and libz behind it) into every
 * process that inherits LD_PRELOAD: a shell, a compiler, nsys itself. So the
 * library defines, hidden, the few libbpf functions the probe and its
 * skeleton call; each hands the call to the function of the same name in the
 * libbpf.so.1 that nvs_libbpf_open() loaded. The prototypes are libbpf's own
 * (its headers), so a signature that drifts is a compile error. */
#ifdef NVS_KERNEL_PROBE
#define _GNU_SOURCE
#include "kernel.h"

#include <dlfcn.h>
#include <stdio.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "resolve.h"

/* clang-format off: one name a line (clang-format 14 does not settle on a layout for it) */
#define LIBBPF_FUNCTIONS(X)                                                                        \
    X(libbpf_set_print)                                                                            \
    X(libbpf_find_vmlinux_btf_id)                                                                  \
    X(bpf_program__autoload)                                                                       \
    X(bpf_program__set_autoload)                                                                   \
    X(bpf_map__fd)                                                                                 \
    X(bpf_map_update_elem)                                                                         \
    X(bpf_map_lookup_elem)                                                                         \
    X(ring_buffer__new)                                                                            \
    X(ring_buffer__consume)                                                                        \
    X(ring_buffer__free)                                                                           \
    X(bpf_object__open_skeleton)                                                                   \
    X(bpf_object__load_skeleton)                                                                   \
    X(bpf_object__attach_skeleton)                                                                 \
    X(bpf_object__detach_skeleton)                                                                 \
    X(bpf_object__destroy_skeleton)
/* clang-format on */

#define DECLARE(name) __typeof__(&name) name;
static struct {
    LIBBPF_FUNCTIONS(DECLARE)
} libbpf;
#undef DECLARE

bool nvs_libbpf_open(char *why, size_t size)
{
    if (libbpf.bpf_object__destroy_skeleton)
        return true;
    void *handle = dlopen("libbpf.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *error = dlerror();
        snprintf(why, size, "%s", error ? error : "libbpf.so.1 cannot be loaded");
        return false;
    }
#define FIND(name)                                                                                 \
    if (!(libbpf.name = (__typeof__(&name))nvs_dlsym(handle, #name))) {                            \
        snprintf(why, size, "libbpf.so.1 has no %s (too old a libbpf)", #name);                    \
        return false;                                                                              \
    }
    LIBBPF_FUNCTIONS(FIND)
#undef FIND
    return true;
}

libbpf_print_fn_t libbpf_set_print(libbpf_print_fn_t fn)
{
    return libbpf.libbpf_set_print(fn);
}

int libbpf_find_vmlinux_btf_id(const char *name, enum bpf_attach_type attach_type)
{
    return libbpf.libbpf_find_vmlinux_btf_id(name, attach_type);
}

bool bpf_program__autoload(const struct bpf_program *prog)
{
    return libbpf.bpf_program__autoload(prog);
}

int bpf_program__set_autoload(struct bpf_program *prog, bool autoload)
{
    return libbpf.bpf_program__set_autoload(prog, autoload);
}

int bpf_map__fd(const struct bpf_map *map)
{
    return libbpf.bpf_map__fd(map);
}

int bpf_map_update_elem(int fd, const void *key, const void *value, __u64 flags)
{
    return libbpf.bpf_map_update_elem(fd, key, value, flags);
}

int bpf_map_lookup_elem(int fd, const void *key, void *value)
{
    return libbpf.bpf_map_lookup_elem(fd, key, value);
}

struct ring_buffer *ring_buffer__new(int map_fd, ring_buffer_sample_fn sample_cb, void *ctx,
                                     const struct ring_buffer_opts *opts)
{
    return libbpf.ring_buffer__new(map_fd, sample_cb, ctx, opts);
}

int ring_buffer__consume(struct ring_buffer *rb)
{
    return libbpf.ring_buffer__consume(rb);
}

void ring_buffer__free(struct ring_buffer *rb)
{
    libbpf.ring_buffer__free(rb);
}

int bpf_object__open_skeleton(struct bpf_object_skeleton *s,
                              const struct bpf_object_open_opts *opts)
{
    return libbpf.bpf_object__open_skeleton(s, opts);
}

int bpf_object__load_skeleton(struct bpf_object_skeleton *s)
{
    return libbpf.bpf_object__load_skeleton(s);
}

int bpf_object__attach_skeleton(struct bpf_object_skeleton *s)
{
    return libbpf.bpf_object__attach_skeleton(s);
}

void bpf_object__detach_skeleton(struct bpf_object_skeleton *s)
{
    libbpf.bpf_object__detach_skeleton(s);
}

void bpf_object__destroy_skeleton(struct bpf_object_skeleton *s)
{
    libbpf.bpf_object__destroy_skeleton(s);
}

#endif
