/* NVTXSHIM_* configuration: read once at load, immutable afterwards. */
#ifndef NVS_CONFIG_H
#define NVS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "registry/registry.h"

/* Code that runs once, at load or at exit, in every process that inherits
 * LD_PRELOAD: kept together (GCC's cold section), so that a process which
 * never uses a hooked library faults in as few pages of the library as can be. */
#define NVS_ONCE __attribute__((cold))
/* ... and the few variables that code reads or writes, kept on one page. */
#define NVS_ONCE_DATA __attribute__((section("nvs_once_data")))

enum nvs_frame_marker {
    NVS_FRAME_OFF,
    NVS_FRAME_USB_IN,
    NVS_FRAME_USB_OUT,
    NVS_FRAME_X11_SWAP,
    NVS_FRAME_X11_FLUSH,
    NVS_FRAME_CUDA_HTOD,
    NVS_FRAME_CUDA_DTOH,
    NVS_FRAME_CALL,
/* Each device set's (registry/hook_sets.def): NVS_FRAME_V4L2_IN, each buffer
 * dequeued (or read) from a camera; NVS_FRAME_SERIAL_OUT, each write that took
 * bytes... (those a set has no marker of are never set) */
#define NVS_HOOK_SET(id, name)
#define NVS_DEVICE_SET(id, name, in, out) NVS_FRAME_##id##_IN, NVS_FRAME_##id##_OUT,
#include "registry/hook_sets.def"
#undef NVS_HOOK_SET
#undef NVS_DEVICE_SET
};

enum nvs_capture_trigger {
    NVS_CAPTURE_OFF,
    NVS_CAPTURE_FRAMES,
    NVS_CAPTURE_CALLS,
    NVS_CAPTURE_TIME,
    NVS_CAPTURE_SIGNAL,
};

enum nvs_capture_via { NVS_VIA_BOTH, NVS_VIA_NVTX, NVS_VIA_CUDA };
enum nvs_log_level { NVS_LOG_QUIET, NVS_LOG_INFO, NVS_LOG_DEBUG };

#define NVS_NAME_MAX 128
#define NVS_PATH_MAX 4096

struct nvs_config {
    unsigned hooks; /* enum nvs_hook_set bits */

    enum nvs_frame_marker frame;
    int frame_endpoint;       /* usb.in/usb.out endpoint address, -1 for any */
    int frame_call;           /* call:NAME hook id, -1 when unused */
    uint64_t frame_budget_ns; /* 0: no budget */

    enum nvs_capture_trigger capture;
    uint64_t capture_start;       /* first frame / call index (1-based) */
    uint64_t capture_count;       /* frames / calls in the capture */
    uint64_t capture_period;      /* frames:S+C/P: a window every P frames; 0 = once */
    int capture_call;             /* calls:NAME hook id */
    uint64_t capture_delay_ns;    /* time: from the first hooked call */
    uint64_t capture_duration_ns; /* time: 0 = until exit */
    int capture_signal;           /* signal: signal number */
    enum nvs_capture_via capture_via;
    char capture_message[NVS_NAME_MAX];
    char capture_domain[NVS_NAME_MAX];

    bool kernel;
    uint64_t kernel_min_interval_ns; /* on:THRESHOLD: off-CPU intervals kept as ranges */
    enum nvs_log_level log;
    bool help;

    /* Not ours: the X display a bare XCB connection most likely uses. */
    char display[NVS_NAME_MAX];
    /* The paths last: set only when given, so that the defaults are one page. */
    char frame_device[NVS_NAME_MAX]; /* v4l2.in:PATH...: a glob, "" for any device */
    char devices[NVS_PATH_MAX];      /* NVTXSHIM_DEVICES: comma list of path globs */
    char trace_path[NVS_PATH_MAX];   /* as given, with %p unexpanded; "" = off */
    /* Not ours, but decides whether the recorder may attach: another NVTX tool. */
    char nvtx_injection_path[NVS_PATH_MAX];
};

/* Receives each complete message line ("nvtxshim: ...\n") the parser produces. */
typedef void (*nvs_config_report_fn)(const char *line, void *context);

/* Parses ENVP (an environ-style array) into CONFIG. Every bad or unknown
 * NVTXSHIM_* variable produces exactly one line through REPORT and leaves its
 * feature at the default (off). Returns the number of bad variables. */
int nvs_config_parse(struct nvs_config *config, char *const *envp, nvs_config_report_fn report,
                     void *context);

/* The process's configuration, parsed from environ on first use. */
const struct nvs_config *nvs_config(void);

/* Lines that nvs_config() produced, for the caller to print when it decides to. */
const char *nvs_config_messages(void);

/* What makes GLOB[0..LENGTH) no device path glob, or NULL: one that is not
 * absolute, is "/", holds a control character, or that nvs_glob_match
 * (devices/table.c) would read otherwise than it looks - a '[' without its ']'
 * (matched as a plain '['), a '/' inside [...] (never matched), a range from
 * a higher character to a lower one (matches nothing). NVTXSHIM_DEVICES'
 * entries and the frame markers' PATH are checked with it. */
const char *nvs_glob_problem(const char *glob, size_t length);

/* TEXT[0..LENGTH) as a message may show it: one line, printable ASCII, at
 * most 64 bytes of it (control and other bytes as \n, \t, \xNN; "..." when
 * cut). Returns OUT. */
#define NVS_CONFIG_SHOWN_SIZE (64 * 4 + 4)
const char *nvs_config_shown(char out[NVS_CONFIG_SHOWN_SIZE], const char *text, size_t length);

/* The reference printed for NVTXSHIM_HELP=1. */
const char *nvs_config_help(void);

/* The name, without SIG, of a signal NVTXSHIM_CAPTURE=signal: accepts ("USR1"). */
const char *nvs_config_signal_name(int number);

#endif
