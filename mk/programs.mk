# The examples and the test programs, all in TEST_PROGRAMS (make test builds
# them; the tests find them in $(BUILD)). secure_probe loads the library in
# secure execution.
TEST_PROGRAMS += $(BUILD)/harness_physical $(BUILD)/usb_capture $(BUILD)/emucam \
                 $(BUILD)/test/stub/libcuda.so.1 $(BUILD)/test/cuda_copies $(BUILD)/test/runtime_copies \
                 $(BUILD)/test/cuda_waits $(BUILD)/test/runtime_waits $(BUILD)/test/frame_chain \
                 $(BUILD)/test/x11_draw $(BUILD)/test/x11_round_trips $(BUILD)/test/xcb_draw $(BUILD)/test/close_after_frames \
                 $(BUILD)/test/gl_upload $(BUILD)/test/cairo_draw \
                 $(BUILD)/test/test_config $(BUILD)/test/test_error_names \
                 $(BUILD)/test/test_error_names_before_2_32 $(BUILD)/test/test_capture \
                 $(BUILD)/test/test_trace_json $(BUILD)/test/nvtx_user \
                 $(BUILD)/test/dlsym_next $(BUILD)/test/dlsym_truth $(BUILD)/test/signal_ignore \
                 $(BUILD)/test/chdir_record $(BUILD)/test/libpreload_probe.so $(BUILD)/test/libifunc_write.so \
                 $(BUILD)/test/libnull_tool_errno.so \
                 $(BUILD)/test/libmalloc_count.so $(BUILD)/test/usb_async_edges $(BUILD)/test/usb_calls \
                 $(BUILD)/test/frame_loop $(BUILD)/test/longtrace \
                 $(BUILD)/test/process_life $(BUILD)/test/process_life_dl $(BUILD)/test/trace_adversary \
                 $(BUILD)/test/recorder_faults \
                 $(BUILD)/test/secure_probe $(BUILD)/test/libfakeclock.so $(BUILD)/test/clock_agree \
                 $(BUILD)/test/harmless $(BUILD)/test/stub-nopointer/libcuda.so.1

# The harness's GPU kernels, when nvcc is here: a fat binary (SASS for Turing
# to Hopper, PTX for later GPUs) embedded in the program with .incbin.
NVCC ?= $(firstword $(wildcard $(if $(CUDA_HOME),$(CUDA_HOME)/bin/nvcc) /usr/local/cuda/bin/nvcc) \
          $(shell command -v nvcc 2>/dev/null))
NVCC_GENCODE ?= -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 \
                -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
ifneq ($(NVCC),)
HARNESS_IMAGE := $(BUILD)/obj/harness_image.o
HARNESS_FLAGS := -DHARNESS_HAVE_IMAGE
endif
# Whether the harness embeds its kernels, and how they are compiled.
FLAGS_CLASSES += harness
FLAGS_harness = $(NVCC) $(NVCC_GENCODE) $(HARNESS_FLAGS)

$(BUILD)/harness_kernels.fatbin: examples/harness_kernels.cu $(call flags,harness) $(DEPFILE)
	$(call say,NVCC)
	$(Q)$(NVCC) -fatbin $(NVCC_GENCODE) $(DEPFLAGS) $< -o $@

$(BUILD)/obj/harness_image.o: $(BUILD)/harness_kernels.fatbin $(call flags,program)
	$(call say,AS)
	$(Q)printf '\t.section .rodata\n\t.globl harness_image\n\t.balign 16\nharness_image:\n\t.incbin "%s"\n\t.byte 0\n\t.section .note.GNU-stack,"",@progbits\n' \
	  $< | $(CC) -c -x assembler - -o $@

