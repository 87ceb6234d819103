/* A program that ignores a signal, for the signal trigger (NVTXSHIM_CAPTURE=signal)
 * to leave alone (test_signals.py):
 *   signal_ignore SIGNUM before|after|inherited [PROGRAM ARGS...]
 * makes a hooked call (so the library sets its trigger up), ignores SIGNUM
 * before or after that call (or keeps what it inherited), has a timer raise
 * SIGNUM during a 200 ms nanosleep and reports whether the sleep was cut
 * short, reports the disposition, then execs PROGRAM, which inherits it. */
#define _GNU_SOURCE
#include <errno.h>
#include <libusb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void hooked_call(void)
{
    libusb_context *context = NULL;
    struct timeval zero = { 0, 0 };
    if (libusb_init(&context) == 0) {
        libusb_handle_events_timeout(context, &zero);
        libusb_exit(context);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int number = atoi(argv[1]);
    if (!strcmp(argv[2], "before"))
        signal(number, SIG_IGN);
    hooked_call();
    if (!strcmp(argv[2], "after"))
        signal(number, SIG_IGN);

    timer_t timer;
    struct sigevent event = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = number };
    struct itimerspec when = { .it_value = { 0, 20 * 1000 * 1000 } };
    if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0 || timer_settime(timer, 0, &when, NULL))
        return 2;
    struct timespec sleep = { 0, 200 * 1000 * 1000 };
    int slept = nanosleep(&sleep, NULL);
    printf("nanosleep: %s\n", slept == 0 ? "whole" : errno == EINTR ? "EINTR" : "failed");

    struct sigaction now;
    sigaction(number, NULL, &now);
    printf("disposition: %s\n", now.sa_handler == SIG_IGN ? "ignored" :
                                now.sa_handler == SIG_DFL ? "default" : "handler");
    fflush(stdout);
    if (argc > 3) {
        execvp(argv[3], argv + 3);
        perror("execvp");
        return 2;
    }
    return 0;
}
