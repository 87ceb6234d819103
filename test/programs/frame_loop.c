/* frame_loop: the emulated device's protocol, frame by frame, with what the
 * capture and kernel-probe tests need around it.
 *
 *     frame_loop FRAMES [--raise SIGNAL AFTER_FRAME]... [--sleep-us U] [--compete]
 *
 *   --raise     raise SIGNAL after frame AFTER_FRAME; the program has its own
 *               handler for it, installed in main (after the shim has loaded),
 *               and prints how many times it ran;
 *   --sleep-us  sleep U microseconds in every frame;
 *   --compete   pin this thread and a busy thread to the same CPU (the first
 *               one this process may run on), and in every frame spend CPU
 *               time until the kernel has preempted this thread at least once
 *               (2 ms at least, 1 s at most), so the two take turns however
 *               long the scheduler's slices are on this machine. */
#define _GNU_SOURCE
#include <libusb.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emulated_device.h"

#define MAX_RAISES 16

static volatile sig_atomic_t handled;
static atomic_bool stop;

static void on_signal(int number)
{
    (void)number;
    handled++;
}

static int first_cpu = -1;

/* The first CPU in the process's own affinity mask: a container's cpuset may
 * not include CPU 0. */
static void find_first_cpu(void)
{
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return;
    for (int cpu = 0; cpu < CPU_SETSIZE && first_cpu < 0; cpu++)
        if (CPU_ISSET(cpu, &allowed))
            first_cpu = cpu;
}

static void pin_to_first_cpu(void)
{
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(first_cpu < 0 ? 0 : first_cpu, &cpus);
    if (pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus) != 0)
        fprintf(stderr, "frame_loop: could not pin to CPU %d\n", first_cpu);
}

static long involuntary_switches(void)
{
    struct rusage usage;
    getrusage(RUSAGE_THREAD, &usage);
    return usage.ru_nivcsw;
}

static void *spin(void *unused)
{
    (void)unused;
    pin_to_first_cpu();
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        continue;
    return NULL;
}

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: frame_loop FRAMES [--raise SIGNAL AFTER_FRAME]... "
                        "[--sleep-us U] [--compete]\n");
        return 2;
    }
    int frames = atoi(argv[1]), raises = 0, sleep_us = 0;
    int raise_signal[MAX_RAISES], raise_after[MAX_RAISES];
    bool compete = false;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--raise") && i + 2 < argc && raises < MAX_RAISES) {
            raise_signal[raises] = atoi(argv[++i]);
            raise_after[raises++] = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--sleep-us") && i + 1 < argc) {
            sleep_us = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--compete")) {
            compete = true;
        } else {
            fprintf(stderr, "frame_loop: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    for (int r = 0; r < raises; r++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = on_signal;
        sigaction(raise_signal[r], &action, NULL);
    }
    pthread_t busy;
    if (compete) {
        find_first_cpu();
        pin_to_first_cpu();
        pthread_create(&busy, NULL, spin, NULL);
    }

    libusb_context *context;
    libusb_device_handle *handle = open_emulated_device(&context);
    if (!handle)
        return 1;
    static unsigned char frame[64 * 48 * 3];
    int action_index = 0, errors = 0;
    for (int i = 0; i < frames; i++) {
        unsigned char command[8] = { 0xA5, (unsigned char)action_index, (unsigned char)i, 0, 0, 0, 0, 0x5A };
        unsigned char status[8];
        int moved;
        errors += libusb_control_transfer(handle, 0x40, 0x01, (uint16_t)i, (uint16_t)action_index,
                                          NULL, 0, 2000) < 0;
        errors += libusb_bulk_transfer(handle, 0x02, command, 8, &moved, 2000) < 0;
        errors += libusb_bulk_transfer(handle, 0x81, frame, sizeof frame, &moved, 2000) < 0;
        errors += libusb_interrupt_transfer(handle, 0x83, status, 8, &moved, 2000) < 0;
        action_index = status[2]; /* the device says which action it expects next */
        if (sleep_us) {
            struct timespec pause = { sleep_us / 1000000, (long)(sleep_us % 1000000) * 1000 };
            while (nanosleep(&pause, &pause) != 0)
                continue;
        }
        if (compete) {
            long before = involuntary_switches();
            for (double start = cpu_seconds(), spent = 0;
                 spent < 1.0 && (spent < 0.002 || involuntary_switches() == before);
                 spent = cpu_seconds() - start)
                continue;
        }
        for (int r = 0; r < raises; r++)
            if (raise_after[r] == i + 1)
                raise(raise_signal[r]);
    }
    if (compete) {
        atomic_store(&stop, true);
        pthread_join(busy, NULL);
    }
    printf("frames=%d errors=%d", frames, errors);
    if (raises)
        printf(" handler ran %d times", (int)handled);
    printf("\n");
    libusb_release_interface(handle, 0);
    libusb_close(handle);
    libusb_exit(context);
    return errors ? 3 : 0;
}
