/* Unit tests of the NVTXSHIM_* parser (libnvtxshim/config.c), run alone. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "registry/registry.h"

static char lines[4096];
static int line_count;

static void collect(const char *line, void *context)
{
    (void)context;
    strncat(lines, line, sizeof lines - strlen(lines) - 1);
    line_count++;
}

/* Parses one variable assignment (or none) into CONFIG; returns the error count. */
static int parse1(struct nvs_config *config, const char *assignment)
{
    char copy[512];
    snprintf(copy, sizeof copy, "%s", assignment ? assignment : "");
    char *envp[] = { "PATH=/bin", assignment ? copy : NULL, NULL };
    lines[0] = '\0';
    line_count = 0;
    return nvs_config_parse(config, envp, collect, NULL);
}

/* Two assignments: a capture by frames needs NVTXSHIM_FRAME as well. */
static int parse2(struct nvs_config *config, const char *first, const char *second)
{
    char one[512], two[512];
    snprintf(one, sizeof one, "%s", first);
    snprintf(two, sizeof two, "%s", second);
    char *envp[] = { "PATH=/bin", one, two, NULL };
    lines[0] = '\0';
    line_count = 0;
    return nvs_config_parse(config, envp, collect, NULL);
}

static void good(const char *assignment)
{
    struct nvs_config config;
    int errors = parse1(&config, assignment);
    if (errors || line_count) {
        failed++;
        printf("FAIL good value rejected: %s -> %s", assignment, lines);
    } else {
        passed++;
    }
}

/* A bad value: one line naming the variable and the value, listing what is accepted. */
static void bad(const char *assignment, const char *accepted_hint)
{
    struct nvs_config config;
    int errors = parse1(&config, assignment);
    char variable[128], value[256];
    const char *equals = strchr(assignment, '=');
    snprintf(variable, sizeof variable, "%.*s", (int)(equals - assignment), assignment);
    snprintf(value, sizeof value, "'%s'", equals + 1);
    bool ok = errors == 1 && line_count == 1 && !strncmp(lines, "nvtxshim: ", 10) &&
              strstr(lines, variable) && strstr(lines, value) && strstr(lines, accepted_hint) &&
              strchr(lines, '\n') == lines + strlen(lines) - 1;
    if (ok) passed++;
    else { failed++; printf("FAIL bad value %s: %d line(s): %s\n", assignment, line_count, lines); }
}

static void test_defaults(void)
{
    struct nvs_config config;
    CHECK(parse1(&config, NULL) == 0);
    CHECK(config.hooks == NVS_HOOKS_ALL);
    CHECK(config.frame == NVS_FRAME_OFF && config.frame_budget_ns == 0);
    CHECK(config.capture == NVS_CAPTURE_OFF && config.capture_via == NVS_VIA_BOTH);
    CHECK(!strcmp(config.capture_message, "capture") && !strcmp(config.capture_domain, "nvtxshim"));
    CHECK(config.trace_path[0] == '\0' && !config.kernel && !config.help);
    CHECK(config.log == NVS_LOG_INFO);
    CHECK(parse1(&config, "NVTXSHIM_FRAME=") == 0 && config.frame == NVS_FRAME_OFF);
}

