/* nvtxshim run: options become NVTXSHIM_* variables, the library is appended to
 * LD_PRELOAD, and the program is exec'd; with a trace file it runs as a child
 * instead, so that a run that traced nothing is said at its end (run_trace.h).
 * The options, their manual entries and the parsing of a command line are
 * shared with profile (cli/commands/profile.c), which starts the program under a
 * watched nsys profile (run.h). */
#define _GNU_SOURCE
#include "commands/run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands/child.h"
#include "commands/commands.h"
#include "commands/options.h"
#include "commands/run_trace.h"
#include "commands/top.h"

extern char **environ;

/* One line per NVTXSHIM_* variable: its option, and the text of its manual entry. */
struct variable_option {
    const char *option;
    const char *argument; /* NULL: a switch */
    const char *variable;
    const char *description;
};

/* From the library's list of its variables, in its order. */
static const struct variable_option variable_options[] = {
#define NVS_VARIABLE(id, name, option, argument, default_value, summary, accepted, if_bad, manual) \
    { option, argument, "NVTXSHIM_" name, manual },
#include "variables.def"
#undef NVS_VARIABLE
};
#define VARIABLE_COUNT (sizeof variable_options / sizeof variable_options[0])
_Static_assert(VARIABLE_COUNT <= NVS_LAUNCH_VARIABLES_MAX,
               "NVS_LAUNCH_VARIABLES_MAX (run.h) is too small");

enum {
    OPTION_VARIABLE = 1000, /* + index into variable_options */
    OPTION_LIBRARY = 2000,
    OPTION_APIS,
    OPTION_CPU_SAMPLING,
    OPTION_NSYS,
    OPTION_TIMEOUT,
    OPTION_FINISH_TIMEOUT,
    OPTION_BARE,
    OPTION_TOP,
};

static void print_indented(FILE *out, const char *text, const char *indent)
{
    fputs(indent, out);
    for (const char *c = text; *c; c++) {
        fputc(*c, out);
        if (*c == '\n')
            fputs(indent, out);
    }
    fputc('\n', out);
}

void nvs_launch_print_variable_options(FILE *out, bool profile)
{
    for (size_t i = 0; i < VARIABLE_COUNT; i++) {
        const struct variable_option *o = &variable_options[i];
        if (profile && !strcmp(o->option, "trace"))
            continue;
        if (!strcmp(o->option, "kernel"))
            fprintf(out, "    --kernel, --kernel=THRESHOLD\n");
        else if (o->argument)
            fprintf(out, "    --%s %s\n", o->option, o->argument);
        else
            fprintf(out, "    --%s\n", o->option);
        print_indented(out, o->description, "        ");
        if (!strcmp(o->option, "kernel"))
            fprintf(out, "        Sets %s=on, or on:THRESHOLD.\n\n", o->variable);
        else if (o->argument)
            fprintf(out, "        Sets %s.\n\n", o->variable);
        else
            fprintf(out, "        Sets %s=1.\n\n", o->variable);
    }
}

