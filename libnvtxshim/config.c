/* Reads and validates the NVTXSHIM_* variables once; the only getenv-like code
 * in the library. Strict: a value is either fully understood or reported. */
#include "config.h"

#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "registry/registry.h"

extern char **environ;

#define PREFIX "NVTXSHIM_"

struct report {
    nvs_config_report_fn fn;
    void *context;
    int errors;
};

__attribute__((format(printf, 2, 3))) static void report_line(struct report *report,
                                                              const char *format, ...)
{
    char line[1024];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(line, sizeof line - 1, format, args);
    va_end(args);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = sizeof line - 2;
    line[n] = '\n';
    line[n + 1] = '\0';
    if (report->fn)
        report->fn(line, report->context);
}

/* TEXT[0..LENGTH) as it may appear inside a one-line message: at most
 * SHOWN_MAX bytes of it, printable ASCII as is, a newline, a carriage return
 * and a tab as \n, \r and \t, and every other byte (an escape, a byte of a
 * UTF-8 or not-UTF-8 sequence, the backslash and the quote around values) as
 * \xNN, with "..." when cut. A value may be a megabyte long or hold a newline
 * or a terminal's escape sequence; the line must stay one line, print nothing
 * but itself, and still say what is accepted. Every value a message echoes goes
 * through it (init.c's and the X11 hooks' too). */
#define SHOWN_MAX 64
#define SHOWN_SIZE NVS_CONFIG_SHOWN_SIZE
const char *nvs_config_shown(char out[NVS_CONFIG_SHOWN_SIZE], const char *text, size_t length)
{
    static const char hex[] = "0123456789abcdef";
    size_t used = 0;
    for (size_t i = 0; i < length && i < SHOWN_MAX; i++) {
        unsigned char c = (unsigned char)text[i];
        const char *named = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
        if (named) {
            memcpy(out + used, named, 2);
            used += 2;
        } else if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
            out[used++] = (char)c;
        } else {
            out[used++] = '\\';
            out[used++] = 'x';
            out[used++] = hex[c >> 4];
            out[used++] = hex[c & 15];
        }
    }
    if (length > SHOWN_MAX) {
        memcpy(out + used, "...", 3);
        used += 3;
    }
    out[used] = '\0';
    return out;
}

/* A value whose feature prints it as it is (the capture range's name in the
 * nsys options line, the trace path in the recorder's lines, a device path)
 * holds no control character (C0, DEL): such a value is bad. */
static bool printable(const char *text, size_t length)
{
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 || c == 0x7f)
            return false;
    }
    return true;
}

const char *nvs_glob_problem(const char *glob, size_t length)
{
    const char *end = glob + length;
    if (length == 0 || glob[0] != '/')
        return "not an absolute path";
    if (length < 2)
        return "the root directory, not a device";
    if (!printable(glob, length))
        return "a control character";
    for (const char *p = glob; p < end; p++) {
        if (*p != '[')
            continue;
        /* A bracket as nvs_glob_match (devices.c) reads it: '!' or '^' first
         * negates; the first member may be ']'; "a-z" is a range unless the '-'
         * is last. Each member is compared as a char, as there. */
        const char *q = p + 1;
        if (q < end && (*q == '!' || *q == '^'))
            q++;
        for (bool first = true; q < end && (first || *q != ']'); first = false) {
            char low = *q, high = low;
            if (q + 2 < end && q[1] == '-' && q[2] != ']') {
                high = q[2];
                q += 3;
            } else {
                q++;
            }
            if (low == '/' || high == '/')
                return "a '/' inside [...], which never matches one";
            if (low > high)
                return "a range inside [...] from a higher character to a lower one";
        }
        if (q == end)
            return "a '[' without its ']'";
        p = q;
    }
    return NULL;
}

/* What is wrong with a bad value, where the accepted forms alone do not say:
 * TEXT, a constant or BUFFER; NULL when they do. */
struct why {
    const char *text;
    char buffer[SHOWN_SIZE + 96];
};

/* One line: the variable, the value, what is wrong with it (WHY, or NULL), the
 * accepted forms, what happens now. */
