/* Finding things and running children under a watchdog (child.h). */
#define _GNU_SOURCE
#include "commands/child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool absolute(const char *path, char *out, size_t size)
{
    char resolved[PATH_MAX];
    if (!realpath(path, resolved) || strlen(resolved) >= size)
        return false;
    strcpy(out, resolved);
    return true;
}

static void append(char *buffer, size_t size, const char *text)
{
    size_t used = strlen(buffer);
    snprintf(buffer + used, size - used, "%s%s", used ? ", " : "", text);
}

bool nvs_cli_find_library(const char *given, char *path, size_t size, char *looked,
                          size_t looked_size)
{
    looked[0] = '\0';
    if (!given)
        given = getenv("NVTXSHIM_LIBRARY");
    if (given && given[0]) {
        if (is_file(given) && absolute(given, path, size))
            return true;
        append(looked, looked_size, given);
        return false;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        append(looked, looked_size, "(/proc/self/exe unreadable)");
        return false;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    *slash = '\0';
    static const char *const places[] = { "%s/" NVS_LIBRARY_NAME, "%s/../lib/" NVS_LIBRARY_NAME };
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
        char candidate[PATH_MAX + 32];
        snprintf(candidate, sizeof candidate, places[i], exe);
        if (is_file(candidate) && absolute(candidate, path, size))
            return true;
        append(looked, looked_size, candidate);
    }
    return false;
}

bool nvs_cli_find_program(const char *name, char *path, size_t size)
{
    if (!name[0])
        return false;
    if (strchr(name, '/'))
        return access(name, X_OK) == 0 && is_file(name) && absolute(name, path, size);
    const char *search = getenv("PATH");
    if (!search)
        search = "/usr/local/bin:/usr/bin:/bin";
    while (*search) {
        size_t length = strcspn(search, ":");
        char candidate[PATH_MAX];
        if (length == 0)
            snprintf(candidate, sizeof candidate, "./%s", name);
        else
            snprintf(candidate, sizeof candidate, "%.*s/%s", (int)length, search, name);
        if (access(candidate, X_OK) == 0 && is_file(candidate)) {
            /* As found on PATH (/usr/bin/nsys), not where its links lead. */
            if (candidate[0] == '/' && strlen(candidate) < size) {
                strcpy(path, candidate);
                return true;
            }
            if (absolute(candidate, path, size))
                return true;
        }
        search += length + (search[length] == ':');
    }
    return false;
}

pid_t nvs_cli_start(char *const argv[], int output_fd)
{
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGINT, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        if (output_fd >= 0) {
            dup2(output_fd, STDOUT_FILENO);
            dup2(output_fd, STDERR_FILENO);
        }
        execvp(argv[0], argv);
        dprintf(STDERR_FILENO, "nvtxshim: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    return pid;
}

/* The start of /proc/PID/FILE, ENTRY being PID's entry in /proc, in TEXT
 * (SIZE bytes, NUL-terminated): its length; 0 or -1 when it is empty or
 * cannot be read, or ENTRY is no process's. */
static ssize_t read_proc_file(const struct dirent *entry, const char *file, char *text, size_t size)
{
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9')
        return -1;
    char path[300];
    snprintf(path, sizeof path, "/proc/%s/%s", entry->d_name, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, text, size - 1);
    close(fd);
    if (n > 0)
        text[n] = '\0';
    return n;
}

struct proc_entry {
    pid_t pid, parent;
    char state;
};

/* Every process's pid, parent and state, from /proc/PID/stat. */
static size_t read_processes(struct proc_entry **out)
{
    size_t count = 0, capacity = 256;
    struct proc_entry *entries = malloc(capacity * sizeof *entries);
    DIR *proc = opendir("/proc");
    if (!entries || !proc) {
        free(entries);
        if (proc)
            closedir(proc);
        *out = NULL;
        return 0;
    }
    struct dirent *entry;
    while ((entry = readdir(proc))) {
        char text[512];
        if (read_proc_file(entry, "stat", text, sizeof text) <= 0)
            continue;
        /* "pid (comm) S ppid ...": comm may hold spaces and parentheses. */
        char *close_paren = strrchr(text, ')');
        char state;
        int parent;
        if (!close_paren || sscanf(close_paren + 1, " %c %d", &state, &parent) != 2)
            continue;
        if (count == capacity) {
            struct proc_entry *grown = realloc(entries, 2 * capacity * sizeof *entries);
            if (!grown)
                break;
            entries = grown;
            capacity *= 2;
        }
        entries[count++] = (struct proc_entry){ atoi(entry->d_name), parent, state };
    }
    closedir(proc);
    *out = entries;
    return count;
}

/* The living (not zombie) descendants of ROOT, into PIDS (at most MAX);
 * returns how many were found (possibly more than MAX). */
static size_t living_descendants(pid_t root, pid_t *pids, size_t max)
{
    struct proc_entry *entries;
    size_t count = read_processes(&entries);
    /* A process is marked once its parent is known to descend from ROOT;
     * repeated passes follow chains listed in any order. */
    bool *inside = calloc(count ? count : 1, sizeof *inside);
    size_t found = 0;
    if (!inside) {
        free(entries);
        return 0;
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < count; i++) {
            if (inside[i])
                continue;
            bool parent_inside = entries[i].parent == root;
            for (size_t j = 0; !parent_inside && j < count; j++)
                parent_inside = inside[j] && entries[j].pid == entries[i].parent;
            if (parent_inside) {
                inside[i] = changed = true;
                if (entries[i].state != 'Z' && entries[i].state != 'X') {
                    if (found < max)
                        pids[found] = entries[i].pid;
                    found++;
                }
            }
        }
    }
    free(inside);
    free(entries);
    return found;
}

