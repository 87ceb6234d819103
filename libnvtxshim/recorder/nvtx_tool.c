/* NVTX's calls onto the recorder: the function table this library fills when
 * NVTX finds it as its tool (NVTX_INJECTION64_PATH) and calls
 * InitializeInjectionNvtx2. Each entry point reads its arguments (nvtx_args.c)
 * and hands an event to the recorder (record.c, through record_calls.h); the
 * library's own ranges go to the recorder's direct functions, which emit.c
 * puts in the slots of the library's own NVTX instance (emit.h). */
#define _GNU_SOURCE
#include "record.h"

#include <stdint.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

#include "../clock.h"
#include "nvtx_args.h"
#include "record_calls.h"
#include "trace.h"

typedef nvtxDomainHandle_t domain_t;
typedef const nvtxEventAttributes_t *attributes_t;
typedef char wide_text_t[NVS_TRACE_TEXT_MAX];

/* EVENT described by A in domain D (NULL: the default one), from now. */
static inline void timed(struct nvs_trace_event *event, domain_t d, attributes_t a)
{
    nvs_args_capture(event, nvs_args_domain(d), a);
    event->start_ns = nvs_clock_ns();
}

static inline void timed_text(struct nvs_trace_event *event, const char *text)
{
    nvs_args_capture_text(event, text);
    event->start_ns = nvs_clock_ns();
}

static inline const char *utf8(char *out, const wchar_t *text)
{
    nvs_args_wide_to_utf8(out, NVS_TRACE_TEXT_MAX, text);
    return out;
}

static void NVTX_API mark_ex(attributes_t a)
{
    struct nvs_trace_event e;
    timed(&e, NULL, a);
    nvs_record_mark(&e);
}
static void NVTX_API mark_a(const char *m)
{
    struct nvs_trace_event e;
    timed_text(&e, m);
    nvs_record_mark(&e);
}
static void NVTX_API mark_w(const wchar_t *m)
{
    wide_text_t t;
    mark_a(utf8(t, m));
}
static nvtxRangeId_t NVTX_API start_ex(attributes_t a)
{
    struct nvs_trace_event e;
    timed(&e, NULL, a);
    return nvs_record_start(&e);
}
static nvtxRangeId_t NVTX_API start_a(const char *m)
{
    struct nvs_trace_event e;
    timed_text(&e, m);
    return nvs_record_start(&e);
}
static nvtxRangeId_t NVTX_API start_w(const wchar_t *m)
{
    wide_text_t t;
    return start_a(utf8(t, m));
}
static void NVTX_API end_id(nvtxRangeId_t id)
{
    nvs_record_end(id);
}
static int NVTX_API push_ex(attributes_t a)
{
    return nvs_record_push(NULL, a, NULL);
}
static int NVTX_API push_a(const char *m)
{
    return nvs_record_push(NULL, NULL, m ? m : "");
}
static int NVTX_API push_w(const wchar_t *m)
{
    wide_text_t t;
    return push_a(utf8(t, m));
}
static int NVTX_API pop_default(void)
{
    return nvs_record_pop(nvs_args_domain(NULL));
}
static void NVTX_API category_a(uint32_t c, const char *n)
{
    nvs_args_name_category(nvs_args_domain(NULL), c, n);
}
static void NVTX_API category_w(uint32_t c, const wchar_t *n)
{
    wide_text_t t;
    category_a(c, utf8(t, n));
}

static void NVTX_API name_thread_a(uint32_t tid, const char *name)
{
    nvs_record_name_thread(tid, name);
}
static void NVTX_API name_thread_w(uint32_t tid, const wchar_t *n)
{
    wide_text_t t;
    name_thread_a(tid, utf8(t, n));
}