static void report_bad(struct report *report, const char *variable, const char *value,
                       const struct why *why, const char *accepted, const char *consequence)
{
    char value_shown[SHOWN_SIZE];
    report->errors++;
    report_line(report, "nvtxshim: %s='%s' is not valid%s%s (accepted: %s); %s", variable,
                nvs_config_shown(value_shown, value, strlen(value)), why->text ? ": " : "",
                why->text ? why->text : "", accepted, consequence);
}

static bool parse_u64(const char *text, const char *end, uint64_t *out)
{
    uint64_t value = 0;
    if (text == end)
        return false;
    for (const char *c = text; c < end; c++) {
        if (*c < '0' || *c > '9')
            return false;
        unsigned digit = (unsigned)(*c - '0');
        if (value > (UINT64_MAX - digit) / 10)
            return false;
        value = value * 10 + digit;
    }
    *out = value;
    return true;
}

/* "0x81", "129", "1": an unsigned number in hex or decimal. */
static bool parse_number(const char *text, const char *end, uint64_t *out)
{
    if (end - text > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        uint64_t value = 0;
        for (const char *c = text + 2; c < end; c++) {
            unsigned digit;
            if (*c >= '0' && *c <= '9')
                digit = (unsigned)(*c - '0');
            else if (*c >= 'a' && *c <= 'f')
                digit = (unsigned)(*c - 'a' + 10);
            else if (*c >= 'A' && *c <= 'F')
                digit = (unsigned)(*c - 'A' + 10);
            else
                return false;
            if (value >> 60)
                return false;
            value = value * 16 + digit;
        }
        *out = value;
        return true;
    }
    return parse_u64(text, end, out);
}

/* "33ms", "500us", "16.7ms", "2s", "100ns": a duration with a unit, in ns. */
static bool parse_duration(const char *text, const char *end, uint64_t *out_ns)
{
    const char *c = text;
    uint64_t whole = 0, fraction = 0, fraction_scale = 1;
    const char *digits = c;
    while (c < end && *c >= '0' && *c <= '9')
        c++;
    if (!parse_u64(digits, c, &whole))
        return false;
    if (c < end && *c == '.') {
        const char *fraction_digits = ++c;
        while (c < end && *c >= '0' && *c <= '9' && fraction_scale < 1000000000ull) {
            fraction = fraction * 10 + (uint64_t)(*c - '0');
            fraction_scale *= 10;
            c++;
        }
        if (c == fraction_digits || (c < end && *c >= '0' && *c <= '9'))
            return false;
    }
    size_t unit_length = (size_t)(end - c);
    uint64_t unit;
    if (unit_length == 2 && !strncmp(c, "ns", 2))
        unit = 1;
    else if (unit_length == 2 && !strncmp(c, "us", 2))
        unit = 1000;
    else if (unit_length == 2 && !strncmp(c, "ms", 2))
        unit = 1000000;
    else if (unit_length == 1 && *c == 's')
        unit = 1000000000;
    else
        return false;
    if (whole > UINT64_MAX / unit / 2)
        return false;
    *out_ns = whole * unit + fraction * unit / fraction_scale;
    return true;
}

/* A hooked function that can mark frames or count calls (not the libc ones). */
static int parse_traced_hook(const char *name)
{
    int id = nvs_hook_find(name);
    return (id >= 0 && id < NVS_TRACED_HOOK_COUNT) ? id : -1;
}

/* The sets NVTXSHIM_HOOKS names (registry/hook_sets.def). */
static const struct {
    const char *name;
    unsigned bit;
} hook_sets[] = {
#define NVS_HOOK_SET(id, name) { name, NVS_HOOKS_##id },
#define NVS_DEVICE_SET(id, name, in, out) { name, NVS_HOOKS_##id },
#include "registry/hook_sets.def"
#undef NVS_HOOK_SET
#undef NVS_DEVICE_SET
};

