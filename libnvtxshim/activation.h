/* Whether this copy of the library is active, its messages, and whose image
 * this is (activation.c): what the call path (hook.c) and the process hooks
 * (hooks/process.c) ask of the library's state, below its life cycle
 * (init.c), which sets it at load and at fork. Above capture, the kernel
 * probe and the recorder, which activation wakes. */
#ifndef NVS_ACTIVATION_H
#define NVS_ACTIVATION_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* At load: another copy of the library came first (FIRST_COPY, its path,
 * kept by the caller for the process's life), or not (NULL); this one then
 * stays inert. */
void nvs_activation_set_inert(const char *first_copy);
bool nvs_activation_inert(void);

/* The library becomes active (the first question whether calls are traced):
 * its messages are printed, once. False when this copy stays inert. */
bool nvs_activate(void);

/* The process whose image this is (set at load and in a forked child): a
 * vfork child shares our memory until it execs or _exits, and must not end
 * the parent's frame or trace. */
void nvs_image_set(pid_t pid);
bool nvs_owns_image(void);

#endif
