/* harness_physical's environment over libusb: the camera's frames (bulk IN, or a
 * queue of transfers kept in flight on an event thread) and the actuator
 * (a control request and a bulk OUT command). */
#define _GNU_SOURCE
#include "harness.h"

static void *run_events(void *argument)
{
    struct env *env = argument;
    while (!env->stop_events)
        libusb_handle_events_completed(env->context, (int *)&env->stop_events);
    return NULL;
}

int env_open(struct env *env, const struct options *o)
{
    memset(env, 0, sizeof *env);
    env->frame_bytes = o->width * o->height * 3;
    int result = libusb_init(&env->context);
    if (result < 0) {
        fprintf(stderr, "%s: cannot initialise libusb: %s\n", program, libusb_error_name(result));
        return -1;
    }
    env->handle = libusb_open_device_with_vid_pid(env->context, o->vendor, o->product);
    if (!env->handle) {
        fprintf(stderr, "%s: no device %04x:%04x (the emulated one: build/emucam -- %s ...)\n",
                program, o->vendor, o->product, program);
        libusb_exit(env->context);
        return -1;
    }
    libusb_set_auto_detach_kernel_driver(env->handle, 1);
    result = libusb_claim_interface(env->handle, 0);
    if (result < 0) {
        fprintf(stderr, "%s: cannot claim interface 0: %s\n", program, libusb_error_name(result));
        libusb_close(env->handle);
        libusb_exit(env->context);
        return -1;
    }
    return 0;
}

/* Called with env->lock held. */
static int stream_submit(struct env *env, int index)
{
    struct slot *slot = &env->slots[index];
    slot->done = false;
    env->in_flight++;
    int result = libusb_submit_transfer(slot->transfer);
    if (result < 0) {
        env->in_flight--;
        slot->done = true;
        slot->transfer->status = LIBUSB_TRANSFER_ERROR;
    }
    return result;
}

/* On the event thread. */
static void LIBUSB_CALL stream_done(struct libusb_transfer *transfer)
{
    struct slot *slot = transfer->user_data;
    struct env *env = slot->env;
    pthread_mutex_lock(&env->lock);
    slot->done = true;
    env->in_flight--;
    pthread_cond_broadcast(&env->changed);
    pthread_mutex_unlock(&env->lock);
}

int stream_start(struct env *env, int queue)
{
    env->async = true;
    env->queue = queue;
    env->slots = calloc((size_t)queue, sizeof *env->slots);
    if (!env->slots)
        return -1;
    pthread_mutex_init(&env->lock, NULL);
    pthread_cond_init(&env->changed, NULL);
    for (int i = 0; i < queue; i++) {
        unsigned char *buffer = malloc((size_t)env->frame_bytes);
        struct libusb_transfer *transfer = libusb_alloc_transfer(0);
        if (!buffer || !transfer)
            return -1;
        env->slots[i].env = env;
        env->slots[i].transfer = transfer;
        env->slots[i].done = true;
        libusb_fill_bulk_transfer(transfer, env->handle, EP_FRAMES, buffer, env->frame_bytes,
                                  stream_done, &env->slots[i], TIMEOUT_MS);
    }
    if (pthread_create(&env->events, NULL, run_events, env))
        return -1;
    pthread_mutex_lock(&env->lock);
    for (int i = 0; i < queue; i++)
        stream_submit(env, i);
    pthread_mutex_unlock(&env->lock);
    return 0;
}

static void stream_stop(struct env *env)
{
    pthread_mutex_lock(&env->lock);
    for (int i = 0; i < env->queue; i++)
        if (!env->slots[i].done)
            libusb_cancel_transfer(env->slots[i].transfer);
    while (env->in_flight > 0)
        pthread_cond_wait(&env->changed, &env->lock);
    pthread_mutex_unlock(&env->lock);
    env->stop_events = 1;
    libusb_interrupt_event_handler(env->context);
    pthread_join(env->events, NULL);
    for (int i = 0; i < env->queue; i++) {
        free(env->slots[i].transfer->buffer);
        libusb_free_transfer(env->slots[i].transfer);
    }
    free(env->slots);
}

void env_close(struct env *env)
{
    if (env->async)
        stream_stop(env);
    libusb_release_interface(env->handle, 0);
    libusb_close(env->handle);
    libusb_exit(env->context);
}

/* act: the actuator command for frame I, carrying the action chosen from frame I-1. */
int env_act(struct env *env, int i, int action)
{
    int errors = 0, moved = 0;
    unsigned char command[8] = { 0xA5,
                                 (unsigned char)action,
                                 (unsigned char)(i & 0xff),
                                 (unsigned char)((i >> 8) & 0xff),
                                 0,
                                 0,
                                 0,
                                 0x5A };
    if (libusb_control_transfer(env->handle, 0x40, 0x01, (uint16_t)i, (uint16_t)action, NULL, 0,
                                TIMEOUT_MS) < 0)
        errors++;
    if (libusb_bulk_transfer(env->handle, EP_COMMAND, command, sizeof command, &moved, TIMEOUT_MS) <
            0 ||
        moved != (int)sizeof command)
        errors++;
    env->acted_ns = monotonic_ns();
    return errors;
}

/* observe: the next frame into FRAME; true when it came whole. Adds to *ERRORS. */
bool env_observe(struct env *env, unsigned char *frame, int *errors)
{
    int moved = 0, result = 0;
    enum libusb_transfer_status status = LIBUSB_TRANSFER_COMPLETED;
    if (env->async) {
        pthread_mutex_lock(&env->lock);
        struct slot *slot = &env->slots[env->next];
        while (!slot->done)
            pthread_cond_wait(&env->changed, &env->lock);
        status = slot->transfer->status;
        moved = slot->transfer->actual_length;
        if (status == LIBUSB_TRANSFER_COMPLETED)
            memcpy(frame, slot->transfer->buffer, (size_t)moved);
        pthread_mutex_unlock(&env->lock);
        if (status == LIBUSB_TRANSFER_STALL)
            libusb_clear_halt(env->handle, EP_FRAMES);
        pthread_mutex_lock(&env->lock);
        stream_submit(env, env->next);
        env->next = (env->next + 1) % env->queue;
        pthread_mutex_unlock(&env->lock);
    } else {
        result = libusb_bulk_transfer(env->handle, EP_FRAMES, frame, env->frame_bytes, &moved,
                                      TIMEOUT_MS);
        if (result == LIBUSB_ERROR_PIPE)
            libusb_clear_halt(env->handle, EP_FRAMES);
    }
    bool whole_frame = result == 0 && status == LIBUSB_TRANSFER_COMPLETED &&
        moved == env->frame_bytes;
    if (!whole_frame)
        ++*errors;

    /* The device's status: control signalling, read every frame. */
    unsigned char device_status[8];
    if (libusb_interrupt_transfer(env->handle, EP_STATUS, device_status, sizeof device_status,
                                  &moved, TIMEOUT_MS) < 0)
        ++*errors;
    return whole_frame;
}
