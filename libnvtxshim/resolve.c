/* Finds real functions and interposes dlsym/dlvsym.
 *
 * Our dlsym and dlvsym are the process's, so the library cannot call them to
 * find glibc's: the real pair is looked up in libc's own dynamic symbol table
 * (dl_iterate_phdr is not interposed). Everything else goes through them. */
#define _GNU_SOURCE
#include "resolve.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "log.h"

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);

_Atomic(void *) nvs_real_functions[NVS_HOOK_COUNT];

static _Atomic(dlsym_fn) real_dlsym;
static _Atomic(dlvsym_fn) real_dlvsym;
static _Atomic(nvs_hook_enabled_fn) hook_filter NVS_ONCE_DATA;

/* Sanitizer runtimes (ASan, TSan) resolve their interceptors with
 * dlsym(RTLD_NEXT) while they start, and that dlsym is ours: until the real one
 * is found, this path runs before the runtime is ready. So it calls nothing a
 * runtime intercepts (no string functions, no dl_iterate_phdr, no pthread_once)
 * and is not instrumented itself. */
#define NVS_UNINSTRUMENTED __attribute__((no_sanitize("address", "thread", "undefined")))

NVS_UNINSTRUMENTED
static bool same_text(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

NVS_UNINSTRUMENTED
static bool has_prefix(const char *text, const char *prefix)
{
    while (*prefix && *text == *prefix) {
        text++;
        prefix++;
    }
    return *prefix == '\0';
}

NVS_UNINSTRUMENTED
static uint32_t gnu_hash(const char *name)
{
    uint32_t hash = 5381;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        hash = hash * 33 + *c;
    return hash;
}

/* Dynamic-section pointers are relocated in place by ld.so on most targets,
 * but not where .dynamic is read-only: add the base only when needed. */
NVS_UNINSTRUMENTED
static uintptr_t dynamic_pointer(uintptr_t value, uintptr_t base)
{
    return value < base ? value + base : value;
}

/* Whether SYMBOL, at INDEX, is a definition of NAME that a lookup with no
 * version takes: its default version, not a hidden (older) one. */
NVS_UNINSTRUMENTED
static bool defines(const ElfW(Sym) * symbol, const char *strings, const ElfW(Half) * versions,
                    size_t index, const char *name)
{
    if (symbol->st_shndx == SHN_UNDEF || (versions && (versions[index] & 0x8000)))
        return false;
    return same_text(strings + symbol->st_name, name);
}

/* A defined NAME (defines) that is a plain function: 1. One of another kind (an
 * indirect function, data, an untyped symbol): -1, where OTHER is asked for
 * (find_after_self then leaves the name to dlsym). 0 otherwise. */
NVS_UNINSTRUMENTED
static int symbol_matches(const ElfW(Sym) * symbol, const char *strings,
                          const ElfW(Half) * versions, size_t index, const char *name, bool other)
{
    if (!defines(symbol, strings, versions, index, name))
        return 0;
    if (ELF64_ST_TYPE(symbol->st_info) == STT_FUNC)
        return 1;
    return other ? -1 : 0;
}

/* symbol_matches's MATCH at ADDRESS: the function, or none (*OTHER set). */
NVS_UNINSTRUMENTED
static void *found(int match, uintptr_t address, bool *other)
{
    if (match > 0)
        return (void *)address;
    *other = true;
    return NULL;
}

/* An object's dynamic symbol table, as its dynamic section gives it. */
struct symbol_table {
    uintptr_t base;
    const ElfW(Sym) * symbols;
    const char *strings;
    const uint32_t *gnu_table, *sysv_table;
    const ElfW(Half) * versions;
};

/* TABLE read from the dynamic section DYNAMIC of the object loaded at BASE:
 * false where it has none. */
NVS_UNINSTRUMENTED
static bool read_symbol_table(uintptr_t base, const ElfW(Dyn) * dynamic, struct symbol_table *table)
{
    *table = (struct symbol_table){ .base = base };
    if (!dynamic)
        return false;
    for (const ElfW(Dyn) *entry = dynamic; entry->d_tag != DT_NULL; entry++) {
        uintptr_t pointer = dynamic_pointer(entry->d_un.d_ptr, base);
        switch (entry->d_tag) {
        case DT_SYMTAB: table->symbols = (const ElfW(Sym) *)pointer; break;
        case DT_STRTAB: table->strings = (const char *)pointer; break;
        case DT_GNU_HASH: table->gnu_table = (const uint32_t *)pointer; break;
        case DT_HASH: table->sysv_table = (const uint32_t *)pointer; break;
        case DT_VERSYM: table->versions = (const ElfW(Half) *)pointer; break;
        }
    }
    return table->symbols && table->strings;
}

/* NAME, a function, in TABLE. With OTHER, a definition of NAME that is no
 * plain function sets *OTHER and ends the search (NULL). */
NVS_UNINSTRUMENTED
static void *lookup_in_table(const struct symbol_table *table, const char *name, bool *other)
{
    uintptr_t base = table->base;
    const ElfW(Sym) *symbols = table->symbols;
    const char *strings = table->strings;
    const uint32_t *gnu_table = table->gnu_table, *sysv_table = table->sysv_table;
    const ElfW(Half) *versions = table->versions;
    if (gnu_table) {
        uint32_t bucket_count = gnu_table[0], symbol_offset = gnu_table[1];
        uint32_t bloom_size = gnu_table[2];
        const uint32_t *buckets = gnu_table + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
        const uint32_t *chain = buckets + bucket_count;
        uint32_t hash = gnu_hash(name);
        uint32_t index = buckets[hash % bucket_count];
        if (index < symbol_offset)
            return NULL;
        for (;; index++) {
            uint32_t chain_hash = chain[index - symbol_offset];
            int match = (chain_hash | 1) == (hash | 1)
                ? symbol_matches(&symbols[index], strings, versions, index, name, other != NULL)
                : 0;
            if (match)
                return found(match, base + symbols[index].st_value, other);
            if (chain_hash & 1)
                return NULL;
        }
    }
    if (sysv_table) {
        uint32_t symbol_count = sysv_table[1];
        for (uint32_t index = 0; index < symbol_count; index++) {
            int match = symbol_matches(&symbols[index], strings, versions, index, name,
                                       other != NULL);
            if (match)
                return found(match, base + symbols[index].st_value, other);
        }
    }
    return NULL;
}

/* NAME, a function, in the loaded object MAP. */
NVS_UNINSTRUMENTED
static void *find_in_object(const struct link_map *map, const char *name)
{
    struct symbol_table table;
    return read_symbol_table(map->l_addr, map->l_ld, &table) ? lookup_in_table(&table, name, NULL)
                                                             : NULL;
}

/* glibc 2.34 moved dlsym into libc; before that it lived in libdl. The loaded
 * objects are walked from this library's own link map (dladdr1 is intercepted
 * by no sanitizer, unlike dl_iterate_phdr). */
NVS_UNINSTRUMENTED
static void *find_libc_function(const char *name)
{
    static const char *const libraries[] = { "libc.so", "libdl.so" };
    Dl_info self;
    struct link_map *map = NULL;
    if (!dladdr1((void *)find_libc_function, &self, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return NULL;
    while (map->l_prev)
        map = map->l_prev;
    for (size_t i = 0; i < sizeof libraries / sizeof libraries[0]; i++) {
        for (const struct link_map *object = map; object; object = object->l_next) {
            const char *base_name = object->l_name;
            for (const char *c = object->l_name; c && *c; c++)
                if (*c == '/')
                    base_name = c + 1;
            if (!base_name || !has_prefix(base_name, libraries[i]))
                continue;
            void *found = find_in_object(object, name);
            if (found)
                return found;
        }
    }
    return NULL;
}

/* The library's own code: where RTLD_NEXT or a handle found one of our
 * wrappers. The linker's marks of this object's start (the address
 * dl_iterate_phdr gives for it) and the end of its text, hidden, so they are
 * this object's whatever else is loaded. */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern const char _etext[] __attribute__((visibility("hidden"))); /* GNU ld's and LLD's */

/* TABLE of an object as dl_iterate_phdr lists it: false where it has none. */
NVS_ONCE static bool listed_symbol_table(const struct dl_phdr_info *info,
                                         struct symbol_table *table)
{
    const ElfW(Dyn) *dynamic = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dynamic = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    return read_symbol_table(info->dlpi_addr, dynamic, table);
}

struct earlier_copy {
    char *path;
    size_t size;
    bool found;
};

/* Objects before this library, in the loaded objects' list (dl_iterate_phdr
 * walks it in order), up to this one or the first copy of it. */
NVS_ONCE static int find_earlier_copy(struct dl_phdr_info *info, size_t size, void *data)
{
    struct earlier_copy *copy = data;
    (void)size;
    if (info->dlpi_addr == (uintptr_t)__ehdr_start)
        return 1;
    struct symbol_table table;
    if (!listed_symbol_table(info, &table) ||
        !lookup_in_table(&table, "InitializeInjectionNvtx2", NULL) ||
        !lookup_in_table(&table, "dlvsym", NULL) ||
        !lookup_in_table(&table, "libusb_bulk_transfer", NULL))
        return 0;
    snprintf(copy->path, copy->size, "%s", info->dlpi_name[0] ? info->dlpi_name : "?");
    copy->found = true;
    return 1;
}

NVS_ONCE bool nvs_resolve_earlier_copy(char *path, size_t size)
{
    struct earlier_copy copy = { path, size, false };
    dl_iterate_phdr(find_earlier_copy, &copy);
    return copy.found;
}

/* Looked up again by a thread that races the first: same answer, no lock. */
NVS_UNINSTRUMENTED
static dlsym_fn get_real_dlsym(void)
{
    dlsym_fn real = atomic_load(&real_dlsym);
    if (!real) {
        int saved_errno = errno;
        real = (dlsym_fn)find_libc_function("dlsym");
        atomic_store(&real_dlsym, real);
        errno = saved_errno;
    }
    return real;
}

NVS_UNINSTRUMENTED
static dlvsym_fn get_real_dlvsym(void)
{
    dlvsym_fn real = atomic_load(&real_dlvsym);
    if (!real) {
        int saved_errno = errno;
        real = (dlvsym_fn)find_libc_function("dlvsym");
        atomic_store(&real_dlvsym, real);
        errno = saved_errno;
    }
    return real;
}

NVS_ONCE void nvs_resolve_set_filter(nvs_hook_enabled_fn enabled)
{
    atomic_store(&hook_filter, enabled);
}

static int is_our_wrapper(const void *address)
{
    return (const char *)address >= __ehdr_start && (const char *)address < _etext;
}

/* The wrappers, from init.c at load: read by dlsym's substitutions, which
 * hand out our wrapper for a real function (none before the load). */
static void *const *_Atomic wrappers;

NVS_ONCE void nvs_resolve_set_wrappers(void *const *table)
{
    atomic_store(&wrappers, table);
}

void *nvs_resolve_wrapper(enum nvs_hook_id id)
{
    void *const *table = atomic_load_explicit(&wrappers, memory_order_acquire);
    return table && (unsigned)id < NVS_HOOK_COUNT ? table[id] : NULL;
}

struct loaded_library {
    const char *prefix;
    char path[4096];
};

NVS_ONCE static int find_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
    struct loaded_library *loaded = data;
    (void)size;
    const char *base_name = strrchr(info->dlpi_name, '/');
    base_name = base_name ? base_name + 1 : info->dlpi_name;
    if (strncmp(base_name, loaded->prefix, strlen(loaded->prefix)) ||
        strlen(info->dlpi_name) >= sizeof loaded->path)
        return 0;
    strcpy(loaded->path, info->dlpi_name);
    return 1;
}

/* NAME from the library after us in the global scope, else from LIBRARY where
 * it was loaded RTLD_LOCAL (as a dependency of something dlopen'ed: a Python
 * extension, a plugin, the CUDA runtime's dlopen of libcuda). */
static void *find_real(const char *library, const char *name)
{
    dlsym_fn lookup = get_real_dlsym();
    if (!lookup)
        return NULL;
    void *real = lookup(RTLD_NEXT, name);
    if (real && !is_our_wrapper(real))
        return real;
    real = NULL;
    void *handle = dlopen(library, RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) {
        /* A soname with the major version in it: find the loaded one by prefix. */
        struct loaded_library loaded = { library, "" };
        dl_iterate_phdr(find_loaded, &loaded);
        if (loaded.path[0])
            handle = dlopen(loaded.path, RTLD_LAZY | RTLD_NOLOAD);
    }
    if (handle) {
        real = lookup(handle, name);
        dlclose(handle);
        if (real && is_our_wrapper(real))
            real = NULL;
    }
    return real;
}

NVS_ONCE bool nvs_library_loaded(const char *prefix)
{
    struct loaded_library loaded = { prefix, "" };
    dl_iterate_phdr(find_loaded, &loaded);
    return loaded.path[0] != '\0';
}

struct any_library {
    const char *const *prefixes;
    int count;
};

NVS_ONCE static int find_any(struct dl_phdr_info *info, size_t size, void *data)
{
    const struct any_library *any = data;
    (void)size;
    const char *base_name = strrchr(info->dlpi_name, '/');
    base_name = base_name ? base_name + 1 : info->dlpi_name;
    for (int i = 0; i < any->count; i++)
        if (!strncmp(base_name, any->prefixes[i], strlen(any->prefixes[i])))
            return 1;
    return 0;
}

NVS_ONCE bool nvs_any_library_loaded(const char *const *prefixes, int count)
{
    struct any_library any = { prefixes, count };
    return count > 0 && dl_iterate_phdr(find_any, &any) != 0;
}

void *nvs_find_function(const char *library, const char *name)
{
    int saved_errno = errno;
    void *found = find_real(library, name);
    errno = saved_errno;
    return found;
}

/* Stands in a cache for "LIBRARY has no such function". */
#define ABSENT ((void *)1)

void *nvs_find_function_once(_Atomic(void *) *cache, const char *library, const char *name)
{
    void *found = atomic_load_explicit(cache, memory_order_acquire);
    if (!found) {
        found = nvs_find_function(library, name);
        if (!found && !nvs_library_loaded(library))
            return NULL;
        atomic_store_explicit(cache, found ? found : ABSENT, memory_order_release);
    }
    return found == ABSENT ? NULL : found;
}

void *nvs_dlsym(void *handle, const char *name)
{
    dlsym_fn real = get_real_dlsym();
    return real ? real(handle, name) : NULL;
}

/* The libc hooks whose function libc lacks (an older glibc's close_range),
 * found at load: never asked for again. Written before the program runs. */
static bool libc_lacks[NVS_HOOK_COUNT];

static bool from_libc(enum nvs_hook_id id)
{
    return !strcmp(nvs_hook_library(id), "libc.so.6");
}

void *nvs_resolve_publish(enum nvs_hook_id id, void *real)
{
    void *expected = NULL;
    return atomic_compare_exchange_strong(&nvs_real_functions[id], &expected, real) ? real
                                                                                    : expected;
}

void *nvs_resolve_slow(enum nvs_hook_id id)
{
    if (libc_lacks[id])
        return NULL;
    int saved_errno = errno;
    const char *name = nvs_hook_name(id);
    void *real = find_real(nvs_hook_library(id), name);
    if (real) {
        real = nvs_resolve_publish(id, real);
    } else {
        nvs_log_debug("no real %s found; the call fails as if the library were absent\n", name);
    }
    errno = saved_errno;
    return real;
}

/* The objects after this library in the loader's list (dl_iterate_phdr walks
 * it in order), kept where this library lies before libc: it was loaded with
 * the program (preloaded, or a program's dependency), and the list from here
 * on is, in order, the global scope that dlsym(RTLD_NEXT) searches after it.
 * Loaded by dlopen, the scope RTLD_NEXT searches is the one dlopen made, which
 * the list does not show: then none are kept. */
#define OBJECTS_AFTER_MAX 64

struct objects_after {
    bool self_seen, libc_seen;
    int count;
    struct symbol_table tables[OBJECTS_AFTER_MAX];
};

NVS_ONCE static int collect_after_self(struct dl_phdr_info *info, size_t size, void *data)
{
    struct objects_after *after = data;
    (void)size;
    if (!after->self_seen) {
        after->self_seen = info->dlpi_addr == (uintptr_t)__ehdr_start;
        return 0;
    }
    const char *base_name = strrchr(info->dlpi_name, '/');
    if (base_name && has_prefix(base_name + 1, "libc.so."))
        after->libc_seen = true;
    if (after->count == OBJECTS_AFTER_MAX) {
        after->libc_seen = false; /* more than kept: dlsym answers */
        return 1;
    }
    /* one without a symbol table still holds its place, defining nothing */
    (void)listed_symbol_table(info, &after->tables[after->count++]);
    return 0;
}

/* What dlsym(RTLD_NEXT, NAME) answers from this library, read from the
 * symbol tables of the objects AFTER it in order, without the loader's lock
 * or its search for the caller: through dlsym the libc hooks cost 23 us at
 * every start (make bench's start-up row). NULL where that is not sure: no
 * object defines NAME as a function (libc lacks it), or the first that
 * defines it does so as something else (an indirect function, whose resolver
 * dlsym calls). dlsym answers those. */
NVS_ONCE static void *find_after_self(const struct objects_after *after, const char *name)
{
    for (int i = 0; i < after->count; i++) {
        bool other = false;
        void *function = after->tables[i].symbols ? lookup_in_table(&after->tables[i], name, &other)
                                                  : NULL;
        if (function || other)
            return function;
    }
    return NULL;
}

NVS_ONCE void nvs_resolve_libc_hooks(void)
{
    struct objects_after after = { 0 }; /* 3 KiB of a constructor's stack */
    dl_iterate_phdr(collect_after_self, &after);
    for (int id = 0; id < NVS_HOOK_COUNT; id++) {
        if (!from_libc((enum nvs_hook_id)id))
            continue;
        void *real = after.libc_seen ? find_after_self(&after, nvs_hook_name((enum nvs_hook_id)id))
                                     : NULL;
        if (real && !is_our_wrapper(real))
            (void)nvs_resolve_publish((enum nvs_hook_id)id, real);
        else if (!nvs_resolve((enum nvs_hook_id)id))
            libc_lacks[id] = true;
    }
}

/* Whether ADDRESS is still a function of a loaded object: false once the
 * library that held it was dlclose'd (and perhaps loaded again elsewhere). */
static bool still_loaded(const void *address)
{
    Dl_info info;
    return dladdr(address, &info) && info.dli_saddr == address;
}

/* LIBRARY was unloaded: forget every real function found in it, so that each
 * is found again, in the copy now loaded. libusb's own calls between its
 * functions (libusb_bulk_transfer -> libusb_submit_transfer) reach our
 * wrappers through its PLT and would otherwise jump into unmapped memory.
 * libc is never unloaded: a libc hook's function that dladdr does not know
 * by its address is another interposer's (nsys's, whose functions have no
 * symbol of their own), found at load and kept. */
static void forget_unloaded(const char *library)
{
    for (int id = 0; id < NVS_HOOK_COUNT; id++) {
        void *real = atomic_load(&nvs_real_functions[id]);
        if (real && !strcmp(nvs_hook_library((enum nvs_hook_id)id), library) &&
            !from_libc((enum nvs_hook_id)id) && !still_loaded(real))
            atomic_compare_exchange_strong(&nvs_real_functions[id], &real, NULL);
    }
}

/* A lookup through a handle found NAME at SYMBOL: hand out our wrapper instead
 * when SYMBOL is the real function of a hook that is switched on. NEXT, when
 * SYMBOL is our own wrapper (the handle's scope has this library in it), is
 * what the same scope holds after this library: the answer without it. */
void *nvs_resolve_substitute(const char *name, void *symbol, bool any_entry_point)
{
    if (!symbol || !name)
        return symbol;
    int id = nvs_hook_find(name);
    if (id < 0)
        return symbol;
    void *wrapper = nvs_resolve_wrapper((enum nvs_hook_id)id);
    nvs_hook_enabled_fn enabled = atomic_load(&hook_filter);
    bool on = enabled && enabled((enum nvs_hook_id)id);
    if (is_our_wrapper(symbol))
        return symbol;
    if (!on || !wrapper)
        return symbol;
    if (any_entry_point) {
        /* Another door to the same function: the real one is found as usual, and
         * SYMBOL stands in only when the library is not reachable that way. */
        if (!nvs_resolve((enum nvs_hook_id)id))
            (void)nvs_resolve_publish((enum nvs_hook_id)id, symbol);
        return wrapper;
    }
    /* The real function is the named library's where that is loaded (found once,
     * as a call would find it): another library that defines the name too (a
     * Vulkan layer's own vkGetDeviceProcAddr, looked up by the loader before the
     * program's first call) is then left alone below, not taken for it. */
    nvs_resolve((enum nvs_hook_id)id);
    void *published = nvs_resolve_publish((enum nvs_hook_id)id, symbol);
    if (published != symbol) {
        if (still_loaded(published))
            return symbol; /* a second copy of the library: leave its calls alone */
        /* The library was unloaded and loaded again at another address. */
        forget_unloaded(nvs_hook_library((enum nvs_hook_id)id));
        if (nvs_resolve_publish((enum nvs_hook_id)id, symbol) != symbol)
            return symbol;
    }
    return wrapper;
}

/* dlsym answers as without the library: where the scope asked found our own
 * wrapper (we export every hooked name, so RTLD_DEFAULT, dlopen(NULL) and
 * RTLD_NEXT from the program find it first), the answer is what comes after
 * us in that scope - the real function, then handed out as our wrapper when
 * its hook is on, or nothing, with dlerror set by that failed lookup, when
 * the library is not loaded. NEXT looks after this library. */
static void *truthful(const char *name, void *symbol, void *(*next)(const char *, const char *),
                      const char *version)
{
    int id = symbol ? nvs_hook_find(name) : -1;
    if (id < 0 || !is_our_wrapper(symbol))
        return nvs_resolve_substitute(name, symbol, false);
    void *real = next(name, version);
    if (!real || is_our_wrapper(real))
        return NULL;
    return nvs_resolve_substitute(name, real, false);
}

static void *next_by_dlsym(const char *name, const char *version)
{
    (void)version;
    return get_real_dlsym()(RTLD_NEXT, name);
}

static void *next_by_dlvsym(const char *name, const char *version)
{
    return get_real_dlvsym()(RTLD_NEXT, name, version);
}

/* Whether the code at ADDRESS belongs to an object that comes after this
 * library in the loaded objects' list: another interposer preloaded after it
 * (umockdev's, a test double), or a library loaded later. */
NVS_UNINSTRUMENTED
static bool after_this_library(const void *address)
{
    static struct link_map *_Atomic own;
    struct link_map *self = atomic_load_explicit(&own, memory_order_acquire);
    Dl_info info;
    if (!self) {
        if (!dladdr1((void *)after_this_library, &info, (void **)&self, RTLD_DL_LINKMAP) || !self)
            return false;
        atomic_store_explicit(&own, self, memory_order_release);
    }
    struct link_map *caller = NULL;
    if (!dladdr1(address, &info, (void **)&caller, RTLD_DL_LINKMAP) || !caller)
        return false;
    for (const struct link_map *map = self->l_next; map; map = map->l_next)
        if (map == caller)
            return true;
    return false;
}

/* Nothing is substituted before our constructor has run (no filter yet): a
 * sanitizer runtime starting up gets glibc's answer, and no instrumented code
 * runs before that runtime is ready. RTLD_NEXT is resolved relative to the
 * caller's return address, so for a name we do not hook it is a plain tail
 * call: glibc then sees the program's caller, not us. So it is for a caller
 * that comes after this library (another interposer preloaded after it, a
 * test double): what is next to it never includes our wrapper, and a lookup
 * made from here would have handed it the next after us, its own function
 * (every call of it then called itself). */
#if defined(__clang__)
#define NVS_TAIL_CALLS
#define NVS_TAIL __attribute__((musttail)) /* clang: the tail call is made or the build fails */
#else
#define NVS_TAIL_CALLS optimize("optimize-sibling-calls") /* GCC: at -O0 too */
#define NVS_TAIL
#endif

__attribute__((visibility("default"), NVS_TAIL_CALLS)) NVS_UNINSTRUMENTED void *dlsym(
    void *handle, const char *name)
{
    dlsym_fn real = get_real_dlsym();
    if (!atomic_load(&hook_filter) ||
        (handle == RTLD_NEXT &&
         (nvs_hook_find(name) < 0 || after_this_library(__builtin_return_address(0)))))
        NVS_TAIL return real(handle, name);
    void *symbol = real(handle, name);
    return truthful(name, symbol, next_by_dlsym, NULL);
}

__attribute__((visibility("default"), NVS_TAIL_CALLS)) NVS_UNINSTRUMENTED void *dlvsym(
    void *handle, const char *name, const char *version)
{
    dlvsym_fn real = get_real_dlvsym();
    if (!atomic_load(&hook_filter) ||
        (handle == RTLD_NEXT &&
         (nvs_hook_find(name) < 0 || after_this_library(__builtin_return_address(0)))))
        NVS_TAIL return real(handle, name, version);
    void *symbol = real(handle, name, version);
    return truthful(name, symbol, next_by_dlvsym, version);
}
