/* libFuzzer target: the NVTXSHIM_* parser (libnvtxshim/config.c, nvs_config_parse).
 *
 * The first byte picks what the rest of the input is:
 *   0..9   the value of one variable (NVTXSHIM_LOG ... NVTXSHIM_HELP below), up to
 *          the first NUL byte (an environment value cannot hold one);
 *   10     a whole environment: entries separated by NUL bytes, as in
 *          /proc/PID/environ (unknown names, duplicates, entries with no '=',
 *          DISPLAY and NVTX_INJECTION64_PATH, variables that depend on each other);
 *   other  the same as (byte % 11).
 *
 * Besides the sanitizers' own checks, what a user relies on in the messages:
 * every report is one line starting "nvtxshim: ", one per bad variable, and a bad
 * value leaves its feature at the default; the parsed configuration is sane. A
 * broken promise aborts with the reason on stderr.
 *
 * Built with clang -fsanitize=fuzzer (make fuzz), and with gcc and replay.c into
 * a program that feeds it the corpus (make test). */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "registry/registry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const variables[] = {
    "NVTXSHIM_LOG", "NVTXSHIM_HOOKS", "NVTXSHIM_FRAME", "NVTXSHIM_FRAME_BUDGET",
    "NVTXSHIM_CAPTURE", "NVTXSHIM_CAPTURE_VIA", "NVTXSHIM_CAPTURE_NAME", "NVTXSHIM_TRACE",
    "NVTXSHIM_KERNEL", "NVTXSHIM_HELP",
};
#define VARIABLE_COUNT (sizeof variables / sizeof variables[0])

struct lines {
    int count;
    const char *problem;   /* the first broken promise, or NULL */
};

static void fail(const char *why, const char *detail)
{
    fprintf(stderr, "config_fuzz: %s: %.300s\n", why, detail ? detail : "");
    abort();
}

static void collect(const char *line, void *context)
{
    struct lines *lines = context;
    size_t length = strlen(line);
    lines->count++;
    if (strncmp(line, "nvtxshim: ", 10))
        fail("a message does not start with 'nvtxshim: '", line);
    if (length == 0 || line[length - 1] != '\n' || memchr(line, '\n', length - 1))
        fail("a message is not exactly one line", line);
    if (length >= 1024)
        fail("a message is over 1023 bytes", line);
    for (size_t i = 0; i + 1 < length; i++)
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
            fail("a message holds a control character (a value not escaped)", line);
}

static bool terminated(const char *text, size_t size)
{
    return memchr(text, '\0', size) != NULL;
}

/* What any parse must leave, whatever it was given. */
static void check_config(const struct nvs_config *c)
{
    if (c->hooks & ~(unsigned)NVS_HOOKS_ALL)
        fail("hooks outside usb|x11|cuda", NULL);
    if (c->frame > NVS_FRAME_HID_OUT || c->capture > NVS_CAPTURE_SIGNAL ||
        c->capture_via > NVS_VIA_CUDA || c->log > NVS_LOG_DEBUG)
        fail("an enum out of range", NULL);
    if (c->frame_endpoint != -1) {
        bool in = c->frame_endpoint & 0x80;
        if ((c->frame != NVS_FRAME_USB_IN && c->frame != NVS_FRAME_USB_OUT) ||
            (c->frame_endpoint & 0x0f) == 0 || (c->frame_endpoint & ~0x8f) ||
            in != (c->frame == NVS_FRAME_USB_IN))
            fail("a frame endpoint that is not a USB endpoint of the marker's direction", NULL);
    }
    if ((c->frame == NVS_FRAME_CALL) != (c->frame_call >= 0) ||
        c->frame_call >= (int)NVS_TRACED_HOOK_COUNT)
        fail("call:NAME without a traced hook", NULL);
    if (c->capture == NVS_CAPTURE_FRAMES &&
        (c->frame == NVS_FRAME_OFF || c->capture_start < 1 || c->capture_count < 1 ||
         (c->capture_period && c->capture_period < c->capture_count)))
        fail("a frame capture window that cannot be", NULL);
    if (c->capture == NVS_CAPTURE_CALLS &&
        (c->capture_call < 0 || c->capture_call >= (int)NVS_TRACED_HOOK_COUNT ||
         c->capture_start < 1 || c->capture_count < 1))
        fail("a calls capture window that cannot be", NULL);
    if (c->capture == NVS_CAPTURE_SIGNAL && c->capture_signal != SIGUSR1 &&
        c->capture_signal != SIGUSR2 && c->capture_signal != SIGHUP &&
        c->capture_signal != SIGWINCH && c->capture_signal != SIGURG)
        fail("a capture signal that is not offered", NULL);
    if (!terminated(c->capture_message, sizeof c->capture_message) ||
        !terminated(c->capture_domain, sizeof c->capture_domain) ||
        !terminated(c->trace_path, sizeof c->trace_path) ||
        !terminated(c->frame_device, sizeof c->frame_device) ||
        !terminated(c->devices, sizeof c->devices) ||
        !terminated(c->display, sizeof c->display) ||
        !terminated(c->nvtx_injection_path, sizeof c->nvtx_injection_path))
        fail("a string without its terminating NUL", NULL);
    if (!c->capture_message[0] || !c->capture_domain[0])
        fail("an empty capture name", NULL);
    if (c->kernel && c->kernel_min_interval_ns == 0)
        fail("a zero kernel threshold", NULL);
    /* What the library prints as it is: no control characters; globs nvs_glob_match reads
     * as they look. */
    for (const char *text = c->capture_message; *text; text++)
        if ((unsigned char)*text < 0x20 || *text == 0x7f)
            fail("a capture name with a control character", c->capture_message);
    for (const char *text = c->trace_path; *text; text++)
        if ((unsigned char)*text < 0x20 || *text == 0x7f)
            fail("a trace path with a control character", c->trace_path);
    if (c->frame_device[0] && nvs_glob_problem(c->frame_device, strlen(c->frame_device)))
        fail("a frame marker's path that is no well-formed glob", c->frame_device);
    for (const char *item = c->devices; *item;) {
        size_t length = strcspn(item, ",");
        if (nvs_glob_problem(item, length))
            fail("an NVTXSHIM_DEVICES entry that is no well-formed glob", c->devices);
        item += length + (item[length] == ',');
    }
}