static void help_run(void)
{
    fputs("NAME\n"
          "    nvtxshim run - run a program with libnvtxshim in front of it\n"
          "\n"
          "SYNOPSIS\n"
          "    nvtxshim run [OPTIONS] [--] PROGRAM [ARGS...]\n"
          "\n"
          "DESCRIPTION\n"
          "    Appends the library to LD_PRELOAD - what is there already, such as umockdev's,\n"
          "    nsys's or a sanitizer's preload library, stays in front - sets each option below\n"
          "    as the NVTXSHIM_* variable it names, and replaces itself with PROGRAM (exec):\n"
          "    the program keeps this process id, and its output and exit status are its own.\n"
          "    NVTXSHIM_* variables already in the environment apply too; an option wins.\n"
          "    All values are checked as the library checks them before PROGRAM starts, and a\n"
          "    bad one stops here with the library's message.\n"
          "\n"
          "    --trace FILE writes the JSON form (FILE.json: Chrome's trace format), or, for a\n"
          "    FILE ending .pftrace, the compact binary form (Perfetto's protobuf trace,\n"
          "    docs/pftrace.md): the same events in fewer bytes. ui.perfetto.dev\n"
          "    opens both, and nvtxshim report reads both.\n"
          "\n"
          "    The library creates the file at its first event, so a program that made no\n"
          "    call it traces leaves none. With a trace file (--trace, or NVTXSHIM_TRACE in\n"
          "    the environment) PROGRAM therefore runs as a child of this command, which\n"
          "    says so in one line at the end when no file the trace's name can give (with\n"
          "    %p as any process id, or NAME.PID.EXT) was written or changed, and why that\n"
          "    usually is: a device file other than a V4L2 camera, a USB serial port,\n"
          "    hidraw, usbfs or an I2C node (a pty, /dev/ttyS*) is traced only when\n"
          "    --devices names it. The signals sent to this command, SIGKILL and SIGSTOP\n"
          "    aside, are passed on to PROGRAM (those a terminal sends reach it anyway); the\n"
          "    output and exit status are still PROGRAM's, and a PROGRAM killed by a signal\n"
          "    ends this command by the same signal.\n"
          "\n"
          "    The library is --library PATH, else $NVTXSHIM_LIBRARY (which PROGRAM does not\n"
          "    inherit), else libnvtxshim.so beside this command (the build directory), else\n"
          "    ../lib/libnvtxshim.so from it (make install).\n"
          "\n"
          "OPTIONS\n",
          stdout);
    nvs_launch_print_variable_options(stdout, false);
    fputs(
        "    --library PATH\n"
        "        The library to preload (see DESCRIPTION).\n"
        "\n"
        "    -n, --dry-run\n"
        "        Print the command, as a shell line with its environment, and exit 0.\n"
        "\n"
        "    --top\n"
        "        Run PROGRAM as a child instead, and show its trace live until it ends\n"
        "        (nvtxshim top --help): the trace is --trace's file, else a temporary\n"
        "        .pftrace removed at the end. The exit status is still PROGRAM's.\n"
        "\n"
        "    -h, --help\n"
        "        This page.\n"
        "\n"
        "EXIT STATUS\n"
        "    PROGRAM's own (killed by a signal: the same signal). Before PROGRAM starts: 2 for\n"
        "    a usage error or a bad value, 125 when the library is not found, 126 when PROGRAM\n"
        "    cannot be executed, 127 when it is not found.\n"
        "\n"
        "EXAMPLES\n"
        "    nvtxshim run --frame usb.in:0x81 --frame-budget 33ms --trace rig-%p.json -- ./camera_loop\n"
        "    nvtxshim run --frame x11.swap --trace gui.pftrace -- glxgears\n"
        "    nvtxshim run --hooks usb --kernel --trace loop.json -- python3 my_pyusb_loop.py\n"
        "    nvtxshim run --frame call:libusb_control_transfer --trace t.json -- \\\n"
        "        build/emucam -- build/harness_physical --frames 100   (the emulated camera)\n",
        stdout);
}

int nvs_launch_usage_error(const struct nvs_launch *launch, const char *format, const char *detail)
{
    fprintf(stderr, "nvtxshim %s: ", launch->command);
    fprintf(stderr, format, detail);
    fprintf(stderr, " (nvtxshim %s --help)\n", launch->command);
    return 2;
}

static bool parse_seconds(const char *text, double *seconds)
{
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (errno || end == text || *end || !(value >= 0) || value > 1e9)
        return false;
    *seconds = value;
    return true;
}

static void launch_manual(void *context)
{
    const struct nvs_launch *launch = context;
    launch->help();
}

