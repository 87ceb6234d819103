/* A program that uses NVTX itself (header-only nvtx3), with no libusb.
 *   nvtx_user            ranges, a domain, registered strings, marks, two
 *                        domains' ranges that cross, a start/end range that
 *                        ends on another thread
 *   nvtx_user fork       the same, then a child that records its own ranges
 *   nvtx_user exec PROG  the same, then exec PROG (the trace must be complete);
 *                        when the exec fails, a range "after the failed exec"
 *   nvtx_user _exit      the same, then _exit(0) (no destructors run) */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

int main(int argc, char **argv)
{
    record_some("parent");
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
