/* nvtxshim check: what will and will not work on this machine, one line each,
 * OK / WARN / FAIL, with the command that fixes it. Every probe that could
 * block (nsys, an X server, the CUDA driver) runs in a child under a limit. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands/child.h"
#include "commands/commands.h"
#include "commands/options.h"

#define CAP_SYS_ADMIN_NUMBER 21
#define CAP_PERFMON_NUMBER 38
#define CAP_BPF_NUMBER 39
#define PROBE_TIMEOUT_S 30.0

enum level { LEVEL_OK, LEVEL_WARN, LEVEL_FAIL };

struct check {
    int failures, warnings;
    bool nsys_missing; /* the one FAIL that recording to a file does not mind */
};

/* One line: the level, what was found, and for WARN and FAIL the fix. */
__attribute__((format(printf, 4, 5))) static void say(struct check *check, enum level level,
                                                      const char *fix, const char *format, ...)
{
    static const char *const names[] = { "OK  ", "WARN", "FAIL" };
    char text[2048];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    if (level == LEVEL_FAIL)
        check->failures++;
    else if (level == LEVEL_WARN)
        check->warnings++;
    if (fix && level != LEVEL_OK)
        printf("%s %s (fix: %s)\n", names[level], text, fix);
    else
        printf("%s %s\n", names[level], text);
    fflush(stdout);
}

static void help(void)
{
    fputs("NAME\n"
          "    nvtxshim check - what will and will not work here, and why\n"
          "\n"
          "SYNOPSIS\n"
          "    nvtxshim check [--library PATH] [--nsys PATH]\n"
          "\n"
          "DESCRIPTION\n"
          "    Looks at this machine the way nvtxshim run and profile will use it and prints one\n"
          "    line per item, each OK, WARN (that part of the picture will be missing) or FAIL\n"
          "    (profiling cannot proceed), with the command that fixes it:\n"
          "\n"
          "      - the library, and whether it was built with the kernel probe;\n"
          "      - nsys: found, its version, and whether it can write reports (Debian's\n"
          "        package misses the importer's path: make deps links it);\n"
          "      - TMPDIR: nsys unpacks helper programs there, so it must allow exec;\n"
          "      - kernel.perf_event_paranoid and privileges: CPU sampling and context\n"
          "        switches (nsys status -e's verdict when nsys is there);\n"
          "      - the kernel probe (--kernel): root or CAP_BPF and CAP_PERFMON, the kernel's\n"
          "        BTF, libbpf;\n"
          "      - DISPLAY: unset, local (Unix socket) or remote (TCP, as ssh -X gives), and\n"
          "        whether the server offers MIT-SHM;\n"
          "      - libusb, libX11 and libxcb, libcuda (and GPUs), USB devices;\n"
          "      - whether this runs in a container.\n"
          "\n"
          "OPTIONS\n"
          "    --library PATH\n"
          "        The library to look at. [as nvtxshim run finds it]\n"
          "\n"
          "    --nsys PATH\n"
          "        The nsys to look at. [nsys, from PATH]\n"
          "\n"
          "    -h, --help\n"
          "        This page.\n"
          "\n"
          "EXIT STATUS\n"
          "    0 when nvtxshim profile can run here (no FAIL line; WARN lines name what the\n"
          "    profile will lack). 1 when it cannot: the library or nsys is missing or cannot\n"
          "    write reports, or TMPDIR is unusable (nvtxshim run --trace may still work:\n"
          "    it needs only the library). 2 for a usage error.\n"
          "\n"
          "EXAMPLES\n"
          "    nvtxshim check\n"
          "    nvtxshim check --nsys /opt/nvidia/nsight-systems/2024.5.1/bin/nsys\n",
          stdout);
}

static bool file_contains(const char *path, const char *needle, size_t length)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    bool found = false;
    if (fd < 0)
        return false;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        void *data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (data != MAP_FAILED) {
            found = memmem(data, (size_t)st.st_size, needle, length) != NULL;
            munmap(data, (size_t)st.st_size);
        }
    }
    close(fd);
    return found;
}