/* The device sets' frame markers: NAME.in and NAME.out, each with its set. */
static const struct {
    const char *name;
    enum nvs_frame_marker marker;
    unsigned set;
} device_markers[] = {
#define NVS_HOOK_SET(id, name)
#define NVS_DEVICE_SET(id, name, in, out)                                                          \
    { (in) ? name ".in" : NULL, NVS_FRAME_##id##_IN, NVS_HOOKS_##id },                             \
        { (out) ? name ".out" : NULL, NVS_FRAME_##id##_OUT, NVS_HOOKS_##id },
#include "registry/hook_sets.def"
#undef NVS_HOOK_SET
#undef NVS_DEVICE_SET
};

static bool parse_hooks(const char *value, unsigned *out)
{
    if (!strcmp(value, "none")) {
        *out = 0;
        return true;
    }
    if (!strcmp(value, "all")) {
        *out = NVS_HOOKS_ALL;
        return true;
    }
    unsigned hooks = 0;
    const char *item = value;
    for (;;) {
        const char *comma = strchr(item, ',');
        size_t length = comma ? (size_t)(comma - item) : strlen(item);
        size_t set = 0;
        while (
            set < sizeof hook_sets / sizeof hook_sets[0] &&
            (strlen(hook_sets[set].name) != length || strncmp(item, hook_sets[set].name, length)))
            set++;
        if (set == sizeof hook_sets / sizeof hook_sets[0])
            return false;
        hooks |= hook_sets[set].bit;
        if (!comma)
            break;
        item = comma + 1;
    }
    *out = hooks;
    return true;
}

/* "0x81" is an endpoint address and must point the right way; a decimal 1..15
 * is an endpoint number, given the direction of usb.in or usb.out. */
static bool parse_endpoint(const char *text, bool in, int *out)
{
    uint64_t value;
    bool address = text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    if (!parse_number(text, text + strlen(text), &value))
        return false;
    if (!address && value >= 1 && value <= 15)
        value |= in ? 0x80 : 0x00;
    if ((value & 0x0f) == 0 || value > 0x8f || (value & 0x70) || ((value & 0x80) != 0) != in)
        return false;
    *out = (int)value;
    return true;
}

static bool parse_frame(const char *value, struct nvs_config *config, struct why *why)
{
    static const struct {
        const char *name;
        enum nvs_frame_marker marker;
    } plain[] = {
        { "off", NVS_FRAME_OFF },
        { "usb.in", NVS_FRAME_USB_IN },
        { "usb.out", NVS_FRAME_USB_OUT },
        { "x11.swap", NVS_FRAME_X11_SWAP },
        { "x11.flush", NVS_FRAME_X11_FLUSH },
        { "cuda.htod", NVS_FRAME_CUDA_HTOD },
        { "cuda.dtoh", NVS_FRAME_CUDA_DTOH },
    };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        if (!strcmp(value, plain[i].name)) {
            config->frame = plain[i].marker;
            return true;
        }
    }
    if (!strncmp(value, "usb.in:", 7))
        return parse_endpoint(value + 7, true, &config->frame_endpoint) &&
            (config->frame = NVS_FRAME_USB_IN, true);
    if (!strncmp(value, "usb.out:", 8))
        return parse_endpoint(value + 8, false, &config->frame_endpoint) &&
            (config->frame = NVS_FRAME_USB_OUT, true);
    for (size_t i = 0; i < sizeof device_markers / sizeof device_markers[0]; i++) {
        const char *name = device_markers[i].name;
        size_t length = name ? strlen(name) : 0;
        if (!name || strncmp(value, name, length) || (value[length] && value[length] != ':'))
            continue;
        /* The device: a path or a glob, as the program opens it. */
        const char *path = value[length] ? value + length + 1 : "";
        if (value[length]) {
            if (strlen(path) >= sizeof config->frame_device) {
                why->text = "the path is too long";
                return false;
            }
            if ((why->text = nvs_glob_problem(path, strlen(path))))
                return false;
        }
        strcpy(config->frame_device, path);
        config->frame = device_markers[i].marker;
        return true;
    }
    if (!strncmp(value, "call:", 5)) {
        int id = parse_traced_hook(value + 5);
        if (id < 0)
            return false;
        config->frame = NVS_FRAME_CALL;
        config->frame_call = id;
        return true;
    }
    return false;
}

/* NVTXSHIM_DEVICES: a comma list of absolute path globs, none empty. A glob
 * that nvs_glob_match would read otherwise than it looks is bad: the whole
 * list is, and WHY says which entry and what. */
static bool parse_devices(const char *value, struct nvs_config *config, struct why *why)
{
    if (strlen(value) >= sizeof config->devices) {
        why->text = "the list is too long";
        return false;
    }
    for (const char *item = value;;) {
        const char *comma = strchr(item, ',');
        size_t length = comma ? (size_t)(comma - item) : strlen(item);
        const char *problem = length ? nvs_glob_problem(item, length) : "an empty entry";
        if (problem && item == value && !comma) {
            why->text = problem; /* the list's one entry */
            return false;
        }
        if (problem) {
            char item_shown[SHOWN_SIZE];
            snprintf(why->buffer, sizeof why->buffer, "'%s': %s",
                     nvs_config_shown(item_shown, item, length), problem);
            why->text = why->buffer;
            return false;
        }
        if (!comma)
            break;
        item = comma + 1;
    }
    strcpy(config->devices, value);
    return true;
}

/* "S" or "S+C", S >= 1, C >= 1. */
static bool parse_window(const char *text, uint64_t *start, uint64_t *count)
{
    const char *end = text + strlen(text);
    const char *plus = strchr(text, '+');
    *count = 1;
    if (!parse_u64(text, plus ? plus : end, start) || *start == 0)
        return false;
    if (plus && (!parse_u64(plus + 1, end, count) || *count == 0))
        return false;
    /* The window's last frame or call, S+C-1, must be a number too. */
    return *count - 1 <= UINT64_MAX - *start;
}

/* The signals NVTXSHIM_CAPTURE=signal:NAME may name. */
static const struct {
    const char *name;
    int number;
} signals[] = {
    { "USR1", SIGUSR1 },   { "USR2", SIGUSR2 }, { "HUP", SIGHUP },
    { "WINCH", SIGWINCH }, { "URG", SIGURG },
};

const char *nvs_config_signal_name(int number)
{
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        if (signals[i].number == number)
            return signals[i].name;
    return "?";
}

static bool parse_signal(const char *name, int *out)
{
    if (!strncmp(name, "SIG", 3))
        name += 3;
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        if (!strcmp(name, signals[i].name)) {
            *out = signals[i].number;
            return true;
        }
    }
    return false;
}

