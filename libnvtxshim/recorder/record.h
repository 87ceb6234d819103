/* The NVTX tool behind NVTXSHIM_TRACE (record.c: NVTX to events;
 * encode_json.c: events to bytes; trace_writer.c: bytes to the file). */
#ifndef NVS_RECORD_H
#define NVS_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include <nvtx3/nvToolsExt.h>

/* NVTX's injection entry point: NVTX loads NVTX_INJECTION64_PATH (this
 * library, when it records) and calls it to have its function table filled. */
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);

/* Turns the recorder on for this process; PATH_TEMPLATE may hold %p. */
void nvs_record_enable(const char *path_template);
/* One line the recorder says when it opens its file, or NULL. */
void nvs_record_note(const char *line);
bool nvs_record_enabled(void);

/* Completes the file: at exit, before _exit, and before exec; async-signal-
 * safe, so a handler that calls exit or _exit leaves a whole file. The push/pop
 * ranges still open on the calling thread are written ended there, marked as
 * ranges that did not end; those of other threads are counted. */
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