/* Returns whether the library was found; PROBE_BUILT tells whether it was built with the
 * kernel probe (it then names libbpf.so.1, which it opens when the probe is asked for). */
static bool check_library(struct check *check, const char *given, bool *probe_built)
{
    char path[PATH_MAX], looked[3 * PATH_MAX];
    *probe_built = false;
    if (!nvs_cli_find_library(given, path, sizeof path, looked, sizeof looked)) {
        say(check, LEVEL_FAIL, "make, or --library PATH", "library %s not found (looked at %s)",
            NVS_LIBRARY_NAME, looked);
        return false;
    }
    static const char libbpf[] = "libbpf.so.1";
    *probe_built = file_contains(path, libbpf, sizeof libbpf);
    say(check, LEVEL_OK, NULL, "library %s (%s)", path,
        *probe_built ? "with the kernel probe" : "built without the kernel probe");
    return true;
}

static void first_line(char *text)
{
    text[strcspn(text, "\n")] = '\0';
}

/* The nsys binary's own directory (target-linux-x64) and Debian's second copy of
 * it: the agent runs from the latter and looks for ../host-linux-x64 there. */
static void check_importer(struct check *check, const char *nsys)
{
    char real[PATH_MAX];
    glob_t found = { 0 };
    /* Debian's second copy matters only to Debian's nsys. */
    bool packaged = realpath(nsys, real) && !strncmp(real, "/usr/lib/", 9);
    int globbed = packaged
        ? glob("/usr/lib/*/nsight-systems/target-linux-*", GLOB_ONLYDIR, NULL, &found)
        : GLOB_NOMATCH;
    size_t count = globbed == 0 ? found.gl_pathc : 0;
    bool any = false;
    for (size_t i = 0; i <= count; i++) {
        char directory[PATH_MAX];
        if (i == count) {
            if (!realpath(nsys, real))
                break;
            snprintf(directory, sizeof directory, "%s", real);
            *strrchr(directory, '/') = '\0';
        } else {
            snprintf(directory, sizeof directory, "%s", found.gl_pathv[i]);
        }
        char parent[PATH_MAX], importer[PATH_MAX + 64];
        snprintf(parent, sizeof parent, "%s", directory);
        *strrchr(parent, '/') = '\0';
        snprintf(importer, sizeof importer, "%s/host-linux-x64/QdstrmImporter", parent);
        /* Only where an nsys lives: a directory holding the nsys binary. */
        char binary[PATH_MAX + 8];
        snprintf(binary, sizeof binary, "%s/nsys", directory);
        if (access(binary, X_OK))
            continue;
        any = true;
        if (access(importer, X_OK)) {
            char fix[3 * PATH_MAX];
            snprintf(fix, sizeof fix,
                     "make deps, or sudo ln -s /usr/lib/nsight-systems/host-linux-x64 "
                     "%s/host-linux-x64",
                     parent);
            say(check, LEVEL_FAIL, fix,
                "nsys cannot write reports: no %s (nsys profile leaves "
                "a .qdstrm file and no report)",
                importer);
            globfree(&found);
            return;
        }
    }
    globfree(&found);
    if (any)
        say(check, LEVEL_OK, NULL, "nsys can write reports (its QdstrmImporter is in place)");
}