/* An option that sets a variable: VALUE its value (NULL: none given). */
static int variable_option(struct nvs_launch *launch, size_t index, const char *value)
{
    const char *name = variable_options[index].option;
    if (launch->profile && !strcmp(name, "trace"))
        return nvs_launch_usage_error(launch,
                                      "%s: under nsys the events go to nsys, not "
                                      "to a trace file (nvtxshim run --trace writes one)",
                                      "--trace");
    if (!strcmp(name, "kernel")) {
        static char kernel_value[256];
        if (!value || !strcmp(value, "on") || !strcmp(value, "off") || !strncmp(value, "on:", 3))
            launch->values[index] = value ? value : "on";
        else {
            snprintf(kernel_value, sizeof kernel_value, "on:%s", value);
            launch->values[index] = kernel_value;
        }
    } else {
        launch->values[index] = variable_options[index].argument ? value : "1";
    }
    return -1;
}

static int launch_option(void *context, int id, const char *value)
{
    struct nvs_launch *launch = context;
    switch (id) {
    case 'n': launch->dry_run = true; break;
    case OPTION_TOP: launch->top = true; break;
    case 'o': launch->output = value; break;
    case 'f': launch->force = true; break;
    case OPTION_LIBRARY: launch->library = value; break;
    case OPTION_APIS: launch->apis = value; break;
    case OPTION_CPU_SAMPLING: launch->cpu_sampling = true; break;
    case OPTION_NSYS: launch->nsys = value; break;
    case OPTION_BARE: launch->bare = true; break;
    case OPTION_TIMEOUT:
    case OPTION_FINISH_TIMEOUT:
        if (!parse_seconds(value,
                           id == OPTION_TIMEOUT ? &launch->timeout_s : &launch->finish_timeout_s))
            return nvs_launch_usage_error(launch, "'%s' is not a number of seconds", value);
        break;
    default: return variable_option(launch, (size_t)(id - OPTION_VARIABLE), value);
    }
    return -1;
}

/* The table of run's options, or profile's: a variable's each, then the command's own. */
static void launch_options(const struct nvs_launch *launch, struct nvs_option *options)
{
    size_t n = 0;
    for (size_t i = 0; i < VARIABLE_COUNT; i++) {
        const struct variable_option *o = &variable_options[i];
        enum nvs_option_takes takes = !strcmp(o->option, "kernel") ? NVS_OPTION_OPTIONAL
            : o->argument                                          ? NVS_OPTION_VALUE
                                                                   : NVS_OPTION_FLAG;
        options[n++] = (struct nvs_option){ o->option, 0, takes, OPTION_VARIABLE + (int)i };
    }
    options[n++] = (struct nvs_option){ "library", 0, NVS_OPTION_VALUE, OPTION_LIBRARY };
    options[n++] = (struct nvs_option){ "dry-run", 'n', NVS_OPTION_FLAG, 'n' };
    if (!launch->profile)
        options[n++] = (struct nvs_option){ "top", 0, NVS_OPTION_FLAG, OPTION_TOP };
    options[n++] = (struct nvs_option){ "help", 'h', NVS_OPTION_FLAG, NVS_OPTION_HELP };
    if (launch->profile) {
        options[n++] = (struct nvs_option){ "output", 'o', NVS_OPTION_VALUE, 'o' };
        options[n++] = (struct nvs_option){ "force", 'f', NVS_OPTION_FLAG, 'f' };
        options[n++] = (struct nvs_option){ "apis", 0, NVS_OPTION_VALUE, OPTION_APIS };
        options[n++] = (struct nvs_option){ "cpu-sampling", 0, NVS_OPTION_FLAG,
                                            OPTION_CPU_SAMPLING };
        options[n++] = (struct nvs_option){ "nsys", 0, NVS_OPTION_VALUE, OPTION_NSYS };
        options[n++] = (struct nvs_option){ "timeout", 0, NVS_OPTION_VALUE, OPTION_TIMEOUT };
        options[n++] = (struct nvs_option){ "finish-timeout", 0, NVS_OPTION_VALUE,
                                            OPTION_FINISH_TIMEOUT };
        options[n++] = (struct nvs_option){ "bare", 0, NVS_OPTION_FLAG, OPTION_BARE };
    }
    options[n] = (struct nvs_option){ NULL, 0, 0, 0 };
}