/* A bad value of VARIABLE must leave its feature as it is by default. */
static void check_defaults_kept(size_t variable, const struct nvs_config *c,
                                const struct nvs_config *defaults)
{
    bool kept = true;
    switch (variable) {
    case 0: kept = c->log == defaults->log; break;
    case 1: kept = c->hooks == 0; break;   /* documented: a bad list hooks nothing */
    case 2: kept = c->frame == NVS_FRAME_OFF && c->frame_endpoint == -1 && c->frame_call == -1; break;
    case 3: kept = c->frame_budget_ns == 0; break;
    case 4: kept = c->capture == NVS_CAPTURE_OFF; break;
    case 5: kept = c->capture_via == defaults->capture_via; break;
    case 6: kept = !strcmp(c->capture_message, defaults->capture_message) &&
                   !strcmp(c->capture_domain, defaults->capture_domain); break;
    case 7: kept = c->trace_path[0] == '\0'; break;
    case 8: kept = !c->kernel && c->kernel_min_interval_ns == defaults->kernel_min_interval_ns; break;
    case 9: kept = !c->help; break;
    }
    if (!kept)
        fail("a bad value did not leave its feature at the default", variables[variable]);
}

static struct nvs_config parse(char *const *envp, struct lines *lines)
{
    struct nvs_config config;
    lines->count = 0;
    int errors = nvs_config_parse(&config, envp, collect, lines);
    if (errors != lines->count)
        fail("the error count is not the number of lines", NULL);
    return config;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t mode = data[0] % (VARIABLE_COUNT + 1);
    const char *rest = (const char *)data + 1;
    size_t rest_size = size - 1;
    struct lines lines;
    char *const no_variables[] = { NULL };
    struct nvs_config defaults = parse(no_variables, &lines);

    if (mode < VARIABLE_COUNT) {
        size_t name_length = strlen(variables[mode]);
        size_t value_length = strnlen(rest, rest_size);
        char *entry = malloc(name_length + 1 + value_length + 1);
        if (!entry)
            return 0;
        memcpy(entry, variables[mode], name_length);
        entry[name_length] = '=';
        memcpy(entry + name_length + 1, rest, value_length);
        entry[name_length + 1 + value_length] = '\0';
        char *envp[] = { "PATH=/usr/bin:/bin", entry, NULL };
        struct nvs_config config = parse(envp, &lines);
        check_config(&config);
        /* One variable alone: one line at most, and a capture by frames with no
         * frame marker is the only good value that also gets one. */
        if (lines.count > 1)
            fail("one variable got more than one line", entry);
        if (lines.count == 1 && value_length == 0)
            fail("an empty value (the same as unset) got a line", entry);
        bool frames_without_marker = mode == 4 && !strncmp(entry + name_length + 1, "frames:", 7);
        if (lines.count == 1 && !frames_without_marker)
            check_defaults_kept(mode, &config, &defaults);
        /* The same input parses the same way again. */
        struct nvs_config again = parse(envp, &lines);
        if (memcmp(&config, &again, sizeof config))
            fail("two parses of the same environment differ", entry);
        free(entry);
        return 0;
    }

    /* A whole environment: NUL-separated entries. */
    size_t count = 0;
    for (size_t i = 0; i < rest_size; i++)
        count += rest[i] == '\0';
    char *copy = malloc(rest_size + 1);
    char **envp = calloc(count + 2, sizeof *envp);
    if (!copy || !envp) {
        free(copy);
        free(envp);
        return 0;
    }
    memcpy(copy, rest, rest_size);
    copy[rest_size] = '\0';
    size_t entries = 0;
    for (char *entry = copy; entry < copy + rest_size + 1 && entries <= count;
         entry += strlen(entry) + 1)
        envp[entries++] = entry;
    envp[entries] = NULL;
    struct nvs_config config = parse(envp, &lines);
    check_config(&config);
    size_t ours = 0;
    for (size_t i = 0; i < entries; i++)
        ours += !strncmp(envp[i], "NVTXSHIM_", 9);
    /* At most one line per NVTXSHIM_ entry, plus the frames-without-marker one. */
    if ((size_t)lines.count > ours + 1)
        fail("more lines than NVTXSHIM_ variables", NULL);
    free(envp);
    free(copy);
    return 0;
}