/* Returns whether nsys was found and runs; STATUS_OUTPUT gets nsys status -e. */
static bool check_nsys(struct check *check, const char *given, char *status_output, size_t size)
{
    char nsys[PATH_MAX], output[4096];
    const char *name = given ? given : "nsys";
    status_output[0] = '\0';
    if (!nvs_cli_find_program(name, nsys, sizeof nsys)) {
        say(check, LEVEL_FAIL,
            "install Nsight Systems from https://developer.nvidia.com/nsight-systems "
            "(or sudo apt install nsight-systems nsight-systems-target from NVIDIA's CUDA repository; "
            "make deps in a clone of this project)",
            "%s not found%s: nvtxshim profile cannot run; without it, nvtxshim run --trace FILE "
            "records (JSON, or .pftrace for ui.perfetto.dev) and nvtxshim report, top and diff read "
            "the trace",
            name, strchr(name, '/') ? "" : " on PATH");
        check->nsys_missing = true;
        return false;
    }
    char *version_argv[] = { nsys, "--version", NULL };
    int status = nvs_cli_capture(version_argv, output, sizeof output, PROBE_TIMEOUT_S);
    const char *version = strstr(output, "version ");
    if (status != 0 || !version) {
        first_line(output);
        say(check, LEVEL_FAIL, "sudo apt install --reinstall nsight-systems nsight-systems-target",
            "nsys at %s does not run: %s", nsys,
            status < 0      ? "nsys --version did not finish"
                : output[0] ? output
                            : "no version");
        return false;
    }
    char shown[128];
    snprintf(shown, sizeof shown, "%s", version + strlen("version "));
    first_line(shown);
    say(check, LEVEL_OK, NULL, "nsys %s at %s", shown, nsys);
    check_importer(check, nsys);
    char *status_argv[] = { nsys, "status", "-e", NULL };
    if (nvs_cli_capture(status_argv, status_output, size, PROBE_TIMEOUT_S) < 0)
        status_output[0] = '\0';
    return true;
}

static void check_tmpdir(struct check *check)
{
    const char *tmpdir = getenv("TMPDIR");
    char name[PATH_MAX + 32];
    const char *directory = tmpdir && tmpdir[0] ? tmpdir : "/tmp";
    if (tmpdir && tmpdir[0])
        snprintf(name, sizeof name, "TMPDIR=%s", tmpdir);
    else
        snprintf(name, sizeof name, "TMPDIR unset: /tmp");
    struct statvfs fs;
    if (statvfs(directory, &fs) || access(directory, W_OK | X_OK))
        say(check, LEVEL_FAIL, "export TMPDIR=/tmp, or another writable directory",
            "%s is not a writable directory: nsys keeps its session files there", name);
    else if (fs.f_flag & ST_NOEXEC)
        say(check, LEVEL_FAIL, "export TMPDIR= a directory on a file system that allows exec",
            "%s is mounted noexec: nsys unpacks helper programs there and runs them", name);
    else
        say(check, LEVEL_OK, NULL, "%s is writable and allows exec (nsys runs helpers from it)",
            name);
}

/* nsys status -e's "CPU Profiling Environment (process-tree): OK" line:
 * 1 OK, 0 not OK, -1 not said. */
static int nsys_says_sampling(const char *status_output)
{
    const char *line = strstr(status_output, "CPU Profiling Environment (process-tree):");
    if (!line)
        return -1;
    line += strlen("CPU Profiling Environment (process-tree):");
    line += strspn(line, " \t");
    return !strncmp(line, "OK", 2);
}

static void check_sampling(struct check *check, const char *status_output)
{
    int level = nvs_cli_perf_event_paranoid();
    bool root = geteuid() == 0;
    bool privileged = root || nvs_cli_capable(CAP_PERFMON_NUMBER) ||
        nvs_cli_capable(CAP_SYS_ADMIN_NUMBER);
    char paranoid[64];
    if (level == INT_MIN)
        snprintf(paranoid, sizeof paranoid, "perf_event_paranoid unreadable");
    else
        snprintf(paranoid, sizeof paranoid, "perf_event_paranoid=%d", level);
    int nsys_verdict = nsys_says_sampling(status_output);
    bool possible = nsys_verdict >= 0 ? nsys_verdict == 1
                                      : privileged || (level != INT_MIN && level <= 2);
    const char *who = root ? ", root" : privileged ? ", CAP_PERFMON" : "";
    const char *source = nsys_verdict >= 0 ? "; nsys status -e agrees" : "";
    if (possible) {
        say(check, LEVEL_OK, NULL,
            "%s%s: CPU sampling and context switches possible%s%s "
            "(nvtxshim profile --cpu-sampling; off by default: nsys 2022.4 often hangs with them)",
            paranoid, who,
            (privileged || (level != INT_MIN && level <= 1)) ? ", kernel samples too" : "", source);
    } else if (!privileged && level > 2) {
        say(check, LEVEL_WARN, "sudo sysctl kernel.perf_event_paranoid=2",
            "%s: no CPU sampling or context switches (NVTX, OS runtime and CUDA tracing work)",
            paranoid);
    } else {
        say(check, LEVEL_WARN,
            "run as root, or in a container add --cap-add PERFMON "
            "(docker/run.sh does)",
            "%s%s, but nsys status -e says CPU sampling and context "
            "switches are not possible here",
            paranoid, who);
    }
}