# The example harness, one job to a file (examples/harness/harness.h lists them).
HARNESS_SOURCES := $(sort $(wildcard examples/harness/*.c))

$(BUILD)/harness_physical: $(HARNESS_SOURCES) $(HARNESS_IMAGE) $(call flags,program) \
                           $(call flags,harness) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $(HARNESS_FLAGS) -isystem $(CUDA_INCLUDE) $(HARNESS_SOURCES) \
	  $(HARNESS_IMAGE) -o $@ -lusb-1.0 -lX11 -lXext -ldl -lpthread

$(BUILD)/usb_capture: examples/usb_capture.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $< -o $@ -lusb-1.0 -lpthread

# test/programs/NAME.c: NVTX from the installed headers, libusb.
$(BUILD)/test/%: test/programs/%.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) -isystem $(NVTX_INCLUDE) $< -o $@ -lusb-1.0 -ldl -lpthread

# The unit tests of the library's own code link the library's objects.
$(BUILD)/test/test_config: test/unit/test_config.c $(CONFIG_OBJECTS) $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $(TABLE_FLAGS) -Ilibnvtxshim $< $(CONFIG_OBJECTS) -o $@

# The errors' names and texts (log.c), with glibc's and, log.c compiled with its references to
# glibc 2.32's strerrorname_np and strerrordesc_np renamed to symbols nothing defines, without.
$(BUILD)/test/test_error_names: test/unit/test_error_names.c $(BUILD)/obj/log.o $(CONFIG_OBJECTS) \
                                $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $(TABLE_FLAGS) -Ilibnvtxshim $< $(BUILD)/obj/log.o \
	  $(CONFIG_OBJECTS) -o $@

$(BUILD)/test/log_before_2_32.o: libnvtxshim/log.c $(call flags,lib) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(LIB_CFLAGS) -Dstrerrorname_np=nvs_absent_strerrorname_np \
	  -Dstrerrordesc_np=nvs_absent_strerrordesc_np $(DEPFLAGS) -c $< -o $@

$(BUILD)/test/test_error_names_before_2_32: test/unit/test_error_names.c $(BUILD)/test/log_before_2_32.o \
                                            $(CONFIG_OBJECTS) $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) -DNVS_TEST_OLD_GLIBC $(DEPFLAGS) $(TABLE_FLAGS) -Ilibnvtxshim $< \
	  $(BUILD)/test/log_before_2_32.o $(CONFIG_OBJECTS) -o $@

# The capture trigger (capture.c) with a seam on the way into its state lock (spin.h's
# NVS_SPIN_SEAM), where test/unit/test_capture.c holds a thread between its count and the lock,
# and any system call renamed to nvs_test_syscall, which the test counts (there is none); the
# rest of the library is stand-ins there.
$(BUILD)/test/capture_seam.o: libnvtxshim/capture.c $(call flags,lib) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(LIB_CFLAGS) -DNVS_SPIN_SEAM=nvs_test_seam -Dsyscall=nvs_test_syscall $(DEPFLAGS) -c $< -o $@

$(BUILD)/test/test_capture: test/unit/test_capture.c $(BUILD)/test/capture_seam.o $(call flags,program) \
                            $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $(TABLE_FLAGS) -DNVTX_NO_IMPL -isystem $(NVTX_INCLUDE) \
	  -isystem $(CUDA_INCLUDE) -Ilibnvtxshim $< $(BUILD)/test/capture_seam.o -o $@

# Without libusb on its link line: it asks dlsym for names whose libraries are absent.
$(BUILD)/test/dlsym_truth: test/programs/dlsym_truth.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $< -o $@ -ldl

$(BUILD)/test/test_trace_json: test/unit/test_trace_json.c $(BUILD)/obj/recorder/encode_json.o $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) -Ilibnvtxshim $< $(BUILD)/obj/recorder/encode_json.o -o $@

$(BUILD)/test/libpreload_probe.so: test/programs/preload_probe.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(CFLAGS) -shared -fPIC $(WARNINGS) $(DEPFLAGS) $< -o $@ -ldl

# A preload whose write is an indirect function (test/test_inert.py).
$(BUILD)/test/libifunc_write.so: test/programs/ifunc_write.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(CFLAGS) -shared -fPIC $(WARNINGS) $(DEPFLAGS) $< -o $@

# An NVTX tool that changes errno in each call (test/test_cuda_waits.py): the
# bench's null tool, built to do so.
$(BUILD)/test/libnull_tool_errno.so: bench/null_tool.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(CFLAGS) -shared -fPIC -fvisibility=hidden $(WARNINGS) $(DEPFLAGS) -isystem $(NVTX_INCLUDE) \
	  -DNULL_TOOL_CHANGES_ERRNO $< -o $@

# A preload whose CLOCK_MONOTONIC is a counter (test/test_trace_pftrace.py).
$(BUILD)/test/libfakeclock.so: test/programs/fakeclock.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(CFLAGS) -shared -fPIC $(WARNINGS) $(DEPFLAGS) $< -o $@ -ldl

$(BUILD)/test/x11_draw: test/programs/x11_draw.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $< -o $@ -lX11 -lXext

$(BUILD)/test/x11_round_trips: test/programs/x11_round_trips.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $< -o $@ -lX11

$(BUILD)/test/xcb_draw: test/programs/xcb_draw.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $< -o $@ -lxcb -lxcb-shm

$(BUILD)/test/close_after_frames: test/programs/close_after_frames.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $< -o $@ -lX11 -lXdamage

$(BUILD)/test/gl_upload: test/programs/gl_upload.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $< -o $@ -lGL -lX11 -lusb-1.0

# cairo on an Xlib or an XCB surface: it draws through RENDER.
$(BUILD)/test/cairo_draw: test/programs/cairo_draw.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $$(pkg-config --cflags cairo) $< -o $@ \
	  $$(pkg-config --libs cairo-xlib cairo-xcb fontconfig) -lX11 -lxcb

# The emulated camera + actuator (test/usbdev/README.md): umockdev's library
# answers the device node's ioctls here, so any number of URBs can be in flight.
$(BUILD)/emucam: test/usbdev/emucam.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $$(pkg-config --cflags umockdev-1.0) $< -o $@ $$(pkg-config --libs umockdev-1.0)

# The stand-in driver: a test double for machines without a GPU, never installed.
$(BUILD)/test/stub/libcuda.so.1: test/cuda/stub_libcuda.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(CFLAGS) -fno-omit-frame-pointer -shared -fPIC -fvisibility=hidden -pthread $(BASE_WARNINGS) $(DEPFLAGS) \
	  -isystem $(CUDA_INCLUDE) -Iexamples -Wl,-soname,libcuda.so.1 $< -o $@
	$(Q)ln -sf libcuda.so.1 $(@D)/libcuda.so

# The same driver without cuPointerGetAttribute (older or cut-down drivers): the
# library must remember it missing (test_harmless.py).
$(BUILD)/test/stub-nopointer/libcuda.so.1: test/cuda/stub_libcuda.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(CFLAGS) -shared -fPIC -fvisibility=hidden -pthread $(BASE_WARNINGS) $(DEPFLAGS) \
	  -DSTUB_WITHOUT_POINTER_QUERY -isystem $(CUDA_INCLUDE) -Iexamples -Wl,-soname,libcuda.so.1 $< -o $@

$(BUILD)/test/stub/libcudart.so.13: test/cuda/stub_libcudart.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(CFLAGS) -shared -fPIC -fvisibility=hidden -pthread $(BASE_WARNINGS) $(DEPFLAGS) \
	  -isystem $(CUDA_INCLUDE) -Wl,-soname,libcudart.so.13 $< -o $@ -ldl
	$(Q)ln -sf libcudart.so.13 $(@D)/libcudart.so

# Linked against a stand-in (order-only: a rebuilt one needs no relink).
$(BUILD)/test/runtime_copies: test/cuda/runtime_copies.c $(call flags,program) $(DEPFILE) | $(BUILD)/test/stub/libcudart.so.13
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) -isystem $(CUDA_INCLUDE) $< -o $@ -L$(BUILD)/test/stub -lcudart

$(BUILD)/test/cuda_copies: test/cuda/cuda_copies.c $(call flags,program) $(DEPFILE) | $(BUILD)/test/stub/libcuda.so.1
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) -isystem $(CUDA_INCLUDE) $< -o $@ -L$(BUILD)/test/stub -lcuda -ldl

$(BUILD)/test/cuda_waits: test/cuda/cuda_waits.c $(call flags,program) $(DEPFILE) | $(BUILD)/test/stub/libcuda.so.1
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) -isystem $(CUDA_INCLUDE) $< -o $@ -L$(BUILD)/test/stub -lcuda -ldl

# With frame pointers and its functions exported: what a profiler's walk finds (test_cuda.py).
$(BUILD)/test/frame_chain: test/cuda/frame_chain.c $(call flags,program) $(DEPFILE) | $(BUILD)/test/stub/libcuda.so.1
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) -fno-omit-frame-pointer -fno-optimize-sibling-calls -rdynamic $(DEPFLAGS) -isystem $(CUDA_INCLUDE) $< -o $@ \
	  -L$(BUILD)/test/stub -lcuda -ldl

$(BUILD)/test/runtime_waits: test/cuda/runtime_waits.c $(call flags,program) $(DEPFILE) | $(BUILD)/test/stub/libcudart.so.13
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) -isystem $(CUDA_INCLUDE) $< -o $@ -L$(BUILD)/test/stub -lcudart -ldl

# The process-life tests' program (test/programs/process_life.c). The pattern
# rule links it with libusb; process_life_dl reaches libusb only through dlopen
# and dlsym, so that dlclose really unloads it.
$(BUILD)/test/process_life_dl: test/programs/process_life.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) -Wno-unused-function -DLIFE_DLOPEN $< -o $@ -ldl -lpthread

# The trace writer's adversary (test/programs/trace_adversary.c, for
# test/test_trace_safety.py): NVTX from the installed headers, no libusb.
$(BUILD)/test/trace_adversary: test/programs/trace_adversary.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) -isystem $(NVTX_INCLUDE) $< -o $@ -lpthread

# The program test/test_faults.py fails the recorder's system calls under
# (test/programs/recorder_faults.c): NVTX alone, no system call of its own.
$(BUILD)/test/recorder_faults: test/programs/recorder_faults.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) -isystem $(NVTX_INCLUDE) $< -o $@

# The seccomp launcher test/test_seccomp.py runs recordings under
# (test/programs/seccomp_run.c): libc alone.
TEST_PROGRAMS += $(BUILD)/test/seccomp_run
$(BUILD)/test/seccomp_run: test/programs/seccomp_run.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $< -o $@

$(BUILD)/test/libmalloc_count.so: test/programs/malloc_count.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(CFLAGS) -shared -fPIC $(BASE_WARNINGS) $(DEPFLAGS) $< -o $@ -ldl

# The emulated V4L2 capture device (test/v4l2dev/emuv4l2.c), an LD_PRELOAD test double
# that answers for /dev/video0 where the kernel has no V4L2 (test/test_emuv4l2.py).
TEST_PROGRAMS += $(BUILD)/test/libemuv4l2.so $(BUILD)/test/libemufeature.so $(BUILD)/test/libemui2c.so
# Feature reports for the recorded HID key (umockdev replays none): test/hidraw/emufeature.c.
$(BUILD)/test/libemufeature.so: test/hidraw/emufeature.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(CFLAGS) -std=gnu11 -shared -fPIC -fvisibility=hidden $(BASE_WARNINGS) $(DEPFLAGS) $< -o $@ -ldl

# The chips on an emulated I2C bus (no kernel here has i2c-dev): test/i2cdev/emui2c.c.
$(BUILD)/test/libemui2c.so: test/i2cdev/emui2c.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(CFLAGS) -std=gnu11 -shared -fPIC -fvisibility=hidden $(BASE_WARNINGS) $(DEPFLAGS) $< -o $@ -ldl

$(BUILD)/test/libemuv4l2.so: test/v4l2dev/emuv4l2.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(CFLAGS) -std=gnu11 -shared -fPIC -fvisibility=hidden -pthread $(BASE_WARNINGS) $(DEPFLAGS) $< -o $@ -ldl
