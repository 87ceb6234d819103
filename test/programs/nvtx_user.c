/* A program that uses NVTX itself (header-only nvtx3), with no libusb.
 *   nvtx_user            ranges, a domain, registered strings, marks, two
 *                        domains' ranges that cross, a start/end range that
 *                        ends on another thread; then (this process only)
 *                        named categories, its thread named, the wide (W)
 *                        calls, every payload type and a coloured mark
 *   nvtx_user fork       the same, then a child that records its own ranges
 *   nvtx_user exec PROG  the same, then exec PROG (the trace must be complete);
 *                        when the exec fails, a range "after the failed exec"
 *   nvtx_user _exit      the same, then _exit(0) (no destructors run)
 *   nvtx_user latin1     a range named in Latin-1 ("caf\xe9"), not UTF-8 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wchar.h>

static nvtxRangeId_t crossing;

static void *end_elsewhere(void *unused)
{
    (void)unused;
    nvtxRangeEnd(crossing);
    return NULL;
}

static void record_some(const char *who)
{
    char text[64];
    snprintf(text, sizeof text, "%s outer", who);
    nvtxRangePushA(text);
    nvtxRangePushA("inner");
    nvtxMarkA("a mark");
    nvtxRangePop();
    nvtxRangePop();

    nvtxDomainHandle_t domain = nvtxDomainCreateA("app");
    nvtxEventAttributes_t event;
    memset(&event, 0, sizeof event);
    event.version = NVTX_VERSION;
    event.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    event.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    event.message.registered = nvtxDomainRegisterStringA(domain, "registered \"quoted\" step");
    event.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    event.payload.ullValue = 4096;
    nvtxDomainRangePushEx(domain, &event);
    nvtxDomainRangePop(domain);

    /* Two domains' push/pop ranges that cross: app's popped while default's is open. */
    event.messageType = NVTX_MESSAGE_TYPE_ASCII;
    event.message.ascii = "app interleaved";
    nvtxDomainRangePushEx(domain, &event);
    nvtxRangePushA("default interleaved");
    nvtxDomainRangePop(domain);
    nvtxRangePop();

    crossing = nvtxRangeStartA("crosses threads");
    pthread_t thread;
    pthread_create(&thread, NULL, end_elsewhere, NULL);
    pthread_join(thread, NULL);
}

static void push_with_payload(const char *name, int32_t type, uint64_t bits)
{
    nvtxEventAttributes_t event;
    memset(&event, 0, sizeof event);
    event.version = NVTX_VERSION;
    event.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    event.messageType = NVTX_MESSAGE_TYPE_ASCII;
    event.message.ascii = name;
    event.payloadType = type;
    event.payload.ullValue = bits;
    nvtxRangePushEx(&event);
    nvtxRangePop();
}

/* What NVTX offers beyond record_some: each must reach the trace file. */
static void record_more(void)
{
    nvtxNameCategoryA(1, "stage");
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "nvtx main");
    nvtxEventAttributes_t event;
    memset(&event, 0, sizeof event);
    event.version = NVTX_VERSION;
    event.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    event.messageType = NVTX_MESSAGE_TYPE_ASCII;
    event.message.ascii = "categorised";
    event.category = 1;
    nvtxRangePushEx(&event);
    nvtxRangePop();

    nvtxDomainHandle_t domain = nvtxDomainCreateA("app");
    nvtxDomainNameCategoryA(domain, 2, "app stage");
    event.message.ascii = "app categorised";
    event.category = 2;
    nvtxDomainRangePushEx(domain, &event);
    nvtxDomainRangePop(domain);

    nvtxRangePushW(L"wide r\u00e4nge \u20ac");
    nvtxRangePop();
    nvtxRangeId_t wide = nvtxRangeStartW(L"wide start");
    nvtxRangeEnd(wide);
    nvtxMarkW(L"wide mark");

    double half = 0.25;
    float one_and_a_half = 1.5f;
    uint64_t double_bits = 0, float_bits = 0;
    memcpy(&double_bits, &half, sizeof half);
    memcpy(&float_bits, &one_and_a_half, sizeof one_and_a_half);
    push_with_payload("payload int32", NVTX_PAYLOAD_TYPE_INT32, (uint32_t)-5);
    push_with_payload("payload uint32", NVTX_PAYLOAD_TYPE_UNSIGNED_INT32, 7);
    push_with_payload("payload int64", NVTX_PAYLOAD_TYPE_INT64, (uint64_t)-9);
    push_with_payload("payload double", NVTX_PAYLOAD_TYPE_DOUBLE, double_bits);
    push_with_payload("payload float", NVTX_PAYLOAD_TYPE_FLOAT, float_bits);

    memset(&event, 0, sizeof event);
    event.version = NVTX_VERSION;
    event.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    event.messageType = NVTX_MESSAGE_TYPE_ASCII;
    event.message.ascii = "coloured mark";
    event.colorType = NVTX_COLOR_ARGB;
    event.color = 0xFF00C853;
    nvtxMarkEx(&event);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "latin1")) {
        nvtxRangePushA("caf\xe9");
        nvtxRangePop();
        return 0;
    }
    record_some("parent");
    record_more();
    printf("nvtx_user done\n");
    fflush(stdout);
    if (argc > 1 && !strcmp(argv[1], "fork")) {
        pid_t child = fork();
        if (child == 0) {
            record_some("child");
            return 0;
        }
        int status;
        waitpid(child, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    if (argc > 2 && !strcmp(argv[1], "exec")) {
        execv(argv[2], argv + 2);
        perror("execv");
        nvtxRangePushA("after the failed exec");
        nvtxRangePop();
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], "_exit"))
        _exit(0);
    return 0;
}
