/* harness_physical's parts (examples/harness/), one job to a file:
 *   main.c        the options and the loop: act, observe, infer, render, per frame
 *   usb_device.c  the camera and actuator over libusb (sync, or a queue of transfers)
 *   camera_rig.c  the camera rig: a V4L2 capture device and a serial actuator
 *   agent.c       inference on the GPU (CUDA driver API, dlopen'ed) or the CPU
 *   gui.c         the frame and the chosen cell in an X11 window
 * and what they share, here. */
#ifndef HARNESS_H
#define HARNESS_H

#define _GNU_SOURCE
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/XShm.h>
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libusb.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../harness_infer.h"

#define TIMEOUT_MS 2000
#define EP_COMMAND 0x02
#define EP_FRAMES 0x81
#define EP_STATUS 0x83

struct options {
    int frames, width, height, queue;
    uint16_t vendor, product;
    const char *camera;   /* a V4L2 device's path (--camera v4l2:PATH), or NULL: USB */
    const char *actuator; /* a serial port's path (--actuator serial:PATH), or NULL: USB */
    bool async, threads, gui, log;
    double fps;
    enum { INFER_AUTO, INFER_GPU, INFER_CPU } inference;
};

struct env;
struct slot {
    struct env *env;
    struct libusb_transfer *transfer;
    bool done;
};

struct env {
    libusb_context *context;
    libusb_device_handle *handle;
    int frame_bytes;
    /* --async: a ring of bulk IN transfers, consumed in submission order. */
    bool async;
    int queue, next, in_flight;
    struct slot *slots;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pthread_t events;
    volatile int stop_events;
    int64_t acted_ns; /* when the last command (bulk OUT) returned, CLOCK_MONOTONIC */
};

#define V4L2_BUFFERS_MAX 8
struct v4l2_camera {
    const char *path;
    int fd;
    unsigned count;
    struct {
        void *start;
        size_t length;
    } buffers[V4L2_BUFFERS_MAX];
    uint32_t width, height, format, bytes_per_line;
    uint32_t next_sequence;
    bool streaming, sequenced;
};

/* What one dequeued frame was: the driver's sequence and capture time, when
 * the loop had it, and the frames the driver dropped before it. */
struct frame_info {
    bool v4l2;
    uint32_t sequence, dropped;
    int64_t capture_ns, dequeue_ns;
    int buffer;     /* to queue again once acted on; -1: none */
    int64_t act_ns; /* when this frame's actuation returned */
    int sent;       /* the cell that actuation carried */
};

struct serial_actuator {
    const char *path;
    int fd;
    char pending[256]; /* bytes read after the last reply's newline */
    size_t pending_length;
};

/* The driver entry points the harness uses, taken from the dlopen'ed
 * libcuda.so.1 with dlsym, the way programs that load CUDA lazily do. */
struct driver {
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuModuleLoadData)(CUmodule *, const void *);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuMemAllocHost)(void **, size_t);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **, void **);
    CUresult (*cuStreamSynchronize)(CUstream);
};

struct agent {
    bool gpu;
    int width, height;
    uint32_t *convolved; /* CPU path */
    struct driver cu;    /* GPU path */
    CUstream stream;
    CUfunction convolve, argmax;
    CUdeviceptr frame, output, action;
    int *host_action; /* pinned, so the copy back can be asynchronous */
};

struct gui {
    Display *display;
    Window window;
    GC gc;
    XImage *image;
    XShmSegmentInfo shm;
    bool use_shm;
    Atom delete_window;
    int scale, width, height;
    int shift[3];
    unsigned long white;
};

/* The program's name, for messages. */
extern const char *program;

/* usb_device.c */
int env_open(struct env *env, const struct options *o);
void env_close(struct env *env);
int env_act(struct env *env, int i, int action);
bool env_observe(struct env *env, unsigned char *frame, int *errors);
int stream_start(struct env *env, int queue);

/* camera_rig.c */
void fourcc_text(uint32_t fourcc, char text[5]);
void v4l2_close(struct v4l2_camera *camera);
int v4l2_open(struct v4l2_camera *camera, struct options *o);
int v4l2_start(struct v4l2_camera *camera);
bool v4l2_observe(struct v4l2_camera *camera, unsigned char *frame, struct frame_info *info);
bool v4l2_requeue(struct v4l2_camera *camera, struct frame_info *info);
int serial_open(struct serial_actuator *serial, const char *path);
int serial_act(struct serial_actuator *serial, int i, int action, char *reply, size_t size,
               int64_t *wrote_ns);
void serial_close(struct serial_actuator *serial);

/* agent.c */
int agent_open(struct agent *agent, const struct options *o);
int agent_infer(struct agent *agent, const unsigned char *frame);

/* gui.c */
bool gui_open(struct gui *gui, const struct options *o);
bool gui_show(struct gui *gui, const unsigned char *frame, int width, int index, int action);
void gui_close(struct gui *gui);

/* main.c */
int64_t monotonic_ns(void);

#endif