int nvs_launch_parse(struct nvs_launch *launch, int argc, char **argv)
{
    struct nvs_option options[VARIABLE_COUNT + 16];
    launch_options(launch, options);
    const struct nvs_command_line line = {
        .command = launch->command,
        .options = options,
        .options_first = true,
        .unknown_by_letter = true,
        .manual = launch_manual,
        .option = launch_option,
    };
    int first;
    int status = nvs_options_read(&line, argc, argv, launch, &first);
    if (status >= 0)
        return status;

    bool separated = first > 0 && first <= argc && !strcmp(argv[first - 1], "--");
    /* profile [OPTIONS] -- NSYS_OPTIONS -- PROGRAM: nsys options begin with '-',
     * a program does not, so `profile -- emucam -- prog` runs emucam. */
    if (launch->profile && separated && first < argc && argv[first][0] == '-') {
        int end = first;
        while (end < argc && strcmp(argv[end], "--"))
            end++;
        if (end == argc)
            return nvs_launch_usage_error(launch, "%s",
                                          "nsys options after the first -- end with a "
                                          "second -- before the program");
        launch->nsys_options = argv + first;
        launch->nsys_option_count = end - first;
        first = end + 1;
    }
    if (first >= argc)
        return nvs_launch_usage_error(launch, "%s", "no program to run");
    launch->program = argv + first;
    return -1;
}

static void report_config_line(const char *line, void *context)
{
    (void)context;
    fputs(line, stderr);
}

int nvs_launch_apply_variables(const struct nvs_launch *launch, struct nvs_config *config)
{
    for (size_t i = 0; i < VARIABLE_COUNT; i++)
        if (launch->values[i] && setenv(variable_options[i].variable, launch->values[i], 1)) {
            fprintf(stderr, "nvtxshim %s: cannot set %s: %s\n", launch->command,
                    variable_options[i].variable, strerror(errno));
            return 2;
        }
    /* Ours, not the library's: it would report the name as unknown. */
    unsetenv("NVTXSHIM_LIBRARY");
    int errors = nvs_config_parse(config, environ, report_config_line, NULL);
    if (errors > 0) {
        fprintf(stderr,
                "nvtxshim %s: not started: fix what the line%s above say%s (each option "
                "sets the NVTXSHIM_* variable it names)\n",
                launch->command, errors == 1 ? "" : "s", errors == 1 ? "s" : "");
        return 2;
    }
    return -1;
}

static bool preload_has(const char *preload, const char *library)
{
    size_t length = strlen(library);
    for (const char *entry = preload; *entry;) {
        size_t entry_length = strcspn(entry, ": ");
        if (entry_length == length && !strncmp(entry, library, length))
            return true;
        entry += entry_length;
        entry += strspn(entry, ": ");
    }
    return false;
}

/* A word as a POSIX shell reads it back. */
static void print_quoted(FILE *out, const char *word)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                               "_@%+=:,./-";
    if (word[0] && strspn(word, safe) == strlen(word)) {
        fputs(word, out);
        return;
    }
    fputc('\'', out);
    for (const char *c = word; *c; c++) {
        if (*c == '\'')
            fputs("'\\''", out);
        else
            fputc(*c, out);
    }
    fputc('\'', out);
}

static void print_assignment(FILE *out, const char *name, const char *value)
{
    fprintf(out, "%s=", name);
    print_quoted(out, value);
    fputc(' ', out);
}

const char *nvs_launch_variable_option(const struct nvs_launch *launch)
{
    for (size_t i = 0; i < VARIABLE_COUNT; i++)
        if (launch->values[i])
            return variable_options[i].option;
    return NULL;
}