/* Kills PID and its living descendants, and reaps PID. All are stopped first,
 * the tree looked at again until it holds no one new (a process may be forking
 * as it is looked at), then killed: once PID is gone they are no longer its. */
static void kill_tree(pid_t pid, int *status)
{
    enum { MAX = 512 };
    pid_t stopped[MAX], found[MAX];
    size_t count = 0;
    kill(pid, SIGSTOP);
    for (int round = 0; round < 20; round++) {
        size_t seen = living_descendants(pid, found, MAX), added = 0;
        for (size_t i = 0; i < seen && i < MAX; i++) {
            bool known = false;
            for (size_t j = 0; j < count && !known; j++)
                known = stopped[j] == found[i];
            if (!known && count < MAX) {
                kill(found[i], SIGSTOP);
                stopped[count++] = found[i];
                added++;
            }
        }
        if (!added)
            break;
    }
    kill(pid, SIGKILL);
    for (size_t i = 0; i < count; i++)
        kill(stopped[i], SIGKILL);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool nvs_cli_wait(pid_t pid, const struct nvs_cli_limits *limits, int *status)
{
    sigset_t wanted, previous;
    sigemptyset(&wanted);
    sigaddset(&wanted, SIGCHLD);
    sigaddset(&wanted, SIGTERM);
    sigaddset(&wanted, SIGHUP);
    sigprocmask(SIG_BLOCK, &wanted, &previous);
    double started = now_s(), idle_since = started;
    bool finished = false;
    for (;;) {
        pid_t done = waitpid(pid, status, WNOHANG);
        if (done == pid) {
            finished = true;
            break;
        }
        if (done < 0 && errno != EINTR) {
            /* Not our child (any more): nothing to wait for, and nothing to kill. */
            *status = 127 << 8;
            finished = true;
            break;
        }
        double now = now_s();
        pid_t unused;
        if (limits->idle_s > 0 && living_descendants(pid, &unused, 1) > 0)
            idle_since = now;
        if ((limits->total_s > 0 && now - started >= limits->total_s) ||
            (limits->idle_s > 0 && now - idle_since >= limits->idle_s))
            break;
        /* SIGCHLD ends the wait at once; the tick only paces the looks at /proc
         * (about a millisecond of CPU each, beside the program being measured). */
        double tick_s = 1.0;
        if (limits->total_s > 0 && started + limits->total_s - now < tick_s)
            tick_s = started + limits->total_s - now;
        if (limits->idle_s > 0 && idle_since + limits->idle_s - now < tick_s)
            tick_s = idle_since + limits->idle_s - now;
        if (tick_s < 0.001)
            tick_s = 0.001;
        struct timespec tick = { (time_t)tick_s, (long)((tick_s - (double)(time_t)tick_s) * 1e9) };
        int signal_number = sigtimedwait(&wanted, NULL, &tick);
        if (signal_number == SIGTERM || signal_number == SIGHUP)
            kill(pid, signal_number);
    }
    if (!finished)
        kill_tree(pid, status);
    /* Drop a SIGCHLD left pending by this child before SIGCHLD is unblocked. */
    sigset_t child_only;
    sigemptyset(&child_only);
    sigaddset(&child_only, SIGCHLD);
    struct timespec zero = { 0, 0 };
    while (sigtimedwait(&child_only, NULL, &zero) > 0)
        ;
    sigprocmask(SIG_SETMASK, &previous, NULL);
    return finished;
}

int nvs_cli_kill_nsys_agents(pid_t nsys_pid)
{
    char suffix[32];
    snprintf(suffix, sizeof suffix, "-%d", (int)nsys_pid);
    static const char session[] = "--session-name=profile-";
    int killed = 0;
    DIR *proc = opendir("/proc");
    if (!proc)
        return 0;
    struct dirent *entry;
    while ((entry = readdir(proc))) {
        char cmdline[8192];
        ssize_t n = read_proc_file(entry, "cmdline", cmdline, sizeof cmdline);
        if (n <= 0)
            continue;
        bool agent = false, ours = false;
        for (char *arg = cmdline; arg < cmdline + n; arg += strlen(arg) + 1) {
            size_t length = strlen(arg);
            if (!strcmp(arg, "--start-agent"))
                agent = true;
            else if (!strncmp(arg, session, sizeof session - 1) && length > strlen(suffix) &&
                     !strcmp(arg + length - strlen(suffix), suffix))
                ours = true;
        }
        if (agent && ours && kill(atoi(entry->d_name), SIGKILL) == 0)
            killed++;
    }
    closedir(proc);
    return killed;
}

int nvs_cli_capture(char *const argv[], char *output, size_t size, double timeout_s)
{
    int pipe_fds[2];
    output[0] = '\0';
    if (pipe2(pipe_fds, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = nvs_cli_start(argv, pipe_fds[1]);
    close(pipe_fds[1]);
    if (pid < 0) {
        close(pipe_fds[0]);
        return -1;
    }
    size_t used = 0;
    double deadline = now_s() + timeout_s;
    bool open_pipe = true, timed_out = false;
    while (open_pipe) {
        int wait_ms = (int)((deadline - now_s()) * 1000);
        if (wait_ms <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd readable = { pipe_fds[0], POLLIN, 0 };
        if (poll(&readable, 1, wait_ms) < 0 && errno != EINTR)
            break;
        char chunk[4096];
        ssize_t n = read(pipe_fds[0], chunk, sizeof chunk);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0) {
            open_pipe = false;
            break;
        }
        size_t keep = (size_t)n < size - 1 - used ? (size_t)n : size - 1 - used;
        memcpy(output + used, chunk, keep);
        used += keep;
    }
    output[used] = '\0';
    close(pipe_fds[0]);
    /* The pipe closed: the child is about to exit, within what is left of the time. */
    double left = timed_out ? 0 : deadline - now_s();
    struct nvs_cli_limits limits = { left > 0.001 ? left : 0.001, 0 };
    int status;
    if (!nvs_cli_wait(pid, &limits, &status))
        return -1;
    return status;
}

int nvs_cli_perf_event_paranoid(void)
{
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
    int level;
    if (!f)
        return INT_MIN;
    if (fscanf(f, "%d", &level) != 1)
        level = INT_MIN;
    fclose(f);
    return level;
}

bool nvs_cli_capable(int cap)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    unsigned long long effective = 0;
    if (!f)
        return false;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "CapEff: %llx", &effective) == 1)
            break;
    fclose(f);
    return cap >= 0 && cap < 64 && (effective >> cap) & 1;
}

int nvs_cli_exit_status(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}