static void test_values(void)
{
    struct nvs_config c;
    parse1(&c, "NVTXSHIM_HOOKS=usb,cuda"); CHECK(c.hooks == (NVS_HOOKS_USB | NVS_HOOKS_CUDA));
    parse1(&c, "NVTXSHIM_HOOKS=none"); CHECK(c.hooks == 0);
    parse1(&c, "NVTXSHIM_HOOKS=x11"); CHECK(c.hooks == NVS_HOOKS_X11);
    parse1(&c, "NVTXSHIM_FRAME=usb.in"); CHECK(c.frame == NVS_FRAME_USB_IN && c.frame_endpoint == -1);
    parse1(&c, "NVTXSHIM_FRAME=usb.in:0x81"); CHECK(c.frame == NVS_FRAME_USB_IN && c.frame_endpoint == 0x81);
    parse1(&c, "NVTXSHIM_FRAME=usb.in:3"); CHECK(c.frame_endpoint == 0x83);
    parse1(&c, "NVTXSHIM_FRAME=usb.out:2"); CHECK(c.frame == NVS_FRAME_USB_OUT && c.frame_endpoint == 0x02);
    parse1(&c, "NVTXSHIM_FRAME=x11.swap"); CHECK(c.frame == NVS_FRAME_X11_SWAP);
    parse1(&c, "NVTXSHIM_FRAME=cuda.dtoh"); CHECK(c.frame == NVS_FRAME_CUDA_DTOH);
    parse1(&c, "NVTXSHIM_FRAME=call:libusb_bulk_transfer");
    CHECK(c.frame == NVS_FRAME_CALL && c.frame_call == NVS_HOOK_ID(libusb_bulk_transfer));
    parse1(&c, "NVTXSHIM_FRAME_BUDGET=33ms"); CHECK(c.frame_budget_ns == 33000000);
    parse1(&c, "NVTXSHIM_FRAME_BUDGET=16.7ms"); CHECK(c.frame_budget_ns == 16700000);
    parse1(&c, "NVTXSHIM_FRAME_BUDGET=500us"); CHECK(c.frame_budget_ns == 500000);
    parse1(&c, "NVTXSHIM_FRAME_BUDGET=2s"); CHECK(c.frame_budget_ns == 2000000000);
    CHECK(parse2(&c, "NVTXSHIM_FRAME=usb.out", "NVTXSHIM_CAPTURE=frames:100+5") == 0);
    CHECK(c.capture == NVS_CAPTURE_FRAMES && c.capture_start == 100 && c.capture_count == 5 &&
          c.capture_period == 0);
    parse2(&c, "NVTXSHIM_FRAME=usb.out", "NVTXSHIM_CAPTURE=frames:7");
    CHECK(c.capture_start == 7 && c.capture_count == 1);
    CHECK(parse2(&c, "NVTXSHIM_FRAME=x11.swap", "NVTXSHIM_CAPTURE=frames:3+2/10") == 0);
    CHECK(c.capture == NVS_CAPTURE_FRAMES && c.capture_start == 3 && c.capture_count == 2 &&
          c.capture_period == 10);
    parse2(&c, "NVTXSHIM_FRAME=x11.swap", "NVTXSHIM_CAPTURE=frames:3+2/2"); CHECK(c.capture_period == 2);
    /* Frames without NVTXSHIM_FRAME: one line naming both, capture off. */
    CHECK(parse1(&c, "NVTXSHIM_CAPTURE=frames:5+2") == 1 && line_count == 1 &&
          strstr(lines, "NVTXSHIM_CAPTURE=frames:5+2") && strstr(lines, "NVTXSHIM_FRAME") &&
          c.capture == NVS_CAPTURE_OFF);
    parse1(&c, "NVTXSHIM_CAPTURE=calls:libusb_submit_transfer:10+3");
    CHECK(c.capture == NVS_CAPTURE_CALLS && c.capture_call == NVS_HOOK_ID(libusb_submit_transfer) &&
          c.capture_start == 10 && c.capture_count == 3);
    parse1(&c, "NVTXSHIM_CAPTURE=time:2s+500ms");
    CHECK(c.capture == NVS_CAPTURE_TIME && c.capture_delay_ns == 2000000000 &&
          c.capture_duration_ns == 500000000);
    parse1(&c, "NVTXSHIM_CAPTURE=time:0s"); CHECK(c.capture == NVS_CAPTURE_TIME && c.capture_duration_ns == 0);
    parse1(&c, "NVTXSHIM_CAPTURE=signal"); CHECK(c.capture == NVS_CAPTURE_SIGNAL && c.capture_signal == SIGUSR1);
    parse1(&c, "NVTXSHIM_CAPTURE=signal:USR2"); CHECK(c.capture_signal == SIGUSR2);
    parse1(&c, "NVTXSHIM_CAPTURE=signal:SIGHUP"); CHECK(c.capture_signal == SIGHUP);
    parse1(&c, "NVTXSHIM_CAPTURE_VIA=nvtx"); CHECK(c.capture_via == NVS_VIA_NVTX);
    parse1(&c, "NVTXSHIM_CAPTURE_VIA=cuda"); CHECK(c.capture_via == NVS_VIA_CUDA);
    parse1(&c, "NVTXSHIM_CAPTURE_NAME=grab@rig");
    CHECK(!strcmp(c.capture_message, "grab") && !strcmp(c.capture_domain, "rig"));
    parse1(&c, "NVTXSHIM_CAPTURE_NAME=a@b@rig");
    CHECK(!strcmp(c.capture_message, "a@b") && !strcmp(c.capture_domain, "rig"));
    parse1(&c, "NVTXSHIM_TRACE=/tmp/out-%p.json"); CHECK(!strcmp(c.trace_path, "/tmp/out-%p.json"));
    parse1(&c, "NVTXSHIM_KERNEL=on"); CHECK(c.kernel && c.kernel_min_interval_ns == 1000000);
    parse1(&c, "NVTXSHIM_KERNEL=on:2.5ms"); CHECK(c.kernel && c.kernel_min_interval_ns == 2500000);
    parse1(&c, "NVTXSHIM_KERNEL=off"); CHECK(!c.kernel);
    parse1(&c, "NVTXSHIM_LOG=debug"); CHECK(c.log == NVS_LOG_DEBUG);
    parse1(&c, "NVTXSHIM_LOG=quiet"); CHECK(c.log == NVS_LOG_QUIET);
    parse1(&c, "NVTXSHIM_HELP=1"); CHECK(c.help);
    parse1(&c, "NVTX_INJECTION64_PATH=/opt/tool.so"); CHECK(!strcmp(c.nvtx_injection_path, "/opt/tool.so"));
}