void nvs_launch_print_variables(const struct nvs_launch *launch)
{
    for (size_t i = 0; i < VARIABLE_COUNT; i++)
        if (launch->values[i])
            print_assignment(stdout, variable_options[i].variable, launch->values[i]);
}

void nvs_launch_print_argv(char *const *argv, int count)
{
    for (int i = 0; i < count && argv[i]; i++) {
        if (i)
            fputc(' ', stdout);
        print_quoted(stdout, argv[i]);
    }
}

int nvs_launch_find_library(const struct nvs_launch *launch, char *library, size_t size)
{
    char looked[3 * PATH_MAX];
    if (nvs_cli_find_library(launch->library, library, size, looked, sizeof looked))
        return -1;
    fprintf(stderr,
            "nvtxshim %s: %s not found (looked at %s); build it with make, or give "
            "--library PATH\n",
            launch->command, NVS_LIBRARY_NAME, looked);
    return 125;
}

/* NVTXSHIM_TRACE's value with %p as PID and %% as % (the library's own expansion). */
static void trace_path_of(const char *template, pid_t pid, char *path, size_t size)
{
    size_t used = 0;
    for (const char *c = template; *c && used + 1 < size; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            int wrote = snprintf(path + used, size - used, "%d", (int)pid);
            used += wrote > 0 ? (size_t)wrote : 0;
            c++;
        } else if (c[0] == '%' && c[1] == '%') {
            path[used++] = '%';
            c++;
        } else {
            path[used++] = *c;
        }
    }
    path[used < size ? used : size - 1] = '\0';
}

/* The signals that a run as a child passes on to PROGRAM: those sent to this
 * process, whose id would have been PROGRAM's had it been exec'd (a supervisor's
 * SIGTERM, NVTXSHIM_CAPTURE=signal's SIGUSR1). Stops are not held: a terminal's
 * ^Z must stop this command too, or the shell never sees the job stop. */
static const int passed_on[] = { SIGHUP,  SIGINT,  SIGQUIT, SIGTERM,
                                 SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH };

/* PROGRAM as a child, with this process's descriptors, dispositions and MASK;
 * a pipe that exec closes tells a failed exec from the program's own 127.
 * Returns its pid, or -1 after the line that says why, *STATUS then the exit
 * status. */
static pid_t start_program(char **program, const sigset_t *mask, int *status)
{
    int exec_error[2];
    if (pipe2(exec_error, O_CLOEXEC)) {
        fprintf(stderr, "nvtxshim run: cannot start %s: %s\n", program[0], strerror(errno));
        *status = 126;
        return -1;
    }
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        close(exec_error[0]);
        sigprocmask(SIG_SETMASK, mask, NULL);
        execvp(program[0], program);
        int error = errno;
        ssize_t unused = write(exec_error[1], &error, sizeof error);
        (void)unused;
        _exit(127);
    }
    int error = errno;
    close(exec_error[1]);
    ssize_t got = 0;
    if (child > 0) {
        while ((got = read(exec_error[0], &error, sizeof error)) < 0 && errno == EINTR)
            continue;
        if (got == (ssize_t)sizeof error) {
            while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
                continue;
        }
    }
    close(exec_error[0]);
    if (child > 0 && got != (ssize_t)sizeof error)
        return child;
    fprintf(stderr, "nvtxshim run: cannot %s %s: %s\n", child < 0 ? "start" : "run", program[0],
            strerror(error));
    *status = child > 0 && error == ENOENT ? 127 : 126;
    return -1;
}

/* Waits for CHILD, passing on to it each signal of WAITED (blocked here) that
 * was sent to this process: those a terminal sends (SI_KERNEL) went to its
 * whole process group, CHILD included. Returns CHILD's wait status. */