static void check_kernel_probe(struct check *check, bool library_found, bool probe_built)
{
    bool root = geteuid() == 0;
    bool capable = nvs_cli_capable(CAP_BPF_NUMBER) && nvs_cli_capable(CAP_PERFMON_NUMBER);
    static const char btf[] = "/sys/kernel/btf/vmlinux";
    void *libbpf = dlopen("libbpf.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (libbpf)
        dlclose(libbpf);
    if (!library_found)
        return;
    if (!probe_built)
        say(check, LEVEL_WARN, "make deps, then make clean all",
            "kernel probe (--kernel): the library was built without it (libbpf, bpftool, "
            "clang and the kernel's BTF were missing at build time)");
    else if (!libbpf)
        say(check, LEVEL_WARN, "sudo apt install libbpf1",
            "kernel probe (--kernel): libbpf.so.1 not found: the library will not load");
    else if (access(btf, R_OK))
        say(check, LEVEL_WARN, "a kernel built with CONFIG_DEBUG_INFO_BTF=y",
            "kernel probe (--kernel): no %s, so the probe cannot load", btf);
    else if (!root && !capable)
        say(check, LEVEL_WARN,
            "run as root (sudo -E nvtxshim ...), or give the program CAP_BPF "
            "and CAP_PERFMON",
            "kernel probe (--kernel): needs root or CAP_BPF and CAP_PERFMON");
    else
        say(check, LEVEL_OK, NULL, "kernel probe (--kernel): %s, BTF at %s",
            root ? "root" : "CAP_BPF and CAP_PERFMON", btf);
}

/* Runs FN in a child under a time limit; FN writes one line to FD and returns
 * a code, which comes back (or -1 when the child crashed or ran out of time). */
static int in_child(int (*fn)(int fd), char *text, size_t size)
{
    int pipe_fds[2];
    text[0] = '\0';
    if (pipe2(pipe_fds, O_CLOEXEC))
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(pipe_fds[0]);
        _exit(fn(pipe_fds[1]));
    }
    close(pipe_fds[1]);
    int status = 0;
    struct nvs_cli_limits limits = { PROBE_TIMEOUT_S, 0 };
    bool finished = pid > 0 && nvs_cli_wait(pid, &limits, &status);
    ssize_t n = read(pipe_fds[0], text, size - 1);
    text[n > 0 ? n : 0] = '\0';
    first_line(text);
    close(pipe_fds[0]);
    return finished && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

enum display_result { DISPLAY_SHM, DISPLAY_NO_SHM, DISPLAY_NO_X11, DISPLAY_CANNOT_OPEN };

static int query_display(int fd)
{
    (void)fd;
    void *x11 = dlopen("libX11.so.6", RTLD_NOW | RTLD_LOCAL);
    if (!x11)
        return DISPLAY_NO_X11;
    void *(*open_display)(const char *) = (void *(*)(const char *))dlsym(x11, "XOpenDisplay");
    int (*query)(void *, const char *, int *, int *, int *) = (int (*)(
        void *, const char *, int *, int *, int *))dlsym(x11, "XQueryExtension");
    if (!open_display || !query)
        return DISPLAY_NO_X11;
    void *display = open_display(NULL);
    if (!display)
        return DISPLAY_CANNOT_OPEN;
    int opcode, event, error;
    return query(display, "MIT-SHM", &opcode, &event, &error) ? DISPLAY_SHM : DISPLAY_NO_SHM;
}

static void check_display(struct check *check)
{
    const char *display = getenv("DISPLAY");
    if (!display || !display[0]) {
        say(check, LEVEL_WARN,
            "export DISPLAY=:0 on the machine's own display, or "
            "xvfb-run -a nvtxshim run ...",
            "DISPLAY is not set: programs cannot open a window "
            "(fine for a program without a GUI)");
        return;
    }
    /* HOST:N.S: no host, "unix" or a path is a Unix socket; a host name is TCP. */
    const char *colon = strrchr(display, ':');
    size_t host_length = colon ? (size_t)(colon - display) : strlen(display);
    bool local = display[0] == '/' || host_length == 0 ||
        (host_length == 4 && !strncmp(display, "unix", 4));
    char text[256];
    int result = in_child(query_display, text, sizeof text);
    if (result == DISPLAY_NO_X11)
        say(check, LEVEL_WARN, "sudo apt install libx11-6",
            "DISPLAY=%s: libX11 not found, so it was not tried", display);
    else if (result == DISPLAY_CANNOT_OPEN || result < 0)
        say(check, LEVEL_WARN,
            "check that the X server runs and that XAUTHORITY points at its "
            "cookie",
            "DISPLAY=%s: cannot connect to the X server%s", display,
            result < 0 ? " (no answer)" : "");
    else if (!local)
        say(check, LEVEL_WARN,
            "run the GUI on the rig's own display (DISPLAY=:0), or profile "
            "without the GUI",
            "DISPLAY=%s is remote (TCP, as ssh -X gives): every round trip "
            "crosses the network and images cannot use MIT-SHM",
            display);
    else if (result == DISPLAY_NO_SHM)
        say(check, LEVEL_WARN,
            "a server with the MIT-SHM extension; in a container, "
            "docker run --ipc=host",
            "DISPLAY=%s: local, but the server offers no MIT-SHM: "
            "images go through the socket",
            display);
    else
        say(check, LEVEL_OK, NULL, "DISPLAY=%s: local (Unix socket), MIT-SHM offered", display);
}

static bool library_path(void *handle, char *path, size_t size)
{
    struct link_map *map = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) || !map || !map->l_name)
        return false;
    snprintf(path, size, "%s", map->l_name);
    return true;
}

