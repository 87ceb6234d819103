/* Finding real functions, and handing out wrappers to lookups by handle. */
#ifndef NVS_RESOLVE_H
#define NVS_RESOLVE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "hidden.h"
#include "registry/registry.h"

/* Each hook's wrapper, our exported function of its name (hooks/table.c),
 * handed to resolve.c by init.c at load; nvs_resolve_wrapper(ID) gives it
 * back, NULL before then. */
extern NVS_HIDDEN void *const nvs_hook_wrappers[NVS_HOOK_COUNT];
void nvs_resolve_set_wrappers(void *const *wrappers);
void *nvs_resolve_wrapper(enum nvs_hook_id id);

/* Real functions, by hook id; filled lazily and by handle lookups. */
extern NVS_HIDDEN _Atomic(void *) nvs_real_functions[NVS_HOOK_COUNT];

void *nvs_resolve_slow(enum nvs_hook_id id);
/* REAL as hook ID's real function, unless one was published first: the one
 * published, either way. Once there it changes only when its library is
 * unloaded and its functions forgotten. */
void *nvs_resolve_publish(enum nvs_hook_id id, void *real);

/* Whether a library whose file name starts with PREFIX is loaded: a walk
 * over the loaded objects, no file system access (unlike dlopen RTLD_NOLOAD
 * of a library that is not there). */
bool nvs_library_loaded(const char *prefix);
/* Whether one of COUNT such libraries is loaded: one walk for all. */
bool nvs_any_library_loaded(const char *const *prefixes, int count);

/* Whether another copy of this library (another path or build: an object that
 * defines InitializeInjectionNvtx2, dlvsym and libusb_bulk_transfer) comes
 * before this one in the loaded objects' list, and so before it in every
 * lookup; its path in PATH. */
bool nvs_resolve_earlier_copy(char *path, size_t size);

/* A function the shim calls but does not hook (__cxa_demangle), found the way
 * real functions are; NULL when LIBRARY is not loaded. Each call asks the
 * loader (and waits for its lock): for what may be asked again, see below. */
void *nvs_find_function(const char *library, const char *name);

/* The same, asked once: CACHE keeps the function, or that LIBRARY (loaded)
 * has none, so a missing function costs one load afterwards, not a pass
 * through the loader on every call (cuPointerGetAttribute on each copy, where
 * a driver lacks it). While LIBRARY is not loaded nothing is kept. */
void *nvs_find_function_once(_Atomic(void *) *cache, const char *library, const char *name);

/* Every hook whose real function is libc's, found now (at load): a libc
 * wrapper may first be called by a signal handler that interrupted its thread
 * inside the dynamic loader (dlopen, dlsym), and a lookup then would wait for
 * the loader's lock that thread holds. Afterwards each is one atomic load. */
void nvs_resolve_libc_hooks(void);

/* glibc's dlsym, for the library's own lookups (its dlsym export is for the
 * program). */
void *nvs_dlsym(void *handle, const char *name);

/* The real function behind hook ID, or NULL when no library defines it. */
static inline void *nvs_resolve(enum nvs_hook_id id)
{
    void *real = atomic_load_explicit(&nvs_real_functions[id], memory_order_acquire);
    return real ? real : nvs_resolve_slow(id);
}

/* The real function of hook ID where it was found already: a load, no test
 * (a split wrapper's traced half, which is reached only once its exported
 * half found it, or its first call resolved it). */
static inline void *nvs_resolved(enum nvs_hook_id id)
{
    return atomic_load_explicit(&nvs_real_functions[id], memory_order_acquire);
}

/* The real function, typed from the vendor header's declaration of NAME. */
#define NVS_REAL(name) ((__typeof__(&name))nvs_resolve(NVS_HOOK_ID(name)))

/* A lookup (dlsym, glXGetProcAddress...) found NAME at SYMBOL: returns our
 * wrapper when SYMBOL is the real function of a hook that is switched on,
 * else SYMBOL. ANY_ENTRY_POINT: SYMBOL may be another entry point of the same
 * function (glvnd's libGL and libGLX both export glXSwapBuffers). */
void *nvs_resolve_substitute(const char *name, void *symbol, bool any_entry_point);

/* Whether lookups by handle should get the wrapper for hook ID. */
typedef int (*nvs_hook_enabled_fn)(enum nvs_hook_id id);
void nvs_resolve_set_filter(nvs_hook_enabled_fn enabled);

#endif
