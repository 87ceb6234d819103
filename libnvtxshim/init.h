/* The library's life cycle (init.c): load, activation, exec and exit, fork. */
#ifndef NVS_INIT_H
#define NVS_INIT_H

#include <stdbool.h>

/* The library becomes active (the first question whether calls are traced):
 * its messages are printed, once. False when this copy stays inert because
 * another copy of the library was loaded first. */
bool nvs_init_activate(void);

/* Whether this process's image is ours to end (false in a vfork child), and
 * the end of its frames, as at exit: for exec and _exit (hooks/process.c). */
bool nvs_owns_image(void);
void nvs_end_frames(void);

#endif