static bool parse_capture(const char *value, struct nvs_config *config)
{
    if (!strcmp(value, "off")) {
        config->capture = NVS_CAPTURE_OFF;
        return true;
    }
    if (!strncmp(value, "frames:", 7)) {
        /* frames:S[+C] or, repeated, frames:S+C/P with P >= C. */
        char window[64];
        const char *slash = strchr(value + 7, '/');
        size_t length = slash ? (size_t)(slash - (value + 7)) : strlen(value + 7);
        if (length >= sizeof window)
            return false;
        memcpy(window, value + 7, length);
        window[length] = '\0';
        config->capture_period = 0;
        if (!parse_window(window, &config->capture_start, &config->capture_count))
            return false;
        if (slash &&
            (!strchr(window, '+') ||
             !parse_u64(slash + 1, slash + 1 + strlen(slash + 1), &config->capture_period) ||
             config->capture_period < config->capture_count))
            return false;
        config->capture = NVS_CAPTURE_FRAMES;
        return true;
    }
    if (!strncmp(value, "calls:", 6)) {
        const char *name = value + 6;
        const char *colon = strchr(name, ':');
        char hook[NVS_NAME_MAX];
        if (!colon || (size_t)(colon - name) >= sizeof hook)
            return false;
        memcpy(hook, name, (size_t)(colon - name));
        hook[colon - name] = '\0';
        int id = parse_traced_hook(hook);
        if (id < 0 || !parse_window(colon + 1, &config->capture_start, &config->capture_count))
            return false;
        config->capture_call = id;
        config->capture = NVS_CAPTURE_CALLS;
        return true;
    }
    if (!strncmp(value, "time:", 5)) {
        const char *text = value + 5, *end = text + strlen(text);
        const char *plus = strchr(text, '+');
        config->capture_duration_ns = 0;
        if (!parse_duration(text, plus ? plus : end, &config->capture_delay_ns))
            return false;
        if (plus &&
            (!parse_duration(plus + 1, end, &config->capture_duration_ns) ||
             config->capture_duration_ns == 0))
            return false;
        config->capture = NVS_CAPTURE_TIME;
        return true;
    }
    if (!strcmp(value, "signal")) {
        config->capture_signal = SIGUSR1;
        config->capture = NVS_CAPTURE_SIGNAL;
        return true;
    }
    if (!strncmp(value, "signal:", 7)) {
        if (!parse_signal(value + 7, &config->capture_signal))
            return false;
        config->capture = NVS_CAPTURE_SIGNAL;
        return true;
    }
    return false;
}