static void test_good_values_say_nothing(void)
{
    static const char *const values[] = {
        "NVTXSHIM_HOOKS=all", "NVTXSHIM_HOOKS=usb,x11,cuda", "NVTXSHIM_FRAME=off",
        "NVTXSHIM_FRAME=usb.out", "NVTXSHIM_FRAME=x11.flush", "NVTXSHIM_FRAME=cuda.htod",
        "NVTXSHIM_FRAME=usb.in:0x8f", "NVTXSHIM_FRAME_BUDGET=100ns", "NVTXSHIM_CAPTURE=off",
        "NVTXSHIM_CAPTURE=signal:WINCH", "NVTXSHIM_CAPTURE_VIA=both", "NVTXSHIM_TRACE=a%%b",
        "NVTXSHIM_KERNEL=off", "NVTXSHIM_LOG=info", "NVTXSHIM_HELP=0", NULL,
    };
    for (int i = 0; values[i]; i++)
        good(values[i]);
}

static void test_bad_values_fall_back(void)
{
    struct nvs_config c;
    parse1(&c, "NVTXSHIM_HOOKS=usb,,x11"); CHECK(c.hooks == 0);
    parse1(&c, "NVTXSHIM_FRAME=call:printf"); CHECK(c.frame == NVS_FRAME_OFF && c.frame_call == -1);
    parse1(&c, "NVTXSHIM_FRAME=call:execve"); CHECK(c.frame == NVS_FRAME_OFF);
    parse1(&c, "NVTXSHIM_FRAME_BUDGET=fast"); CHECK(c.frame_budget_ns == 0);
    parse1(&c, "NVTXSHIM_CAPTURE=frames:5+0"); CHECK(c.capture == NVS_CAPTURE_OFF);
    parse1(&c, "NVTXSHIM_CAPTURE_NAME=@rig");
    CHECK(!strcmp(c.capture_message, "capture") && !strcmp(c.capture_domain, "nvtxshim"));
    parse1(&c, "NVTXSHIM_TRACE=/tmp/%d.json"); CHECK(c.trace_path[0] == '\0');
    parse1(&c, "NVTXSHIM_KERNEL=yes"); CHECK(!c.kernel);
}