static void check_libusb(struct check *check)
{
    struct version {
        uint16_t major, minor, micro, nano;
    };
    void *usb = dlopen("libusb-1.0.so.0", RTLD_LAZY | RTLD_LOCAL);
    if (!usb) {
        say(check, LEVEL_WARN, "sudo apt install libusb-1.0-0",
            "libusb-1.0 not found: no program here can make USB calls to see");
        return;
    }
    char path[PATH_MAX] = "?";
    library_path(usb, path, sizeof path);
    const struct version *(*get_version)(void) = (const struct version *(*)(void))dlsym(
        usb, "libusb_get_version");
    const struct version *version = get_version ? get_version() : NULL;
    if (version)
        say(check, LEVEL_OK, NULL, "libusb %u.%u.%u at %s", version->major, version->minor,
            version->micro, path);
    else
        say(check, LEVEL_OK, NULL, "libusb at %s", path);
    dlclose(usb);
}

/* The emulated camera where this command was built (build/emucam beside
 * build/nvtxshim), as an absolute path in PATH; false where it was installed
 * without it (make install, the wheel). */
static bool emulated_camera(char *path, size_t size)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return false;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return false;
    *slash = '\0';
    struct stat st;
    int wrote = snprintf(path, size, "%s/emucam", exe);
    return wrote > 0 && (size_t)wrote < size && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
        access(path, X_OK) == 0;
}