static void NVTX_API domain_mark(domain_t d, attributes_t a)
{
    struct nvs_trace_event e;
    timed(&e, d, a);
    nvs_record_mark(&e);
}
static void NVTX_API domain_category_a(domain_t d, uint32_t c, const char *n)
{
    nvs_args_name_category(nvs_args_domain(d), c, n);
}
static void NVTX_API domain_category_w(domain_t d, uint32_t c, const wchar_t *n)
{
    wide_text_t t;
    domain_category_a(d, c, utf8(t, n));
}
static nvtxStringHandle_t NVTX_API register_a(domain_t d, const char *text)
{
    (void)d;
    return (nvtxStringHandle_t)nvs_args_register_string(text);
}
static nvtxStringHandle_t NVTX_API register_w(domain_t d, const wchar_t *text)
{
    wide_text_t t;
    return register_a(d, utf8(t, text));
}
static domain_t NVTX_API domain_create_a(const char *name)
{
    return (domain_t)nvs_args_domain_create(name);
}
static domain_t NVTX_API domain_create_w(const wchar_t *name)
{
    wide_text_t t;
    return domain_create_a(utf8(t, name));
}
static void NVTX_API domain_destroy(domain_t d)
{
    (void)d; /* kept: events may still name it */
}
static void NVTX_API initialize(const void *reserved)
{
    (void)reserved;
}

static void attach(NvtxFunctionTable table, unsigned size, unsigned id,
                   NvtxFunctionPointer function)
{
    if (id < size && table[id])
        *table[id] = function;
}

#define FN(f) ((NvtxFunctionPointer)(f))

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table)
{
    if (!nvs_record_is_tool() || !get_export_table)
        return 0;
    const NvtxExportTableCallbacks *callbacks = get_export_table(NVTX_ETID_CALLBACKS);
    if (!callbacks || !callbacks->GetModuleFunctionTable)
        return 0;
    NvtxFunctionTable core = NULL, core2 = NULL;
    unsigned core_size = 0, core2_size = 0;
    if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) ||
        !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size))
        return 0;
    attach(core, core_size, NVTX_CBID_CORE_MarkEx, FN(mark_ex));
    attach(core, core_size, NVTX_CBID_CORE_MarkA, FN(mark_a));
    attach(core, core_size, NVTX_CBID_CORE_MarkW, FN(mark_w));
    attach(core, core_size, NVTX_CBID_CORE_RangeStartEx, FN(start_ex));
    attach(core, core_size, NVTX_CBID_CORE_RangeStartA, FN(start_a));
    attach(core, core_size, NVTX_CBID_CORE_RangeStartW, FN(start_w));
    attach(core, core_size, NVTX_CBID_CORE_RangeEnd, FN(end_id));
    attach(core, core_size, NVTX_CBID_CORE_RangePushEx, FN(push_ex));
    attach(core, core_size, NVTX_CBID_CORE_RangePushA, FN(push_a));
    attach(core, core_size, NVTX_CBID_CORE_RangePushW, FN(push_w));
    attach(core, core_size, NVTX_CBID_CORE_RangePop, FN(pop_default));
    attach(core, core_size, NVTX_CBID_CORE_NameCategoryA, FN(category_a));
    attach(core, core_size, NVTX_CBID_CORE_NameCategoryW, FN(category_w));
    attach(core, core_size, NVTX_CBID_CORE_NameOsThreadA, FN(name_thread_a));
    attach(core, core_size, NVTX_CBID_CORE_NameOsThreadW, FN(name_thread_w));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, FN(domain_mark));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, FN(nvs_record_domain_start));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, FN(nvs_record_domain_end));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, FN(nvs_record_domain_push));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, FN(nvs_record_domain_pop));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryA, FN(domain_category_a));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryW, FN(domain_category_w));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, FN(register_a));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, FN(register_w));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, FN(domain_create_a));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, FN(domain_create_w));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, FN(domain_destroy));
    attach(core2, core2_size, NVTX_CBID_CORE2_Initialize, FN(initialize));
    return 1;
}
