/* seccomp_run: runs a program under a seccomp filter that allows the system
 * calls it is given, by number, and kills the process on any other
 * (SECCOMP_RET_KILL_PROCESS: it dies by SIGSYS), as a sandbox (systemd's
 * SystemCallFilter=, a container's profile) does. The filter is raw BPF:
 * the architecture first (a call of another ABI, x32 included, is refused),
 * then the number against each allowed one. test/test_seccomp.py runs a
 * recording under it with the system calls the user guide lists.
 *
 *     seccomp_run NR[,NR...] PROGRAM [ARG...]
 *
 * No new privileges (PR_SET_NO_NEW_PRIVS) is what lets a process without
 * CAP_SYS_ADMIN install a filter; the filter holds across execv and for every
 * thread and child of the program. Exit 2 when the filter cannot be made. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "seccomp_run: no audit architecture for this target"
#endif

#define MAX_ALLOWED 1000

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: seccomp_run NR[,NR...] PROGRAM [ARG...]\n");
        return 2;
    }
    static unsigned allowed[MAX_ALLOWED];
    size_t count = 0;
    for (char *item = argv[1], *end; *item; item = *end ? end + 1 : end) {
        errno = 0;
        unsigned long number = strtoul(item, &end, 10);
        if (errno || end == item || (*end && *end != ',') || number > 0xffff || count == MAX_ALLOWED) {
            fprintf(stderr, "seccomp_run: bad system call number list %s\n", argv[1]);
            return 2;
        }
        allowed[count++] = (unsigned)number;
    }
    /* A conditional jump's offset is a byte: a longer list would need chains. */
    if (count > 250) {
        fprintf(stderr, "seccomp_run: at most 250 system calls\n");
        return 2;
    }
    /* The architecture, then one test per allowed number: a match jumps to
     * the ALLOW at the end, no match falls through to the next test, and past
     * the last is KILL_PROCESS. */
    static struct sock_filter code[MAX_ALLOWED + 6];
    size_t n = 0;
    code[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                             offsetof(struct seccomp_data, arch));
    code[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                             offsetof(struct seccomp_data, nr));
    for (size_t i = 0; i < count; i++)     /* the ALLOW is count - i instructions on */
        code[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, allowed[i],
                                                 (unsigned char)(count - i), 0);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog program = { .len = (unsigned short)n, .filter = code };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        perror("seccomp_run: PR_SET_NO_NEW_PRIVS");
        return 2;
    }
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) {
        perror("seccomp_run: seccomp");
        return 2;
    }
    execv(argv[2], argv + 2);
    /* execve refused by the filter never returns: the process is killed. */
    fprintf(stderr, "seccomp_run: %s: %s\n", argv[2], strerror(errno));
    return 127;
}