static void check_usb_devices(struct check *check, bool container)
{
    DIR *buses = opendir("/dev/bus/usb");
    int devices = 0, writable = 0;
    if (buses) {
        struct dirent *bus;
        while ((bus = readdir(buses))) {
            if (bus->d_name[0] == '.')
                continue;
            char path[PATH_MAX];
            snprintf(path, sizeof path, "/dev/bus/usb/%s", bus->d_name);
            DIR *nodes = opendir(path);
            struct dirent *node;
            while (nodes && (node = readdir(nodes))) {
                if (node->d_name[0] == '.')
                    continue;
                char device[PATH_MAX + 256];
                snprintf(device, sizeof device, "%s/%s", path, node->d_name);
                devices++;
                writable += access(device, R_OK | W_OK) == 0;
            }
            if (nodes)
                closedir(nodes);
        }
        closedir(buses);
    }
    char camera[PATH_MAX];
    bool built_here = emulated_camera(camera, sizeof camera);
    if (devices == 0)
        say(check, LEVEL_WARN,
            container ? "docker run --device /dev/bus/usb (docker/run.sh does)"
                      : "plug the device in (lsusb lists it)",
            "no USB devices visible (%s): only an emulated device works here%s%s%s",
            buses ? "/dev/bus/usb is empty" : "no /dev/bus/usb",
            built_here ? ", such as the emulated camera " : " (the emulated camera, emucam, is ",
            built_here ? camera : "built in a clone of the source: make build/emucam",
            built_here ? "" : ")");
    else if (writable == 0)
        say(check, LEVEL_WARN, "a udev rule giving your group the device, or run as root",
            "%d USB device%s, none that you can open for writing: libusb cannot use them", devices,
            devices == 1 ? "" : "s");
    else
        say(check, LEVEL_OK, NULL, "%d USB device%s, %d that you can open", devices,
            devices == 1 ? "" : "s", writable);
}

static void check_x11_libraries(struct check *check)
{
    static const char *const names[] = { "libX11.so.6", "libxcb.so.1" };
    char found[2][PATH_MAX];
    const char *missing = NULL;
    for (int i = 0; i < 2; i++) {
        void *handle = dlopen(names[i], RTLD_LAZY | RTLD_LOCAL);
        if (!handle || !library_path(handle, found[i], sizeof found[i]))
            missing = missing ? "libX11 and libxcb" : names[i];
        if (handle)
            dlclose(handle);
    }
    if (missing)
        say(check, LEVEL_WARN, "sudo apt install libx11-6 libxcb1",
            "%s not found: no program here can make X11 calls to see", missing);
    else
        say(check, LEVEL_OK, NULL, "libX11 at %s, libxcb at %s", found[0], found[1]);
}

static int query_cuda(int fd)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cuda)
        return 1;
    char path[PATH_MAX] = "?";
    library_path(cuda, path, sizeof path);
    int (*driver_version)(int *) = (int (*)(int *))dlsym(cuda, "cuDriverGetVersion");
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(cuda, "cuInit");
    int (*device_count)(int *) = (int (*)(int *))dlsym(cuda, "cuDeviceGetCount");
    int version = 0, count = 0;
    if (driver_version)
        driver_version(&version);
    int error = init ? init(0) : -1;
    if (error == 0 && device_count)
        device_count(&count);
    dprintf(fd, "libcuda.so.1 at %s, driver for CUDA %d.%d, ", path, version / 1000,
            version % 1000 / 10);
    if (error == 0)
        dprintf(fd, "%d GPU%s\n", count, count == 1 ? "" : "s");
    else
        dprintf(fd, "no GPU (cuInit: error %d)\n", error);
    return error == 0 && count > 0 ? 0 : 2;
}

static void check_cuda(struct check *check)
{
    char text[PATH_MAX + 128];
    int result = in_child(query_cuda, text, sizeof text);
    if (result == 0)
        say(check, LEVEL_OK, NULL, "%s", text);
    else if (result == 1)
        say(check, LEVEL_WARN, "install the NVIDIA driver on a machine with a GPU",
            "libcuda.so.1 not found: no NVIDIA driver, so no CUDA copies to see (fine without "
            "a GPU)");
    else if (result == 2)
        say(check, LEVEL_WARN,
            "on a GPU machine, check nvidia-smi; in a container, docker run "
            "--gpus all",
            "%s: CUDA copies cannot run here", text);
    else
        say(check, LEVEL_WARN, "check nvidia-smi", "libcuda.so.1: asking the driver %s",
            "failed (the check crashed or did not finish)");
}

