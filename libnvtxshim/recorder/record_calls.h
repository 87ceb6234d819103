/* The recorder's events as NVTX's entry points (nvtx_tool.c) hand them over:
 * what record.c does with a mark, a start/end range, a push and a pop of the
 * program's (or of an NVTX instance's), and a thread's name. */
#ifndef NVS_RECORD_CALLS_H
#define NVS_RECORD_CALLS_H

#include <stdbool.h>
#include <stdint.h>

#include <nvtx3/nvToolsExt.h>

#include "trace.h"

/* Whether this library records the process: NVTX may find it as its tool only then. */
bool nvs_record_is_tool(void);
void nvs_record_mark(const struct nvs_trace_event *event);
nvtxRangeId_t nvs_record_start(const struct nvs_trace_event *event);
void nvs_record_end(nvtxRangeId_t id);
/* A push in DOMAIN (NULL: the default one) described by ATTRIBUTES, or named TEXT. */
int nvs_record_push(struct nvs_trace_domain *domain, const nvtxEventAttributes_t *attributes,
                    const char *text);
int nvs_record_pop(const struct nvs_trace_domain *domain);
void nvs_record_name_thread(uint32_t tid, const char *name);
/* NVTX's DomainRangePushEx, DomainRangePop, DomainRangeStartEx and DomainRangeEnd, as the
 * tool's entry points. */
int NVTX_API nvs_record_domain_push(nvtxDomainHandle_t domain,
                                    const nvtxEventAttributes_t *attributes);
int NVTX_API nvs_record_domain_pop(nvtxDomainHandle_t domain);
nvtxRangeId_t NVTX_API nvs_record_domain_start(nvtxDomainHandle_t domain,
                                               const nvtxEventAttributes_t *attributes);
void NVTX_API nvs_record_domain_end(nvtxDomainHandle_t domain, nvtxRangeId_t id);

#endif