static int wait_passing_signals(pid_t child, const sigset_t *waited)
{
    int status = 0;
    for (;;) {
        pid_t done = waitpid(child, &status, WNOHANG);
        if (done == child)
            return status;
        if (done < 0 && errno != EINTR)
            return 127 << 8;
        siginfo_t info;
        int signal_number = sigwaitinfo(waited, &info);
        if (signal_number > 0 && signal_number != SIGCHLD && info.si_code != SI_KERNEL)
            kill(child, signal_number);
    }
}

/* Ends as a child that STATUS says ended: its exit status, or its signal,
 * raised here without a core dump of this command. */
static int end_like(int status)
{
    if (!WIFSIGNALED(status))
        return nvs_cli_exit_status(status);
    int signal_number = WTERMSIG(status);
    struct rlimit no_core = { 0, 0 };
    setrlimit(RLIMIT_CORE, &no_core);
    signal(signal_number, SIG_DFL);
    fflush(NULL);
    raise(signal_number);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, signal_number);
    sigprocmask(SIG_UNBLOCK, &only, NULL);
    return nvs_cli_exit_status(status);
}

/* One line when a run with a trace file wrote none: what asked for it, and why
 * that usually is. Not where another NVTX tool takes the events (the library
 * says so), nor for a trace path that is no regular file (/dev/null; the
 * library says why it refused any other). */
static void say_nothing_traced(const struct nvs_launch *launch, const char *template, bool made,
                               pid_t child)
{
    char path[PATH_MAX];
    struct stat st;
    trace_path_of(template, child, path, sizeof path);
    if (getenv("NVTX_INJECTION64_PATH") || (stat(path, &st) == 0 && !S_ISREG(st.st_mode)))
        return;
    /* what asked for the trace: an option, the variable, or --top's own file */
    const char *asked = made ? "--top" : "NVTXSHIM_TRACE=";
    for (size_t i = 0; i < VARIABLE_COUNT && !made; i++)
        if (!strcmp(variable_options[i].option, "trace") && launch->values[i])
            asked = "--trace ";
    if (made)
        template = "";
    const char *program = strrchr(launch->program[0], '/');
    program = program ? program + 1 : launch->program[0];
    const char *hooks = getenv("NVTXSHIM_HOOKS"), *devices = getenv("NVTXSHIM_DEVICES");
    bool all_hooks = !hooks || !*hooks || !strcmp(hooks, "all");
    fprintf(stderr,
            "nvtxshim: run: %s%s: nothing was traced, so no trace file was written: %s made "
            "no call that the library traces (libusb, X11/GL/Vulkan, CUDA, NVTX, V4L2 cameras, USB "
            "serial ports, hidraw, usbfs, I2C%s%s%s); other device files (a pty, /dev/ttyS*) are "
            "traced only where --devices names them%s%s%s\n",
            asked, template, program, all_hooks ? "" : "; NVTXSHIM_HOOKS is '",
            all_hooks ? "" : hooks, all_hooks ? "" : "'",
            devices && *devices ? " (NVTXSHIM_DEVICES is '" : "",
            devices && *devices ? devices : "", devices && *devices ? "')" : "");
}

/* A run with a trace file: PROGRAM as a child (see help_run), then the line
 * when nothing was traced; PROGRAM's exit status, or its signal. */
static int run_traced(const struct nvs_launch *launch, const char *template)
{
    struct nvs_trace_files *before = nvs_trace_files_look(template);
    sigset_t waited, original;
    sigemptyset(&waited);
    sigaddset(&waited, SIGCHLD);
    for (size_t i = 0; i < sizeof passed_on / sizeof passed_on[0]; i++)
        sigaddset(&waited, passed_on[i]);
    sigprocmask(SIG_BLOCK, &waited, &original);
    int status;
    pid_t child = start_program(launch->program, &original, &status);
    if (child < 0) {
        nvs_trace_files_free(before);
        return status;
    }
    status = wait_passing_signals(child, &waited);
    if (before && !nvs_trace_files_written(before, template))
        say_nothing_traced(launch, template, false, child);
    nvs_trace_files_free(before);
    return end_like(status);
}