/* The container this runs in, or NULL. */
static const char *container_kind(char *evidence, size_t size)
{
    if (access("/.dockerenv", F_OK) == 0) {
        snprintf(evidence, size, "/.dockerenv");
        return "docker";
    }
    if (access("/run/.containerenv", F_OK) == 0) {
        snprintf(evidence, size, "/run/.containerenv");
        return "podman";
    }
    FILE *f = fopen("/proc/1/environ", "re");
    if (f) {
        char entry[256];
        int c;
        size_t n = 0;
        while ((c = fgetc(f)) != EOF) {
            if (n < sizeof entry - 1)
                entry[n++] = (char)c;
            if (c == '\0') {
                entry[sizeof entry - 1] = '\0';
                if (!strncmp(entry, "container=", 10)) {
                    fclose(f);
                    snprintf(evidence, size, "%s in /proc/1/environ", entry);
                    return "container";
                }
                n = 0;
            }
        }
        fclose(f);
    }
    f = fopen("/proc/1/cgroup", "re");
    if (f) {
        char line[512];
        static const char *const kinds[] = { "docker", "kubepods", "lxc", "containerd" };
        while (fgets(line, sizeof line, f))
            for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
                if (strstr(line, kinds[i])) {
                    fclose(f);
                    snprintf(evidence, size, "/proc/1/cgroup");
                    return kinds[i];
                }
        fclose(f);
    }
    return NULL;
}

/* What check's command line says. */
struct check_line {
    const char *library, *nsys;
};

enum { CHECK_LIBRARY, CHECK_NSYS };

static const struct nvs_option check_options[] = {
    { "library", 0, NVS_OPTION_VALUE, CHECK_LIBRARY },
    { "nsys", 0, NVS_OPTION_VALUE, CHECK_NSYS },
    { "help", 'h', NVS_OPTION_FLAG, NVS_OPTION_HELP },
    { NULL, 0, 0, 0 },
};

static void check_manual(void *context)
{
    (void)context;
    help();
}

static int check_option(void *context, int id, const char *value)
{
    struct check_line *line = context;
    if (id == CHECK_LIBRARY)
        line->library = value;
    else
        line->nsys = value;
    return -1;
}

static const struct nvs_command_line check_command_line = {
    .command = "check",
    .options = check_options,
    .options_first = true,
    .manual = check_manual,
    .option = check_option,
};

int nvs_cli_check(int argc, char **argv)
{
    struct check_line line = { NULL, NULL };
    int first;
    int parsed = nvs_options_read(&check_command_line, argc, argv, &line, &first);
    if (parsed >= 0)
        return parsed;
    const char *library = line.library, *nsys = line.nsys;
    if (first < argc) {
        fprintf(stderr, "nvtxshim check: unexpected '%s' (nvtxshim check --help)\n", argv[first]);
        return 2;
    }

    struct check check = { 0, 0, false };
    bool probe_built;
    bool library_found = check_library(&check, library, &probe_built);
    char status_output[8192];
    check_nsys(&check, nsys, status_output, sizeof status_output);
    check_tmpdir(&check);
    check_sampling(&check, status_output);
    check_kernel_probe(&check, library_found, probe_built);
    check_display(&check);
    char evidence[300];
    const char *container = container_kind(evidence, sizeof evidence);
    check_libusb(&check);
    check_usb_devices(&check, container != NULL);
    check_x11_libraries(&check);
    check_cuda(&check);
    if (container)
        say(&check, LEVEL_OK, NULL,
            "in a container (%s: %s): the lines above say what it lets "
            "through; docker/run.sh passes the GPU, the display, USB and the profiling rights",
            container, evidence);
    else
        say(&check, LEVEL_OK, NULL, "not in a container");
    if (check.failures)
        printf("nvtxshim check: profiling cannot proceed: %d FAIL line%s above%s\n", check.failures,
               check.failures == 1 ? "" : "s",
               check.nsys_missing && check.failures == 1
                   ? " (recording to a trace file can: nvtxshim run --trace FILE -- PROGRAM)"
                   : "");
    else
        printf("nvtxshim check: profiling can proceed (nvtxshim profile)%s\n",
               check.warnings ? "; the WARN lines say what the profile will lack" : "");
    return check.failures ? 1 : 0;
}