static void test_bad_values_report(void)
{
    bad("NVTXSHIM_HOOKS=usb,gpu", "usb, x11, cuda");
    bad("NVTXSHIM_HOOKS=USB", "none");
    bad("NVTXSHIM_FRAME=usb.inn", "usb.in[:EP]");
    bad("NVTXSHIM_FRAME=usb.in:0x02", "usb.in[:EP]");
    bad("NVTXSHIM_FRAME=usb.out:0x81", "usb.out[:EP]");
    bad("NVTXSHIM_FRAME=usb.in:16", "usb.in[:EP]");
    bad("NVTXSHIM_FRAME=usb.in:0", "usb.in[:EP]");
    bad("NVTXSHIM_FRAME=usb.in:", "usb.in[:EP]");
    bad("NVTXSHIM_FRAME=call:", "call:NAME");
    bad("NVTXSHIM_FRAME=call:libusb_init", "call:NAME");
    bad("NVTXSHIM_FRAME=x11", "x11.swap");
    bad("NVTXSHIM_FRAME_BUDGET=33", "33ms");
    bad("NVTXSHIM_FRAME_BUDGET=0ms", "positive");
    bad("NVTXSHIM_FRAME_BUDGET=-5ms", "33ms");
    bad("NVTXSHIM_FRAME_BUDGET=3.ms", "33ms");
    bad("NVTXSHIM_FRAME_BUDGET=10min", "33ms");
    bad("NVTXSHIM_FRAME_BUDGET=99999999999999999999s", "33ms");
    bad("NVTXSHIM_CAPTURE=frames", "frames:S[+C]");
    bad("NVTXSHIM_CAPTURE=frames:0", "frames:S[+C]");
    bad("NVTXSHIM_CAPTURE=frames:10+", "frames:S[+C]");
    bad("NVTXSHIM_CAPTURE=frames:x+3", "frames:S[+C]");
    bad("NVTXSHIM_CAPTURE=frames:3+4/2", "frames:S+C/P");
    bad("NVTXSHIM_CAPTURE=frames:3/5", "frames:S+C/P");
    bad("NVTXSHIM_CAPTURE=frames:3+2/x", "frames:S+C/P");
    bad("NVTXSHIM_CAPTURE=calls:libusb_bulk_transfer", "calls:NAME:S[+C]");
    bad("NVTXSHIM_CAPTURE=calls:nothing:3", "calls:NAME:S[+C]");
    bad("NVTXSHIM_CAPTURE=time:5", "time:DELAY[+DURATION]");
    bad("NVTXSHIM_CAPTURE=time:1s+0s", "time:DELAY[+DURATION]");
    bad("NVTXSHIM_CAPTURE=signal:KILL", "signal[:USR1");
    bad("NVTXSHIM_CAPTURE=always", "off");
    bad("NVTXSHIM_CAPTURE_VIA=nsys", "nvtx, cuda, both");
    bad("NVTXSHIM_KERNEL=on:", "on:THRESHOLD");
    bad("NVTXSHIM_KERNEL=on:5", "on:THRESHOLD");
    bad("NVTXSHIM_KERNEL=yes", "off, on");
    bad("NVTXSHIM_CAPTURE_NAME=capture", "MESSAGE@DOMAIN");
    bad("NVTXSHIM_CAPTURE_NAME=capture@", "MESSAGE@DOMAIN");
    bad("NVTXSHIM_TRACE=/tmp/x%", "%p");
    bad("NVTXSHIM_TRACE=/tmp/%s.json", "%p");
    bad("NVTXSHIM_KERNEL=1", "off, on");
    bad("NVTXSHIM_LOG=verbose", "quiet, info, debug");
    bad("NVTXSHIM_HELP=yes", "0, 1");
}

/* A value with control characters: one line, the value escaped in it (\\n, \\x1b...), no
 * control character but the line's own newline, the feature at its default. */
static void bad_escaped(const char *assignment, const char *escaped, const char *accepted_hint)
{
    struct nvs_config config;
    int errors = parse1(&config, assignment);
    bool clean = true;
    for (const char *c = lines; *c; c++)
        clean &= ((unsigned char)*c >= 0x20 && *c != 0x7f) || c == lines + strlen(lines) - 1;
    bool ok = errors == 1 && line_count == 1 && !strncmp(lines, "nvtxshim: ", 10) && clean &&
              strstr(lines, escaped) && strstr(lines, accepted_hint) &&
              lines[strlen(lines) - 1] == '\n';
    if (ok) passed++;
    else { failed++; printf("FAIL escaped value %s: %d line(s): %s\n", escaped, line_count, lines); }
}