static bool parse_capture_name(const char *value, struct nvs_config *config, struct why *why)
{
    const char *at = strrchr(value, '@');
    if (!at || at == value || at[1] == '\0')
        return false;
    if (!printable(value, strlen(value))) {
        why->text = "a control character";
        return false;
    }
    size_t message_length = (size_t)(at - value);
    if (message_length >= sizeof config->capture_message ||
        strlen(at + 1) >= sizeof config->capture_domain)
        return false;
    memcpy(config->capture_message, value, message_length);
    config->capture_message[message_length] = '\0';
    strcpy(config->capture_domain, at + 1);
    return true;
}

static bool parse_trace(const char *value, struct nvs_config *config, struct why *why)
{
    if (strlen(value) >= sizeof config->trace_path - 32) {
        why->text = "the path is too long";
        return false;
    }
    if (!printable(value, strlen(value))) {
        why->text = "a control character";
        return false;
    }
    for (const char *c = value; *c; c++) {
        if (*c == '%') {
            if (c[1] != 'p' && c[1] != '%')
                return false;
            c++;
        }
    }
    strcpy(config->trace_path, value);
    return true;
}

static bool parse_choice(const char *value, const char *const *choices, int *out)
{
    for (int i = 0; choices[i]; i++) {
        if (!strcmp(value, choices[i])) {
            *out = i;
            return true;
        }
    }
    return false;
}

/* The variables (variables.def), in the order they are parsed and listed. */
enum variable {
#define NVS_VARIABLE(id, name, option, argument, default_value, summary, accepted, if_bad, manual) \
    V_##id,
#include "variables.def"
#undef NVS_VARIABLE
    V_COUNT
};

