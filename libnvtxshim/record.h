/* The NVTX tool behind NVTXSHIM_TRACE: Chrome Trace Event JSON. */
#ifndef NVS_RECORD_H
#define NVS_RECORD_H

#include <stdbool.h>

/* Turns the recorder on for this process; PATH_TEMPLATE may hold %p. */
void nvs_record_enable(const char *path_template);
bool nvs_record_enabled(void);

/* Completes the file: at exit, before _exit, and before exec. */
void nvs_record_finish(void);
/* exec failed: the process goes on, and so does its trace. */
void nvs_record_resume(void);
/* True in the process that owns the recorder state (false in a vfork child,
 * which shares our memory and must leave the parent's trace alone). */
bool nvs_record_owns_process(void);

void nvs_record_fork_prepare(void);
void nvs_record_fork_parent(void);
void nvs_record_fork_child(void);

#endif