/* run --top: PROGRAM as a child, its trace shown live (top.c) until it ends;
 * PROGRAM's exit status. Without a trace file of the user's, a temporary one. */
static int run_with_top(struct nvs_launch *launch)
{
    char directory[PATH_MAX] = "", made[PATH_MAX + 32] = "";
    const char *template = getenv("NVTXSHIM_TRACE");
    if (!template || !*template) {
        const char *tmp = getenv("TMPDIR");
        snprintf(directory, sizeof directory, "%s/nvtxshim-top-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(directory)) {
            fprintf(stderr, "nvtxshim run: --top: no temporary directory for the trace: %s\n",
                    strerror(errno));
            return 125;
        }
        snprintf(made, sizeof made, "%s/trace.pftrace", directory);
        setenv("NVTXSHIM_TRACE", made, 1);
        template = made;
    }
    struct nvs_trace_files *before = nvs_trace_files_look(template);
    sigset_t mask;
    sigprocmask(SIG_BLOCK, NULL, &mask);
    int status = 0;
    pid_t child = start_program(launch->program, &mask, &status);
    if (child < 0) {
        nvs_trace_files_free(before);
        if (directory[0])
            rmdir(directory);
        return status;
    }
    char path[PATH_MAX];
    trace_path_of(template, child, path, sizeof path);
    struct nvs_top_options top = { .frames = NVS_TOP_FRAMES, .interval_s = 1.0 };
    nvs_top_watch(path, child, &top, &status);
    if (waitpid(child, &status, WNOHANG) == 0) {
        /* interrupted: the program has the same signal, and is waited for */
        while (waitpid(child, &status, 0) < 0 && errno == EINTR)
            continue;
    }
    if (before && !nvs_trace_files_written(before, template))
        say_nothing_traced(launch, template, directory[0] != '\0', child);
    nvs_trace_files_free(before);
    if (directory[0]) {
        unlink(made);
        rmdir(directory);
    }
    return nvs_cli_exit_status(status);
}

int nvs_cli_run(int argc, char **argv)
{
    struct nvs_launch launch = { .command = "run", .help = help_run };
    int status = nvs_launch_parse(&launch, argc, argv);
    if (status >= 0)
        return status;
    char library[PATH_MAX];
    struct nvs_config config;
    if ((status = nvs_launch_find_library(&launch, library, sizeof library)) >= 0 ||
        (status = nvs_launch_apply_variables(&launch, &config)) >= 0)
        return status;

    const char *preload = getenv("LD_PRELOAD");
    char *combined = NULL;
    if (preload && preload_has(preload, library))
        combined = strdup(preload);
    else if (asprintf(&combined, "%s%s%s", preload && preload[0] ? preload : "",
                      preload && preload[0] ? ":" : "", library) < 0)
        combined = NULL;
    if (!combined || setenv("LD_PRELOAD", combined, 1)) {
        fprintf(stderr, "nvtxshim run: out of memory\n");
        return 125;
    }
    if (launch.dry_run) {
        print_assignment(stdout, "LD_PRELOAD", combined);
        nvs_launch_print_variables(&launch);
        nvs_launch_print_argv(launch.program, INT_MAX);
        fputc('\n', stdout);
    }
    free(combined);
    if (launch.dry_run)
        return 0;
    if (launch.top)
        return run_with_top(&launch);
    const char *trace = getenv("NVTXSHIM_TRACE");
    if (trace && *trace)
        return run_traced(&launch, trace);
    fflush(NULL);
    execvp(launch.program[0], launch.program);
    int error = errno;
    fprintf(stderr, "nvtxshim run: cannot run %s: %s\n", launch.program[0], strerror(error));
    return error == ENOENT ? 127 : 126;
}