static const struct {
    const char *name;
    const char *default_value;
    const char *summary;
    const char *accepted;
    const char *consequence;
} variables[V_COUNT] = {
#define NVS_VARIABLE(id, name, option, argument, default_value, summary, accepted, if_bad, manual) \
    [V_##id] = { PREFIX name, default_value, summary, accepted, if_bad },
#include "variables.def"
#undef NVS_VARIABLE
};

/* NVTXSHIM_HELP's reference: a variable's summary beside its name, its default
 * at the end of the summary's last line. Made once, when asked for. */
NVS_ONCE const char *nvs_config_help(void)
{
    static char text[4096];
    if (text[0])
        return text;
    size_t used = (size_t)snprintf(text, sizeof text, "nvtxshim: configuration (all optional)\n");
    for (int v = 0; v < V_COUNT && used < sizeof text; v++) {
        const char *line = variables[v].summary;
        for (bool first = true; used < sizeof text; first = false) {
            const char *newline = strchr(line, '\n');
            int length = newline ? (int)(newline - line) : (int)strlen(line);
            /* "[default]" at column 74, or ending at column 80 when it is long. */
            int bracket = 80 - (int)strlen(variables[v].default_value) - 2;
            int width = newline ? 0 : (bracket < 74 ? bracket : 74) - 25 - 1;
            used += (size_t)snprintf(text + used, sizeof text - used, "  %-22s %-*.*s%s%s%s\n",
                                     first ? variables[v].name : "", width, length, line,
                                     newline ? "" : " [", newline ? "" : variables[v].default_value,
                                     newline ? "" : "]");
            if (!newline)
                break;
            line = newline + 1;
        }
    }
    return text;
}

/* ZEROED: CONFIG is all zero already (the process's, in zero-filled memory):
 * its paths are left untouched, which in a process that sets no variable
 * spares the library two pages of memory at load. */
static void set_defaults(struct nvs_config *config, bool zeroed)
{
    if (!zeroed)
        memset(config, 0, sizeof *config);
    config->hooks = NVS_HOOKS_ALL;
    config->frame = NVS_FRAME_OFF;
    config->frame_endpoint = -1;
    config->frame_call = -1;
    config->capture = NVS_CAPTURE_OFF;
    config->capture_call = -1;
    config->capture_via = NVS_VIA_BOTH;
    strcpy(config->capture_message, "capture");
    strcpy(config->capture_domain, "nvtxshim");
    config->log = NVS_LOG_INFO;
    config->kernel_min_interval_ns = 1000000;
}

/* Applies one variable's value; false means the value is bad and the
 * feature was put back to its default, and *WHY may say why. */
static bool apply(enum variable variable, const char *value, struct nvs_config *config,
                  struct why *why)
{
    static const char *const log_levels[] = { "quiet", "info", "debug", NULL };
    static const char *const vias[] = { "both", "nvtx", "cuda", NULL };
    static const char *const help[] = { "0", "1", NULL };
    int choice;
    bool ok;

    switch (variable) {
    case V_LOG:
        ok = parse_choice(value, log_levels, &choice);
        if (ok)
            config->log = (enum nvs_log_level)choice;
        return ok;
    case V_HOOKS:
        ok = parse_hooks(value, &config->hooks);
        if (!ok)
            config->hooks = 0;
        return ok;
    case V_FRAME:
        ok = parse_frame(value, config, why);
        if (!ok) {
            config->frame = NVS_FRAME_OFF;
            config->frame_endpoint = -1;
            config->frame_call = -1;
            config->frame_device[0] = '\0';
        }
        return ok;
    case V_DEVICES:
        ok = parse_devices(value, config, why);
        if (!ok)
            config->devices[0] = '\0';
        return ok;
    case V_FRAME_BUDGET:
        ok = parse_duration(value, value + strlen(value), &config->frame_budget_ns) &&
            config->frame_budget_ns > 0;
        if (!ok)
            config->frame_budget_ns = 0;
        return ok;
    case V_CAPTURE:
        ok = parse_capture(value, config);
        if (!ok) {
            config->capture = NVS_CAPTURE_OFF;
            config->capture_call = -1;
        }
        return ok;
    case V_CAPTURE_VIA:
        ok = parse_choice(value, vias, &choice);
        if (ok)
            config->capture_via = (enum nvs_capture_via)choice;
        return ok;
    case V_CAPTURE_NAME:
        ok = parse_capture_name(value, config, why);
        if (!ok) {
            strcpy(config->capture_message, "capture");
            strcpy(config->capture_domain, "nvtxshim");
        }
        return ok;
    case V_TRACE:
        ok = parse_trace(value, config, why);
        if (!ok)
            config->trace_path[0] = '\0';
        return ok;
    case V_KERNEL:
        config->kernel = false;
        config->kernel_min_interval_ns = 1000000;
        if (!strcmp(value, "off"))
            return true;
        if (!strcmp(value, "on")) {
            config->kernel = true;
            return true;
        }
        ok = !strncmp(value, "on:", 3) &&
            parse_duration(value + 3, value + strlen(value), &config->kernel_min_interval_ns) &&
            config->kernel_min_interval_ns > 0;
        config->kernel = ok;
        if (!ok)
            config->kernel_min_interval_ns = 1000000;
        return ok;
    case V_HELP:
        ok = parse_choice(value, help, &choice);
        config->help = ok && choice == 1;
        return ok;
    case V_COUNT: break;
    }
    return false;
}

/* The NVTXSHIM_HOOKS group a frame marker's calls belong to (0: any call's own). */
static unsigned marker_group(const struct nvs_config *config)
{
    switch (config->frame) {
    case NVS_FRAME_USB_IN:
    case NVS_FRAME_USB_OUT: return NVS_HOOKS_USB;
    case NVS_FRAME_X11_SWAP:
    case NVS_FRAME_X11_FLUSH: return NVS_HOOKS_X11;
    case NVS_FRAME_CUDA_HTOD:
    case NVS_FRAME_CUDA_DTOH: return NVS_HOOKS_CUDA;
    case NVS_FRAME_CALL: return nvs_hook_group((enum nvs_hook_id)config->frame_call);
    default: break;
    }
    for (size_t i = 0; i < sizeof device_markers / sizeof device_markers[0]; i++)
        if (device_markers[i].marker == config->frame)
            return device_markers[i].set;
    return 0;
}

static const char *group_name(unsigned group)
{
    for (size_t set = 0; set < sizeof hook_sets / sizeof hook_sets[0]; set++)
        if (hook_sets[set].bit == group)
            return hook_sets[set].name;
    return "device-file";
}

/* VARIABLE=VALUE counts GROUP's calls, which NVTXSHIM_HOOKS leaves untraced. */
static void report_untraced(struct report *report, const char *variable, const char *value,
                            unsigned group, const char *hooks, const char *consequence)
{
    char value_shown[SHOWN_SIZE], hooks_shown[SHOWN_SIZE];
    report->errors++;
    report_line(report,
                "nvtxshim: %s=%s counts %s calls, but NVTXSHIM_HOOKS=%s leaves them "
                "untraced (add %s to it); %s",
                variable, nvs_config_shown(value_shown, value, strlen(value)), group_name(group),
                hooks ? nvs_config_shown(hooks_shown, hooks, strlen(hooks)) : "", group_name(group),
                consequence);
}

/* A frame marker or a calls: window whose calls NVTXSHIM_HOOKS switched off
 * could never count: said, and switched off. */
static void check_markers(struct nvs_config *config, const char *const *values,
                          struct report *report)
{
    unsigned group = marker_group(config);
    if (config->frame != NVS_FRAME_OFF && group && !(config->hooks & group)) {
        report_untraced(report, "NVTXSHIM_FRAME", values[V_FRAME], group, values[V_HOOKS],
                        "frames stay off");
        config->frame = NVS_FRAME_OFF;
        config->frame_endpoint = config->frame_call = -1;
        config->frame_device[0] = '\0';
    }
    group = config->capture == NVS_CAPTURE_CALLS
        ? nvs_hook_group((enum nvs_hook_id)config->capture_call)
        : 0;
    if (group && !(config->hooks & group)) {
        report_untraced(report, "NVTXSHIM_CAPTURE", values[V_CAPTURE], group, values[V_HOOKS],
                        "capture stays off");
        config->capture = NVS_CAPTURE_OFF;
        config->capture_call = -1;
    }
}

static void report_unknown(struct report *report, const char *entry)
{
    const char *equals = strchr(entry, '=');
    size_t name_length = equals ? (size_t)(equals - entry) : strlen(entry);
    char name_shown[SHOWN_SIZE];
    /* ", _HOOKS, _FRAME, ...": the first is shown as NVTXSHIM_HOOKS. */
    static const char known[] =
#define NVS_VARIABLE(id, name, option, argument, default_value, summary, accepted, if_bad, manual) \
    ", _" name
#include "variables.def"
#undef NVS_VARIABLE
        ;
    report->errors++;
    report_line(report, "nvtxshim: %s is not a known variable (known: " PREFIX "%s); ignored",
                nvs_config_shown(name_shown, entry, name_length), known + 3);
}

NVS_ONCE static int parse(struct nvs_config *config, bool zeroed, char *const *envp,
                          nvs_config_report_fn report_fn, void *context)
{
    struct report report = { report_fn, context, 0 };
    const char *values[V_COUNT] = { 0 };

    set_defaults(config, zeroed);
    for (char *const *entry = envp; entry && *entry; entry++) {
        if (strncmp(*entry, PREFIX, sizeof PREFIX - 1))
            continue;
        /* The nvtxshim command's, not the library's: where the library is. */
        static const char command_library[] = "NVTXSHIM_LIBRARY=";
        if (!strncmp(*entry, command_library, sizeof command_library - 1))
            continue;
        bool known = false;
        for (int v = 0; v < V_COUNT; v++) {
            size_t length = strlen(variables[v].name);
            if (!strncmp(*entry, variables[v].name, length) && (*entry)[length] == '=') {
                values[v] = *entry + length + 1;
                known = true;
                break;
            }
        }
        if (!known)
            report_unknown(&report, *entry);
    }
    for (int v = 0; v < V_COUNT; v++) {
        /* An empty value means the variable is unset, as in `NVTXSHIM_FRAME= prog`. */
        if (!values[v] || values[v][0] == '\0')
            continue;
        struct why why = { NULL, "" };
        if (!apply((enum variable)v, values[v], config, &why))
            report_bad(&report, variables[v].name, values[v], &why, variables[v].accepted,
                       variables[v].consequence);
    }
    check_markers(config, values, &report);
    if (config->capture == NVS_CAPTURE_FRAMES && config->frame == NVS_FRAME_OFF) {
        char capture_shown[SHOWN_SIZE];
        report.errors++;
        report_line(&report,
                    "nvtxshim: NVTXSHIM_CAPTURE=%s counts frames, but NVTXSHIM_FRAME "
                    "is off (set it to the call that begins a frame); capture stays off",
                    nvs_config_shown(capture_shown, values[V_CAPTURE], strlen(values[V_CAPTURE])));
        config->capture = NVS_CAPTURE_OFF;
    }
    for (char *const *entry = envp; entry && *entry; entry++) {
        static const char injection[] = "NVTX_INJECTION64_PATH=", display[] = "DISPLAY=";
        if (!strncmp(*entry, injection, sizeof injection - 1))
            snprintf(config->nvtx_injection_path, sizeof config->nvtx_injection_path, "%s",
                     *entry + sizeof injection - 1);
        else if (!strncmp(*entry, display, sizeof display - 1))
            snprintf(config->display, sizeof config->display, "%s", *entry + sizeof display - 1);
    }
    return report.errors;
}

NVS_ONCE int nvs_config_parse(struct nvs_config *config, char *const *envp,
                              nvs_config_report_fn report_fn, void *context)
{
    return parse(config, false, envp, report_fn, context);
}

static struct nvs_config process_config;
static char process_messages[4096];
/* 0: not read, 1: being read, 2: read. Not pthread_once: that wakes waiters
 * with a futex call even when there are none, in every process at load. */
static _Atomic int process_state NVS_ONCE_DATA;

static void collect_message(const char *line, void *context)
{
    (void)context;
    /* Whole lines only: a line cut short would run into the program's own output. */
    size_t used = strlen(process_messages), length = strlen(line);
    if (length < sizeof process_messages - used)
        memcpy(process_messages + used, line, length + 1);
}

NVS_ONCE static void parse_process_config(void)
{
    /* Secure execution (set-user-ID, set-group-ID or file capabilities): the
     * environment is the caller's, not the program's owner's. No NVTXSHIM_*
     * variable is read, nothing is traced, and no file is written. */
    if (getauxval(AT_SECURE)) {
        char *const nothing[] = { NULL };
        parse(&process_config, true, nothing, NULL, NULL);
        process_config.hooks = 0;
        return;
    }
    parse(&process_config, true, environ, collect_message, NULL);
    /* A relative trace path names a file in the directory the process started
     * in, not wherever it has moved to when the first event comes. */
    char *path = process_config.trace_path;
    if (path[0] && path[0] != '/') {
        char absolute[NVS_PATH_MAX];
        if (getcwd(absolute, sizeof absolute) &&
            strlen(absolute) + 1 + strlen(path) < sizeof process_config.trace_path) {
            strcat(absolute, "/");
            strcat(absolute, path);
            strcpy(path, absolute);
        }
    }
}

const struct nvs_config *nvs_config(void)
{
    if (__builtin_expect(atomic_load_explicit(&process_state, memory_order_acquire) == 2, 1))
        return &process_config;
    int expected = 0;
    if (atomic_compare_exchange_strong(&process_state, &expected, 1)) {
        parse_process_config();
        atomic_store_explicit(&process_state, 2, memory_order_release);
    } else {
        while (atomic_load_explicit(&process_state, memory_order_acquire) != 2)
            sched_yield();
    }
    return &process_config;
}

const char *nvs_config_messages(void)
{
    nvs_config();
    return process_messages;
}