static void test_values_are_escaped_in_messages(void)
{
    struct nvs_config c;
    bad_escaped("NVTXSHIM_CAPTURE_NAME=a\nb@rig", "'a\\nb@rig'", "no control characters");
    parse1(&c, "NVTXSHIM_CAPTURE_NAME=\x1b[2Jgrab@rig");
    CHECK(!strcmp(c.capture_message, "capture") && !strcmp(c.capture_domain, "nvtxshim"));
    bad_escaped("NVTXSHIM_CAPTURE_NAME=\x1b[2Jgrab@rig", "'\\x1b[2Jgrab@rig'", "MESSAGE@DOMAIN");
    bad_escaped("NVTXSHIM_CAPTURE_NAME=grab@r\tig", "'grab@r\\tig'", "MESSAGE@DOMAIN");
    bad_escaped("NVTXSHIM_TRACE=/tmp/a\nb.json", "'/tmp/a\\nb.json'", "without control characters");
    parse1(&c, "NVTXSHIM_TRACE=/tmp/a\rb.json"); CHECK(c.trace_path[0] == '\0');
    bad_escaped("NVTXSHIM_DEVICES=/dev/pts/\x1b", "'/dev/pts/\\x1b'", "a control character");
    bad_escaped("NVTXSHIM_FRAME=serial.in:/dev/tty\n", "'serial.in:/dev/tty\\n'", "serial.in[:PATH]");
    bad_escaped("NVTXSHIM_LOG=\x7f\x01", "'\\x7f\\x01'", "quiet, info, debug");
    /* A line that echoes a value besides a bad one's: a marker whose calls NVTXSHIM_HOOKS
     * leaves untraced (here a bad list, which hooks nothing) echoes both. */
    struct nvs_config config;
    char *envp[] = { "NVTXSHIM_HOOKS=usb\x1b[2J", "NVTXSHIM_FRAME=v4l2.in", NULL };
    lines[0] = '\0';
    line_count = 0;
    CHECK(nvs_config_parse(&config, envp, collect, NULL) == 2 && line_count == 2);
    CHECK(strstr(lines, "NVTXSHIM_HOOKS=usb\\x1b[2J leaves them untraced") && !strchr(lines, 0x1b));
    CHECK(parse1(&config, "NVTXSHIM_CAPTURE=frames:5\n") == 1 && line_count == 1 &&
          !strstr(lines, "frames:5\n") && strstr(lines, "'frames:5\\n'"));
}

