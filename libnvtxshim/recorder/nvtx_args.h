/* NVTX's arguments as the recorder's: text cut to its room, wide text as
 * UTF-8, domains, category names, registered strings, and an event's
 * attributes (record.c calls these; they call nothing of the recorder but
 * the encoder's set-up functions). */
#ifndef NVS_RECORDER_NVTX_ARGS_H
#define NVS_RECORDER_NVTX_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

#include "../hidden.h"
#include "trace.h"

/* The domain of events made without one; named at enable. */
extern NVS_HIDDEN struct nvs_trace_domain nvs_args_default_domain;

/* Names the default domain and keeps ENCODER for the set-up of what follows. */
void nvs_args_enable(const struct nvs_trace_encoder *encoder);

/* TEXT into OUT (SIZE with the NUL), cut at a character boundary; its length. */
uint32_t nvs_args_copy_text(char *out, size_t size, const char *text);
/* TEXT (UTF-32, as wchar_t is on Linux) into OUT as UTF-8, cut to SIZE with the NUL. */
void nvs_args_wide_to_utf8(char *out, size_t size, const wchar_t *text);

/* The domain called NAME, made at its first creation; NULL out of memory. */
struct nvs_trace_domain *nvs_args_domain_create(const char *name);
/* The first name given to category NUMBER of DOMAIN is the one written. */
void nvs_args_name_category(struct nvs_trace_domain *domain, uint32_t number, const char *name);
/* TEXT registered for the life of the process; NULL out of memory. */
struct nvs_trace_string *nvs_args_register_string(const char *text);

static inline struct nvs_trace_domain *nvs_args_domain(nvtxDomainHandle_t handle)
{
    return handle ? (struct nvs_trace_domain *)handle : &nvs_args_default_domain;
}

/* EVENT described by NVTX's ATTRIBUTES (none: no name, colour or payload) in
 * DOMAIN (NULL: the default one); its times are the caller's. */
void nvs_args_capture(struct nvs_trace_event *event, struct nvs_trace_domain *domain,
                      const nvtxEventAttributes_t *attributes);
/* EVENT in the default domain named TEXT, nothing else set. */
void nvs_args_capture_text(struct nvs_trace_event *event, const char *text);

/* Around fork: no domain half made in the child. */
void nvs_args_fork_prepare(void);
void nvs_args_fork_parent(void);
void nvs_args_fork_child(void);

#endif