static void test_globs(void)
{
    static const char *const well_formed[] = {
        "/dev/ttyACM0", "/dev/pts/*", "/dev/i2c-*", "/dev/spidev?.?", "/dev/ttyUSB[0-3]",
        "/dev/tty[!0-9]x", "/dev/tty[^a]", "/dev/x[]]", "/dev/x[!]]", "/dev/x[]a-]", "/dev/x[a-]",
        "/dev/[[]", "/dev/a]b", "/dev/x[-a]", NULL,
    };
    for (int i = 0; well_formed[i]; i++) {
        const char *problem = nvs_glob_problem(well_formed[i], strlen(well_formed[i]));
        if (problem) { failed++; printf("FAIL glob %s: %s\n", well_formed[i], problem); }
        else passed++;
    }
    static const struct { const char *glob, *problem; } malformed[] = {
        { "/dev/tty[", "without its ']'" },     { "/dev/tty[0-", "without its ']'" },
        { "/dev/tty[]", "without its ']'" },    { "/dev/tty[!]", "without its ']'" },
        { "/dev/tty[^", "without its ']'" },    { "/dev/tty[0-9]x[", "without its ']'" },
        { "/dev/[a/b]", "'/' inside" },         { "/dev/tty[!/]", "'/' inside" },
        { "/dev/tty[.-/]", "'/' inside" },      { "/dev/tty[9-0]", "higher character" },
        { "/dev/tty[a-Z]", "higher character" }, { "dev/tty0", "absolute" },
        { "", "absolute" },                     { "/", "root" },
        { "/dev/tty\n", "control" },            { "/dev/\x1b[0]", "control" },
        { NULL, NULL },
    };
    for (int i = 0; malformed[i].glob; i++) {
        const char *problem = nvs_glob_problem(malformed[i].glob, strlen(malformed[i].glob));
        if (problem && strstr(problem, malformed[i].problem)) passed++;
        else { failed++; printf("FAIL glob %s: %s\n", malformed[i].glob, problem ? problem : "accepted"); }
    }
    /* Only LENGTH bytes count: an entry of a comma list. */
    CHECK(nvs_glob_problem("/dev/tty[0],/x", 11) == NULL);
    CHECK(nvs_glob_problem("/dev/tty[0],/x]", 10) != NULL);

    struct nvs_config c;
    good("NVTXSHIM_DEVICES=/dev/pts/*,/dev/ttyACM[0-3],/dev/x[]]");
    bad("NVTXSHIM_DEVICES=/dev/tty[", "closed by its ]");
    parse1(&c, "NVTXSHIM_DEVICES=/dev/tty[");
    CHECK(c.devices[0] == '\0' && strstr(lines, "a '[' without its ']'"));
    bad("NVTXSHIM_DEVICES=/dev/pts/*,/dev/ttyUSB[0-", "absolute path globs");
    parse1(&c, "NVTXSHIM_DEVICES=/dev/pts/*,/dev/ttyUSB[0-,/dev/i2c-*");
    CHECK(c.devices[0] == '\0' && strstr(lines, "'/dev/ttyUSB[0-': a '[' without its ']'"));
    bad("NVTXSHIM_DEVICES=/dev/i2c-[9-0]", "absolute path globs");
    bad("NVTXSHIM_DEVICES=/dev/[a/b]", "absolute path globs");
    bad("NVTXSHIM_DEVICES=/dev/pts/0,", "absolute path globs");
    good("NVTXSHIM_FRAME=serial.in:/dev/ttyACM[0-3]");
    good("NVTXSHIM_FRAME=v4l2.in:/dev/video*");
    static const char *const markers[] = {
        "v4l2.in", "serial.in", "serial.out", "hid.in", "hid.out", NULL,
    };
    for (int i = 0; markers[i]; i++) {
        char assignment[128];
        snprintf(assignment, sizeof assignment, "NVTXSHIM_FRAME=%s:/dev/tty[", markers[i]);
        bad(assignment, "closed by its ]");
        parse1(&c, assignment);
        CHECK(c.frame == NVS_FRAME_OFF && c.frame_device[0] == '\0' &&
              strstr(lines, "a '[' without its ']'"));
    }
    bad("NVTXSHIM_FRAME=hid.in:/dev/hidraw[1-0]", "hid.in[:PATH]");
    bad("NVTXSHIM_FRAME=v4l2.in:/dev/[a/b]", "v4l2.in[:PATH]");
}

static void test_unknown_variable(void)
{
    struct nvs_config config;
    CHECK(parse1(&config, "NVTXSHIM_FRAMES=usb.in") == 1);
    CHECK(line_count == 1 && strstr(lines, "NVTXSHIM_FRAMES is not a known variable"));
    CHECK(config.frame == NVS_FRAME_OFF);
    CHECK(parse1(&config, "NVTXSHIMX=1") == 0);
}

static void test_several_bad_variables_one_line_each(void)
{
    struct nvs_config config;
    char *envp[] = { "NVTXSHIM_FRAME=bogus", "NVTXSHIM_LOG=loud", "NVTXSHIM_TRACE=/tmp/t.json",
                     "NVTXSHIM_CAPTURE=frames:0", NULL };
    lines[0] = '\0';
    line_count = 0;
    CHECK(nvs_config_parse(&config, envp, collect, NULL) == 3);
    CHECK(line_count == 3);
    CHECK(!strcmp(config.trace_path, "/tmp/t.json"));
}

int main(void)
{
    test_defaults();
    test_values();
    test_good_values_say_nothing();
    test_bad_values_fall_back();
    test_bad_values_report();
    test_values_are_escaped_in_messages();
    test_globs();
    test_unknown_variable();
    test_several_bad_variables_one_line_each();
    return check_summary("config");
}
